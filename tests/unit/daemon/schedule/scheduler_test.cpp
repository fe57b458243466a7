// Scheduler against a real Store and EventBus with a fake ExecuteRun (which
// records, like the real executor, running -> finished in the store and
// publishes run_finished), plus one case with the real RunExecutor behind
// fakes.
#include "daemon/schedule/scheduler.h"

#include <catch2/catch.hpp>
#include <condition_variable>
#include <set>
#include <stdexcept>

#include "common/clock.h"
#include "daemon/backends/hosts.h"
#include "daemon/plan/expand.h"
#include "support/fake_clock.h"
#include "support/fakes/daemon_fakes.h"

namespace ds {
namespace {

using namespace ds::testing;

// The fake ExecuteRun: marks the run running, "runs" it for `duration` (or
// until cancelled / released), records the outcome and publishes
// run_finished, as RunExecutor does.
struct FakeRunner {
    explicit FakeRunner(Store& store, EventBus& events) : store(store), events(events) {}

    Store& store;
    EventBus& events;
    std::chrono::milliseconds duration = 20ms;
    // A run starts its `duration` only once this many run at the same time
    // (or after 2 s), so a concurrency limit is reached deterministically.
    int rendezvous = 1;
    bool block_until_cancelled_or_released = false;
    std::atomic<bool> released{false};
    std::map<int, RunStatus> outcome_by_sequence;  // default: succeeded
    std::function<void(const RunRecord&)> on_start;
    // When set, a run's `duration` passes on this clock at once instead of
    // in real time.
    test::FakeClock* clock = nullptr;

    std::atomic<int> active{0};
    std::atomic<int> max_active{0};
    std::atomic<int> saw_cancel{0};
    std::atomic<int> finish_errors{0};  // checked by the test thread (no REQUIRE off it)
    mutable std::mutex mutex;
    std::vector<std::pair<std::int64_t, int>> started;  // (sweep, sequence)
    std::vector<SweepTimeouts> timeouts;
    std::vector<double> seconds;  // how long each execute() took, in start order

    Scheduler::ExecuteRun function() {
        return [this](const RunRecord& run, const SweepTimeouts& sweep_timeouts,
                      const std::atomic<bool>& cancelled) {
            return execute(run, sweep_timeouts, cancelled);
        };
    }

    RunRecord execute(const RunRecord& run, const SweepTimeouts& sweep_timeouts,
                      const std::atomic<bool>& cancelled) {
        const auto entered = std::chrono::steady_clock::now();
        Status marked = store.mark_run_running(run.id, "vm", "vol", "", "tcg", utc_now_iso8601());
        if (!marked.ok()) return store.get_run(run.id).value();
        {
            std::lock_guard lock(mutex);
            started.emplace_back(run.sweep_id, run.sequence);
            timeouts.push_back(sweep_timeouts);
        }
        const int now = ++active;
        int previous = max_active.load();
        while (now > previous && !max_active.compare_exchange_weak(previous, now)) {
        }
        if (on_start) on_start(run);
        const auto peers_deadline = std::chrono::steady_clock::now() + 2s;
        while (max_active.load() < rendezvous &&
               std::chrono::steady_clock::now() < peers_deadline) {
            std::this_thread::sleep_for(1ms);
        }
        if (clock && !block_until_cancelled_or_released) clock->advance(duration);
        const auto end = std::chrono::steady_clock::now() + (clock ? 0ms : duration);
        while (!cancelled.load()) {
            if (block_until_cancelled_or_released ? released.load()
                                                  : std::chrono::steady_clock::now() >= end) {
                break;
            }
            std::this_thread::sleep_for(2ms);
        }
        RunRecord finished = run;
        if (cancelled.load()) {
            ++saw_cancel;
            finished.status = RunStatus::kCancelled;
            finished.failure_reason = "cancelled";
        } else {
            auto it = outcome_by_sequence.find(run.sequence);
            finished.status = it == outcome_by_sequence.end() ? RunStatus::kSucceeded : it->second;
            if (finished.status == RunStatus::kFailed) finished.failure_reason = "fake failure";
        }
        finished.finished_at = utc_now_iso8601();
        if (!store.finish_run(finished).ok()) ++finish_errors;
        events.publish(
            run.sweep_id,
            Json{{"type", "run_finished"}, {"run_id", run.id}, {"status", finished.status}});
        {
            std::lock_guard lock(mutex);
            seconds.push_back(
                std::chrono::duration<double>(std::chrono::steady_clock::now() - entered).count());
        }
        --active;
        return finished;
    }

    std::vector<int> sequences_started() const {
        std::lock_guard lock(mutex);
        std::vector<int> out;
        for (const auto& [sweep, sequence] : started) out.push_back(sequence);
        return out;
    }
    std::size_t calls() const {
        std::lock_guard lock(mutex);
        return started.size();
    }
};

bool wait_until(const std::function<bool()>& condition,
                std::chrono::milliseconds timeout = 5000ms) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!condition()) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(2ms);
    }
    return true;
}

std::string sweep_status_of(Store& store, std::int64_t sweep_id) {
    auto sweep = store.get_sweep(sweep_id);
    REQUIRE(sweep.ok());
    return to_string(sweep->status);
}

std::map<std::string, int> statuses_of(Store& store, std::int64_t sweep_id) {
    auto counts = store.run_counts(sweep_id);
    REQUIRE(counts.ok());
    return counts.value();
}

struct SchedulerFixture {
    TempDir dir;
    std::unique_ptr<Store> store = open_store(dir.file("results.db"));
    EventBus events;
    FakeRunner runner{*store, events};
    ~SchedulerFixture() { CHECK(runner.finish_errors == 0); }
};

TEST_CASE("scheduler: runs execute in sequence order and the sweep goes queued->running->succeeded",
          "[scheduler]") {
    SchedulerFixture f;
    // Planned out of order: the store orders by sequence, the scheduler keeps it.
    std::vector<RunRecord> planned;
    for (int sequence : {3, 0, 2, 1}) {
        planned.push_back(planned_run(reference_config(), fio_workload(), sequence, sequence));
    }
    SweepRecord sweep;
    sweep.name = "ordered";
    sweep.created_at = utc_now_iso8601();
    auto sweep_id = f.store->create_sweep(sweep, planned);
    REQUIRE(sweep_id.ok());
    CHECK(sweep_status_of(*f.store, *sweep_id) == "queued");

    std::vector<std::string> status_during_runs;
    f.runner.on_start = [&](const RunRecord& run) {  // on the worker: no Catch macros
        auto sweep = f.store->get_sweep(run.sweep_id);
        status_during_runs.push_back(sweep.ok() ? to_string(sweep->status) : sweep.error().message);
    };
    EventLog events(f.events, *sweep_id);
    Scheduler scheduler(*f.store, f.events, f.runner.function(), 1);
    scheduler.start();
    REQUIRE(scheduler.submit(*sweep_id, SweepTimeouts{7, 42}).ok());
    REQUIRE(events.wait_for("sweep_finished", 5s));

    CHECK(f.runner.sequences_started() == std::vector<int>{0, 1, 2, 3});
    CHECK(f.runner.max_active == 1);
    CHECK(status_during_runs == std::vector<std::string>(4, "running"));
    CHECK(sweep_status_of(*f.store, *sweep_id) == "succeeded");
    CHECK(statuses_of(*f.store, *sweep_id).at("succeeded") == 4);
    auto stored = f.store->get_sweep(*sweep_id);
    CHECK_FALSE(stored->started_at.empty());
    CHECK_FALSE(stored->finished_at.empty());
    for (const auto& timeouts : f.runner.timeouts) {
        CHECK(timeouts.boot_timeout_s == 7);
        CHECK(timeouts.run_timeout_s == 42);
    }
}

TEST_CASE("scheduler: at most N runs at once, and N are used", "[scheduler]") {
    SchedulerFixture f;
    const int parallel = GENERATE(2, 3);
    const auto sweep_id = create_sweep(*f.store, 7);
    f.runner.duration = 30ms;
    f.runner.rendezvous = parallel;
    EventLog events(f.events, sweep_id);
    Scheduler scheduler(*f.store, f.events, f.runner.function(), parallel);
    scheduler.start();
    REQUIRE(scheduler.submit(sweep_id, SweepTimeouts{}).ok());
    REQUIRE(events.wait_for("sweep_finished", 5s));

    CHECK(f.runner.max_active == parallel);
    CHECK(f.runner.calls() == 7);
    auto started = f.runner.sequences_started();
    CHECK(std::set<int>(started.begin(), started.end()).size() == 7);
    // The first N to start are the first N in sequence order.
    std::set<int> first(started.begin(), started.begin() + parallel);
    std::set<int> expected_first;
    for (int i = 0; i < parallel; ++i) expected_first.insert(i);
    CHECK(first == expected_first);
    CHECK(sweep_status_of(*f.store, sweep_id) == "succeeded");
}

TEST_CASE("scheduler: a failed run fails the sweep but the others still run", "[scheduler]") {
    SchedulerFixture f;
    const auto sweep_id = create_sweep(*f.store, 3);
    f.runner.outcome_by_sequence[1] = RunStatus::kFailed;
    EventLog events(f.events, sweep_id);
    Scheduler scheduler(*f.store, f.events, f.runner.function(), 1);
    scheduler.start();
    REQUIRE(scheduler.submit(sweep_id, SweepTimeouts{}).ok());
    REQUIRE(events.wait_for("sweep_finished", 5s));
    CHECK(f.runner.calls() == 3);
    CHECK(sweep_status_of(*f.store, sweep_id) == "failed");
    auto counts = statuses_of(*f.store, sweep_id);
    CHECK(counts.at("succeeded") == 2);
    CHECK(counts.at("failed") == 1);
    CHECK(events.all().back().at("status") == "failed");
}

TEST_CASE("scheduler: an executor that throws fails only that run and the worker goes on",
          "[scheduler][regression]") {
    // ExecuteRun must not throw; if it does (a bug), the exception must not
    // reach std::thread's std::terminate and take every other run with it.
    SchedulerFixture f;
    const auto sweep_id = create_sweep(*f.store, 4);
    auto execute = [&f](const RunRecord& run, const SweepTimeouts& timeouts,
                        const std::atomic<bool>& cancelled) -> RunRecord {
        if (run.sequence == 1) throw std::runtime_error("vector::_M_range_check");
        RunRecord finished = f.runner.execute(run, timeouts, cancelled);
        if (run.sequence == 2) throw 42;  // after it was recorded, and not a std::exception
        return finished;
    };
    EventLog events(f.events, sweep_id);
    Scheduler scheduler(*f.store, f.events, execute, 1);  // one worker: it must survive
    scheduler.start();
    REQUIRE(scheduler.submit(sweep_id, SweepTimeouts{}).ok());
    REQUIRE(events.wait_for("sweep_finished", 5s));
    scheduler.stop();

    CHECK(f.runner.sequences_started() == std::vector<int>{0, 2, 3});
    auto runs = f.store->list_runs(sweep_id);
    REQUIRE(runs.ok());
    REQUIRE(runs->size() == 4);
    CHECK(runs->at(0).status == RunStatus::kSucceeded);
    CHECK(runs->at(1).status == RunStatus::kFailed);
    CHECK(runs->at(1).failure_reason == "internal error (bug): vector::_M_range_check");
    CHECK_FALSE(runs->at(1).finished_at.empty());
    // Recorded before it threw: the store's record stands.
    CHECK(runs->at(2).status == RunStatus::kSucceeded);
    CHECK(runs->at(3).status == RunStatus::kSucceeded);
    CHECK(sweep_status_of(*f.store, sweep_id) == "failed");

    bool reported = false;
    for (const Json& event : events.all()) {
        if (event.at("type") == "run_finished" && event.at("run_id") == runs->at(1).id) {
            reported = event.at("status") == "failed" &&
                       event.at("message") == "internal error (bug): vector::_M_range_check";
        }
    }
    CHECK(reported);
}

TEST_CASE("scheduler: events come as run_finished, progress ... sweep_finished", "[scheduler]") {
    SchedulerFixture f;
    const auto sweep_id = create_sweep(*f.store, 3);
    EventLog events(f.events, sweep_id);
    Scheduler scheduler(*f.store, f.events, f.runner.function(), 1);
    scheduler.start();
    REQUIRE(scheduler.submit(sweep_id, SweepTimeouts{}).ok());
    REQUIRE(events.wait_for("sweep_finished", 5s));

    CHECK(events.types() == std::vector<std::string>{"run_finished", "progress", "run_finished",
                                                     "progress", "run_finished", "progress",
                                                     "sweep_finished"});
    const auto all = events.all();
    for (int i = 0; i < 3; ++i) {
        const Json& progress = all[2 * i + 1];
        INFO(progress.dump());
        CHECK(progress.at("counts").at("succeeded") == i + 1);
        CHECK(progress.at("counts").at("pending") == 2 - i);
        CHECK(progress.at("eta_s").get<double>() >= 0);
        CHECK(progress.at("sweep_id") == sweep_id);
    }
    CHECK(all[5].at("eta_s") == 0.0);
    CHECK(all[6].at("status") == "succeeded");
    CHECK(all[6].at("counts").at("succeeded") == 3);
}

TEST_CASE("scheduler: cancel marks pending runs cancelled and the sweep cancelled", "[scheduler]") {
    SchedulerFixture f;
    const auto sweep_id = create_sweep(*f.store, 4);
    f.runner.block_until_cancelled_or_released = true;
    EventLog events(f.events, sweep_id);
    Scheduler scheduler(*f.store, f.events, f.runner.function(), 1);
    scheduler.start();
    REQUIRE(scheduler.submit(sweep_id, SweepTimeouts{}).ok());
    REQUIRE(wait_until([&] { return f.runner.active == 1; }));

    // The runner blocks until it is cancelled: the sweep can only finish
    // because cancel() reached the running run (saw_cancel below).
    REQUIRE(scheduler.cancel(sweep_id).ok());
    REQUIRE(events.wait_for("sweep_finished", 5s));

    CHECK(f.runner.calls() == 1);  // the pending ones never started
    CHECK(f.runner.saw_cancel == 1);
    CHECK(statuses_of(*f.store, sweep_id).at("cancelled") == 4);
    CHECK(sweep_status_of(*f.store, sweep_id) == "cancelled");
    CHECK(events.all().back().at("status") == "cancelled");
    CHECK(events.all().back().at("counts").at("cancelled") == 4);

    auto again = scheduler.cancel(sweep_id);
    REQUIRE_FALSE(again.ok());
    CHECK(again.error().code == errc::kConflict);
    CHECK(again.error().message ==
          "sweep " + std::to_string(sweep_id) + " is already cancelled; nothing to cancel");
}

TEST_CASE("scheduler: sweeps are first come first served, a queued sweep cancels at once",
          "[scheduler]") {
    SchedulerFixture f;
    const auto first = create_sweep(*f.store, 2, "first");
    const auto second = create_sweep(*f.store, 2, "second");
    const auto third = create_sweep(*f.store, 1, "third");
    f.runner.block_until_cancelled_or_released = true;
    EventLog second_events(f.events, second);
    EventLog first_events(f.events, first);
    Scheduler scheduler(*f.store, f.events, f.runner.function(), 1);
    scheduler.start();
    REQUIRE(scheduler.submit(first, SweepTimeouts{}).ok());
    REQUIRE(scheduler.submit(second, SweepTimeouts{}).ok());
    REQUIRE(scheduler.submit(third, SweepTimeouts{}).ok());
    REQUIRE(wait_until([&] { return f.runner.active == 1; }));

    REQUIRE(scheduler.cancel(second).ok());
    // Nothing of the second sweep ran; it is finished without waiting.
    CHECK(second_events.types() == std::vector<std::string>{"sweep_finished"});
    CHECK(sweep_status_of(*f.store, second) == "cancelled");
    CHECK(sweep_status_of(*f.store, first) == "running");

    f.runner.released = true;
    REQUIRE(first_events.wait_for("sweep_finished", 5s));
    REQUIRE(wait_until([&] { return sweep_status_of(*f.store, third) == "succeeded"; }));
    CHECK(sweep_status_of(*f.store, first) == "succeeded");
    std::lock_guard lock(f.runner.mutex);
    REQUIRE(f.runner.started.size() == 3);
    CHECK(f.runner.started[0].first == first);
    CHECK(f.runner.started[1].first == first);
    CHECK(f.runner.started[2].first == third);
}

TEST_CASE("scheduler: stop() cancels what runs, joins promptly and leaves the rest queued",
          "[scheduler]") {
    SchedulerFixture f;
    const auto sweep_id = create_sweep(*f.store, 5);
    f.runner.block_until_cancelled_or_released = true;
    EventLog events(f.events, sweep_id);
    Scheduler scheduler(*f.store, f.events, f.runner.function(), 2);
    scheduler.start();
    REQUIRE(scheduler.submit(sweep_id, SweepTimeouts{}).ok());
    REQUIRE(wait_until([&] { return f.runner.active == 2; }));

    // The runners block until cancelled, so stop() returns only by
    // cancelling both (saw_cancel).
    scheduler.stop();
    CHECK(f.runner.saw_cancel == 2);
    CHECK(f.runner.active == 0);
    CHECK(f.runner.calls() == 2);
    // A stopping daemon leaves its sweep for the next start to resume.
    CHECK(sweep_status_of(*f.store, sweep_id) == "running");
    CHECK(statuses_of(*f.store, sweep_id).at("pending") == 3);
    for (const auto& type : events.types()) CHECK(type != "sweep_finished");
    scheduler.stop();  // idempotent
}

TEST_CASE("scheduler: submit refuses a sweep twice and finishes an empty one at once",
          "[scheduler]") {
    SchedulerFixture f;
    f.runner.block_until_cancelled_or_released = true;
    Scheduler scheduler(*f.store, f.events, f.runner.function(), 1);
    scheduler.start();

    const auto busy = create_sweep(*f.store, 1, "busy");
    REQUIRE(scheduler.submit(busy, SweepTimeouts{}).ok());
    auto twice = scheduler.submit(busy, SweepTimeouts{});
    REQUIRE_FALSE(twice.ok());
    CHECK(twice.error().code == errc::kConflict);

    // A sweep whose runs are all finished (e.g. resumed after the last one).
    const auto done = create_sweep(*f.store, 2, "done");
    auto runs = f.store->list_runs(done);
    REQUIRE(runs.ok());
    std::vector<RunStatus> outcomes = {RunStatus::kSucceeded, RunStatus::kFailed};
    for (std::size_t i = 0; i < runs->size(); ++i) {
        RunRecord run = (*runs)[i];
        run.status = outcomes[i];
        run.finished_at = utc_now_iso8601();
        REQUIRE(f.store->finish_run(run).ok());
    }
    EventLog events(f.events, done);
    REQUIRE(scheduler.submit(done, SweepTimeouts{}).ok());
    CHECK(events.types() == std::vector<std::string>{"sweep_finished"});
    CHECK(sweep_status_of(*f.store, done) == "failed");

    CHECK(scheduler.submit(987654, SweepTimeouts{}).error().code == errc::kNotFound);
    CHECK(scheduler.cancel(987654).error().code == errc::kNotFound);
    f.runner.released = true;
}

TEST_CASE("scheduler: eta is unknown, then the mean run time times what is left", "[scheduler]") {
    SchedulerFixture f;
    const auto sweep_id = create_sweep(*f.store, 3);
    test::FakeClock clock;
    f.runner.clock = &clock;
    f.runner.duration = 10s;  // on the fake clock: every run takes exactly 10 s
    Scheduler scheduler(*f.store, f.events, f.runner.function(), 1, clock);
    std::vector<double> eta_at_start;  // written by the one worker, read after it is done
    f.runner.on_start = [&](const RunRecord& run) {
        eta_at_start.push_back(scheduler.eta_seconds(run.sweep_id));
    };
    CHECK(scheduler.eta_seconds(sweep_id) < 0);  // not queued
    scheduler.start();
    REQUIRE(scheduler.submit(sweep_id, SweepTimeouts{}).ok());
    REQUIRE(wait_until([&] { return sweep_status_of(*f.store, sweep_id) == "succeeded"; }));
    scheduler.stop();
    REQUIRE(eta_at_start.size() == 3);
    CHECK(eta_at_start[0] < 0);  // nothing finished yet: unknown
    // One run done, one pending, one running: mean * (1 + 0.5) / 1 worker.
    CHECK(eta_at_start[1] == 15.0);
    // Two done, none pending, one running: mean * 0.5.
    CHECK(eta_at_start[2] == 5.0);
    CHECK(scheduler.eta_seconds(sweep_id) < 0);  // finished: no longer queued
    // The sweep's times are the clock's: started at its start, finished after
    // the three runs' 30 s.
    const SweepRecord sweep = f.store->get_sweep(sweep_id).value();
    CHECK(sweep.started_at == "2026-01-01T00:00:00Z");
    CHECK(sweep.finished_at == "2026-01-01T00:00:30Z");
}

TEST_CASE("scheduler: with the real executor behind fakes, parallel runs all succeed",
          "[scheduler][run_executor]") {
    ExecutorFixture fixture;
    fixture.hypervisor.set_guest_script(well_behaved_guest());
    const auto sweep_id = create_sweep(*fixture.store, 4);
    EventLog events(fixture.events, sweep_id);
    RunExecutor executor(fixture.environment());
    Scheduler scheduler(
        *fixture.store, fixture.events,
        [&executor](const RunRecord& run, const SweepTimeouts& timeouts,
                    const std::atomic<bool>& cancelled) {
            return executor.execute(run, timeouts.boot_timeout_s, timeouts.run_timeout_s,
                                    cancelled);
        },
        2);
    scheduler.start();
    REQUIRE(scheduler.submit(sweep_id, SweepTimeouts{5, 10}).ok());
    REQUIRE(events.wait_for("sweep_finished", 10s));
    scheduler.stop();

    CHECK(sweep_status_of(*fixture.store, sweep_id) == "succeeded");
    CHECK(statuses_of(*fixture.store, sweep_id).at("succeeded") == 4);
    CHECK(fixture.hypervisor.started().size() == 4);
    CHECK(fixture.hypervisor.destroyed().size() == 4);
    CHECK(fixture.hypervisor.live_vms().empty());
    CHECK(fixture.storage.created().size() == 4);
    CHECK(fixture.storage.live_volumes().empty());
    auto runs = fixture.store->list_runs(sweep_id);
    REQUIRE(runs.ok());
    for (const auto& run : *runs) {
        INFO(run.failure_reason);
        CHECK(run.status == RunStatus::kSucceeded);
        CHECK(run.metrics.at("write_iops") == Approx(12471.264368));
    }
}

TEST_CASE("a run interrupted by the daemon stopping is recorded as interrupted, not cancelled",
          "[scheduler][run_executor][regression]") {
    // stop() raises the runs' cancel flags; with the daemon's shutting-down
    // flag set the executor records the interrupted run as failed
    // ("interrupted"), so the resumed sweep cannot pass for complete.
    ExecutorFixture fixture;
    std::atomic<int> benches{0};
    GuestBehaviour behaviour;
    behaviour.before_result = [&benches](GuestChannel& channel) {
        if (benches++ > 0) return true;
        channel.sleep(30s);  // the first run is mid-bench when the daemon stops
        return false;
    };
    fixture.hypervisor.set_guest_script(well_behaved_guest(behaviour));
    const auto sweep_id = create_sweep(*fixture.store, 2);
    std::atomic<bool> shutting_down{false};
    RunEnvironment environment = fixture.environment();
    environment.shutting_down = &shutting_down;
    RunExecutor executor(environment);
    auto execute = [&executor](const RunRecord& run, const SweepTimeouts& timeouts,
                               const std::atomic<bool>& cancelled) {
        return executor.execute(run, timeouts.boot_timeout_s, timeouts.run_timeout_s, cancelled);
    };
    {
        Scheduler daemon_before_restart(*fixture.store, fixture.events, execute, 1);
        daemon_before_restart.start();
        REQUIRE(daemon_before_restart.submit(sweep_id, SweepTimeouts{5, 30}).ok());
        REQUIRE(wait_until([&] { return benches.load() == 1; }));
        shutting_down = true;
        daemon_before_restart.stop();
    }
    shutting_down = false;
    EventLog events(fixture.events, sweep_id);
    Scheduler daemon_after_restart(*fixture.store, fixture.events, execute, 1);
    daemon_after_restart.start();
    REQUIRE(daemon_after_restart.submit(sweep_id, SweepTimeouts{5, 30}).ok());
    REQUIRE(events.wait_for("sweep_finished", 10s));
    auto statuses = statuses_of(*fixture.store, sweep_id);
    CHECK(statuses.at("succeeded") == 1);
    CHECK(statuses.at("failed") == 1);
    CHECK(statuses.at("cancelled") == 0);
    auto runs = fixture.store->list_runs(sweep_id);
    REQUIRE(runs.ok());
    bool interrupted_reason = false;
    for (const auto& run : runs.value()) {
        if (run.status == RunStatus::kFailed) {
            interrupted_reason = run.failure_reason.find("interrupted") != std::string::npos;
        }
    }
    CHECK(interrupted_reason);
    CHECK(fixture.store->get_sweep(sweep_id)->status == SweepStatus::kFailed);
}

TEST_CASE("scheduler: with whole rounds on one host, two hosts of one slot each run at once",
          "[scheduler][placement]") {
    // Round 0's second run must wait for host a (its round's host): a worker
    // that took it would leave b idle. Workers take a run that can start now.
    SchedulerFixture f;
    HostPool pool;
    for (const char* name : {"a", "b"}) {
        auto host = std::make_unique<Host>();
        host->description = {.name = name, .kind = "libvirt", .detail = "fake"};
        host->hypervisor = std::make_unique<FakeHypervisor>();
        pool.add(std::move(host));
    }
    std::vector<RunRecord> planned;  // round by round, as expand_sweep plans
    for (int round = 0; round < 2; ++round) {
        for (CacheMode cache : {CacheMode::kNone, CacheMode::kWriteback}) {
            StorageConfig config = reference_config();
            config.cache = cache;
            planned.push_back(
                planned_run(config, fio_workload(), static_cast<int>(planned.size()), round));
        }
    }
    SweepRecord sweep;
    sweep.name = "two hosts";
    sweep.created_at = utc_now_iso8601();
    const auto sweep_id = f.store->create_sweep(sweep, planned);
    REQUIRE(sweep_id.ok());

    const auto request_for = [](const RunRecord& run) {
        return PlacementRequest{run.config, {}, run.sweep_id, run.repetition, run.id};
    };
    std::mutex mutex;
    std::map<int, std::set<std::string>> hosts_by_round;
    std::atomic<int> placement_errors{0};
    f.runner.rendezvous = 2;
    auto execute = [&](const RunRecord& run, const SweepTimeouts& timeouts,
                       const std::atomic<bool>& cancelled) {
        auto lease = pool.acquire(request_for(run), cancelled);
        if (!lease.ok()) ++placement_errors;
        if (lease.ok()) {
            std::lock_guard lock(mutex);
            hosts_by_round[run.repetition].insert(lease->host().description.name);
        }
        RunRecord finished = f.runner.execute(run, timeouts, cancelled);
        pool.release_hold(run.id);
        return finished;
    };
    EventLog events(f.events, *sweep_id);
    Scheduler scheduler(*f.store, f.events, execute, pool.total_parallel());
    scheduler.hold_before_start([&](const RunRecord& run) { return pool.hold(request_for(run)); });
    scheduler.start();
    REQUIRE(scheduler.submit(*sweep_id, SweepTimeouts{}).ok());
    REQUIRE(events.wait_for("sweep_finished", 10s));
    scheduler.stop();

    CHECK(placement_errors == 0);
    CHECK(f.runner.max_active == 2);  // both hosts ran at once
    // From the start: round 1's first run did not wait behind round 0's second.
    const std::vector<int> started = f.runner.sequences_started();
    REQUIRE(started.size() == 4);
    CHECK(std::set<int>{started[0], started[1]} == std::set<int>{0, 2});
    CHECK(hosts_by_round[0].size() == 1);
    CHECK(hosts_by_round[1].size() == 1);
    CHECK(hosts_by_round[0] != hosts_by_round[1]);
    CHECK(statuses_of(*f.store, *sweep_id).at("succeeded") == 4);
    CHECK(pool.placement_status(*pool.hosts()[0])["busy"] == 0);
    CHECK(pool.placement_status(*pool.hosts()[1])["busy"] == 0);
}

}  // namespace
}  // namespace ds
