// Real sweeps in real TCG guests: disksweepd + hostctl + libvirt embedded
// QEMU + guest agent + SQLite, as a user runs them.
#include <SQLiteCpp/SQLiteCpp.h>
#include <signal.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "common/http.h"
#include "hostctl/format.h"
#include "support/daemon_fixture.h"
#include "support/table_text.h"

using ds::Json;
using ds::test::DaemonFixture;

namespace {

// Skips when DISKSWEEP_TEST_IMAGE_DIR is not set (support/daemon_fixture.h).
bool image_present() {
    return std::filesystem::exists(ds::test::test_image_dir() + "/root.img");
}

std::vector<std::string> daemon_args(int boot_timeout = 120) {
    return {"--image-dir", ds::test::test_image_dir(), "--accel",
            "tcg",         "--boot-timeout",           std::to_string(boot_timeout)};
}

// Two repetitions, so that every row of the comparison has a spread.
const char* kTwoByTwo = R"(
name = "e2e-fs-cache"
repetitions = 2
seed = 7
[matrix]
bus = "scsi-single"
cache = ["none", "unsafe"]
discard = true
ssd = true
iothread = true
filesystem = ["ext4", "btrfs"]
disk_size = "512m"
[[workload]]
name = "randrw"
kind = "fio"
rw = "randrw"
bs = "4k"
direct = true
ioengine = "libaio"
iodepth = 8
numjobs = 1
size = "32m"
runtime = "2s"
time_based = true
)";

struct Sample {
    double mean = 0;
    double stddev = 0;  // sample standard deviation (n - 1)
};

Sample sample_of(const std::vector<double>& values) {
    Sample sample;
    for (double value : values) sample.mean += value;
    sample.mean /= static_cast<double>(values.size());
    double squares = 0;
    for (double value : values) squares += (value - sample.mean) * (value - sample.mean);
    sample.stddev = std::sqrt(squares / static_cast<double>(values.size() - 1));
    return sample;
}

// write_iops of every succeeded run, by "cache/filesystem".
std::map<std::string, std::vector<double>> write_iops_by_config(SQLite::Database& db) {
    SQLite::Statement query(db,
                            "SELECT c.canonical_json, m.value FROM runs r "
                            "JOIN configurations c USING (config_id) "
                            "JOIN metrics m ON m.run_id = r.id "
                            "WHERE m.name = 'write_iops' AND r.status = 'succeeded'");
    std::map<std::string, std::vector<double>> values;
    while (query.executeStep()) {
        const Json config = Json::parse(query.getColumn(0).getString());
        values[config["cache"].get<std::string>() + "/" +
               config["filesystem"]["type"].get<std::string>()]
            .push_back(query.getColumn(1).getDouble());
    }
    return values;
}

}  // namespace

TEST_CASE("a 2x2 sweep runs in real guests, is verified, stored and compared", "[e2e]") {
    if (!image_present())
        FAIL("guest image missing in " + ds::test::test_image_dir() +
             ": run scripts/build-guest-image.sh");
    // Two guests at a time: one TCG guest keeps one host core busy, so the
    // 8 runs take about the wall time of 4. This test checks that runs are
    // verified, stored and compared, not their numbers.
    auto args = daemon_args();
    args.insert(args.end(), {"--max-parallel-runs", "2"});
    DaemonFixture daemon(args);
    REQUIRE(daemon.ready());
    auto spec = ds::test::write_temp_file("e2e-2x2.toml", kTwoByTwo);

    auto submitted =
        daemon.hostctl({"sweep", "submit", spec, "--wait"}, std::chrono::seconds(1200));
    INFO(submitted.out << submitted.err << daemon.log());
    REQUIRE(submitted.exit_code == 0);

    // Every run is in SQLite, succeeded, with metrics and verified settings.
    SQLite::Database db(daemon.database(), SQLite::OPEN_READONLY);
    SQLite::Statement runs(db,
                           "SELECT r.id, r.status, c.canonical_json, r.applied_settings_json, "
                           "r.raw_output FROM runs r JOIN configurations c USING (config_id) "
                           "ORDER BY r.sequence");
    int count = 0;
    std::set<std::string> seen;
    while (runs.executeStep()) {
        ++count;
        INFO("run " << runs.getColumn(0).getInt64());
        CHECK(runs.getColumn(1).getString() == "succeeded");
        Json config = Json::parse(runs.getColumn(2).getString());
        Json applied = Json::parse(runs.getColumn(3).getString());
        CHECK(applied["verified"] == true);
        CHECK(applied["hypervisor"]["cache"] == config["cache"]);
        CHECK(applied["hypervisor"]["bus"] == "scsi-single");
        CHECK(applied["guest"]["fs_type"] == config["filesystem"]["type"]);
        CHECK(applied["guest"]["rotational"] == 0);
        Json fio = Json::parse(runs.getColumn(4).getString());
        CHECK(fio["jobs"].size() >= 1);
        seen.insert(config["filesystem"]["type"].get<std::string>() + "/" +
                    config["cache"].get<std::string>());
    }
    CHECK(count == 8);
    CHECK(seen == std::set<std::string>{"ext4/none", "ext4/unsafe", "btrfs/none", "btrfs/unsafe"});
    SQLite::Statement metrics(
        db, "SELECT COUNT(*) FROM metrics WHERE name = 'write_iops' AND value > 0");
    REQUIRE(metrics.executeStep());
    CHECK(metrics.getColumn(0).getInt() == 8);
    const auto runs_by_config = write_iops_by_config(db);

    // The comparison: one row per configuration, varying axes as columns,
    // each metric the mean and sample standard deviation of that
    // configuration's two runs.
    auto compare = daemon.hostctl({"--json", "results", "compare", "1"});
    REQUIRE(compare.exit_code == 0);
    Json table = Json::parse(compare.out);
    CHECK(table["varying_axes"] == Json({"cache", "filesystem"}));
    REQUIRE(table["rows"].size() == 4);
    auto text = daemon.hostctl({"results", "compare", "1", "--all"});
    CHECK(text.exit_code == 0);
    INFO(text.out);
    for (const auto& row : table["rows"]) {
        const std::string cache = row["settings"]["cache"];
        const std::string filesystem = row["settings"]["filesystem"]["type"];
        INFO(cache << "/" << filesystem);
        REQUIRE(runs_by_config.count(cache + "/" + filesystem) == 1);
        const std::vector<double>& values = runs_by_config.at(cache + "/" + filesystem);
        REQUIRE(values.size() == 2);
        const Sample expected = sample_of(values);
        const Json& write_iops = row["metrics"]["write_iops"];
        CHECK(write_iops["n"] == 2);
        CHECK(write_iops["mean"].get<double>() == Approx(expected.mean));
        REQUIRE(write_iops["stddev"].is_number());
        CHECK(write_iops["stddev"].get<double>() == Approx(expected.stddev));
        CHECK(row["durability_risks"].size() == (cache == "unsafe" ? 1u : 0u));
        // The text table's row shows the same mean ± sd.
        const std::string line = ds::test::table_row(text.out, cache, filesystem);
        CHECK_THAT(line, Catch::Contains(" " + ds::hostctl::format_mean_stddev(expected.mean,
                                                                               expected.stddev)));
    }
    // Nothing left behind.
    CHECK(ds::test::qemu_processes_mentioning(daemon.state_dir()).empty());
    CHECK(std::filesystem::is_empty(daemon.state_dir() + "/volumes"));
}

TEST_CASE("a guest that never says hello fails its run with the console log path", "[e2e]") {
    if (!image_present()) FAIL("guest image missing in " + ds::test::test_image_dir());
    DaemonFixture daemon(daemon_args(/*boot_timeout=*/3));
    REQUIRE(daemon.ready());
    auto spec = ds::test::write_temp_file("e2e-boot-timeout.toml", R"(
name = "boot-timeout"
[matrix]
filesystem = "ext4"
[[workload]]
kind = "fio"
rw = "randread"
bs = "4k"
size = "8m"
runtime = "1s"
)");
    auto submitted = daemon.hostctl({"sweep", "submit", spec, "--wait"}, std::chrono::seconds(300));
    CHECK(submitted.exit_code == 1);
    auto shown = daemon.hostctl({"--json", "sweep", "show", "1"});
    REQUIRE(shown.exit_code == 0);
    Json sweep = Json::parse(shown.out);
    REQUIRE(sweep["runs"].size() == 1);
    std::string reason = sweep["runs"][0]["failure_reason"];
    CHECK(reason.find("agent did not connect within 3 s") != std::string::npos);
    CHECK(reason.find(".console.log") != std::string::npos);
    CHECK(ds::test::qemu_processes_mentioning(daemon.state_dir()).empty());
    CHECK(std::filesystem::is_empty(daemon.state_dir() + "/volumes"));
}

TEST_CASE("a guest killed mid-run fails that run and the sweep goes on", "[e2e]") {
    if (!image_present()) FAIL("guest image missing in " + ds::test::test_image_dir());
    DaemonFixture daemon(daemon_args());
    REQUIRE(daemon.ready());
    auto spec = ds::test::write_temp_file("e2e-kill.toml", R"(
name = "kill-guest"
repetitions = 2
[matrix]
filesystem = "ext4"
[[workload]]
kind = "fio"
rw = "randwrite"
bs = "4k"
size = "16m"
runtime = "15s"
time_based = true
)");
    auto submitted = daemon.hostctl({"--json", "sweep", "submit", spec});
    REQUIRE(submitted.exit_code == 0);
    // The daemon names its guests with its instance's prefix (GET /v1/status).
    const auto status = daemon.hostctl({"--json", "status"});
    REQUIRE(status.exit_code == 0);
    const std::string prefix =
        Json::parse(status.out)["instance"]["resource_prefix"].get<std::string>();

    // Follow the event stream; when the first run's benchmark is under way,
    // kill its QEMU process.
    bool killed = false;
    auto streamed =
        ds::http::stream_lines(daemon.socket(), "/v1/sweeps/1/events", [&](std::string_view line) {
            Json event = Json::parse(line, nullptr, false);
            if (event.value("type", "") != "run_progress" || event.value("phase", "") != "bench") {
                return event.value("type", "") != "sweep_finished";
            }
            std::string vm = prefix + "r" + std::to_string(event["run_id"].get<long>());
            std::this_thread::sleep_for(std::chrono::seconds(2));
            for (pid_t pid : ds::test::qemu_processes_mentioning(vm)) {
                ::kill(pid, SIGKILL);
                killed = true;
            }
            return !killed;
        });
    CHECK(streamed.ok());
    REQUIRE(killed);
    auto watched = daemon.hostctl({"sweep", "watch", "1"}, std::chrono::seconds(600));
    CHECK(watched.exit_code == 1);  // one run failed
    auto shown = daemon.hostctl({"--json", "sweep", "show", "1"});
    Json sweep = Json::parse(shown.out);
    REQUIRE(sweep["runs"].size() == 2);
    int failed = 0, succeeded = 0;
    for (const auto& run : sweep["runs"]) {
        if (run["status"] == "failed") {
            ++failed;
            CHECK(run["failure_reason"].get<std::string>().find("lost the guest agent mid-run") !=
                  std::string::npos);
        }
        if (run["status"] == "succeeded") ++succeeded;
    }
    CHECK(failed == 1);
    CHECK(succeeded == 1);
    CHECK(ds::test::qemu_processes_mentioning(daemon.state_dir()).empty());
    CHECK(std::filesystem::is_empty(daemon.state_dir() + "/volumes"));
}
