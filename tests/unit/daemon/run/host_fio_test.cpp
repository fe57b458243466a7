// Host baselines: where the job's jobs go on a raw volume, the fio commands
// for each kind of volume, and a baseline run through the executor (no
// guest). The real fio runs in tests/integration/host_baseline_test.cpp and,
// on RBD, in tests/backend/rbd_ceph_test.cpp.
#include "daemon/run/host_fio.h"

#include <catch2/catch.hpp>

#include "support/fakes/daemon_fakes.h"
#include "support/fakes/process_runner_fakes.h"
#include "support/test_data.h"

namespace ds {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

// fio's answers: its version, and a recorded randrw output for any job.
ProcessOutput recorded_fio_answer(const testing::Argv& argv) {
    if (argv.size() == 2 && argv[1] == "--version") return testing::exited(0, "fio-3.33\n");
    return testing::exited(0, test::test_data_text("fio/randrw_4k_numjobs1.json"));
}

bool has(const std::vector<std::string>& argv, const std::string& arg) {
    return std::find(argv.begin(), argv.end(), arg) != argv.end();
}

Workload fio(Json params) {
    return Workload{"seed", "fio", std::move(params), {}, 0};
}

}  // namespace

TEST_CASE("host baseline: each job gets its own region when they all fit", "[host_fio]") {
    const Json params = {{"size", "256m"}, {"numjobs", 4}};
    auto fits = plan_raw_volume_layout(params, 1024 * kMiB);
    REQUIRE(fits.ok());
    CHECK(fits->separate_regions);
    CHECK(fits->job_bytes == 256 * kMiB);
    CHECK(fits->prefill_bytes == 1024 * kMiB);

    auto shared = plan_raw_volume_layout(params, 512 * kMiB);
    REQUIRE(shared.ok());
    CHECK_FALSE(shared->separate_regions);
    CHECK(shared->prefill_bytes == 256 * kMiB);

    // No size: fio uses the whole volume.
    auto whole = plan_raw_volume_layout(Json{{"options", {{"numjobs", "2"}}}}, 64 * kMiB);
    REQUIRE(whole.ok());
    CHECK(whole->job_bytes == 64 * kMiB);
    CHECK(whole->numjobs == 2);
    CHECK_FALSE(whole->separate_regions);

    auto bad = plan_raw_volume_layout(Json{{"size", "50%"}}, 64 * kMiB);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().message ==
          "host baseline: fio option 'size' is '50%', expected a size such "
          "as 256m");
}

TEST_CASE("host baseline: commands for block devices and RBD images", "[host_fio]") {
    const Workload workload = fio({{"rw", "randrw"}, {"ioengine", "libaio"}, {"size", "64m"}});
    auto layout = plan_raw_volume_layout(workload.params, 1024 * kMiB);
    REQUIRE(layout.ok());

    auto block = host_fio_commands(workload, BlockDisk{"/dev/vg0/thin7"}, *layout);
    REQUIRE(block.ok());
    CHECK(block->job.front() == "fio");
    CHECK(has(block->job, "--filename=/dev/vg0/thin7"));
    CHECK(has(block->job, "--ioengine=libaio"));
    CHECK(has(block->prefill, "--rw=write"));
    CHECK(has(block->prefill, "--size=67108864"));
    CHECK(has(block->prefill, "--filename=/dev/vg0/thin7"));

    RbdDisk rbd{"pool1", "disksweep-r3-data", {"127.0.0.1:6789"}, "disksweep", "/k", "/c.conf"};
    auto image = host_fio_commands(workload, rbd, *layout);
    REQUIRE(image.ok());
    // librados finds monitors and key through CEPH_CONF; librbd is the engine.
    CHECK(std::vector<std::string>(image->job.begin(), image->job.begin() + 3) ==
          std::vector<std::string>{"env", "CEPH_CONF=/c.conf", "fio"});
    CHECK(has(image->job, "--ioengine=rbd"));
    CHECK_FALSE(has(image->job, "--ioengine=libaio"));
    CHECK(has(image->job, "--rbdname=disksweep-r3-data"));
    CHECK(has(image->prefill, "--ioengine=rbd"));
    CHECK(has(image->prefill, "--bs=4m"));

    auto allocated =
        host_fio_commands(workload, HypervisorAllocatedDisk{"local-lvm", kMiB}, *layout);
    REQUIRE_FALSE(allocated.ok());
    CHECK(allocated.error().code == errc::kUnsupported);
}

TEST_CASE("host baseline: a run with no guest, recorded with fio's metrics", "[host_fio]") {
    testing::ExecutorFixture fixture;
    testing::ScriptedProcessRunner runner;
    runner.otherwise = recorded_fio_answer;
    fixture.host_processes = &runner;
    StorageConfig config = host_baseline_for(testing::reference_config());
    const RunRecord run = fixture.execute(fixture.pending_run(config));

    INFO(run.failure_reason);
    REQUIRE(run.status == RunStatus::kSucceeded);
    CHECK(fixture.hypervisor.started().empty());
    CHECK(fixture.hypervisor.destroyed().empty());
    CHECK(fixture.storage.removed() == fixture.storage.created());
    CHECK(run.accel == "none");
    CHECK(run.vm_name.empty());
    CHECK(run.metrics.at("read_iops") > 0);
    CHECK(run.timings.contains("job_s"));
    CHECK(run.timings.contains("prefill_s"));
    CHECK_FALSE(run.timings.contains("boot_s"));
    CHECK(run.versions["fio_version"] == "fio-3.33");
    CHECK(run.applied_settings["host_baseline"]["job_command"].get<std::string>().find(
              "--filename=/fake/volumes/") != std::string::npos);
    // Prefill, then the job (after fio --version).
    REQUIRE(runner.commands.size() == 3);
    CHECK(has(runner.commands[1], "--name=prefill"));
}

TEST_CASE("host baseline: without a host process runner the run fails and says why", "[host_fio]") {
    testing::ExecutorFixture fixture;
    const RunRecord run =
        fixture.execute(fixture.pending_run(host_baseline_for(testing::reference_config())));
    CHECK(run.status == RunStatus::kFailed);
    CHECK(run.failure_reason == "this disksweepd cannot run host baselines");
    CHECK(fixture.storage.live_volumes().empty());
}

}  // namespace ds
