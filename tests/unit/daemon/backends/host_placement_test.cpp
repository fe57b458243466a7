// HostPool's placement rules (daemon/backends/hosts.h): whole rounds on one
// host, the backoff of a host that fails runs by its own fault, the slots a
// scheduler holds for the runs it starts, and the per-host status.
#include <catch2/catch.hpp>
#include <future>
#include <thread>

#include "daemon/backends/hosts.h"
#include "support/fake_clock.h"
#include "support/fakes/daemon_fakes.h"

using namespace ds;
using namespace std::chrono_literals;

namespace {

constexpr std::int64_t kSweep = 7;

std::unique_ptr<Host> libvirt_host(const std::string& name, int parallel) {
    auto host = std::make_unique<Host>();
    host->description = {.name = name, .kind = "libvirt", .detail = "fake"};
    host->hypervisor = std::make_unique<testing::FakeHypervisor>();
    host->parallel = parallel;
    return host;
}

// A run of round `repetition` of sweep kSweep on a file disk.
PlacementRequest round_run(int repetition, std::int64_t run_id = 0,
                           std::int64_t sweep_id = kSweep) {
    StorageConfig config;
    config.hypervisor = "libvirt";
    config.storage = "file";
    return PlacementRequest{config, {}, sweep_id, repetition, run_id};
}

std::string host_of(const Result<HostLease>& lease) {
    REQUIRE(lease.ok());
    return lease->host().description.name;
}

Json status_of(const HostPool& pool, std::size_t index) {
    return pool.placement_status(*pool.hosts().at(index));
}

// Hosts a and b of one slot each, their backoffs timed by a fake clock.
struct TwoHosts {
    test::FakeClock clock;
    HostPool pool{clock};
    std::atomic<bool> cancelled{false};
    TwoHosts() {
        pool.add(libvirt_host("a", 1));
        pool.add(libvirt_host("b", 1));
    }
};

// An acquire on another thread, checked to be waiting still after 300 ms.
std::future<Result<HostLease>> waiting_acquire(HostPool& pool, const PlacementRequest& request,
                                               const std::atomic<bool>& cancelled) {
    auto waiting = std::async(std::launch::async, [&pool, request, &cancelled] {
        return pool.acquire(request, cancelled);
    });
    CHECK(waiting.wait_for(300ms) == std::future_status::timeout);
    return waiting;
}

// Leases a slot for round `repetition`, reports a host fault and frees it.
std::string fail_on_host(HostPool& pool, int repetition, const std::string& reason) {
    const std::atomic<bool> cancelled{false};
    auto lease = pool.acquire(round_run(repetition), cancelled);
    const std::string name = host_of(lease);
    lease->report(HostVerdict::kFault, reason);
    return name;
}

}  // namespace

TEST_CASE(
    "placement: a round stays on the host its first run took, and the next round takes the "
    "least busy host",
    "[hosts][placement]") {
    HostPool pool;
    pool.add(libvirt_host("a", 2));
    pool.add(libvirt_host("b", 3));
    std::atomic<bool> cancelled{false};

    auto first = pool.acquire(round_run(0), cancelled);
    CHECK(host_of(first) == "a");  // a tie: configuration order
    auto second = pool.acquire(round_run(0), cancelled);
    CHECK(host_of(second) == "a");  // least busy alone would take b
    auto next_round = pool.acquire(round_run(1), cancelled);
    CHECK(host_of(next_round) == "b");
    auto next_round_second = pool.acquire(round_run(1), cancelled);
    CHECK(host_of(next_round_second) == "b");

    // Round 0's host is full: its third run waits although b has a slot.
    auto waiting = waiting_acquire(pool, round_run(0), cancelled);
    CHECK(status_of(pool, 1)["busy"] == 2);
    { auto freed = std::move(first).value(); }
    REQUIRE(waiting.wait_for(5s) == std::future_status::ready);
    auto third = waiting.get();
    CHECK(host_of(third) == "a");

    // Another sweep's round 0 is another round: the least busy host.
    auto other_sweep = pool.acquire(round_run(0, 0, kSweep + 1), cancelled);
    CHECK(host_of(other_sweep) == "b");
}

TEST_CASE("placement: a finished sweep's rounds are forgotten", "[hosts][placement]") {
    HostPool pool;
    pool.add(libvirt_host("a", 2));
    pool.add(libvirt_host("b", 2));
    std::atomic<bool> cancelled{false};
    {
        auto on_a = pool.acquire(round_run(0), cancelled);
        CHECK(host_of(on_a) == "a");
    }
    auto busy_a = pool.acquire(round_run(5, 0, kSweep + 1), cancelled);
    CHECK(host_of(busy_a) == "a");
    // Remembered: round 0 goes back to a although b is less busy.
    {
        auto again = pool.acquire(round_run(0), cancelled);
        CHECK(host_of(again) == "a");
    }
    pool.forget_sweep(kSweep);
    auto placed_afresh = pool.acquire(round_run(0), cancelled);
    CHECK(host_of(placed_afresh) == "b");
}

TEST_CASE(
    "placement: a host failing runs by its own fault is backed off after two failures and "
    "the next rounds wait for the other host (issue 20: it took 3 of 4)",
    "[hosts][placement]") {
    TwoHosts hosts;
    HostPool& pool = hosts.pool;
    std::atomic<bool>& cancelled = hosts.cancelled;
    std::vector<std::string> logged;
    pool.log_backoffs([&logged](const std::string& line) { logged.push_back(line); });

    // a fails each run at once, so it is the least busy host again at once.
    CHECK(fail_on_host(pool, 0, "boot: agent did not connect within 20 s\n--- console tail ---") ==
          "a");
    CHECK(status_of(pool, 0)["backed_off_until"].is_null());  // one failure is no pattern
    CHECK(fail_on_host(pool, 1, "cannot start the guest: connection lost") == "a");

    const Json status = status_of(pool, 0);
    CHECK(status["consecutive_failures"] == 2);
    CHECK(status["backed_off_until"] == "2026-01-01T00:00:30Z");
    CHECK(status["last_failure"] == "cannot start the guest: connection lost");
    CHECK(status["busy"] == 0);
    CHECK(status["parallel"] == 1);
    CHECK(status_of(pool, 1)["consecutive_failures"] == 0);
    CHECK(logged == std::vector<std::string>{
                        "host a backed off for 30 s after 2 failures in a row by its own fault: "
                        "cannot start the guest: connection lost"});

    auto third = pool.acquire(round_run(2), cancelled);
    CHECK(host_of(third) == "b");
    // Round 3: a is idle but backed off, b is busy: the run waits for b.
    auto waiting = waiting_acquire(pool, round_run(3), cancelled);
    { auto finished = std::move(third).value(); }
    REQUIRE(waiting.wait_for(5s) == std::future_status::ready);
    auto fourth = waiting.get();
    CHECK(host_of(fourth) == "b");
}

TEST_CASE("placement: a round whose host is backed off is placed again", "[hosts][placement]") {
    TwoHosts hosts;
    HostPool& pool = hosts.pool;
    CHECK(fail_on_host(pool, 0, "boot failed") == "a");
    CHECK(fail_on_host(pool, 0, "boot failed") == "a");
    auto third = pool.acquire(round_run(0), hosts.cancelled);
    CHECK(host_of(third) == "b");
}

TEST_CASE(
    "placement: when every eligible host is backed off the run waits for the first backoff "
    "to end, cancellably",
    "[hosts][placement]") {
    TwoHosts hosts;
    HostPool& pool = hosts.pool;
    // a is backed off first, so its backoff ends first: b's is 10 s later.
    CHECK(fail_on_host(pool, 0, "boot failed") == "a");
    CHECK(fail_on_host(pool, 1, "boot failed") == "a");
    CHECK(fail_on_host(pool, 2, "boot failed") == "b");
    hosts.clock.advance(10s);
    CHECK(fail_on_host(pool, 3, "boot failed") == "b");
    CHECK(status_of(pool, 0)["backed_off_until"] == "2026-01-01T00:00:30Z");
    CHECK(status_of(pool, 1)["backed_off_until"] == "2026-01-01T00:00:40Z");

    auto waiting = waiting_acquire(pool, round_run(4), hosts.cancelled);
    hosts.clock.advance(20s);  // a's backoff has ended, b's has not
    REQUIRE(waiting.wait_for(5s) == std::future_status::ready);
    auto resumed = waiting.get();
    CHECK(host_of(resumed) == "a");
    CHECK(status_of(pool, 0)["backed_off_until"].is_null());
    CHECK_FALSE(status_of(pool, 1)["backed_off_until"].is_null());

    auto given_up = waiting_acquire(pool, round_run(5), hosts.cancelled);  // a busy, b backed off
    hosts.cancelled = true;
    REQUIRE(given_up.wait_for(5s) == std::future_status::ready);
    auto cancelled_wait = given_up.get();
    REQUIRE_FALSE(cancelled_wait.ok());
    CHECK(cancelled_wait.error().code == errc::kCancelled);
}

TEST_CASE(
    "placement: a backoff doubles per further fault up to 10 minutes, and a run the host "
    "ran ends it",
    "[hosts][placement]") {
    test::FakeClock clock;
    HostPool pool(clock);
    pool.add(libvirt_host("a", 2));
    std::atomic<bool> cancelled{false};
    const auto backed_off_until = [&] { return status_of(pool, 0)["backed_off_until"]; };

    // Cancelled and interrupted runs say nothing; a run the host ran resets.
    auto running = pool.acquire(round_run(0), cancelled);
    REQUIRE(running.ok());
    running->report(HostVerdict::kUnjudged);
    running->report(HostVerdict::kFault, "boot failed");
    running->report(HostVerdict::kWorked);
    running->report(HostVerdict::kFault, "boot failed");
    running->report(HostVerdict::kUnjudged);
    CHECK(status_of(pool, 0)["consecutive_failures"] == 1);
    CHECK(backed_off_until().is_null());

    int round = 1;
    for (int seconds : {30, 60, 120, 240, 480, 600, 600}) {
        auto lease = pool.acquire(round_run(round++), cancelled);
        REQUIRE(lease.ok());
        lease->report(HostVerdict::kFault, "boot failed");
        CHECK(backed_off_until() == utc_iso8601(clock.wall_now() + std::chrono::seconds(seconds)));
        clock.advance(std::chrono::seconds(seconds));
    }
    CHECK(status_of(pool, 0)["consecutive_failures"] == 8);

    // Backed off again; the run that ran on it all along succeeds: that ends it.
    auto last = pool.acquire(round_run(round++), cancelled);
    last->report(HostVerdict::kFault, "boot failed");
    CHECK_FALSE(backed_off_until().is_null());
    running->report(HostVerdict::kWorked);
    CHECK(status_of(pool, 0)["consecutive_failures"] == 0);
    CHECK(backed_off_until().is_null());
    CHECK(status_of(pool, 0)["last_failure"] == "boot failed");  // kept for the record
}

TEST_CASE("placement: a slot held for a run is that run's, and an unused hold is freed",
          "[hosts][placement]") {
    HostPool pool;
    pool.add(libvirt_host("a", 1));
    pool.add(libvirt_host("b", 1));
    CHECK(pool.hold(round_run(0, 1)));
    CHECK_FALSE(pool.hold(round_run(0, 2)));  // round 0 is on a, which is full
    CHECK(pool.hold(round_run(1, 3)));
    CHECK(status_of(pool, 0)["busy"] == 1);
    CHECK(status_of(pool, 1)["busy"] == 1);
    CHECK_FALSE(pool.hold(round_run(2, 4)));  // every slot is held

    std::atomic<bool> cancelled{false};
    auto held = pool.acquire(round_run(0, 1), cancelled);  // at once: the slot is its own
    CHECK(host_of(held) == "a");
    CHECK(status_of(pool, 0)["busy"] == 1);
    pool.release_hold(1);  // taken already: nothing to free
    CHECK(status_of(pool, 0)["busy"] == 1);
    pool.release_hold(3);
    CHECK(status_of(pool, 1)["busy"] == 0);
    CHECK(pool.hold(round_run(2, 4)));

    StorageConfig nowhere;
    nowhere.hypervisor = "proxmox";
    nowhere.storage = "file";
    CHECK(pool.hold(PlacementRequest{nowhere, {}, kSweep, 0, 5}));  // its acquire fails at once
    CHECK(status_of(pool, 1)["busy"] == 1);
}

TEST_CASE(
    "placement: a durability run goes only to a host on this machine, and with none the error "
    "says why",
    "[hosts][placement]") {
    test::FakeClock clock;
    HostPool pool{clock};
    auto remote = libvirt_host("remote", 2);
    remote->description.remote = true;
    pool.add(std::move(remote));
    pool.add(libvirt_host("local", 2));
    const std::atomic<bool> cancelled{false};
    PlacementRequest durability = round_run(0, 0, 1);
    durability.needs_local_files = true;
    // The remote host is first and as idle: an ordinary run goes there.
    CHECK(host_of(pool.acquire(round_run(0, 0, 2), cancelled)) == "remote");
    CHECK(host_of(pool.acquire(durability, cancelled)) == "local");

    HostPool remote_only{clock};
    auto only = libvirt_host("remote", 1);
    only->description.remote = true;
    remote_only.add(std::move(only));
    auto refused = remote_only.acquire(durability, cancelled);
    REQUIRE_FALSE(refused.ok());
    CHECK_THAT(refused.error().message, Catch::Contains("remote hosts cannot take it"));
}
