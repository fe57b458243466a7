#include "daemon/schedule/scheduler.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "common/clock.h"
#include "daemon/schedule/adaptive_rounds.h"

namespace ds {

namespace {
// The sweep's runs by status, for its events; none when the store cannot
// say (the event then goes without them).
std::optional<api::RunCounts> run_counts(Store& store, std::int64_t sweep_id) {
    auto counts = store.run_counts(sweep_id);
    if (!counts.ok()) return std::nullopt;
    return api::RunCounts::from_by_status(counts.value());
}
}  // namespace

Scheduler::Scheduler(Store& store, EventBus& events, ExecuteRun execute, int max_parallel_runs,
                     const Clock& clock)
    : store_(store),
      events_(events),
      execute_(std::move(execute)),
      max_parallel_runs_(std::max(1, max_parallel_runs)),
      clock_(clock) {}

Scheduler::~Scheduler() {
    stop();
}

void Scheduler::on_sweep_finished(std::function<void(std::int64_t sweep_id)> hook) {
    sweep_finished_ = std::move(hook);
}

void Scheduler::hold_before_start(std::function<bool(const RunRecord&)> hold) {
    hold_ = std::move(hold);
}

void Scheduler::read_specs_from(SweepSpecs& specs) {
    specs_ = &specs;
}

void Scheduler::start() {
    std::lock_guard lock(mutex_);
    stopping_ = false;
    for (int i = 0; i < max_parallel_runs_; ++i) workers_.emplace_back([this] { worker_loop(); });
}

void Scheduler::stop() {
    {
        std::lock_guard lock(mutex_);
        if (workers_.empty()) return;
        stopping_ = true;
        for (auto& sweep : sweeps_) sweep.cancel_flag->store(true);
    }
    work_available_.notify_all();
    for (auto& worker : workers_) worker.join();
    workers_.clear();
}

Status Scheduler::submit(std::int64_t sweep_id, SweepTimeouts timeouts) {
    DS_ASSIGN_OR_RETURN(auto runs, store_.list_runs(sweep_id, RawOutput::kOmit));
    QueuedSweep sweep;
    sweep.id = sweep_id;
    sweep.timeouts = timeouts;
    for (auto& run : runs) {
        // A superseded attempt was interrupted and is being run again: only
        // its successor decides whether the sweep failed.
        if (run.superseded_by != 0) continue;
        if (run.status == RunStatus::kPending)
            sweep.pending.push_back(std::move(run));
        else if (run.status == RunStatus::kFailed || run.status == RunStatus::kTimedOut)
            sweep.any_failed = true;
    }
    {
        std::unique_lock lock(mutex_);
        for (const auto& queued : sweeps_) {
            if (queued.id == sweep_id) {
                return make_error(errc::kConflict,
                                  "sweep " + std::to_string(sweep_id) + " is already queued");
            }
        }
        sweeps_.push_back(std::move(sweep));
        // Nothing left to run (e.g. a daemon stopped before deciding about
        // the next adaptive round): decide now, or finish.
        if (sweeps_.back().pending.empty()) {
            settle_drained(lock, std::prev(sweeps_.end()));
            return ok_status();
        }
    }
    work_available_.notify_all();
    return ok_status();
}

Status Scheduler::cancel(std::int64_t sweep_id) {
    std::lock_guard lock(mutex_);
    for (auto it = sweeps_.begin(); it != sweeps_.end(); ++it) {
        if (it->id != sweep_id) continue;
        it->cancelled = true;
        it->cancel_flag->store(true);
        it->pending.clear();
        DS_TRY(store_.cancel_pending_runs(sweep_id));
        if (it->running == 0 && !it->settling) {
            finish_sweep_locked(*it);
            sweeps_.erase(it);
        }
        return ok_status();
    }
    auto sweep = store_.get_sweep(sweep_id);
    if (!sweep.ok()) return sweep.error();
    return make_error(errc::kConflict, "sweep " + std::to_string(sweep_id) + " is already " +
                                           to_string(sweep->status) + "; nothing to cancel");
}

double Scheduler::eta_seconds(std::int64_t sweep_id) const {
    std::lock_guard lock(mutex_);
    for (const auto& sweep : sweeps_) {
        if (sweep.id != sweep_id) continue;
        if (sweep.finished_runs == 0) return -1;
        double mean = sweep.finished_seconds / sweep.finished_runs;
        double remaining = static_cast<double>(sweep.pending.size()) + 0.5 * sweep.running;
        return mean * remaining / max_parallel_runs_;
    }
    return -1;
}

void Scheduler::finish_sweep_locked(QueuedSweep& sweep) {
    const SweepStatus status = sweep.cancelled    ? SweepStatus::kCancelled
                               : sweep.any_failed ? SweepStatus::kFailed
                                                  : SweepStatus::kSucceeded;
    (void)store_.set_sweep_status(sweep.id, status, utc_now_iso8601(clock_));
    events_.publish(sweep.id, api::SweepEvent{.type = "sweep_finished",
                                              .status = to_string(status),
                                              .counts = run_counts(store_, sweep.id)});
    if (!sweep_finished_) return;
    try {
        sweep_finished_(sweep.id);
    } catch (const std::exception& error) {
        std::cerr << "disksweepd: BUG: sweep " << sweep.id << ": finishing threw: " << error.what()
                  << std::endl;
    }
}

void Scheduler::settle_drained(std::unique_lock<std::mutex>& lock,
                               std::list<QueuedSweep>::iterator sweep) {
    const std::int64_t id = sweep->id;
    Result<RoundOutcome> outcome = RoundOutcome{};
    if (!sweep->cancelled && !stopping_) {
        sweep->settling = true;
        lock.unlock();
        try {
            outcome = settle_round(store_, id, specs_);
        } catch (const std::exception& error) {
            outcome = make_error(errc::kInternal, error.what());
        }
        lock.lock();
        sweep->settling = false;
    }
    if (!outcome.ok()) {
        std::cerr << "disksweepd: sweep " << id
                  << ": cannot decide about another round: " << outcome.error().message
                  << std::endl;
    } else if (!outcome->decision.is_null()) {
        api::SweepEvent event{.type = "round_decision",
                              .counts = run_counts(store_, id),
                              .decision = outcome->decision};
        if (auto sweep_record = store_.get_sweep(id); sweep_record.ok()) {
            event.total_runs = sweep_record->total_runs;
        }
        events_.publish(id, event);
    }
    if (outcome.ok() && !outcome->added_runs.empty()) {
        if (sweep->cancelled) {
            (void)store_.cancel_pending_runs(id);
        } else {
            for (RunRecord& run : outcome->added_runs) sweep->pending.push_back(std::move(run));
            work_available_.notify_all();
            return;
        }
    }
    // A daemon that is stopping leaves its sweeps queued/running in the
    // store: the next start resumes them.
    if (stopping_) return;
    finish_sweep_locked(*sweep);
    sweeps_.erase(sweep);
}

RunRecord Scheduler::execute_guarded(const RunRecord& run, const SweepTimeouts& timeouts,
                                     const std::atomic<bool>& cancelled) {
    std::string what;
    try {
        return execute_(run, timeouts, cancelled);
    } catch (const std::exception& error) {
        what = error.what();
    } catch (...) {
        what = "an exception that is not a std::exception";
    }
    // ExecuteRun must not throw; one that does has a bug. Only this run pays:
    // it is recorded failed (its guest and volume, if any, are left to the
    // next start's recovery) and the worker goes on with the next run.
    std::cerr << "disksweepd: BUG: executing run " << run.id << " threw: " << what
              << "; the run is recorded as failed" << std::endl;
    RunRecord failed = run;
    failed.status = RunStatus::kFailed;
    failed.failure_reason = "internal error (bug): " + what;
    failed.finished_at = utc_now_iso8601(clock_);
    try {
        if (!store_.finish_run(failed).ok()) {
            // Already finished (the executor threw after recording it): the
            // store's record stands.
            if (auto stored = store_.get_run(run.id); stored.ok()) failed = stored.value();
        }
        events_.publish(run.sweep_id, api::SweepEvent{.type = "run_finished",
                                                      .status = to_string(failed.status),
                                                      .run_id = run.id,
                                                      .message = failed.failure_reason});
    } catch (...) {
        std::cerr << "disksweepd: BUG: cannot record run " << run.id << " as failed" << std::endl;
    }
    return failed;
}

bool Scheduler::can_start(const RunRecord& run) {
    try {
        return hold_(run);
    } catch (const std::exception& error) {
        // A bug in the hook: the run goes in queue order; its placement waits.
        std::cerr << "disksweepd: BUG: run " << run.id
                  << ": hold before start threw: " << error.what() << std::endl;
        return true;
    }
}

std::pair<Scheduler::QueuedSweep*, std::deque<RunRecord>::iterator> Scheduler::next_run_locked() {
    QueuedSweep* first = nullptr;
    for (auto& sweep : sweeps_) {
        if (sweep.pending.empty()) continue;
        if (first == nullptr) first = &sweep;
        if (!hold_) break;
        for (auto it = sweep.pending.begin(); it != sweep.pending.end(); ++it) {
            if (can_start(*it)) return {&sweep, it};
        }
    }
    return {first, first->pending.begin()};
}

void Scheduler::worker_loop() {
    while (true) {
        RunRecord run;
        SweepTimeouts timeouts;
        std::shared_ptr<std::atomic<bool>> cancel_flag;
        {
            std::unique_lock lock(mutex_);
            work_available_.wait(lock, [&] {
                return stopping_ ||
                       std::any_of(sweeps_.begin(), sweeps_.end(),
                                   [](const auto& sweep) { return !sweep.pending.empty(); });
            });
            if (stopping_) return;
            auto [chosen, position] = next_run_locked();
            run = std::move(*position);
            chosen->pending.erase(position);
            chosen->running++;
            timeouts = chosen->timeouts;
            cancel_flag = chosen->cancel_flag;
            if (!chosen->started) {
                chosen->started = true;
                (void)store_.set_sweep_status(chosen->id, SweepStatus::kRunning,
                                              utc_now_iso8601(clock_));
            }
        }

        const auto started = clock_.now();
        RunRecord finished = execute_guarded(run, timeouts, *cancel_flag);
        // glibc keeps freed heap for reuse: without this, one run's peak (up
        // to a guest's 8 MiB message and its parse) stays as the daemon's RSS.
        ::malloc_trim(0);
        const double seconds = seconds_since(started, clock_);

        std::unique_lock lock(mutex_);
        for (auto it = sweeps_.begin(); it != sweeps_.end(); ++it) {
            if (it->id != run.sweep_id) continue;
            it->running--;
            it->finished_runs++;
            it->finished_seconds += seconds;
            if (finished.status == RunStatus::kFailed || finished.status == RunStatus::kTimedOut)
                it->any_failed = true;
            double mean = it->finished_seconds / it->finished_runs;
            events_.publish(
                it->id,
                api::SweepEvent{
                    .type = "progress",
                    .counts = run_counts(store_, it->id),
                    .eta_s = mean * (static_cast<double>(it->pending.size()) + 0.5 * it->running) /
                             max_parallel_runs_});
            if (it->pending.empty() && it->running == 0 && !it->settling) {
                settle_drained(lock, it);
            }
            break;
        }
    }
}

}  // namespace ds
