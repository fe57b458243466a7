// How `hostctl sweep watch` and `sweep submit --wait` show a sweep's event
// stream (GET /v1/sweeps/ID/events, docs/api.md). Events in, text out to an
// injected stream; whether that stream is a terminal, and how wide it is, are
// injected too, so the whole of it is testable without a daemon.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "hostctl/sweep_progress.h"

namespace ds::hostctl {

// A run as GET /v1/runs/{id} answers it, nullopt when there is no answer
// (or none this client reads: the run's details only decorate a line).
// Asked once for each run that succeeds (its key metric, which run_finished
// does not carry) and once for each run first seen mid-way (it started
// before the watch: its configuration and start time).
using RunLookup = std::function<std::optional<api::RunEntry>(long run_id)>;

// How much a watch shows: everything (as a terminal or as plain lines), only
// what went wrong and the end (--quiet), or the events themselves (--json).
enum class WatchDetail { kNormal, kQuiet, kJson };

// The output's terminal, if any. Only kNormal output looks at it.
struct WatchTerminal {
    bool is_tty = false;
    // The terminal's columns, asked at each redraw (it may be resized);
    // empty or 0: 80.
    std::function<std::size_t()> columns;
};

// Shows one sweep's events as they come:
// * a terminal: one line per running run, rewritten in place ("\r", cursor up,
//   erase down), cut to the terminal's width so that nothing wraps, above a
//   bar with the sweep's counts and ETA; a finished run leaves one summary
//   line above them (status, duration, the key result or why it failed);
// * no terminal (pipes, CI): a plain line when a run starts, enters another
//   phase or finishes, never one per progress tick or repeated message;
// * kQuiet: only the runs that did not succeed;
// * kJson: each event as one line of JSON, as the daemon sent it
//   (keep-alives, which only keep the connection open, left out).
// end() closes the output with the sweep's summary line (not with kJson).
class WatchRenderer {
  public:
    // Without `run_lookup`, summary lines name no metric and runs first seen
    // mid-way no configuration.
    WatchRenderer(std::ostream& out, WatchDetail detail, WatchTerminal terminal,
                  RunLookup run_lookup = {});

    // Takes in one event, decoded, and `as_sent`, its line as the daemon
    // sent it (kJson prints that); `now_s` is the watcher's clock in seconds
    // (elapsed times and, when the daemon gives none, the ETA are measured
    // on it).
    void on_event(const api::SweepEvent& event, const Json& as_sent, double now_s);
    // Redraws the running runs so that their elapsed times move between
    // events (a run booting sends none); does nothing without a terminal,
    // before the first event and after the last.
    void tick(double now_s);
    // The stream is over: closes the live area; if the sweep finished,
    // prints its summary line "sweep 4 failed: 1 succeeded, ... of 2 runs".
    void end(long sweep_id);

    const SweepProgress& progress() const { return progress_; }

    // A terminal's live area shows at most this many runs, then "+N more".
    static constexpr std::size_t kMaxLiveRuns = 8;

  private:
    // A run seen running: from run_started, or from its first run_progress
    // when the watch began while it ran.
    struct Run {
        long id = 0;
        std::string config;  // run_started's config_label
        std::string workload;
        std::string phase;    // "" until the first run_progress
        std::string message;  // the latest non-empty one
        std::optional<double> fraction;
        double started_at = 0;        // watcher clock
        double phase_started_at = 0;  // watcher clock
    };
    // What a line says, which decides where it is shown (see shows()).
    enum class LineKind { kSweep, kStarted, kPhase, kSucceeded, kFailed, kRound };
    struct Line {
        LineKind kind;
        std::string text;
    };

    std::vector<Line> lines_for(const api::SweepEvent& event, double now_s);
    void run_started(const api::SweepEvent& event, double now_s, std::vector<Line>& lines);
    void run_progress(const api::SweepEvent& event, double now_s, std::vector<Line>& lines);
    void run_finished(const api::SweepEvent& event, double now_s, std::vector<Line>& lines);
    std::vector<Run>::iterator find_run(long id);
    Run run_seen_late(long id, const api::SweepEvent& event, double now_s) const;
    std::string describe(const Run& run) const;
    bool shows(LineKind kind) const;
    std::vector<std::string> live_lines(double now_s) const;
    void redraw(const std::vector<std::string>& above, double now_s);
    std::size_t columns() const;

    std::ostream& out_;
    WatchDetail detail_;
    WatchTerminal terminal_;
    RunLookup run_lookup_;
    SweepProgress progress_;
    std::vector<Run> running_;  // in the order they started
    std::size_t drawn_ = 0;     // lines of the live area on the terminal now
};

// A line as a terminal may show it: control characters (which a guest's
// progress message could carry, e.g. ESC) replaced by spaces, and cut to
// `columns` code points, the last one "~" when cut.
std::string fit_terminal_line(const std::string& text, std::size_t columns);

}  // namespace ds::hostctl
