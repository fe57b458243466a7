// The agent's real path on this host: a loop device as the data disk, real
// mkfs/mount(2)/btrfs/chattr/fio, the real sysfs and procfs for readback, and
// the real command line with --port on a unix socket. Needs root, loop
// devices and the tools; anywhere else each test skips, saying why.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "common/fio_metrics.h"
#include "guestagent/cli.h"
#include "support/fakes/agent_fakes.h"
#include "support/skip.h"

namespace {

using namespace std::chrono_literals;
using namespace ds::agent;
using namespace ds::agent::testing;
using ds::Json;
namespace protocol = ds::protocol;

constexpr auto kCommandTimeout = 60s;

bool contains(const std::string& text, const std::string& fragment) {
    return text.find(fragment) != std::string::npos;
}

// Why this host cannot run the test, or "" when it can.
std::string missing_prerequisite() {
    if (::geteuid() != 0) return "not root";
    ds::RealProcessRunner runner;
    for (const char* tool : {"losetup", "mkfs.ext4", "mkfs.btrfs", "btrfs", "chattr", "fio"}) {
        auto found = runner.run({"sh", "-c", std::string("command -v ") + tool}, 10s);
        if (!found.ok() || found->exit_code != 0) return std::string(tool) + " not installed";
    }
    auto loop = runner.run({"losetup", "--find"}, 10s);
    if (!loop.ok() || loop->exit_code != 0) return "no free loop device";
    return {};
}

// Ends the test as skipped when this host cannot run it; call it first.
void skip_unless_prerequisites() {
    if (const auto why = missing_prerequisite(); !why.empty()) ds::test::skip_test(why);
}

// A sparse file (300 MB unless said otherwise) attached to a free loop
// device, detached at the end (after unmounting anything this test left
// mounted on `mount_point`).
class LoopDevice {
  public:
    LoopDevice(const fs::path& backing_file, std::string mount_point,
               std::uintmax_t bytes = 300ull << 20)
        : mount_point_(std::move(mount_point)) {
        { std::ofstream create(backing_file); }
        fs::resize_file(backing_file, bytes);
        auto attached =
            runner_.run({"losetup", "--find", "--show", backing_file.string()}, kCommandTimeout);
        if (attached.ok() && attached->exit_code == 0) {
            path_ = attached->stdout_text.substr(0, attached->stdout_text.find('\n'));
        } else {
            error_ = attached.ok() ? attached->stderr_text : attached.error().message;
        }
    }
    ~LoopDevice() {
        if (path_.empty()) return;
        while (find_mount({}, mount_point_)) {
            auto unmounted = runner_.run({"umount", mount_point_}, kCommandTimeout);
            if (!unmounted.ok() || unmounted->exit_code != 0) break;
        }
        (void)runner_.run({"losetup", "-d", path_}, kCommandTimeout);
    }
    const std::string& path() const { return path_; }
    const std::string& error() const { return error_; }

  private:
    ds::RealProcessRunner runner_;
    std::string mount_point_;
    std::string path_;
    std::string error_;
};

// The host: listens on a unix socket the agent connects to with --port.
class HostSocket {
  public:
    explicit HostSocket(const fs::path& path) : path_(path) {
        listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        REQUIRE(listen_fd_ >= 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        REQUIRE(path.string().size() < sizeof address.sun_path);
        std::strcpy(address.sun_path, path.c_str());
        REQUIRE(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
        REQUIRE(::listen(listen_fd_, 1) == 0);
    }
    ~HostSocket() {
        if (fd_ >= 0) ::close(fd_);
        ::close(listen_fd_);
    }
    void accept_agent() {
        pollfd waiting{listen_fd_, POLLIN, 0};
        REQUIRE(::poll(&waiting, 1, 10'000) == 1);
        fd_ = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        REQUIRE(fd_ >= 0);
        reader_ = std::make_unique<protocol::LineReader>(fd_);
    }
    Json next() {
        auto line = reader_->read_line(std::chrono::steady_clock::now() + 120s);
        INFO((line.ok() ? std::string() : line.error().message));
        REQUIRE(line.ok());
        auto message = protocol::decode(*line);
        REQUIRE(message.ok());
        return *message;
    }
    Json next_non_progress(std::vector<Json>& progress) {
        for (;;) {
            Json message = next();
            if (message["type"] != protocol::kProgress) return message;
            progress.push_back(message);
        }
    }
    void send(std::string_view type, const Json& payload) {
        REQUIRE(protocol::write_all(fd_, protocol::encode(type, payload)).ok());
    }

  private:
    fs::path path_;
    int listen_fd_ = -1;
    int fd_ = -1;
    std::unique_ptr<protocol::LineReader> reader_;
};

// One agent process-equivalent (run_agent on a thread) against a real loop
// device of `disk_bytes`; `talk` plays the host and returns once it sent
// shutdown. Create it after skip_unless_prerequisites().
struct RealSession {
    TempDir dir;
    fs::path mount_point = dir.path() / "mnt";
    std::unique_ptr<LoopDevice> loop;

    explicit RealSession(std::uintmax_t disk_bytes = 300ull << 20)
        : loop(std::make_unique<LoopDevice>(dir.path() / "disk.img", mount_point.string(),
                                            disk_bytes)) {
        INFO("attaching a loop device: " << loop->error());
        REQUIRE_FALSE(loop->path().empty());
    }

    int run(const std::function<void(HostSocket&)>& talk) {
        HostSocket host(dir.path() / "agent.sock");
        auto command_line = parse_command_line(
            {"--port", (dir.path() / "agent.sock").string(), "--data-device", loop->path(),
             "--mount-point", mount_point.string(), "--scratch-dir", (dir.path() / "run").string(),
             "--shutdown-wait", "10", "--job-wait", "30"});
        REQUIRE(command_line.ok());
        int exit_status = -1;
        std::thread agent([&] { exit_status = run_agent(*command_line); });
        host.accept_agent();
        talk(host);
        agent.join();
        return exit_status;
    }
};

Json job(const std::string& run_id, const Json& filesystem) {
    return {{"run_id", run_id},
            {"filesystem", filesystem},
            {"workload",
             {{"name", "randrw4k"},
              {"kind", "fio"},
              {"params",
               {{"rw", "randrw"},
                {"bs", "4k"},
                {"size", "16m"},
                {"runtime", "2s"},
                {"time_based", true},
                {"ioengine", "libaio"},
                {"iodepth", 4},
                {"direct", true}}}}},
            {"timeout_s", 60}};
}

// What `fio --version` prints on this host ("fio-3.33" on Debian 12,
// "fio-3.39" on 13): the version the agent must report is the one it ran.
std::string host_fio_version() {
    std::string out;
    if (FILE* pipe = popen("fio --version 2>/dev/null", "r")) {
        char buffer[128];
        while (fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
        pclose(pipe);
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
}

// Checks what any successful result must hold, against the real device.
void check_result(const Json& result, const std::string& device_name, const std::string& run_id) {
    CHECK(result["run_id"] == run_id);
    CHECK_FALSE(result.contains("fio"));
    const auto metrics = ds::metrics_from_fio_json(result["output"]);
    REQUIRE(metrics.ok());
    CHECK(metrics->at("read_iops") > 0);
    CHECK(metrics->at("write_iops") > 0);
    CHECK(result["metrics"]["read_iops"].get<double>() == Approx(metrics->at("read_iops")));
    CHECK(result["metrics"]["write_clat_p99_us"].get<double>() ==
          Approx(metrics->at("write_clat_p99_us")));
    CHECK(result["output"]["jobs"][0]["job options"]["rw"] == "randrw");
    CHECK(result["timings"]["bench_s"].get<double>() >= 2.0);
    CHECK(result["versions"]["fio"].get<std::string>() == host_fio_version());
    const Json& readback = result["readback"];
    CHECK(readback["device"] == device_name);
    CHECK(readback["logical_block_size"].is_number_integer());
    CHECK(readback["rotational"].is_number_integer());
    CHECK(readback["discard_max_bytes"].is_number_integer());
}

std::string device_name(const std::string& path) {
    return fs::path(path).filename().string();
}

}  // namespace

TEST_CASE("agent on a loop device: ext4 with mkfs and mount options, real fio",
          "[agent][root][loop]") {
    skip_unless_prerequisites();
    RealSession session;
    Json result;
    std::vector<Json> progress;
    const int status = session.run([&](HostSocket& host) {
        const Json hello = host.next();
        REQUIRE(hello["type"] == "hello");
        CHECK(hello["fio_version"].get<std::string>() == host_fio_version());
        host.send(protocol::kJob, job("loop-ext4", {{"type", "ext4"},
                                                    {"mkfs_options", {"-b", "4096", "-L", "dsw"}},
                                                    {"mount_options", "noatime,data=writeback"}}));
        result = host.next_non_progress(progress);
        host.send(protocol::kShutdown, Json::object());
    });
    INFO(result.dump().substr(0, 2000));
    REQUIRE(result["type"] == "result");
    CHECK(status == 0);
    check_result(result, device_name(session.loop->path()), "loop-ext4");
    CHECK(result["readback"]["fs_type"] == "ext4");
    const std::string options = result["readback"]["mount_options"];
    CHECK(contains(options, "noatime"));
    CHECK(contains(options, "data=writeback"));
    CHECK(result["output"]["jobs"][0]["job options"]["directory"] == session.mount_point.string());
    CHECK(result["readback"]["nr_requests"].is_number_integer());
    CHECK(result["readback"]["work_dir_attributes"].is_string());
    CHECK(result["readback"]["nocow"] == false);

    // Progress during fio carried a fraction of the planned 2 s.
    bool saw_partial_fraction = false;
    for (const auto& message : progress) {
        if (message["phase"] == "bench" && message.contains("fraction") &&
            message["fraction"] > 0.0 && message["fraction"] < 1.0) {
            saw_partial_fraction = true;
        }
    }
    CHECK(saw_partial_fraction);
    // The agent unmounted the disk before reporting.
    CHECK_FALSE(find_mount({}, session.mount_point.string()).has_value());

    // The file system really has the requested block size and label.
    ds::RealProcessRunner runner;
    auto dumped = runner.run({"dumpe2fs", "-h", session.loop->path()}, kCommandTimeout);
    REQUIRE(dumped.ok());
    CHECK(contains(dumped->stdout_text, "Block size:               4096"));
    CHECK(contains(dumped->stdout_text, "Filesystem volume name:   dsw"));
}

TEST_CASE("agent on a loop device: btrfs nodatacow with the single and nocow steps",
          "[agent][root][loop]") {
    skip_unless_prerequisites();
    RealSession session;
    Json result;
    std::vector<Json> progress;
    const int status = session.run([&](HostSocket& host) {
        REQUIRE(host.next()["type"] == "hello");
        host.send(protocol::kJob, job("loop-btrfs", {{"type", "btrfs"},
                                                     {"mkfs_options", {"-m", "dup"}},
                                                     {"mount_options", "nodatacow"},
                                                     {"post_format", {"single", "nocow"}}}));
        result = host.next_non_progress(progress);
        host.send(protocol::kShutdown, Json::object());
    });
    INFO(result.dump().substr(0, 2000));
    REQUIRE(result["type"] == "result");
    CHECK(status == 0);
    check_result(result, device_name(session.loop->path()), "loop-btrfs");
    CHECK(result["readback"]["fs_type"] == "btrfs");
    CHECK(contains(result["readback"]["mount_options"], "nodatacow"));
    // Read back by the agent itself: the profiles after the single step and
    // the No_COW attribute of the mount point.
    CHECK(result["readback"]["btrfs"] ==
          Json{{"data", "single"}, {"metadata", "single"}, {"system", "single"}});
    CHECK(contains(result["readback"]["work_dir_attributes"], "C"));
    CHECK(result["readback"]["nocow"] == true);

    // Mount it again to see that the steps took effect: single metadata and
    // the No_COW attribute on the directory fio wrote into.
    ds::RealProcessRunner runner;
    const std::string mnt = session.mount_point.string();
    auto mounted = runner.run({"mount", "-t", "btrfs", session.loop->path(), mnt}, kCommandTimeout);
    REQUIRE(mounted.ok());
    REQUIRE(mounted->exit_code == 0);
    auto df = runner.run({"btrfs", "filesystem", "df", mnt}, kCommandTimeout);
    auto attributes = runner.run({"lsattr", "-d", mnt}, kCommandTimeout);
    (void)runner.run({"umount", mnt}, kCommandTimeout);
    REQUIRE(df.ok());
    CHECK(contains(df->stdout_text, "Metadata, single"));
    CHECK(contains(df->stdout_text, "System, single"));
    CHECK_FALSE(contains(df->stdout_text, "Metadata, DUP"));
    REQUIRE(attributes.ok());
    CHECK(contains(attributes->stdout_text.substr(0, attributes->stdout_text.find(' ')), "C"));
}

TEST_CASE("agent on a loop device: a mount option ext4 rejects is a mount error",
          "[agent][root][loop]") {
    skip_unless_prerequisites();
    RealSession session;
    Json reply;
    std::vector<Json> progress;
    const int status = session.run([&](HostSocket& host) {
        REQUIRE(host.next()["type"] == "hello");
        host.send(protocol::kJob,
                  job("loop-bad-mount", {{"type", "ext4"}, {"mount_options", "data=sideways"}}));
        reply = host.next_non_progress(progress);
        host.send(protocol::kShutdown, Json::object());
    });
    INFO(reply.dump());
    REQUIRE(reply["type"] == "error");
    CHECK(status == 1);
    CHECK(reply["run_id"] == "loop-bad-mount");
    CHECK(reply["phase"] == "mount");
    CHECK(contains(reply["message"], "Invalid argument"));
    CHECK(contains(reply["message"], "data=sideways"));
}

namespace {

// The loop device's queue attribute, "" when unreadable.
std::string queue_attribute(const std::string& device_path, const std::string& name) {
    return read_text(fs::path("/sys/block") / device_name(device_path) / "queue" / name);
}

// Puts the loop device's queue back as the kernel sets it up, so later users
// of that loop device number do not inherit a test's tuning.
void restore_queue(const std::string& device_path) {
    RealGuestSystem system;
    const auto queue = fs::path("/sys/block") / device_name(device_path) / "queue";
    (void)system.write_attribute((queue / "scheduler").string(), "none");
    (void)system.write_attribute((queue / "read_ahead_kb").string(), "128");
}

// Plays the host for one job: hello, job, then whatever comes back, then
// shutdown. Returns the reply and the agent's exit status.
std::pair<Json, int> reply_to(RealSession& session, const Json& job_message,
                              std::vector<Json>* progress = nullptr) {
    Json reply;
    std::vector<Json> seen;
    const int status = session.run([&](HostSocket& host) {
        REQUIRE(host.next()["type"] == "hello");
        host.send(protocol::kJob, job_message);
        reply = host.next_non_progress(seen);
        host.send(protocol::kShutdown, Json::object());
    });
    if (progress) *progress = seen;
    return {reply, status};
}

Json with_workload(Json job_message, const std::string& kind, const Json& params,
                   int timeout_s = 60) {
    job_message["workload"] = {{"name", "w"}, {"kind", kind}, {"params", params}};
    job_message["timeout_s"] = timeout_s;
    return job_message;
}

}  // namespace

TEST_CASE("agent on a loop device: block tuning applied through sysfs and read back",
          "[agent][root][loop]") {
    skip_unless_prerequisites();
    RealSession session;
    Json message = job("loop-block", {{"type", "ext4"}});
    message["block"] = {{"scheduler", "mq-deadline"}, {"read_ahead_kb", 512}, {"nr_requests", 32}};
    std::vector<Json> progress;
    auto [result, status] = reply_to(session, message, &progress);
    // What the kernel shows now, before the queue is put back.
    const std::string scheduler = queue_attribute(session.loop->path(), "scheduler");
    restore_queue(session.loop->path());
    INFO(result.dump().substr(0, 2000));
    REQUIRE(result["type"] == "result");
    CHECK(status == 0);
    CHECK(result["readback"]["scheduler"] == "mq-deadline");
    CHECK(result["readback"]["read_ahead_kb"] == 512);
    CHECK(result["readback"]["nr_requests"] == 32);
    CHECK(contains(scheduler, "[mq-deadline]"));
    CHECK(progress.at(0)["phase"] == "tune");
}

TEST_CASE("agent on a loop device: a value the kernel refuses fails phase tune",
          "[agent][root][loop]") {
    skip_unless_prerequisites();
    RealSession session;
    Json message = job("loop-bad-tune", {{"type", "ext4"}});
    // A scheduler every kernel offers (mq-deadline is built in; bfq may be a
    // module the host lacks, as 6.18's here), so that the refusal is
    // nr_requests's.
    message["block"] = {{"scheduler", "mq-deadline"}, {"nr_requests", 100000}};
    auto [reply, status] = reply_to(session, message);
    restore_queue(session.loop->path());
    INFO(reply.dump());
    REQUIRE(reply["type"] == "error");
    CHECK(status == 1);
    CHECK(reply["phase"] == "tune");
    const std::string path =
        "/sys/block/" + device_name(session.loop->path()) + "/queue/nr_requests";
    CHECK(reply["message"] == "cannot write '100000' to " + path + ": Invalid argument");
    CHECK_FALSE(reply.contains("code"));
}

TEST_CASE("agent on a loop device: kind io with libaio and io_uring, direct",
          "[agent][root][loop]") {
    skip_unless_prerequisites();
    // io_uring on a block device completes through interrupts and task
    // work, not io-wq as on tmpfs: the path the guest's disks take.
    for (const char* engine : {"libaio", "io_uring"}) {
        INFO(engine);
        RealSession session;
        auto [result, status] =
            reply_to(session, with_workload(job("loop-io", {{"type", "xfs"}}), "io",
                                            {{"rw", "randrw"},
                                             {"bs", "4k"},
                                             {"size", "16m"},
                                             {"runtime", "2s"},
                                             {"time_based", true},
                                             {"ioengine", engine},
                                             {"iodepth", 16},
                                             {"direct", true}}));
        INFO(result.dump().substr(0, 2000));
        REQUIRE(result["type"] == "result");
        CHECK(status == 0);
        CHECK(result["metrics"]["read_iops"].get<double>() > 0);
        CHECK(result["metrics"]["write_iops"].get<double>() > 0);
        CHECK(result["timings"]["bench_s"].get<double>() >= 2.0);
        CHECK(result["readback"]["fs_type"] == "xfs");
    }
}

TEST_CASE("agent on a loop device: a job bigger than the file system fails with no_space",
          "[agent][root][loop]") {
    // 64 MiB of disk, 256 MiB of writes: fio and the native engine both run
    // into ENOSPC; the session still unmounts, reports and shuts down.
    const std::vector<std::pair<std::string, Json>> workloads = {
        {"fio", {{"rw", "write"}, {"bs", "1m"}, {"size", "256m"}, {"ioengine", "psync"}}},
        {"io", {{"rw", "write"}, {"bs", "1m"}, {"size", "256m"}, {"ioengine", "psync"}}},
    };
    skip_unless_prerequisites();
    for (const auto& [kind, params] : workloads) {
        INFO(kind);
        RealSession session(64ull << 20);
        const auto start = std::chrono::steady_clock::now();
        auto [reply, status] =
            reply_to(session, with_workload(job("loop-full", {{"type", "ext4"}}), kind, params));
        INFO(reply.dump());
        REQUIRE(reply["type"] == "error");
        CHECK(status == 1);
        CHECK(reply["phase"] == "bench");
        CHECK(reply["code"] == "no_space");
        CHECK(contains(reply["message"], "No space left on device"));
        CHECK_FALSE(find_mount({}, session.mount_point.string()).has_value());
        CHECK(std::chrono::steady_clock::now() - start < 60s);
    }
}

TEST_CASE("agent on a loop device: fio past its time limit is killed: code timeout",
          "[agent][root][loop]") {
    skip_unless_prerequisites();
    RealSession session;
    const auto start = std::chrono::steady_clock::now();
    auto [reply, status] =
        reply_to(session, with_workload(job("loop-slow", {{"type", "ext4"}}), "fio",
                                        {{"rw", "randread"},
                                         {"bs", "4k"},
                                         {"size", "16m"},
                                         {"runtime", "120s"},
                                         {"time_based", true}},
                                        3));
    const auto took = std::chrono::steady_clock::now() - start;
    INFO(reply.dump());
    REQUIRE(reply["type"] == "error");
    CHECK(status == 1);
    CHECK(reply["phase"] == "bench");
    CHECK(reply["code"] == "timeout");
    CHECK(contains(reply["message"], "fio was stopped after 3."));
    CHECK(contains(reply["message"], "time limit of 3 s"));
    CHECK(took < 30s);
    CHECK_FALSE(find_mount({}, session.mount_point.string()).has_value());
}
