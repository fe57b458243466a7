// disksweepd and hostctl over the real unix socket, with libvirt's
// test:///default driver behind the daemon (no guest boots here: the e2e
// tier does those). Guests on the test driver never say hello, which makes
// it the real path for boot failures, cleanup and crash recovery.
#include <SQLiteCpp/SQLiteCpp.h>
#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/process.h"
#include "support/daemon_fixture.h"

using ds::Json;
using ds::test::DaemonFixture;
namespace fs = std::filesystem;

namespace {

// The test driver boots nothing, so any files will do as the guest image.
std::string fake_image_dir() {
    std::string dir = ds::test::test_temp_dir() + "/fake-image";
    fs::create_directories(dir);
    for (const char* name : {"vmlinuz", "initrd.img", "root.img"}) {
        std::ofstream(dir + "/" + name) << "not a real image\n";
    }
    return dir;
}

std::vector<std::string> test_driver_args(int boot_timeout_s) {
    return {"--hypervisor-uri", "test:///default",
            "--image-dir",      fake_image_dir(),
            "--accel",          "tcg",
            "--boot-timeout",   std::to_string(boot_timeout_s)};
}

const char* kOneRun = R"(
name = "one-run"
[matrix]
filesystem = "ext4"
cache = "unsafe"
[[workload]]
kind = "fio"
rw = "randread"
bs = "4k"
size = "8m"
runtime = "1s"
)";

std::string curl(const DaemonFixture& daemon, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"curl", "-s", "--unix-socket", daemon.socket()};
    argv.insert(argv.end(), args.begin(), args.end());
    ds::RealProcessRunner runner;
    auto output = runner.run(argv, std::chrono::seconds(30));
    return output.ok() ? output->stdout_text : "";
}

Json sweep_json(const DaemonFixture& daemon, int id) {
    auto shown = daemon.hostctl({"--json", "sweep", "show", std::to_string(id)});
    if (shown.exit_code != 0) return Json();
    return Json::parse(shown.out, nullptr, false);
}

// The daemon's instance as `hostctl --json status` shows it.
Json instance_of(const DaemonFixture& daemon) {
    auto status = daemon.hostctl({"--json", "status"});
    INFO(status.err);
    REQUIRE(status.exit_code == 0);
    return Json::parse(status.out)["instance"];
}

// Names of the files in `dir` that start with `prefix`.
std::vector<std::string> files_with_prefix(const std::string& dir, const std::string& prefix) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir)) {
        const std::string name = entry.path().filename().string();
        if (name.starts_with(prefix)) names.push_back(name);
    }
    return names;
}

// Waits until sweep 1 of `daemon` has a running run (its volume exists).
bool wait_for_running_run(const DaemonFixture& daemon) {
    for (int i = 0; i < 100; ++i) {
        if (sweep_json(daemon, 1)["sweep"]["counts"]["running"] == 1) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
}

}  // namespace

TEST_CASE("hostctl without a daemon says so and how to start it", "[integration][hostctl]") {
    const std::string socket = ds::test::test_temp_dir() + "/no-such-disksweepd.sock";
    ds::RealProcessRunner runner;
    auto output = runner.run({ds::test::hostctl_binary(), "--socket", socket, "sweep", "list"},
                             std::chrono::seconds(10));
    REQUIRE(output.ok());
    CHECK(output->exit_code == 3);
    CHECK(output->stderr_text.find("cannot reach disksweepd at " + socket) != std::string::npos);
    CHECK(output->stderr_text.find("Start it with") != std::string::npos);
}

TEST_CASE("the API answers over the socket, to hostctl and to curl", "[integration][api]") {
    DaemonFixture daemon(test_driver_args(2));
    REQUIRE(daemon.ready());

    Json empty = Json::parse(curl(daemon, {"http://x/v1/sweeps"}), nullptr, false);
    CHECK(empty == Json{{"sweeps", Json::array()}});

    Json version = Json::parse(curl(daemon, {"http://x/v1/version"}), nullptr, false);
    CHECK(version["api"] == 1);

    Json missing = Json::parse(curl(daemon, {"http://x/v1/sweeps/42"}), nullptr, false);
    CHECK(missing["error"]["code"] == "not_found");
    CHECK(missing["error"]["message"] == "sweep 42 not found");

    Json wrong = Json::parse(curl(daemon, {"http://x/v1/nothing"}), nullptr, false);
    CHECK(wrong["error"]["code"] == "not_found");

    SECTION("malformed TOML names the file, line and column") {
        auto path =
            ds::test::write_temp_file("bad-syntax.toml", "name = \"x\"\n[matrix\ncache = 1\n");
        auto result = daemon.hostctl({"sweep", "submit", path});
        CHECK(result.exit_code == 1);
        CHECK(result.err.find(path + ":2:") != std::string::npos);
    }
    SECTION("an unknown axis is named, with the valid ones") {
        auto path =
            ds::test::write_temp_file("bad-axis.toml",
                                      "name = \"x\"\n[matrix]\ncach = "
                                      "[\"none\"]\n[[workload]]\nkind = \"fio\"\nrw = \"read\"\n");
        auto result = daemon.hostctl({"sweep", "submit", path});
        CHECK(result.exit_code == 1);
        CHECK(result.err.find(path + ":3:1") != std::string::npos);
        CHECK(result.err.find("unknown axis 'cach'") != std::string::npos);
        CHECK(result.err.find("cache") != std::string::npos);
    }
    SECTION("an unknown axis value is named, with the valid ones") {
        auto path =
            ds::test::write_temp_file("bad-value.toml",
                                      "name = \"x\"\n[matrix]\ncache = "
                                      "[\"fast\"]\n[[workload]]\nkind = \"fio\"\nrw = \"read\"\n");
        auto result = daemon.hostctl({"sweep", "submit", path});
        CHECK(result.exit_code == 1);
        CHECK(result.err.find("fast") != std::string::npos);
        CHECK(result.err.find("writethrough") != std::string::npos);
    }
    SECTION("impossible combinations are dropped with their reason") {
        auto path = ds::test::write_temp_file("dropped.toml", R"(
name = "dropped"
[matrix]
bus = ["virtio-blk", "scsi-single"]
ssd = true
[[workload]]
kind = "fio"
rw = "read"
size = "4m"
)");
        auto result = daemon.hostctl({"--json", "sweep", "submit", path});
        REQUIRE(result.exit_code == 0);
        Json submitted = Json::parse(result.out.substr(0, result.out.find('\n')));
        REQUIRE(submitted["dropped"].size() == 1);
        CHECK(submitted["dropped"][0]["reason"].get<std::string>().find("virtio-blk") !=
              std::string::npos);
        CHECK(submitted["sweep"]["total_runs"] == 1);
    }
    // Nothing was stored for the rejected specs.
    SQLite::Database db(daemon.database(), SQLite::OPEN_READONLY);
    SQLite::Statement sweeps(db, "SELECT COUNT(*) FROM sweeps WHERE name = 'x'");
    REQUIRE(sweeps.executeStep());
    CHECK(sweeps.getColumn(0).getInt() == 0);
}

TEST_CASE("a guest that never says hello fails its run and leaves nothing", "[integration][api]") {
    DaemonFixture daemon(test_driver_args(2));
    REQUIRE(daemon.ready());
    auto path = ds::test::write_temp_file("one-run.toml", kOneRun);
    auto result = daemon.hostctl({"sweep", "submit", path, "--wait"}, std::chrono::seconds(60));
    CHECK(result.exit_code == 1);
    Json sweep = sweep_json(daemon, 1);
    REQUIRE(sweep["runs"].size() == 1);
    CHECK(sweep["sweep"]["status"] == "failed");
    const std::string reason = sweep["runs"][0]["failure_reason"];
    CHECK(reason.find("agent did not connect within 2 s") != std::string::npos);
    CHECK(reason.find("console log: " + daemon.state_dir() + "/runs/") != std::string::npos);
    CHECK(fs::is_empty(daemon.state_dir() + "/volumes"));

    Json compare = Json::parse(daemon.hostctl({"--json", "results", "compare", "1"}).out);
    REQUIRE(compare["rows"].size() == 1);
    CHECK(compare["rows"][0]["runs"]["failed"] == 1);
    CHECK(compare["rows"][0]["durability_risks"] == Json({"cache=unsafe"}));

    // The configuration's results: its sweep's row, in the partition the
    // run recorded; pooling sweeps is asked for, and checked.
    const std::string results_url = "http://x/v1/configurations/" +
                                    compare["rows"][0]["config_id"].get<std::string>() + "/results";
    Json results = Json::parse(curl(daemon, {results_url}), nullptr, false);
    CHECK(results["sweeps_pooled"] == false);
    REQUIRE(results["rows"].size() == 1);
    CHECK(results["rows"][0]["sweep_ids"] == Json::array({1}));
    CHECK(results["rows"][0]["runs"]["failed"] == 1);
    REQUIRE(results["partitions"].size() == 1);
    CHECK(results["rows"][0]["partition"] == 0);
    Json pooled = Json::parse(curl(daemon, {results_url + "?pool_sweeps=true"}), nullptr, false);
    CHECK(pooled["sweeps_pooled"] == true);
    Json bad = Json::parse(curl(daemon, {results_url + "?pool_sweeps=maybe"}), nullptr, false);
    CHECK(bad["error"]["code"] == "invalid_argument");
    CHECK(bad["error"]["message"] ==
          "query parameter 'pool_sweeps' must be true or false (1 or 0), not 'maybe'");
}

TEST_CASE("cancelling a sweep cancels its pending runs", "[integration][api]") {
    DaemonFixture daemon(test_driver_args(5));
    REQUIRE(daemon.ready());
    // repetitions is a top-level key: it goes before any table.
    auto path =
        ds::test::write_temp_file("cancel.toml", "repetitions = 4\n" + std::string(kOneRun));
    REQUIRE(daemon.hostctl({"sweep", "submit", path}).exit_code == 0);
    auto cancelled = daemon.hostctl({"sweep", "cancel", "1"});
    CHECK(cancelled.exit_code == 0);
    Json sweep;
    for (int i = 0; i < 100; ++i) {
        sweep = sweep_json(daemon, 1);
        if (sweep["sweep"]["status"] == "cancelled") break;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    CHECK(sweep["sweep"]["status"] == "cancelled");
    CHECK(sweep["sweep"]["counts"]["cancelled"].get<int>() >= 3);
    CHECK(sweep["sweep"]["counts"]["pending"] == 0);
    // Cancelling again is a conflict, not a crash.
    CHECK(daemon.hostctl({"sweep", "cancel", "1"}).exit_code == 1);
}

TEST_CASE("a daemon killed mid-sweep is cleaned up and resumed by the next one",
          "[integration][recovery]") {
    DaemonFixture daemon(test_driver_args(20));
    REQUIRE(daemon.ready());
    auto path =
        ds::test::write_temp_file("recover.toml", "repetitions = 2\n" + std::string(kOneRun));
    REQUIRE(daemon.hostctl({"sweep", "submit", path}).exit_code == 0);
    const std::string prefix = instance_of(daemon)["resource_prefix"];
    // Wait until the first run is running (its volume exists), then SIGKILL.
    REQUIRE(wait_for_running_run(daemon));
    REQUIRE(!fs::is_empty(daemon.state_dir() + "/volumes"));
    daemon.stop(SIGKILL);

    REQUIRE(daemon.restart());
    CHECK(daemon.log().find("recovery: removed leftover volume " + prefix) != std::string::npos);
    Json sweep = sweep_json(daemon, 1);
    Json first = sweep["runs"][0]["status"] == "failed" ? sweep["runs"][0] : sweep["runs"][1];
    CHECK(first["status"] == "failed");
    CHECK(first["failure_reason"].get<std::string>().find("interrupted") != std::string::npos);
    // The sweep goes on with the run that had not started.
    auto watched = daemon.hostctl({"sweep", "watch", "1"}, std::chrono::seconds(120));
    CHECK(watched.exit_code == 1);
    sweep = sweep_json(daemon, 1);
    CHECK(sweep["sweep"]["status"] == "failed");
    // Counts are of current attempts: the interrupted run was run again as
    // attempt 2, and stays in the record, pointing at it.
    CHECK(sweep["sweep"]["counts"]["failed"] == 2);
    REQUIRE(sweep["runs"].size() == 3);
    Json interrupted, retried;
    for (const Json& run : sweep["runs"]) {
        if (run["attempt"] == 2) retried = run;
        if (run["failure_reason"].get<std::string>().rfind("interrupted", 0) == 0)
            interrupted = run;
    }
    REQUIRE(retried.is_object());
    REQUIRE(interrupted.is_object());
    CHECK(interrupted["superseded_by"] == retried["id"]);
    CHECK(retried["repetition"] == interrupted["repetition"]);
    CHECK(fs::is_empty(daemon.state_dir() + "/volumes"));
}

TEST_CASE("two daemons sharing a storage leave each other's volumes alone",
          "[integration][recovery][instance]") {
    // One volume dir for both: a storage two daemons share (as a Ceph or an
    // lvm-thin pool would be). The first names itself by the id its database
    // keeps, the second is configured.
    const std::string shared = ds::test::test_temp_dir() + "/shared-volumes";
    fs::create_directories(shared);
    std::vector<std::string> args = test_driver_args(20);
    args.insert(args.end(), {"--volume-dir", shared});
    DaemonFixture first(args);
    REQUIRE(first.ready());
    const Json generated = instance_of(first);
    CHECK(generated["source"] == "generated");
    const std::string first_name = generated["name"];
    CHECK(first_name.size() == 8);
    const std::string first_prefix = "disksweep-" + first_name + "-";
    CHECK(generated["resource_prefix"] == first_prefix);
    REQUIRE(first.hostctl({"sweep", "submit", ds::test::write_temp_file("one.toml", kOneRun)})
                .exit_code == 0);
    REQUIRE(wait_for_running_run(first));
    const std::vector<std::string> left = files_with_prefix(shared, first_prefix + "r");
    REQUIRE(left.size() == 1);
    first.stop(SIGKILL);

    args.insert(args.end(), {"--instance", "lab2"});
    DaemonFixture second(args);
    REQUIRE(second.ready());
    auto status = second.hostctl({"status"});
    CHECK(status.exit_code == 0);
    CHECK(status.out.find("instance:     lab2 (configured), guests and volumes named "
                          "disksweep-lab2-*\n") != std::string::npos);
    CHECK(second.log().find("instance lab2") != std::string::npos);
    // The first daemon's leftover is not the second's: kept, and not logged.
    CHECK(files_with_prefix(shared, first_prefix) == left);
    CHECK(second.log().find(first_prefix) == std::string::npos);

    // The first daemon, restarted, is the same instance and removes it (its
    // interrupted run is run again as a new run, under another name).
    REQUIRE(first.restart());
    CHECK(instance_of(first)["name"] == first_name);
    const std::string volume = fs::path(left.front()).stem().string();
    CHECK(first.log().find("recovery: removed leftover volume " + volume) != std::string::npos);
    CHECK_FALSE(fs::exists(shared + "/" + left.front()));
}
