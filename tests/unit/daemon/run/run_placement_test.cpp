// The run executor on a pool of hosts: each run tells its host how it went
// (HostLease::report), so a host that fails runs by its own fault is backed
// off and the next runs go to another host; a run that failed by its own
// settings does not count against its host.
#include <catch2/catch.hpp>

#include "daemon/backends/hosts.h"
#include "daemon/run/run_executor.h"
#include "support/fake_clock.h"
#include "support/fakes/daemon_fakes.h"

namespace ds {
namespace {

using namespace ds::testing;
using Catch::Matchers::Contains;

// Adds a libvirt host `name` with a fake hypervisor of its own; returns it.
FakeHypervisor& add_fake_host(HostPool& pool, const ExecutorFixture& fixture,
                              const std::string& name) {
    auto hypervisor = std::make_unique<FakeHypervisor>();
    FakeHypervisor& fake = *hypervisor;
    fake.set_guest_files_directory(fixture.config.run_dir());
    auto host = std::make_unique<Host>();
    host->description = {.name = name, .kind = "libvirt", .detail = "fake"};
    host->hypervisor = std::move(hypervisor);
    pool.add(std::move(host));
    return fake;
}

TEST_CASE(
    "executor on hosts: runs failing before their workload back their host off and the "
    "next runs go elsewhere, but a settings mismatch is not the host's fault",
    "[run_executor][placement]") {
    ExecutorFixture fixture;
    test::FakeClock clock;
    HostPool pool(clock);
    FakeHypervisor& broken = add_fake_host(pool, fixture, "a");
    FakeHypervisor& working = add_fake_host(pool, fixture, "b");
    broken.fail_start("cannot start domain: the connection to node a was reset");
    working.set_guest_script(well_behaved_guest());
    RunEnvironment environment = fixture.environment();
    environment.hosts = &pool;
    RunExecutor executor(environment);
    const std::atomic<bool> never{false};
    const auto run_once = [&](int boot_timeout_s = 5) {
        return executor.execute(fixture.pending_run(), boot_timeout_s, 10, never);
    };
    const auto status_of = [&](std::size_t host) {
        return pool.placement_status(*pool.hosts().at(host));
    };

    // Each a new sweep's first round: the least busy host, a, while not backed off.
    for (int failure = 1; failure <= 2; ++failure) {
        const RunRecord failed = run_once();
        CHECK(failed.status == RunStatus::kFailed);
        CHECK(failed.versions.value("host", "") == "a");
        CHECK(status_of(0)["consecutive_failures"] == failure);
    }
    CHECK_THAT(status_of(0)["last_failure"].get<std::string>(), Contains("was reset"));
    CHECK_FALSE(status_of(0)["backed_off_until"].is_null());

    const RunRecord elsewhere = run_once();
    INFO(elsewhere.failure_reason);
    CHECK(elsewhere.status == RunStatus::kSucceeded);
    CHECK(elsewhere.versions.value("host", "") == "b");

    GuestBehaviour mismatch;
    mismatch.readback_patch = Json{{"rotational", 1}};
    working.set_guest_script(well_behaved_guest(mismatch));
    const RunRecord not_in_force = run_once();
    CHECK_THAT(not_in_force.failure_reason, Contains("settings not in force"));
    CHECK(status_of(1)["consecutive_failures"] == 0);

    working.set_no_agent_socket();  // a guest that never says hello: the host's
    const RunRecord silent = run_once(1);
    CHECK_THAT(silent.failure_reason, Contains("agent did not connect"));
    CHECK(silent.versions.value("host", "") == "b");
    CHECK(status_of(1)["consecutive_failures"] == 1);
    CHECK(status_of(0)["busy"] == 0);
    CHECK(status_of(1)["busy"] == 0);
}

TEST_CASE(
    "executor on hosts: hold_host keeps a slot that the run's execute takes, and frees "
    "one the run never took",
    "[run_executor][placement]") {
    ExecutorFixture fixture;
    HostPool pool;
    add_fake_host(pool, fixture, "a").set_guest_script(well_behaved_guest());
    RunEnvironment environment = fixture.environment();
    environment.hosts = &pool;
    RunExecutor executor(environment);
    const auto busy = [&] { return pool.placement_status(*pool.hosts().at(0))["busy"]; };
    const std::atomic<bool> never{false};

    const RunRecord first = fixture.pending_run();
    const RunRecord second = fixture.pending_run();
    CHECK(executor.hold_host(first));
    CHECK(busy() == 1);
    CHECK_FALSE(executor.hold_host(second));  // a's one slot is held for the first
    const RunRecord finished = executor.execute(first, 5, 10, never);
    INFO(finished.failure_reason);
    CHECK(finished.status == RunStatus::kSucceeded);
    CHECK(busy() == 0);

    // Held, but it never places (a host baseline runs on no host of the
    // pool), and the slot is freed. (A stored configuration that cannot be
    // read no longer reaches the executor: the store refuses to read it.)
    CHECK(executor.hold_host(second));
    RunRecord unplaced = second;
    unplaced.config = host_baseline_for(unplaced.config);
    CHECK(busy() == 1);
    const RunRecord failed = executor.execute(unplaced, 5, 10, never);
    CHECK(failed.status == RunStatus::kFailed);
    CHECK_THAT(failed.failure_reason, Contains("host baseline"));
    CHECK(busy() == 0);
}

}  // namespace
}  // namespace ds
