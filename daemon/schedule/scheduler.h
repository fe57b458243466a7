// Runs the runs of submitted sweeps, at most N at once, each sweep's runs in
// its planned (randomised-interleaved) order, sweeps first come first served.
// When every planned run of an adaptive sweep has finished, the sweep gets
// one more round or stops (ds::settle_round); the decision is published as
// a "round_decision" event.
// After each run its worker gives freed heap back to the system
// (malloc_trim), so a run's peak does not stay as the daemon's RSS.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "daemon/plan/timeouts.h"
#include "daemon/run/events.h"
#include "daemon/store/store.h"

namespace ds {

class SweepSpecs;

class Scheduler {
  public:
    // Executes one run and returns its finished record; must not throw. If it
    // throws all the same (a bug), the worker records the run failed with
    // "internal error (bug): WHAT", logs it, and goes on with the next run.
    using ExecuteRun = std::function<RunRecord(const RunRecord&, const SweepTimeouts&,
                                               const std::atomic<bool>& cancelled)>;

    // `clock` times the runs (for the ETA) and gives the sweeps' started and
    // finished times.
    Scheduler(Store& store, EventBus& events, ExecuteRun execute, int max_parallel_runs,
              const Clock& clock = real_clock());
    ~Scheduler();

    // Called when a sweep has finished (every run done; not when the daemon
    // stops mid-sweep), before start(): what outlives a sweep's runs goes
    // (its golden volumes). Runs with the scheduler's lock held, on a
    // worker; an exception from it is logged and ignored.
    void on_sweep_finished(std::function<void(std::int64_t sweep_id)> hook);

    // Before start(): whether a run can start now, keeping what it needs for
    // it (RunExecutor::hold_host). A worker then takes the first pending run
    // (sweeps first come first served, each in its order) that can, and the
    // first pending run when none can: a run waiting for its round's busy
    // host does not keep another host idle. Called with the scheduler's lock
    // held. Unset: every run can.
    void hold_before_start(std::function<bool(const RunRecord&)> hold);

    // Before start(): where the sweeps' parsed specs come from when deciding
    // about another round (settle_round). Unset: each decision parses.
    void read_specs_from(SweepSpecs& specs);

    void start();
    // Cancels what runs (the executor tears its guests down) and joins.
    void stop();

    // Queues the sweep's pending runs (from the store).
    Status submit(std::int64_t sweep_id, SweepTimeouts timeouts);
    // Pending runs become cancelled; running ones are told to stop.
    Status cancel(std::int64_t sweep_id);
    // Seconds until the sweep is done, from the mean duration of its finished
    // runs; negative when unknown.
    double eta_seconds(std::int64_t sweep_id) const;

  private:
    struct QueuedSweep {
        std::int64_t id = 0;
        SweepTimeouts timeouts;
        std::deque<RunRecord> pending;
        int running = 0;
        bool started = false;
        bool any_failed = false;  // a run failed or timed out: the sweep ends failed
        bool cancelled = false;
        // A worker is deciding about another round (no lock held): cancel()
        // leaves the sweep to that worker to finish.
        bool settling = false;
        std::shared_ptr<std::atomic<bool>> cancel_flag = std::make_shared<std::atomic<bool>>(false);
        double finished_seconds = 0;
        int finished_runs = 0;
    };

    void worker_loop();
    // With the lock held and a run pending: the sweep and position of the
    // run the next worker takes (see hold_before_start).
    std::pair<QueuedSweep*, std::deque<RunRecord>::iterator> next_run_locked();
    // hold_ behind a last-resort boundary: one that throws lets the run go.
    bool can_start(const RunRecord& run);
    // execute_ behind the last-resort boundary described at ExecuteRun.
    RunRecord execute_guarded(const RunRecord& run, const SweepTimeouts& timeouts,
                              const std::atomic<bool>& cancelled);
    void finish_sweep_locked(QueuedSweep& sweep);
    // Called with the lock held by `lock` when `sweep` has no pending and no
    // running run: adds a round (unlocking while it decides) or finishes and
    // removes the sweep. `sweep` is invalid afterwards.
    void settle_drained(std::unique_lock<std::mutex>& lock, std::list<QueuedSweep>::iterator sweep);

    Store& store_;
    EventBus& events_;
    ExecuteRun execute_;
    std::function<void(std::int64_t)> sweep_finished_;
    std::function<bool(const RunRecord&)> hold_;
    SweepSpecs* specs_ = nullptr;
    int max_parallel_runs_;
    const Clock& clock_;

    mutable std::mutex mutex_;
    std::condition_variable work_available_;
    std::list<QueuedSweep> sweeps_;  // guarded by mutex_
    bool stopping_ = false;          // guarded by mutex_
    std::vector<std::thread> workers_;
};

}  // namespace ds
