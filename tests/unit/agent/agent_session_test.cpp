// The whole job flow of the agent over a real socketpair (where time
// matters, against a scripted host on a fake clock), with a scripted
// ProcessRunner, a recording GuestSystem and a fake sysfs/procfs tree. The
// host side is played by the test.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>

#include "common/fio_logs.h"
#include "common/fio_metrics.h"
#include "common/workload_output.h"
#include "daemon/durability/crash_verdict.h"
#include "guestagent/agent.h"
#include "guestagent/ledger_workload.h"
#include "support/fake_clock.h"
#include "support/fakes/agent_fakes.h"

namespace {

using namespace std::chrono_literals;
using namespace ds::agent;
using namespace ds::agent::testing;
using ds::Json;
using ds::test::FakeClock;
namespace protocol = ds::protocol;

Json ext4_job() {
    return {{"run_id", "run-42"},
            {"filesystem",
             {{"type", "ext4"},
              {"mkfs_options", {"-b", "4096"}},
              {"mount_options", "noatime,data=writeback"},
              {"post_format", Json::array()}}},
            {"workload",
             {{"name", "randrw"},
              {"kind", "fio"},
              {"params",
               {{"rw", "randrw"},
                {"bs", "4k"},
                {"direct", true},
                {"iodepth", 64},
                {"runtime", "1s"},
                {"time_based", true}}}}},
            {"timeout_s", 60}};
}

// The agent's options for a session against `tree`.
AgentOptions options_for(const FakeGuestTree& tree) {
    AgentOptions options;
    options.roots = tree.roots();
    options.mount_point = tree.mnt().string();
    options.job_wait = 5s;
    options.device_wait = 0ms;
    options.shutdown_wait = 5s;
    options.progress_interval = 50ms;
    options.scratch_dir = (tree.mnt().parent_path() / "scratch").string();
    return options;
}

// A framed message without its '\n', as read_line returns lines.
std::string line_of(std::string_view type, const Json& payload) {
    std::string line = protocol::encode(type, payload);
    line.pop_back();
    return line;
}

// One agent session on its own thread against the fakes.
struct AgentUnderTest {
    FakeGuestTree tree;
    FakeProcessRunner runner;
    FakeGuestSystem system{tree.proc()};
    HostEnd host;
    AgentOptions options = options_for(tree);
    std::thread thread;
    std::optional<ds::Result<SessionEnd>> end;

    AgentUnderTest() { ::signal(SIGPIPE, SIG_IGN); }
    // fio's per-second logs: the prefix the agent gives fio.
    std::string fio_log_prefix() const { return options.scratch_dir + "/fio-logs/ds"; }
    std::vector<std::string> fio_log_options() const {
        return ds::fio_log_options(fio_log_prefix());
    }
    ~AgentUnderTest() {
        host.close();
        if (thread.joinable()) thread.join();
    }
    void start() {
        thread = std::thread([this] {
            Agent agent(host.agent_channel(), runner, system, options);
            end = agent.run_session();
        });
    }
    // Waits for the session to end and returns how.
    ds::Result<SessionEnd> finish() {
        thread.join();
        REQUIRE(end.has_value());
        return *end;
    }
    Json hello_then_job(const Json& job) {
        Json hello = host.next();
        REQUIRE(hello["type"] == "hello");
        host.send(protocol::kJob, job);
        return hello;
    }
    // Runs `job` to its error message and returns it (after shutdown).
    Json error_for(const Json& job) {
        start();
        hello_then_job(job);
        Json reply = host.next_non_progress();
        host.send(protocol::kShutdown, Json::object());
        auto how = finish();
        REQUIRE(how.ok());
        CHECK(*how == SessionEnd::kErrorSent);
        REQUIRE(reply["type"] == "error");
        return reply;
    }
};

bool contains(const std::string& text, const std::string& fragment) {
    return text.find(fragment) != std::string::npos;
}

// The host as a script, on a fake clock: each read answers with the next of
// `lines`; once they are used up the host is silent, and a read lets the
// clock run to its deadline and times out, as a real channel does when
// nothing comes. Keeps every message the agent writes; `on_write` (if set)
// sees each as it is written. For an agent running on the test's thread.
class ScriptedHost : public Channel {
  public:
    ScriptedHost(FakeClock& clock, std::vector<std::string> lines)
        : clock_(clock), lines_(std::move(lines)) {}

    ds::Result<std::string> read_line(Deadline deadline) override {
        if (next_ < lines_.size()) return lines_[next_++];
        ++silent_reads;
        if (deadline > clock_.now()) clock_.advance(deadline - clock_.now());
        return ds::make_error(ds::errc::kTimeout, "the host sent nothing more");
    }
    ds::Status write(std::string_view data) override {
        auto message = protocol::decode(data.substr(0, data.size() - 1));
        REQUIRE(message.ok());
        written.push_back(*message);
        if (on_write) on_write(*message);
        return ds::ok_status();
    }
    // The written messages other than progress, in order.
    std::vector<Json> replies() const {
        std::vector<Json> out;
        for (const auto& message : written) {
            if (message["type"] != protocol::kProgress) out.push_back(message);
        }
        return out;
    }

    std::vector<Json> written;
    int silent_reads = 0;
    std::function<void(const Json&)> on_write;

  private:
    FakeClock& clock_;
    std::vector<std::string> lines_;
    std::size_t next_ = 0;
};

// One agent session on the test's thread against a ScriptedHost, the
// agent deciding by the host's fake clock.
struct ScriptedSession {
    FakeClock clock;
    FakeGuestTree tree;
    FakeProcessRunner runner;
    FakeGuestSystem system{tree.proc()};
    AgentOptions options = options_for(tree);

    ds::Result<SessionEnd> run(ScriptedHost& host) {
        Agent agent(host, runner, system, options, clock);
        return agent.run_session();
    }
    // Runs `job` to its error message and returns it (after shutdown).
    Json error_for(const Json& job) {
        ScriptedHost host(
            clock, {line_of(protocol::kJob, job), line_of(protocol::kShutdown, Json::object())});
        auto how = run(host);
        REQUIRE(how.ok());
        CHECK(*how == SessionEnd::kErrorSent);
        const Json reply = host.replies().back();
        REQUIRE(reply["type"] == "error");
        return reply;
    }
};

using Sleeps = std::vector<ds::Clock::duration>;

std::vector<std::string> types_of(const std::vector<Json>& messages) {
    std::vector<std::string> types;
    for (const auto& message : messages) types.push_back(message["type"]);
    return types;
}

}  // namespace

TEST_CASE("agent: job.trim stops at trim_ready, then removes the files and trims", "[agent]") {
    AgentUnderTest t;
    t.system.removed_bytes = 16u << 20;
    t.system.trimmed_bytes = 900u << 20;
    t.start();
    Json job = ext4_job();
    job["trim"] = true;
    t.hello_then_job(job);
    Json ready = t.host.next_non_progress();
    REQUIRE(ready["type"] == "trim_ready");
    CHECK(ready["run_id"] == "run-42");
    // Nothing is removed or trimmed before the host has measured.
    CHECK(t.system.removed_directories.empty());
    CHECK(t.system.trims.empty());
    t.host.send(protocol::kTrim, Json::object());
    Json result = t.host.next_non_progress();
    REQUIRE(result["type"] == "result");
    t.host.send(protocol::kShutdown, Json::object());
    REQUIRE(t.finish().ok());
    CHECK(t.system.removed_directories == std::vector<std::string>{t.options.mount_point});
    CHECK(t.system.trims == std::vector<std::string>{t.options.mount_point});
    CHECK(result["readback"]["trim_removed_bytes"] == 16u << 20);
    CHECK(result["readback"]["trimmed_bytes"] == 900u << 20);
    // Unmounted only after the trim.
    CHECK(t.system.unmounts.size() == 1);
}

TEST_CASE("agent: a failed FITRIM is reported in the readback, not as a failed job", "[agent]") {
    AgentUnderTest t;
    t.system.trim_error = "FITRIM /mnt: Operation not supported";
    t.start();
    Json job = ext4_job();
    job["trim"] = true;
    t.hello_then_job(job);
    REQUIRE(t.host.next_non_progress()["type"] == "trim_ready");
    t.host.send(protocol::kTrim, Json::object());
    Json result = t.host.next_non_progress();
    t.host.send(protocol::kShutdown, Json::object());
    REQUIRE(t.finish().ok());
    REQUIRE(result["type"] == "result");
    CHECK(result["readback"]["trim_error"] == "FITRIM /mnt: Operation not supported");
    CHECK_FALSE(result["readback"].contains("trimmed_bytes"));
}

TEST_CASE("agent: anything but trim after trim_ready fails the job in phase trim", "[agent]") {
    AgentUnderTest t;
    t.start();
    Json job = ext4_job();
    job["trim"] = true;
    t.hello_then_job(job);
    REQUIRE(t.host.next_non_progress()["type"] == "trim_ready");
    t.host.send(protocol::kJob, ext4_job());
    Json reply = t.host.next_non_progress();
    t.host.send(protocol::kShutdown, Json::object());
    REQUIRE(t.finish().ok());
    REQUIRE(reply["type"] == "error");
    CHECK(reply["phase"] == "trim");
    CHECK(reply["message"] == "expected 'trim' after trim_ready, got 'job'");
    CHECK(t.system.trims.empty());
}

TEST_CASE("agent: without the host's messages after the job, hello announces no trim", "[agent]") {
    AgentUnderTest t;
    t.options.host_answers_after_job = false;  // one-shot mode (cli.cpp)
    t.start();
    Json hello = t.host.next();
    t.host.send(protocol::kShutdown, Json::object());
    REQUIRE(t.finish().ok());
    const Json& capabilities = hello["capabilities"];
    CHECK(std::find(capabilities.begin(), capabilities.end(), "trim") == capabilities.end());
    CHECK(std::find(capabilities.begin(), capabilities.end(), "fio") != capabilities.end());
}

TEST_CASE("agent: a job.trim that is not a boolean is refused", "[agent]") {
    AgentUnderTest t;
    Json job = ext4_job();
    job["trim"] = "yes";
    Json reply = t.error_for(job);
    CHECK(reply["message"] == "job.trim: is \"yes\", expected a boolean");
}

TEST_CASE("agent: ext4 job from hello to result", "[agent]") {
    AgentUnderTest t;
    t.runner.fio_delay = 300ms;
    // The guest's CPU counters (a file that does not change: zero seconds).
    std::filesystem::create_directories(t.tree.proc());
    std::ofstream(t.tree.proc() / "stat") << "cpu  10 0 20 300 4 0 1 0 0 0\n";
    t.start();

    Json hello = t.host.next();
    CHECK(hello["type"] == "hello");
    CHECK(hello["protocol"] == 2);
    CHECK(hello["kernel"] == "6.1.0-test-amd64");
    CHECK(hello["fio_version"] == "fio-3.33");
    CHECK(hello["agent_version"].is_string());
    // The fake tree's /etc/os-release, for the host's manifest check.
    CHECK(hello["os"] == Json{{"id", "debian"}, {"version_id", "12"}, {"codename", "bookworm"}});
    CHECK(hello["capabilities"] ==
          Json({"fio", "io", "mariadb-atis", "sysbench-oltp", "ledger", "pgbench", "block", "check",
                "ext4", "xfs", "btrfs", "dataset", "trim", "mark"}));

    t.host.send(protocol::kJob, ext4_job());
    std::vector<Json> progress;
    Json result = t.host.next_non_progress(&progress);
    REQUIRE(result["type"] == "result");
    t.host.send(protocol::kShutdown, Json::object());
    auto how = t.finish();
    REQUIRE(how.ok());
    CHECK(*how == SessionEnd::kResultSent);

    // Progress: format, then mount, then bench ticks with a growing fraction.
    REQUIRE(progress.size() >= 4);
    CHECK(progress[0]["phase"] == "format");
    CHECK(contains(progress[0]["message"], "mkfs.ext4 -F -b 4096"));
    CHECK(progress[1]["phase"] == "mount");
    int bench_ticks = 0;
    double last_elapsed = -1;
    for (const auto& message : progress) {
        if (message["phase"] != "bench") continue;
        ++bench_ticks;
        CHECK(message["elapsed_s"].get<double>() >= last_elapsed);
        last_elapsed = message["elapsed_s"];
        REQUIRE(message.contains("fraction"));
        CHECK(message["fraction"].get<double>() >= 0.0);
        CHECK(message["fraction"].get<double>() <= 1.0);
    }
    CHECK(bench_ticks >= 3);  // start, at least one tick during the 300 ms, finish
    CHECK(progress.back()["fraction"] == 1.0);

    // What ran, with which arguments.
    const std::string device = (t.tree.dev() / "sdb").string();
    CHECK(t.runner.command("modprobe") == std::nullopt);  // ext4 already registered
    CHECK(t.runner.command("mkfs.ext4") ==
          std::vector<std::string>{"mkfs.ext4", "-F", "-b", "4096", device});
    REQUIRE(t.system.mounts.size() == 1);
    CHECK(t.system.mounts[0].device == device);
    CHECK(t.system.mounts[0].target == t.tree.mnt().string());
    CHECK(t.system.mounts[0].fs_type == "ext4");
    CHECK(t.system.mounts[0].options == "noatime,data=writeback");
    CHECK(t.system.unmounts == std::vector<std::string>{t.tree.mnt().string()});
    CHECK(t.system.syncs >= 1);
    const auto fio = t.runner.last_command("fio");
    std::vector<std::string> expected_fio = {"fio", "--output-format=json+", "--name=randrw",
                                             "--directory=" + t.tree.mnt().string()};
    for (const auto& option : t.fio_log_options()) expected_fio.push_back(option);
    for (const char* option : {"--bs=4k", "--direct=1", "--iodepth=64", "--runtime=1s",
                               "--rw=randrw", "--time_based=1"}) {
        expected_fio.push_back(option);
    }
    CHECK(fio == expected_fio);

    // The result carries the raw fio JSON as `output` and the metrics derived
    // from it; the scripted fio wrote no per-second logs, which a note says.
    CHECK(result["run_id"] == "run-42");
    const Json recorded = Json::parse(recorded_fio_output());
    Json output = result["output"];
    CHECK(output[std::string(ds::kFioLogsNoteKey)]["not_attached"] == "fio wrote no per-job logs");
    output.erase(std::string(ds::kFioLogsNoteKey));
    CHECK(output == recorded);
    CHECK_FALSE(result.contains("fio"));
    const auto expected = ds::metrics_from_fio_json(recorded);
    REQUIRE(expected.ok());
    CHECK(result["metrics"].size() == expected->size());
    CHECK(result["metrics"]["read_iops"].get<double>() == Approx(12480.759620));
    CHECK(result["metrics"]["write_clat_p99_9_us"].get<double>() == Approx(937.984));
    for (const char* key : {"tune_s", "format_s", "mount_s", "post_format_s", "bench_s"}) {
        CHECK(result["timings"][key].is_number());
    }
    CHECK(result["timings"]["bench_s"].get<double>() >= 0.3);
    CHECK(result["guest_cpu"] == Json{{"user_s", 0.0},
                                      {"nice_s", 0.0},
                                      {"system_s", 0.0},
                                      {"idle_s", 0.0},
                                      {"iowait_s", 0.0},
                                      {"irq_s", 0.0},
                                      {"softirq_s", 0.0},
                                      {"steal_s", 0.0}});
    CHECK(result["versions"] == Json{{"kernel", "6.1.0-test-amd64"},
                                     {"fio", "fio-3.33"},
                                     {"agent", result["versions"]["agent"]}});
    const Json& readback = result["readback"];
    CHECK(readback["device"] == "sdb");
    CHECK(readback["fs_type"] == "ext4");
    CHECK(readback["mount_options"] == "rw,relatime,noatime,data=writeback");
    CHECK(readback["rotational"] == 0);
    CHECK(readback["discard_max_bytes"] == 1073741824);
    CHECK(readback["logical_block_size"] == 512);
    CHECK(readback["read_ahead_kb"] == 128);
    CHECK(readback["scheduler"] == "none");
    CHECK(readback["nr_requests"] == 256);
    CHECK(readback["work_dir_attributes"] == "----------------------");
    CHECK(readback["nocow"] == false);
    CHECK_FALSE(readback.contains("btrfs"));  // ext4: no btrfs filesystem df
    CHECK(t.runner.command("btrfs") == std::nullopt);
    CHECK(t.runner.command("lsattr") ==
          std::vector<std::string>{"lsattr", "-d", t.tree.mnt().string()});
    CHECK(t.system.attribute_writes.empty());  // no job.block: nothing tuned
}

TEST_CASE("agent: a file system the kernel lacks is loaded with modprobe first", "[agent]") {
    AgentUnderTest t;
    Json job = ext4_job();
    job["filesystem"] = {{"type", "xfs"}, {"mkfs_options", Json::array()}};
    t.start();
    t.hello_then_job(job);
    REQUIRE(t.host.next_non_progress()["type"] == "result");
    t.host.send(protocol::kShutdown, Json::object());
    REQUIRE(t.finish().ok());

    const auto commands = t.runner.commands();
    REQUIRE(commands.size() >= 3);
    CHECK(commands[1] == std::vector<std::string>{"modprobe", "xfs"});
    CHECK(commands[2] ==
          std::vector<std::string>{"mkfs.xfs", "-f", (t.tree.dev() / "sdb").string()});
}

TEST_CASE("agent: btrfs post-format steps run in order after mount", "[agent]") {
    AgentUnderTest t;
    Json job = ext4_job();
    job["filesystem"] = {{"type", "btrfs"},
                         {"mkfs_options", {"-m", "dup"}},
                         {"mount_options", "nodatacow"},
                         {"post_format", {"single", "nocow"}}};
    t.runner.lsattr_output = std::string(kLsattrNocow);
    t.start();
    t.hello_then_job(job);
    std::vector<Json> progress;
    Json result = t.host.next_non_progress(&progress);
    REQUIRE(result["type"] == "result");
    t.host.send(protocol::kShutdown, Json::object());
    REQUIRE(t.finish().ok());

    const std::string mnt = t.tree.mnt().string();
    const auto commands = t.runner.commands();
    REQUIRE(commands.size() == 7);
    CHECK(commands[1] == std::vector<std::string>{"mkfs.btrfs", "-f", "-m", "dup",
                                                  (t.tree.dev() / "sdb").string()});
    CHECK(commands[2] == std::vector<std::string>{"btrfs", "balance", "start", "-f",
                                                  "-mconvert=single", "-sconvert=single", mnt});
    CHECK(commands[3] == std::vector<std::string>{"chattr", "+C", mnt});
    CHECK(commands[4][0] == "fio");
    // Readback after the workload: profiles and the mount point's attributes.
    CHECK(commands[5] == std::vector<std::string>{"btrfs", "filesystem", "df", mnt});
    CHECK(commands[6] == std::vector<std::string>{"lsattr", "-d", mnt});
    CHECK(result["readback"]["btrfs"] ==
          Json{{"data", "single"}, {"metadata", "dup"}, {"system", "dup"}});
    CHECK(result["readback"]["work_dir_attributes"] == "---------------C------");
    CHECK(result["readback"]["nocow"] == true);
    CHECK(t.system.mounts.size() == 1);
    bool reported_step = false;
    for (const auto& message : progress) {
        if (contains(message["message"], "post-format step single")) reported_step = true;
    }
    CHECK(reported_step);
    CHECK(result["readback"]["fs_type"] == "btrfs");
}

TEST_CASE("agent: a failing mkfs is reported with its stderr", "[agent]") {
    AgentUnderTest t;
    t.runner.script =
        [](const std::vector<std::string>& argv,
           std::chrono::milliseconds) -> std::optional<ds::Result<ds::ProcessOutput>> {
        if (argv[0] != "mkfs.ext4") return std::nullopt;
        ds::ProcessOutput output;
        output.exit_code = 1;
        output.stderr_text = "mke2fs 1.47.0 (5-Feb-2023)\nmkfs.ext4: invalid block size - 999\n";
        return output;
    };
    Json job = ext4_job();
    job["filesystem"]["mkfs_options"] = {"-b", "999"};
    Json error = t.error_for(job);
    CHECK(error["run_id"] == "run-42");
    CHECK(error["phase"] == "format");
    CHECK(contains(error["message"], "mkfs.ext4 -F -b 999"));
    CHECK(contains(error["message"], "exit code 1"));
    CHECK(contains(error["message"], "mkfs.ext4: invalid block size - 999"));
    CHECK(t.system.mounts.empty());
    CHECK(t.runner.commands().size() ==
          2);  // fio --version, mkfs.ext4; no fio run  // only fio --version ran
}

TEST_CASE("agent: fio failing for lack of space is a bench error and still unmounts", "[agent]") {
    AgentUnderTest t;
    t.runner.script =
        [](const std::vector<std::string>& argv,
           std::chrono::milliseconds) -> std::optional<ds::Result<ds::ProcessOutput>> {
        if (argv[0] != "fio" || argv[1] == "--version") return std::nullopt;
        ds::ProcessOutput output;
        output.exit_code = 1;
        output.stderr_text =
            "fio: io_u error on file /mnt/disksweep/randrw.0.0: No space left on device: write "
            "offset=1048576, buflen=4096\n";
        return output;
    };
    Json error = t.error_for(ext4_job());
    CHECK(error["phase"] == "bench");
    CHECK(error["code"] == "no_space");
    CHECK(contains(error["message"], "No space left on device"));
    CHECK(t.system.unmounts.size() == 1);
}

TEST_CASE("agent: fio is bounded by the job's timeout_s", "[agent]") {
    ScriptedSession t;
    std::chrono::milliseconds fio_timeout{0};
    t.runner.script =
        [&fio_timeout](
            const std::vector<std::string>& argv,
            std::chrono::milliseconds timeout) -> std::optional<ds::Result<ds::ProcessOutput>> {
        if (argv[0] != "fio" || argv[1] == "--version") return std::nullopt;
        fio_timeout = timeout;
        ds::ProcessOutput output;
        output.timed_out = true;
        output.signal = 9;
        return output;
    };
    // What fio left behind keeps the file system busy until it is killed.
    t.system.busy_unmounts = 1;
    Json job = ext4_job();
    job["timeout_s"] = 25;
    Json error = t.error_for(job);
    CHECK(fio_timeout == 25s);
    CHECK(error["phase"] == "bench");
    CHECK(error["code"] == "timeout");
    CHECK(contains(error["message"], "fio was stopped after"));
    CHECK(contains(error["message"], "time limit of 25 s"));
    CHECK(t.system.kills == std::vector<std::string>{t.tree.mnt().string()});
    CHECK(t.system.unmounts.size() == 2);      // busy, then unmounted
    CHECK(t.clock.sleeps() == Sleeps{200ms});  // the retry's pause
}

TEST_CASE("agent: fio output that is not fio's JSON is a bench error", "[agent]") {
    AgentUnderTest t;
    SECTION("not JSON at all") {
        t.runner.fio_stdout = "fio: something odd\n";
        CHECK(contains(t.error_for(ext4_job())["message"], "no JSON document"));
    }
    SECTION("JSON without jobs") {
        t.runner.fio_stdout = "{\"fio version\": \"fio-3.33\"}\n";
        Json error = t.error_for(ext4_job());
        CHECK(error["phase"] == "bench");
        CHECK(contains(error["message"], "\"jobs\" is missing"));
    }
}

TEST_CASE("agent: mount failure is a mount error", "[agent]") {
    AgentUnderTest t;
    t.system.mount_error = "mount -t ext4 -o 'data=bogus' ...: Invalid argument";
    Json error = t.error_for(ext4_job());
    CHECK(error["phase"] == "mount");
    CHECK(contains(error["message"], "Invalid argument"));
    CHECK(t.system.unmounts.empty());
}

TEST_CASE("agent: no disk with the data serial is a disk error listing the disks", "[agent]") {
    AgentUnderTest t;
    write_text(t.tree.sys() / "block/sdb/device/vpd_pg80", std::string("\0\x80\0\x05other", 9));
    Json error = t.error_for(ext4_job());
    CHECK(error["phase"] == "disk");
    CHECK(contains(error["message"], "no disk with serial disksweep-data"));
    CHECK(contains(error["message"], "vda(serial='disksweep-root')"));
    CHECK(contains(error["message"], "sdb(serial='other')"));
}

TEST_CASE("agent: a data disk still appearing is waited for, up to device_wait", "[agent]") {
    ScriptedSession s;
    const fs::path node = s.tree.dev() / "sdb";
    fs::remove(node);
    SECTION("its device node appears during the third pause") {
        s.options.device_wait = 30s;
        s.clock.on_sleep([&](ds::Clock::duration) {
            if (s.clock.sleeps().size() == 3) write_text(node, "");
        });
        ScriptedHost host(s.clock, {line_of(protocol::kJob, ext4_job()),
                                    line_of(protocol::kShutdown, Json::object())});
        auto how = s.run(host);
        REQUIRE(how.ok());
        CHECK(*how == SessionEnd::kResultSent);
        CHECK(s.runner.command("mkfs.ext4").has_value());
        CHECK(s.clock.sleeps() == Sleeps(3, 200ms));  // looked every 200 ms, then no more
    }
    SECTION("it never does") {
        s.options.device_wait = 1s;
        Json error = s.error_for(ext4_job());
        CHECK(error["phase"] == "disk");
        CHECK(error["message"] == "data disk sdb has no device node " + node.string());
        CHECK(s.clock.sleeps() == Sleeps(5, 200ms));  // looked until the 1 s, not past it
    }
}

TEST_CASE("agent: invalid jobs are refused before anything runs", "[agent]") {
    struct Case {
        std::function<void(Json&)> mutate;
        std::string fragment;
    };
    const std::vector<Case> cases = {
        {[](Json& j) { j["filesystem"]["type"] = "zfs"; }, "'zfs' is not one of ext4, xfs, btrfs"},
        {[](Json& j) { j["filesystem"]["post_format"] = {"single"}; },
         "step 'single' applies to btrfs, not ext4"},
        {[](Json& j) { j["filesystem"]["post_format"] = {"defrag"}; },
         "unknown post-format step 'defrag'"},
        {[](Json& j) { j["filesystem"]["mkfs_options"] = "-b 4096"; },
         "job.filesystem.mkfs_options: is a string, expected an array"},
        {[](Json& j) { j["workload"]["kind"] = "sqlbench"; },
         "'sqlbench' is not supported (known: fio, io, mariadb-atis, sysbench-oltp, ledger, "
         "pgbench)"},
        {[](Json& j) { j["check"] = true; },
         "job.check: checks a ledger workload's crash image, without trim"},
        {[](Json& j) { j["check"] = "yes"; }, "job.check: is \"yes\", expected a boolean"},
        {[](Json& j) { j["mark"] = true; },
         "job.mark: marks the measured window of a kind that acknowledges records (ledger), not "
         "of 'fio'"},
        {[](Json& j) {
             j["workload"]["params"]["options"] = {{"directory", "/"}};
         },
         "'options.directory' is set by the agent"},
        {[](Json& j) {
             j["workload"]["params"]["options"] = {{"bs", "8k"}};
         },
         "'options.bs' is also given as a named option"},
        {[](Json& j) { j["workload"]["params"]["job_file"] = "[j]\nrw=read\n"; },
         "cannot be combined with other params"},
        {[](Json& j) {
             j["workload"]["params"] = {{"job_file", "[j]\nrw=read\ndirectory=/\n"}};
         },
         "line 3 sets 'directory', which the agent sets"},
        {[](Json& j) {
             j["workload"]["kind"] = "io";
             j["workload"]["params"] = {{"rw", "read"}, {"filename", "/dev/sda"}};
         },
         "io job option 'filename' is set by the agent"},
        {[](Json& j) {
             j["workload"]["kind"] = "io";
             j["workload"]["params"] = {{"rw", "read"}, {"verify", "md5"}};
         },
         "unsupported io job option 'verify'"},
        {[](Json& j) {
             j["block"] = {{"nr_requests", 0}};
         },
         "job.block.nr_requests: is 0, expected an integer >= 1"},
        {[](Json& j) {
             j["block"] = {{"scheduler", "b f q"}};
         },
         "job.block.scheduler: is"},
        {[](Json& j) {
             j["block"] = {{"elevator", "bfq"}};
         },
         "job.block.elevator: unknown block setting"},
        {[](Json& j) { j["workload"]["params"]["--rw"] = "read"; }, "must not start with '-'"},
        {[](Json& j) { j["workload"]["params"]["rw=read"] = 1; }, "must not contain '='"},
        {[](Json& j) { j["workload"]["params"]["directory"] = "/"; },
         "is set by the agent and cannot be overridden"},
        {[](Json& j) { j["workload"]["params"]["bs"] = Json::array(); },
         "is a array, expected a string, number or boolean"},
        {[](Json& j) { j.erase("timeout_s"); }, "job.timeout_s: is missing"},
        {[](Json& j) { j["timeout_s"] = -1; }, "expected a positive number of seconds"},
    };
    for (const auto& c : cases) {
        AgentUnderTest t;
        Json job = ext4_job();
        c.mutate(job);
        Json error = t.error_for(job);
        INFO(error.dump());
        CHECK(error["phase"] == "job");
        CHECK(contains(error["message"], c.fragment));
        CHECK(error["run_id"] == "run-42");
        CHECK(t.runner.command("mkfs.ext4") == std::nullopt);
    }
}

TEST_CASE("agent: malformed or unexpected host messages are refused", "[agent]") {
    struct Case {
        std::string line;
        std::string fragment;
    };
    const std::vector<Case> cases = {
        {"{not json\n", "not valid JSON"},
        {"{\"v\":1,\"type\":\"job\"}\n", "unsupported protocol version 1"},
        {"{\"v\":2,\"type\":\"progress\",\"run_id\":\"r\"}\n",
         "expected a job message, got 'progress'"},
    };
    for (const auto& c : cases) {
        AgentUnderTest t;
        t.start();
        REQUIRE(t.host.next()["type"] == "hello");
        t.host.send_raw(c.line);
        Json error = t.host.next();
        t.host.send(protocol::kShutdown, Json::object());
        auto how = t.finish();
        REQUIRE(how.ok());
        CHECK(*how == SessionEnd::kErrorSent);
        CHECK(error["type"] == "error");
        CHECK(error["phase"] == "job");
        CHECK(contains(error["message"], c.fragment));
    }
}

TEST_CASE("agent: shutdown instead of a job ends the session without touching the disk",
          "[agent]") {
    AgentUnderTest t;
    t.start();
    REQUIRE(t.host.next()["type"] == "hello");
    t.host.send(protocol::kShutdown, Json::object());
    auto how = t.finish();
    REQUIRE(how.ok());
    CHECK(*how == SessionEnd::kShutdownEarly);
    CHECK(t.runner.commands().size() == 1);  // fio --version
    CHECK(t.system.mounts.empty());
}

TEST_CASE("agent: a host that goes away or stays silent ends the session", "[agent]") {
    SECTION("EOF before the job") {
        AgentUnderTest t;
        t.start();
        REQUIRE(t.host.next()["type"] == "hello");
        t.host.close();
        auto how = t.finish();
        REQUIRE_FALSE(how.ok());
        CHECK(how.error().code == ds::errc::kIo);
        CHECK(contains(how.error().message, "waiting for a job: channel closed"));
    }
    SECTION("no job in time") {
        AgentUnderTest t;
        t.options.job_wait = 100ms;
        t.start();
        REQUIRE(t.host.next()["type"] == "hello");
        auto how = t.finish();
        REQUIRE_FALSE(how.ok());
        CHECK(how.error().code == ds::errc::kTimeout);
    }
    SECTION("EOF instead of shutdown after the result") {
        AgentUnderTest t;
        t.start();
        t.hello_then_job(ext4_job());
        REQUIRE(t.host.next_non_progress()["type"] == "result");
        t.host.close();
        auto how = t.finish();
        REQUIRE(how.ok());
        CHECK(*how == SessionEnd::kResultSent);
    }
    SECTION("no shutdown in time after the result; other messages are ignored") {
        ScriptedSession s;
        s.options.shutdown_wait = 300ms;
        // After the job one more (ignored: one job per session), then silence.
        ScriptedHost host(
            s.clock, {line_of(protocol::kJob, ext4_job()), line_of(protocol::kJob, ext4_job())});
        auto how = s.run(host);
        REQUIRE(how.ok());
        CHECK(*how == SessionEnd::kResultSent);
        CHECK(types_of(host.replies()) == std::vector<std::string>{"hello", "result"});
        CHECK(s.runner.commands().size() == 4);  // fio --version, mkfs, fio, lsattr
        // The 300 ms shutdown_wait ended it: one silence, of just that long.
        CHECK(host.silent_reads == 1);
        CHECK(s.clock.elapsed() == 300ms);
    }
}

namespace {

// Runs `job` to its result message and returns it (after shutdown).
Json result_for(AgentUnderTest& t, const Json& job, std::vector<Json>* progress = nullptr) {
    t.start();
    t.hello_then_job(job);
    Json reply = t.host.next_non_progress(progress);
    t.host.send(protocol::kShutdown, Json::object());
    auto how = t.finish();
    REQUIRE(how.ok());
    INFO(reply.dump().substr(0, 2000));
    REQUIRE(reply["type"] == "result");
    CHECK(*how == SessionEnd::kResultSent);
    return reply;
}

Json io_job(const Json& params, int timeout_s = 60) {
    Json job = ext4_job();
    job["workload"] = {{"name", "native"}, {"kind", "io"}, {"params", params}};
    job["timeout_s"] = timeout_s;
    return job;
}

}  // namespace

TEST_CASE("agent: block tuning is applied before mkfs and read back", "[agent][block]") {
    AgentUnderTest t;
    const fs::path queue = t.tree.sys() / "block/sdb/queue";
    // bfq is not offered until its module is loaded, as on a kernel with bfq=m.
    t.runner.script =
        [&queue](const std::vector<std::string>& argv,
                 std::chrono::milliseconds) -> std::optional<ds::Result<ds::ProcessOutput>> {
        if (argv == std::vector<std::string>{"modprobe", "bfq"}) {
            write_text(queue / "scheduler", "mq-deadline kyber bfq [none]\n");
        }
        return std::nullopt;
    };
    Json job = ext4_job();
    job["block"] = {{"scheduler", "bfq"}, {"read_ahead_kb", 512}, {"nr_requests", 64}};
    std::vector<Json> progress;
    Json result = result_for(t, job, &progress);

    // The sysfs writes, in the order that keeps nr_requests (a scheduler
    // switch resets it).
    using Write = std::pair<std::string, std::string>;
    CHECK(t.system.attribute_writes == std::vector<Write>{
                                           {(queue / "scheduler").string(), "bfq"},
                                           {(queue / "read_ahead_kb").string(), "512"},
                                           {(queue / "nr_requests").string(), "64"},
                                       });
    // modprobe bfq before mkfs, tune progress first.
    const auto commands = t.runner.commands();
    REQUIRE(commands.size() >= 3);
    CHECK(commands[1] == std::vector<std::string>{"modprobe", "bfq"});
    CHECK(commands[2][0] == "mkfs.ext4");
    REQUIRE_FALSE(progress.empty());
    CHECK(progress[0]["phase"] == "tune");
    CHECK(contains(progress[0]["message"], "modprobe bfq"));

    const Json& readback = result["readback"];
    CHECK(readback["scheduler"] == "bfq");
    CHECK(readback["read_ahead_kb"] == 512);
    CHECK(readback["nr_requests"] == 64);
    CHECK(result["timings"]["tune_s"].is_number());
}

TEST_CASE("agent: an offered scheduler is set without modprobe", "[agent][block]") {
    AgentUnderTest t;
    Json job = ext4_job();
    job["block"] = {{"scheduler", "mq-deadline"}};
    Json result = result_for(t, job);
    CHECK(t.runner.command("modprobe") == std::nullopt);
    CHECK(result["readback"]["scheduler"] == "mq-deadline");
    CHECK(read_text(t.tree.sys() / "block/sdb/queue/scheduler") == "[mq-deadline] kyber none\n");
}

TEST_CASE("agent: a sysfs write the kernel refuses fails phase tune", "[agent][block]") {
    SECTION("nr_requests out of range") {
        AgentUnderTest t;
        const std::string path = (t.tree.sys() / "block/sdb/queue/nr_requests").string();
        t.system.refusals[path] = "Invalid argument";
        Json job = ext4_job();
        job["block"] = {{"nr_requests", 100000}};
        Json error = t.error_for(job);
        CHECK(error["phase"] == "tune");
        CHECK(error["message"] == "cannot write '100000' to " + path + ": Invalid argument");
        CHECK_FALSE(error.contains("code"));
        CHECK(t.runner.command("mkfs.ext4") == std::nullopt);
        CHECK(t.system.mounts.empty());
    }
    SECTION("a scheduler the kernel does not have even after modprobe") {
        AgentUnderTest t;
        t.runner.script =
            [](const std::vector<std::string>& argv,
               std::chrono::milliseconds) -> std::optional<ds::Result<ds::ProcessOutput>> {
            if (argv[0] != "modprobe") return std::nullopt;
            ds::ProcessOutput output;
            output.exit_code = 1;
            output.stderr_text = "modprobe: FATAL: Module kyber-iosched not found\n";
            return output;
        };
        write_text(t.tree.sys() / "block/sdb/queue/scheduler", "mq-deadline [none]\n");
        Json job = ext4_job();
        job["block"] = {{"scheduler", "kyber"}};
        Json error = t.error_for(job);
        CHECK(error["phase"] == "tune");
        const std::string message = error["message"];
        CHECK(contains(message, "cannot write 'kyber' to " +
                                    (t.tree.sys() / "block/sdb/queue/scheduler").string() +
                                    ": Invalid argument"));
        CHECK(contains(message, "(offered: mq-deadline none)"));
        CHECK(contains(message, "Module kyber-iosched not found"));
        CHECK(t.runner.command("mkfs.ext4") == std::nullopt);
    }
}

TEST_CASE("agent: kind io runs the native engine in the mount point", "[agent][io]") {
    AgentUnderTest t;
    Json result = result_for(t, io_job({{"rw", "write"},
                                        {"bs", "4k"},
                                        {"size", "256k"},
                                        {"ioengine", "psync"},
                                        {"numjobs", 2}}));
    // The engine's fio-shaped report, its metrics, and its files where the
    // disk under test is mounted, named after the workload.
    const Json& output = result["output"];
    REQUIRE(output["jobs"].is_array());
    REQUIRE(output["jobs"].size() == 2);
    CHECK(output["jobs"][0]["write"]["io_bytes"] == 256 * 1024);
    CHECK(result["metrics"]["write_iops"].get<double>() > 0);
    CHECK(fs::file_size(t.tree.mnt() / "native.0.0") == 256 * 1024);
    CHECK(fs::file_size(t.tree.mnt() / "native.1.0") == 256 * 1024);
    CHECK(t.runner.last_command("fio") == std::nullopt);
    CHECK(t.system.unmounts.size() == 1);
}

TEST_CASE("agent: an io workload past its time limit is stopped: code timeout", "[agent][io]") {
    ScriptedSession s;
    const Json job = io_job({{"rw", "randread"},
                             {"bs", "4k"},
                             {"size", "1m"},
                             {"ioengine", "null"},
                             {"time_based", true},
                             {"runtime", "1h"}},
                            1);
    ScriptedHost host(s.clock,
                      {line_of(protocol::kJob, job), line_of(protocol::kShutdown, Json::object())});
    // The hour-long job is running (its first tick reaches the host) when
    // its 1 s time limit passes.
    bool limit_passed = false;
    host.on_write = [&](const Json& message) {
        if (limit_passed || message["type"] != protocol::kProgress ||
            message["message"] != "io job running") {
            return;
        }
        limit_passed = true;
        s.clock.advance(1s);
    };
    auto how = s.run(host);
    REQUIRE(how.ok());
    CHECK(*how == SessionEnd::kErrorSent);
    REQUIRE(limit_passed);
    const Json error = host.replies().back();
    REQUIRE(error["type"] == "error");
    CHECK(error["phase"] == "bench");
    CHECK(error["code"] == "timeout");
    // Stopped as soon as the limit had passed on the agent's clock.
    CHECK(contains(error["message"],
                   "io job native was stopped after 1.0 s: it exceeded the "
                   "workload's time limit of 1 s"));
    CHECK(s.clock.elapsed() == 1s);  // and the shutdown that came was not waited for
    CHECK(s.system.unmounts.size() == 1);
}

TEST_CASE("agent: fio passthrough: an options table and a job file", "[agent][fio]") {
    SECTION("options are passed as --key=value after the named ones") {
        AgentUnderTest t;
        Json job = ext4_job();
        job["workload"]["params"] = {
            {"rw", "randread"},
            {"options", {{"norandommap", true}, {"random_distribution", "zipf:1.2"}}}};
        result_for(t, job);
        std::vector<std::string> expected = {"fio", "--output-format=json+", "--name=randrw",
                                             "--directory=" + t.tree.mnt().string()};
        for (const auto& option : t.fio_log_options()) expected.push_back(option);
        for (const char* option :
             {"--rw=randread", "--norandommap=1", "--random_distribution=zipf:1.2"}) {
            expected.push_back(option);
        }
        CHECK(t.runner.last_command("fio") == expected);
    }
    SECTION("a job file is written to the scratch directory and run as is") {
        AgentUnderTest t;
        const std::string text = "[global]\nrw=randwrite\nbs=4k\nsize=1m\n[a]\n[b]\niodepth=8\n";
        std::string written;
        t.runner.script =
            [&](const std::vector<std::string>& argv,
                std::chrono::milliseconds) -> std::optional<ds::Result<ds::ProcessOutput>> {
            if (argv[0] == "fio" && argv.back().ends_with(".fio")) written = read_text(argv.back());
            return std::nullopt;
        };
        Json job = ext4_job();
        job["workload"]["params"] = {{"job_file", text}};
        result_for(t, job);
        const std::string path = t.options.scratch_dir + "/randrw.fio";
        std::vector<std::string> expected = {"fio", "--output-format=json+",
                                             "--directory=" + t.tree.mnt().string()};
        for (const auto& option : t.fio_log_options()) expected.push_back(option);
        expected.push_back(path);
        CHECK(t.runner.last_command("fio") == expected);
        CHECK(written == text);
    }
}

TEST_CASE("agent: fio's per-second logs are added to its report, then removed", "[agent][fio]") {
    AgentUnderTest t;
    // fio as it ran for the recording: two jobs, json+, and their logs.
    t.runner.fio_stdout = recorded_fio_output("randrw_4k_numjobs2_jsonplus.json");
    bool stale_log_removed = false;  // set on the runner's thread, checked on this one
    t.runner.script =
        [&](const std::vector<std::string>& argv,
            std::chrono::milliseconds) -> std::optional<ds::Result<ds::ProcessOutput>> {
        if (argv[0] != "fio" || argv.size() < 3) return std::nullopt;
        const fs::path recorded_logs = ds::test::test_data_dir() / "fio/logs";
        for (const char* log : {"bw.1", "bw.2", "iops.1", "iops.2"}) {
            fs::copy_file(recorded_logs / ("randrw_4k_numjobs2_" + std::string(log) + ".log"),
                          t.fio_log_prefix() + "_" + log + ".log");
        }
        stale_log_removed = !fs::exists(t.fio_log_prefix() + "_iops.3.log");
        return std::nullopt;
    };
    fs::create_directories(fs::path(t.fio_log_prefix()).parent_path());
    write_text(t.fio_log_prefix() + "_iops.3.log", "1000, 1, 0\n");
    Json result = result_for(t, ext4_job());
    // A log an earlier run left was removed before fio started.
    CHECK(stale_log_removed);

    const Json& output = result["output"];
    CHECK(output["jobs"][0]["read"]["iops_per_second"] == Json{13253, 12057, 10634, 13945});
    CHECK(output["jobs"][1]["write"]["bw_bytes_per_second"][0] == 30974 * 1024);
    CHECK(output[std::string(ds::kFioLogsNoteKey)]["job_logs"] == 2);
    auto series = ds::per_second_series("fio", output);
    REQUIRE(series.ok());
    CHECK(series->at("read_iops") ==
          std::vector<double>{13253 + 7633, 12057 + 6909, 10634 + 9299, 13945 + 6848});
    // The metrics are the pooled ones of the json+ bins.
    CHECK(result["metrics"]["read_clat_p99_us"].get<double>() == Approx(1003.520));
    CHECK_FALSE(fs::exists(fs::path(t.fio_log_prefix()).parent_path()));
}

namespace {

// A channel that plays a host which sends the job, then shutdown as soon as
// the agent's error arrives, recording whether the disk was unmounted by
// then. Otherwise it is silent: a read lets `clock` run to its deadline.
class ShutdownAfterErrorChannel : public Channel {
  public:
    ShutdownAfterErrorChannel(Json job, FakeGuestSystem& system, FakeClock& clock)
        : job_(std::move(job)), system_(system), clock_(clock) {}

    ds::Result<std::string> read_line(Deadline deadline) override {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!job_sent_) {
            job_sent_ = true;
            return line_of(protocol::kJob, job_);
        }
        if (error_.has_value() && shutdowns_sent == 0) {
            ++shutdowns_sent;
            return line_of(protocol::kShutdown, Json::object());
        }
        if (deadline > clock_.now()) clock_.advance(deadline - clock_.now());
        return ds::make_error(ds::errc::kTimeout, "no message");
    }
    ds::Status write(std::string_view data) override {
        auto message = protocol::decode(std::string(data.substr(0, data.size() - 1)));
        REQUIRE(message.ok());
        std::lock_guard<std::mutex> lock(mutex_);
        if ((*message)["type"] == protocol::kError) {
            error_ = *message;
            unmounted_before_error = !system_.unmounts.empty();
        }
        return ds::ok_status();
    }
    std::optional<Json> error() {
        std::lock_guard<std::mutex> lock(mutex_);
        return error_;
    }

    bool unmounted_before_error = false;
    int shutdowns_sent = 0;

  private:
    Json job_;
    FakeGuestSystem& system_;
    FakeClock& clock_;
    std::mutex mutex_;
    bool job_sent_ = false;
    std::optional<Json> error_;
};

}  // namespace

TEST_CASE("agent: after a timeout or a full disk it unmounts, reports and awaits shutdown",
          "[agent]") {
    struct Case {
        const char* name;
        std::function<void(FakeProcessRunner&)> script;
        std::string code;
        std::string fragment;
    };
    const std::vector<Case> cases = {
        {"fio killed at the time limit",
         [](FakeProcessRunner& runner) {
             runner.script =
                 [](const std::vector<std::string>& argv,
                    std::chrono::milliseconds) -> std::optional<ds::Result<ds::ProcessOutput>> {
                 if (argv[0] != "fio" || argv[1] == "--version") return std::nullopt;
                 ds::ProcessOutput output;
                 output.timed_out = true;
                 output.signal = 9;
                 return output;
             };
         },
         "timeout", "time limit of 60 s"},
        {"fio job reporting ENOSPC in its JSON",
         [](FakeProcessRunner& runner) {
             Json output = Json::parse(recorded_fio_output());
             output["jobs"][0]["error"] = 28;
             runner.fio_stdout = output.dump();
         },
         "no_space", "ended with error 28 (No space left on device)"},
    };
    for (const auto& c : cases) {
        INFO(c.name);
        FakeGuestTree tree;
        FakeProcessRunner runner;
        FakeGuestSystem system{tree.proc()};
        FakeClock clock;
        c.script(runner);
        ShutdownAfterErrorChannel channel(ext4_job(), system, clock);
        AgentOptions options;
        options.roots = tree.roots();
        options.mount_point = tree.mnt().string();
        options.scratch_dir = (tree.mnt().parent_path() / "scratch").string();
        options.device_wait = 0ms;
        options.shutdown_wait = 30s;  // only the host's shutdown can end it at once
        options.progress_interval = 50ms;
        Agent agent(channel, runner, system, options, clock);
        auto end = agent.run_session();
        REQUIRE(end.ok());
        CHECK(*end == SessionEnd::kErrorSent);
        const auto error = channel.error();
        REQUIRE(error.has_value());
        CHECK((*error)["phase"] == "bench");
        CHECK((*error)["code"] == c.code);
        CHECK(contains((*error)["message"], c.fragment));
        CHECK(channel.unmounted_before_error);
        CHECK(channel.shutdowns_sent == 1);
        CHECK(clock.elapsed() == 0s);  // ended by the shutdown, none of the 30 s wait
    }
}

// ---------------------------------------------------------------------------
// Golden volumes: job.dataset "prepare" and "prepared" (docs/agent-protocol.md)

namespace {

// blkid -p answering `type` (exit 2 and no output when "").
void blkid_finds(AgentUnderTest& t, std::string type) {
    t.runner.script =
        [type](const std::vector<std::string>& argv,
               std::chrono::milliseconds) -> std::optional<ds::Result<ds::ProcessOutput>> {
        if (argv[0] != "blkid") return std::nullopt;
        ds::ProcessOutput output;
        output.exit_code = type.empty() ? 2 : 0;
        output.stdout_text = type.empty() ? "" : type + "\n";
        return output;
    };
}

// ext4_job() with job.dataset `dataset`, run to its result (after shutdown).
Json result_with_dataset(AgentUnderTest& t, const std::string& dataset) {
    Json job = ext4_job();
    job["dataset"] = dataset;
    t.start();
    t.hello_then_job(job);
    Json result = t.host.next_non_progress();
    REQUIRE(result["type"] == "result");
    t.host.send(protocol::kShutdown, Json::object());
    REQUIRE(t.finish().ok());
    return result;
}

}  // namespace

TEST_CASE("agent: a prepare job formats and lays fio's files out, measuring nothing",
          "[agent][golden]") {
    AgentUnderTest t;
    const Json result = result_with_dataset(t, "prepare");
    CHECK(t.runner.command("mkfs.ext4").has_value());
    const auto fio = t.runner.last_command("fio");
    REQUIRE(fio.has_value());
    CHECK((*fio)[3] == "--create_only=1");
    CHECK(result["metrics"] == Json::object());
    CHECK(result["timings"].contains("prepare_s"));
    CHECK_FALSE(result["timings"].contains("bench_s"));
    CHECK(t.system.mounts.size() == 1);
}

TEST_CASE("agent: a prepared job checks the file system and neither formats nor prepares",
          "[agent][golden]") {
    AgentUnderTest t;
    blkid_finds(t, "ext4");
    const Json result = result_with_dataset(t, "prepared");
    const std::string device = (t.tree.dev() / "sdb").string();
    CHECK(t.runner.command("blkid") ==
          std::vector<std::string>{"blkid", "-p", "-o", "value", "-s", "TYPE", device});
    CHECK_FALSE(t.runner.command("mkfs.ext4").has_value());
    const auto fio = t.runner.last_command("fio");
    REQUIRE(fio.has_value());
    CHECK(std::find(fio->begin(), fio->end(), "--create_only=1") == fio->end());
    // Mounted with the run's own options.
    REQUIRE(t.system.mounts.size() == 1);
    CHECK(result["metrics"].contains("read_iops"));
}

TEST_CASE("agent: a prepared disk with another file system fails the job, naming both",
          "[agent][golden]") {
    AgentUnderTest t;
    Json job = ext4_job();
    job["dataset"] = "prepared";
    SECTION("xfs where ext4 is configured") {
        blkid_finds(t, "xfs");
        Json error = t.error_for(job);
        CHECK(error["phase"] == "format");
        CHECK(contains(error["message"], "holds a xfs file system, not the configured ext4"));
    }
    SECTION("no file system at all") {
        blkid_finds(t, "");
        Json error = t.error_for(job);
        CHECK(contains(error["message"], "holds no file system, not the configured ext4"));
    }
    CHECK(t.system.mounts.empty());
    for (const auto& argv : t.runner.commands()) CHECK(argv.front() != "mount");
    CHECK_FALSE(t.runner.command("mkfs.ext4").has_value());
}

TEST_CASE("agent: a dataset for a kind without a preparation, or unknown, is refused",
          "[agent][golden]") {
    {
        AgentUnderTest t;
        Json job = ext4_job();
        job["workload"]["kind"] = "mariadb-atis";
        job["workload"]["params"] = Json::object();
        job["dataset"] = "prepared";
        Json error = t.error_for(job);
        CHECK(contains(error["message"],
                       "job.dataset: workload kind 'mariadb-atis' has no preparation"));
    }
    {
        AgentUnderTest t;
        Json job = ext4_job();
        job["dataset"] = "cloned";
        Json error = t.error_for(job);
        CHECK(contains(error["message"], "job.dataset: 'cloned' is not one of"));
    }
}

namespace {

// A check job of a file-variant ledger with 64-byte records; `serials` as
// job.check_disks unless null.
Json check_job(const Json& serials) {
    Json job = {{"run_id", "check-7"},
                {"filesystem", {{"type", "ext4"}}},
                {"workload",
                 {{"name", "ledger"},
                  {"kind", "ledger"},
                  {"params", {{"variant", "file"}, {"records", 100}, {"record_size", 64}}}}},
                {"timeout_s", 60},
                {"check", true}};
    if (!serials.is_null()) job["check_disks"] = serials;
    return job;
}

// ledger.dat under `directory` with records by slot (0 = a zeroed slot).
void write_ledger_file(const fs::path& directory, const std::vector<long long>& slots) {
    std::string content;
    for (long long id : slots) {
        content += id > 0 ? ledger_record(id, 64) : std::string(64, '\0');
    }
    write_text(directory / "ledger.dat", content);
}

// Runs a check job to its result, keeping the progress messages.
Json check_result_of(AgentUnderTest& t, const Json& job, std::vector<Json>& progress) {
    t.start();
    t.hello_then_job(job);
    Json result = t.host.next_non_progress(&progress);
    t.host.send(protocol::kShutdown, Json::object());
    REQUIRE(t.finish().ok());
    INFO(result.dump());
    REQUIRE(result["type"] == "result");
    return result;
}

}  // namespace

TEST_CASE("agent: a check job without check_disks checks the data disk, one report", "[agent]") {
    AgentUnderTest t;
    write_ledger_file(t.tree.mnt(), {1, 2, 3});
    std::vector<Json> progress;
    const Json result = check_result_of(t, check_job(nullptr), progress);
    const Json& report = result["output"];
    CHECK_FALSE(report.contains("states"));
    CHECK(report["mounted"] == true);
    CHECK(report["ledger"]["present"] == Json{{1, 3}});
    REQUIRE(t.system.mounts.size() == 1);
    CHECK(t.system.mounts[0].device == (t.tree.dev() / "sdb").string());
    CHECK(t.system.mounts[0].target == t.options.mount_point);
    CHECK_FALSE(t.runner.command("mkfs.ext4").has_value());
}

TEST_CASE("agent: check_disks checks each crash image in order, one report each", "[agent]") {
    AgentUnderTest t;
    t.tree.add_virtio_disk("vdc", "disksweep-crash-0");
    t.tree.add_virtio_disk("vdd", "disksweep-crash-1");
    // No disk has serial disksweep-crash-2.
    const fs::path mnt = t.tree.mnt();
    write_ledger_file(mnt / "disksweep-crash-0", {1, 2, 3, 4, 5});
    write_ledger_file(mnt / "disksweep-crash-1", {1, 2, 0, 4});
    const std::string vdd = (t.tree.dev() / "vdd").string();
    t.runner.script =
        [&](const std::vector<std::string>& argv,
            std::chrono::milliseconds) -> std::optional<ds::Result<ds::ProcessOutput>> {
        if (argv.front() != "e2fsck" || argv.back() != vdd) return std::nullopt;
        ds::ProcessOutput output;
        output.exit_code = 4;
        output.stdout_text = "Inode 12 has illegal blocks.\n";
        return output;
    };
    std::vector<Json> progress;
    const Json result = check_result_of(
        t, check_job({"disksweep-crash-1", "disksweep-crash-2", "disksweep-crash-0"}), progress);

    const Json& states = result["output"]["states"];
    REQUIRE(states.size() == 3);
    CHECK(states[0]["mounted"] == true);
    CHECK(states[0]["ledger"]["present"] == Json{{1, 2}, {4, 4}});
    CHECK(states[0]["fsck_after"]["clean"] == false);
    CHECK(states[1]["mounted"] == false);
    CHECK(contains(states[1]["mount_error"],
                   "crash image disksweep-crash-2 not checked: no disk with serial "
                   "disksweep-crash-2"));
    CHECK(states[2]["mounted"] == true);
    CHECK(states[2]["ledger"]["present"] == Json{{1, 5}});
    CHECK(states[2]["fsck_after"]["clean"] == true);

    // Each on its own mount point, each unmounted again.
    REQUIRE(t.system.mounts.size() == 2);
    CHECK(t.system.mounts[0].device == vdd);
    CHECK(t.system.mounts[0].target == (mnt / "disksweep-crash-1").string());
    CHECK(t.system.mounts[1].device == (t.tree.dev() / "vdc").string());
    CHECK(t.system.mounts[1].target == (mnt / "disksweep-crash-0").string());
    CHECK(t.system.unmounts == std::vector<std::string>{(mnt / "disksweep-crash-1").string(),
                                                        (mnt / "disksweep-crash-0").string()});

    std::vector<std::string> messages;
    for (const Json& message : progress) {
        if (message["phase"] == "check") messages.push_back(message["message"]);
    }
    CHECK(messages ==
          std::vector<std::string>{"checking crash image 1 of 3 (serial disksweep-crash-1)",
                                   "checking crash image 2 of 3 (serial disksweep-crash-2)",
                                   "checking crash image 3 of 3 (serial disksweep-crash-0)"});

    // What the daemon makes of it (daemon/durability/crash_verdict.h).
    auto checks = ds::parse_crash_checks(result["output"], 3);
    INFO((checks.ok() ? "" : checks.error().message));
    REQUIRE(checks.ok());
    CHECK((*checks)[0].present == ds::IdRanges{{1, 2}, {4, 4}});
    CHECK_FALSE((*checks)[1].mounted);
    CHECK((*checks)[2].present == ds::IdRanges{{1, 5}});
}

TEST_CASE("agent: a crash image that does not mount is reported and the next still checked",
          "[agent]") {
    AgentUnderTest t;
    t.tree.add_virtio_disk("vdc", "disksweep-crash-0");
    t.tree.add_virtio_disk("vdd", "disksweep-crash-1");
    t.system.mount_error = "wrong fs type, bad option, bad superblock";
    std::vector<Json> progress;
    const Json result =
        check_result_of(t, check_job({"disksweep-crash-0", "disksweep-crash-1"}), progress);
    const Json& states = result["output"]["states"];
    REQUIRE(states.size() == 2);
    for (const Json& state : states) {
        CHECK(state["mounted"] == false);
        CHECK(contains(state["mount_error"], "bad superblock"));
        CHECK(state["fsck_after"].contains("clean"));
        CHECK(state["repair"]["mounted"] == false);  // e2fsck -f -y did not help
    }
    CHECK(t.system.mounts.size() == 4);  // each: as it is, and after its repair
}

TEST_CASE("agent: job.check_disks is checked before anything runs", "[agent]") {
    std::vector<std::string> seventeen;
    for (std::size_t i = 0; i <= protocol::kMaxCheckDisks; ++i)
        seventeen.push_back(protocol::crash_disk_serial(i));
    const std::vector<std::pair<Json, std::string>> cases = {
        {"disksweep-crash-0", "job.check_disks: is a string, expected an array"},
        {Json::array(), "job.check_disks: has 0 serials, expected 1 to 16"},
        {seventeen, "job.check_disks: has 17 serials, expected 1 to 16"},
        {{"disksweep-crash-0", 1}, "job.check_disks[1]: is a number, expected a string"},
        {{"../../etc"}, "job.check_disks[0]: serial '../../etc' holds a character"},
        {{"twenty-one-bytes-long"},
         "job.check_disks[0]: serial 'twenty-one-bytes-long' is not 1 "
         "to 20 bytes long"},
        {{"disksweep-crash-0", "disksweep-crash-1", "disksweep-crash-0"},
         "job.check_disks[2]: serial disksweep-crash-0 is listed twice"},
    };
    for (const auto& [serials, fragment] : cases) {
        AgentUnderTest t;
        t.tree.add_virtio_disk("vdc", "disksweep-crash-0");
        Json error = t.error_for(check_job(serials));
        INFO(error.dump());
        CHECK(error["phase"] == "job");
        CHECK(contains(error["message"], fragment));
        CHECK(t.system.mounts.empty());
    }
    AgentUnderTest t;
    Json job = ext4_job();
    job["check_disks"] = {"disksweep-crash-0"};
    CHECK(contains(t.error_for(job)["message"],
                   "job.check_disks: is only for a job with check: true"));
}
