// A sweep's progress as a watcher folds it from the sweep's event stream
// (GET /v1/sweeps/{id}/events), and how hostctl prints it: the bar, a line
// per event, the closing summary, and what a watch asks of a run.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

#include "common/api/events.h"
#include "common/api/runs.h"
#include "hostctl/format.h"
#include "hostctl/sweep_format.h"

namespace ds::hostctl {

// What a watcher knows about a sweep, folded from its event stream.
class SweepProgress {
  public:
    // Takes in one event; `seconds_since_start` is the watcher's own clock,
    // used to estimate the time left when the daemon sends no eta_s.
    void apply(const api::SweepEvent& event, double seconds_since_start);

    // The sweep's runs as last announced, or the runs done if more: adaptive
    // repetitions add rounds after the announcement.
    long total_runs() const { return std::max(total_runs_, counts_.done()); }
    const RunCounts& counts() const { return counts_; }
    // Time left; unknown before any estimate and once no run is left.
    std::optional<double> eta_seconds() const { return eta_seconds_; }
    bool finished() const { return finished_; }
    // True once finished with every run succeeded.
    bool all_succeeded() const;
    const std::string& final_status() const { return final_status_; }

  private:
    long total_runs_ = 0;
    RunCounts counts_;
    std::optional<double> eta_seconds_;
    bool finished_ = false;
    std::string final_status_;
    // First observation, for the local rate estimate.
    std::optional<double> first_seen_at_;
    long done_when_first_seen_ = 0;
    bool daemon_estimates_ = false;  // an event carried eta_s
};

// "[#########-----------]  4/8 runs  3 ok  1 failed  2 running  ETA 2m05s"
std::string format_progress_bar(const SweepProgress& progress, int bar_width = 24);
// "(3/8 done, 1 failed, ETA 2m05s)"
std::string format_tally(const SweepProgress& progress);
// A plain line for one event (non-TTY output), or "" for events not worth a
// line (progress ticks without a message, unknown types).
std::string format_event_line(const api::SweepEvent& event, const SweepProgress& progress);
// A run (GET /v1/runs/{id}'s) -> the metric the run is judged by (its
// workload kind's primary metric, or the write-only one for a writing fio
// job) as "read_iops 2273" (3 significant digits below 100); "" when the run
// has no such metric (a failed run, an unknown kind, an older daemon).
std::string format_judged_metric(const api::RunEntry& run);
// What a watch needs of a run it first sees mid-way (it started before the
// watch began), from GET /v1/runs/{id}'s run: the run_started event's
// config_label and workload, and when it started (seconds since the epoch,
// unset when the reply has no "started_at" of the form
// "2026-11-29T20:00:00Z").
struct RunIdentity {
    std::string config_label;
    std::string workload;
    std::optional<long long> started_at;
};
RunIdentity run_identity(const api::RunEntry& run);
// "2026-11-29T20:00:00Z" (the daemon's times, common/clock.h) -> seconds
// since the epoch; nullopt for anything else.
std::optional<long long> parse_utc_seconds(std::string_view text);
// Closing line after sweep_finished: status and final counts.
std::string format_watch_summary(long sweep_id, const SweepProgress& progress);

}  // namespace ds::hostctl
