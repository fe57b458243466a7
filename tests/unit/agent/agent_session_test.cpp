// The whole job flow of the agent over a real socketpair, with a scripted
// ProcessRunner, a recording GuestSystem and a fake sysfs/procfs tree. The
// host side is played by the test.
#include <signal.h>

#include <optional>

#include "common/fio_metrics.h"
#include "guestagent/agent.h"
#include "unit/agent/fakes.h"

namespace {

using namespace std::chrono_literals;
using namespace ds::agent;
using namespace ds::agent::testing;
using ds::Json;
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

// One agent session on its own thread against the fakes.
struct AgentUnderTest {
    FakeGuestTree tree;
    FakeProcessRunner runner;
    FakeGuestSystem system{tree.proc()};
    HostEnd host;
    AgentOptions options;
    std::thread thread;
    std::optional<ds::Result<SessionEnd>> end;

    AgentUnderTest() {
        ::signal(SIGPIPE, SIG_IGN);
        options.roots = tree.roots();
        options.mount_point = tree.mnt().string();
        options.job_wait = 5s;
        options.device_wait = 0ms;
        options.shutdown_wait = 5s;
        options.progress_interval = 50ms;
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

}  // namespace

TEST_CASE("agent: ext4 job from hello to result", "[agent]") {
    AgentUnderTest t;
    t.runner.fio_delay = 300ms;
    t.start();

    Json hello = t.host.next();
    CHECK(hello["type"] == "hello");
    CHECK(hello["protocol"] == 1);
    CHECK(hello["kernel"] == "6.1.0-test-amd64");
    CHECK(hello["fio_version"] == "fio-3.33");
    CHECK(hello["agent_version"].is_string());
    CHECK(hello["capabilities"] == Json({"fio", "ext4", "xfs", "btrfs"}));

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
    const auto fio = t.runner.commands().back();
    CHECK(fio == std::vector<std::string>{"fio", "--output-format=json", "--name=randrw",
                                          "--directory=" + t.tree.mnt().string(), "--bs=4k",
                                          "--direct=1", "--iodepth=64", "--runtime=1s",
                                          "--rw=randrw", "--time_based=1"});

    // The result carries the raw fio JSON and the metrics derived from it.
    CHECK(result["run_id"] == "run-42");
    const Json recorded = Json::parse(recorded_fio_output());
    CHECK(result["fio"] == recorded);
    const auto expected = ds::metrics_from_fio_json(recorded);
    REQUIRE(expected.ok());
    CHECK(result["metrics"].size() == expected->size());
    CHECK(result["metrics"]["read_iops"].get<double>() == Approx(12480.759620));
    CHECK(result["metrics"]["write_clat_p99_9_us"].get<double>() == Approx(937.984));
    for (const char* key : {"format_s", "mount_s", "post_format_s", "bench_s"}) {
        CHECK(result["timings"][key].is_number());
    }
    CHECK(result["timings"]["bench_s"].get<double>() >= 0.3);
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
    t.start();
    t.hello_then_job(job);
    std::vector<Json> progress;
    Json result = t.host.next_non_progress(&progress);
    REQUIRE(result["type"] == "result");
    t.host.send(protocol::kShutdown, Json::object());
    REQUIRE(t.finish().ok());

    const std::string mnt = t.tree.mnt().string();
    const auto commands = t.runner.commands();
    REQUIRE(commands.size() == 5);
    CHECK(commands[1] == std::vector<std::string>{"mkfs.btrfs", "-f", "-m", "dup",
                                                  (t.tree.dev() / "sdb").string()});
    CHECK(commands[2] == std::vector<std::string>{"btrfs", "balance", "start", "-f",
                                                  "-mconvert=single", "-sconvert=single", mnt});
    CHECK(commands[3] == std::vector<std::string>{"chattr", "+C", mnt});
    CHECK(commands[4][0] == "fio");
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
    CHECK(contains(error["message"], "No space left on device"));
    CHECK(t.system.unmounts.size() == 1);
}

TEST_CASE("agent: fio is bounded by the job's timeout_s", "[agent]") {
    AgentUnderTest t;
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
    Json job = ext4_job();
    job["timeout_s"] = 25;
    Json error = t.error_for(job);
    CHECK(fio_timeout == 25s);
    CHECK(error["phase"] == "bench");
    CHECK(contains(error["message"], "timeout_s of 25 s"));
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
        {[](Json& j) { j["workload"]["kind"] = "sqlbench"; }, "'sqlbench' is not supported"},
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
        {"{\"v\":2,\"type\":\"job\"}\n", "unsupported protocol version 2"},
        {"{\"v\":1,\"type\":\"progress\",\"run_id\":\"r\"}\n",
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
        AgentUnderTest t;
        t.options.shutdown_wait = 300ms;
        t.start();
        t.hello_then_job(ext4_job());
        REQUIRE(t.host.next_non_progress()["type"] == "result");
        t.host.send(protocol::kJob, ext4_job());  // ignored: one job per session
        const auto start = std::chrono::steady_clock::now();
        auto how = t.finish();
        CHECK(std::chrono::steady_clock::now() - start < 3s);
        REQUIRE(how.ok());
        CHECK(t.runner.commands().size() == 3);  // fio --version, mkfs, fio
    }
}
