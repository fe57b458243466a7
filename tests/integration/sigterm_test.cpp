// SIGTERM while a run is in flight (issue 9): a real disksweepd with a real
// TCG guest mid-benchmark stops within the unit's TimeoutStopSec, records the
// run as interrupted, and leaves no QEMU process and no volume; the next
// start gives that run a new attempt. Needs the guest image
// (DISKSWEEP_TEST_IMAGE_DIR); skips without it.
#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <thread>

#include "common/http.h"
#include "daemon/store/store.h"
#include "support/daemon_fixture.h"

namespace {

namespace fs = std::filesystem;
using ds::Json;
using ds::test::DaemonFixture;

// TimeoutStopSec of the shipped unit, in seconds: what systemd grants the
// daemon between SIGTERM and SIGKILL.
int unit_timeout_stop_s() {
    std::ifstream unit(std::string(DISKSWEEP_SOURCE_DIR) + "/systemd/disksweepd.service");
    REQUIRE(unit);
    const std::regex setting(R"(^\s*TimeoutStopSec\s*=\s*(\d+)\s*(s)?\s*$)");
    std::string line;
    while (std::getline(unit, line)) {
        std::smatch match;
        if (std::regex_match(line, match, setting)) return std::stoi(match[1]);
    }
    FAIL("systemd/disksweepd.service sets no TimeoutStopSec in seconds");
    return 0;
}

const char* kLongRun = R"(
name = "sigterm"
[matrix]
filesystem = "ext4"
[[workload]]
kind = "fio"
rw = "randwrite"
bs = "4k"
size = "16m"
runtime = "300s"
time_based = true
)";

// Follows the sweep's events until its run reports the benchmark under way.
std::int64_t wait_for_bench(const DaemonFixture& daemon) {
    std::int64_t run_id = 0;
    auto streamed =
        ds::http::stream_lines(daemon.socket(), "/v1/sweeps/1/events", [&](std::string_view line) {
            Json event = Json::parse(line, nullptr, false);
            if (event.value("type", "") == "run_progress" && event.value("phase", "") == "bench") {
                run_id = event["run_id"].get<std::int64_t>();
                return false;
            }
            return event.value("type", "") != "sweep_finished";
        });
    INFO(daemon.log());
    REQUIRE(streamed.ok());
    REQUIRE(run_id > 0);
    return run_id;
}

Json runs_of_sweep(const DaemonFixture& daemon) {
    auto shown = daemon.hostctl({"--json", "sweep", "show", "1"});
    INFO(shown.err << daemon.log());
    REQUIRE(shown.exit_code == 0);
    return Json::parse(shown.out)["runs"];
}

TEST_CASE("SIGTERM mid-run stops within TimeoutStopSec, leaves nothing, and the run is retried",
          "[integration][sigterm]") {
    const std::string image_dir = ds::test::test_image_dir();  // skips when unset
    if (!fs::exists(image_dir + "/root.img")) FAIL("guest image missing in " + image_dir);
    const int timeout_stop_s = unit_timeout_stop_s();
    DaemonFixture daemon({"--image-dir", image_dir, "--accel", "tcg"});
    REQUIRE(daemon.ready());
    auto spec = ds::test::write_temp_file("sigterm.toml", kLongRun);
    REQUIRE(daemon.hostctl({"sweep", "submit", spec}).exit_code == 0);
    const std::int64_t run_id = wait_for_bench(daemon);
    // The guest's name as the daemon recorded it (its instance's prefix).
    const std::string vm = runs_of_sweep(daemon).at(0).at("vm_name");
    CHECK(vm.ends_with("-r" + std::to_string(run_id)));
    REQUIRE_FALSE(ds::test::qemu_processes_mentioning(vm).empty());

    const auto signalled = std::chrono::steady_clock::now();
    const int status = daemon.stop(SIGTERM);
    const double stop_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
    INFO(daemon.log());
    std::cout << "sigterm: disksweepd stopped " << stop_s << " s after SIGTERM (TimeoutStopSec "
              << timeout_stop_s << ")" << std::endl;
    CHECK(stop_s < timeout_stop_s);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(ds::test::qemu_processes_mentioning(daemon.state_dir()).empty());
    CHECK(fs::is_empty(daemon.state_dir() + "/volumes"));

    // The next start runs it again as attempt 2; attempt 1 stays, interrupted.
    REQUIRE(daemon.restart());
    const Json runs = runs_of_sweep(daemon);
    REQUIRE(runs.size() == 2);
    CHECK(runs[0]["id"] == run_id);
    CHECK(runs[0]["status"] == "failed");
    CHECK(runs[0]["attempt"] == 1);
    CHECK(runs[0]["failure_reason"].get<std::string>().rfind(ds::kInterruptedReason, 0) == 0);
    CHECK(runs[0]["superseded_by"] == runs[1]["id"]);
    CHECK(runs[1]["attempt"] == 2);
    CHECK(runs[1]["superseded_by"].is_null());
    CHECK(runs[1]["status"] != "failed");
    // The fixture's SIGTERM ends attempt 2 the same way.
}

}  // namespace
