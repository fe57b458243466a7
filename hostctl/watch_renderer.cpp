#include "hostctl/watch_renderer.h"

#include <algorithm>
#include <cmath>

#include "common/status.h"

namespace ds::hostctl {
namespace {

constexpr std::size_t kDefaultColumns = 80;
// A progress message on a live line is cut to this many characters first,
// so that one long message does not push the others' lines to the cut.
constexpr std::size_t kLiveMessageWidth = 48;

// Bytes that move a terminal's cursor or start an escape sequence: C0
// controls and DEL. (UTF-8 sequences pass; C1 controls arrive as two-byte
// UTF-8, which terminals in UTF-8 mode print rather than obey.)
bool is_control(char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte == 0x7F;
}

std::string without_controls(std::string text) {
    std::replace_if(text.begin(), text.end(), is_control, ' ');
    return text;
}

bool continues_code_point(char c) {
    return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

std::string percent(double fraction) {
    return std::to_string(std::lround(std::clamp(fraction, 0.0, 1.0) * 100)) + "%";
}

}  // namespace

std::string fit_terminal_line(const std::string& text, std::size_t columns) {
    std::string line = without_controls(text);
    if (display_width(line) <= columns) return line;
    if (columns == 0) return "";
    // Keep columns - 1 code points, then "~".
    std::size_t kept = 0;
    std::size_t end = 0;
    while (end < line.size() && kept < columns - 1) {
        ++end;
        while (end < line.size() && continues_code_point(line[end])) ++end;
        ++kept;
    }
    return line.substr(0, end) + "~";
}

WatchRenderer::WatchRenderer(std::ostream& out, WatchDetail detail, WatchTerminal terminal,
                             RunLookup run_lookup)
    : out_(out),
      detail_(detail),
      terminal_(std::move(terminal)),
      run_lookup_(std::move(run_lookup)) {}

void WatchRenderer::on_event(const api::SweepEvent& event, const Json& as_sent, double now_s) {
    progress_.apply(event, now_s);
    if (detail_ == WatchDetail::kJson) {
        if (event.type != "keepalive") out_ << as_sent.dump() << "\n" << std::flush;
        return;
    }
    std::vector<std::string> shown;
    for (const Line& line : lines_for(event, now_s)) {
        if (shows(line.kind)) shown.push_back(line.text);
    }
    if (detail_ == WatchDetail::kNormal && terminal_.is_tty) {
        // The last state stays drawn once the sweep is finished; end() adds
        // the summary below it.
        redraw(shown, now_s);
        return;
    }
    for (const auto& text : shown) out_ << text << "\n";
    out_ << std::flush;
}

void WatchRenderer::tick(double now_s) {
    // Nothing drawn yet: no event came, there is nothing to show.
    if (drawn_ > 0 && !progress_.finished()) redraw({}, now_s);
}

void WatchRenderer::end(long sweep_id) {
    if (drawn_ > 0) out_ << "\n";
    drawn_ = 0;
    if (detail_ != WatchDetail::kJson && progress_.finished())
        out_ << format_watch_summary(sweep_id, progress_) << "\n";
    out_ << std::flush;
}

// Which lines each way of showing keeps: a terminal shows starts and phases
// on the live lines instead; --quiet only what went wrong.
bool WatchRenderer::shows(LineKind kind) const {
    if (detail_ == WatchDetail::kQuiet) return kind == LineKind::kFailed;
    if (!terminal_.is_tty) return true;
    return kind == LineKind::kSucceeded || kind == LineKind::kFailed || kind == LineKind::kRound;
}

std::vector<WatchRenderer::Line> WatchRenderer::lines_for(const api::SweepEvent& event,
                                                          double now_s) {
    std::vector<Line> lines;
    const std::string type = event.type.value_or("");
    if (type == "run_started") {
        run_started(event, now_s, lines);
    } else if (type == "run_progress") {
        run_progress(event, now_s, lines);
    } else if (type == "run_finished") {
        run_finished(event, now_s, lines);
    } else if (type == "snapshot") {
        lines.push_back({LineKind::kSweep, format_event_line(event, progress_)});
    } else if (type == "round_decision") {
        lines.push_back({LineKind::kRound, format_event_line(event, progress_)});
    }
    // "progress" (counts, ETA), "sweep_finished" (end() says it), keep-alives
    // and types newer than this client change no line of their own.
    return lines;
}

std::vector<WatchRenderer::Run>::iterator WatchRenderer::find_run(long id) {
    return std::find_if(running_.begin(), running_.end(),
                        [id](const Run& run) { return run.id == id; });
}

void WatchRenderer::run_started(const api::SweepEvent& event, double now_s,
                                std::vector<Line>& lines) {
    Run run;
    run.id = event.run_id.value_or(0);
    run.config = without_controls(shown(event.config_label, ""));
    run.workload = without_controls(shown(event.workload, ""));
    run.started_at = run.phase_started_at = now_s;
    lines.push_back({LineKind::kStarted, describe(run) + " started"});
    if (auto found = find_run(run.id); found != running_.end()) {
        *found = std::move(run);
    } else {
        running_.push_back(std::move(run));
    }
}

// A line only when the phase changes: the bench's ticks (one a second, the
// same message, a new fraction) move the live line and nothing else.
void WatchRenderer::run_progress(const api::SweepEvent& event, double now_s,
                                 std::vector<Line>& lines) {
    const long id = event.run_id.value_or(0);
    auto run = find_run(id);
    if (run == running_.end()) {
        // The watch began while this run ran: no run_started for it.
        running_.push_back(run_seen_late(id, event, now_s));
        run = std::prev(running_.end());
    }
    const std::string phase = without_controls(shown(event.phase, ""));
    const std::string message = without_controls(shown(event.message, ""));
    if (phase != run->phase) {
        lines.push_back({LineKind::kPhase,
                         describe(*run) + ": " + phase + (message.empty() ? "" : ": " + message)});
        run->phase = phase;
        run->phase_started_at = now_s;
    }
    if (!message.empty()) run->message = message;
    run->fraction = event.fraction;
}

// A run first seen by a progress event: what run_started would have said,
// asked of the daemon, and its time so far (the event's "time" less the
// run's start, both the daemon's clock) carried over to the watcher's.
WatchRenderer::Run WatchRenderer::run_seen_late(long id, const api::SweepEvent& event,
                                                double now_s) const {
    Run run;
    run.id = id;
    run.started_at = run.phase_started_at = now_s;
    if (!run_lookup_) return run;
    const std::optional<api::RunEntry> looked_up = run_lookup_(id);
    if (!looked_up) return run;
    const RunIdentity identity = run_identity(*looked_up);
    run.config = without_controls(identity.config_label);
    run.workload = without_controls(identity.workload);
    const auto event_time = parse_utc_seconds(event.time.value_or(""));
    if (identity.started_at && event_time && *event_time >= *identity.started_at)
        run.started_at = now_s - static_cast<double>(*event_time - *identity.started_at);
    return run;
}

void WatchRenderer::run_finished(const api::SweepEvent& event, double now_s,
                                 std::vector<Line>& lines) {
    const long id = event.run_id.value_or(0);
    auto found = find_run(id);
    Run run;
    if (found != running_.end()) run = *found;
    run.id = id;
    const std::string status = shown(event.status, "");
    const std::string message = without_controls(shown(event.message, ""));
    std::string text = describe(run) + " " + status;
    // The daemon's own measure when it sends one; else what we saw of it.
    if (event.total_s) {
        text += " after " + format_duration(*event.total_s);
    } else if (found != running_.end()) {
        text += " after " + format_duration(now_s - run.started_at);
    }
    const bool succeeded = parse_run_status(status) == RunStatus::kSucceeded;
    // --quiet shows no succeeded run: no need to ask.
    if (succeeded && run_lookup_ && detail_ == WatchDetail::kNormal) {
        const std::optional<api::RunEntry> looked_up = run_lookup_(id);
        if (std::string metric =
                looked_up ? without_controls(format_judged_metric(*looked_up)) : "";
            !metric.empty())
            text += ": " + metric;
    }
    if (!message.empty()) text += ": " + message;
    // Without a terminal there is no bar: the line carries the tally.
    if (!terminal_.is_tty && detail_ == WatchDetail::kNormal) text += " " + format_tally(progress_);
    lines.push_back({succeeded ? LineKind::kSucceeded : LineKind::kFailed, text});
    if (found != running_.end()) running_.erase(found);
}

// "run 12 (ext4 cache=none bus=scsi-single, randrw)"; "run 12" when the
// watch saw no run_started for it.
std::string WatchRenderer::describe(const Run& run) const {
    std::string text = "run " + std::to_string(run.id);
    std::string what = run.config;
    if (!run.workload.empty()) what += (what.empty() ? "" : ", ") + run.workload;
    return what.empty() ? text : text + " (" + what + ")";
}

// "run 12  ext4 cache=none bus=scsi-single  randrw  bench 34s  45%  1m10s in
// all  fio running": the phase with its time and fraction, the run's time.
std::vector<std::string> WatchRenderer::live_lines(double now_s) const {
    std::vector<std::string> lines;
    for (const Run& run : running_) {
        if (lines.size() == kMaxLiveRuns) {
            lines.push_back("+" + std::to_string(running_.size() - kMaxLiveRuns) + " more running");
            break;
        }
        std::string line = "run " + std::to_string(run.id);
        for (const std::string* part : {&run.config, &run.workload}) {
            if (!part->empty()) line += "  " + *part;
        }
        line += "  " + (run.phase.empty() ? std::string("starting") : run.phase) + " " +
                format_duration(now_s - run.phase_started_at);
        if (run.fraction) line += "  " + percent(*run.fraction);
        line += "  " + format_duration(now_s - run.started_at) + " in all";
        if (!run.message.empty()) {
            line += "  " + fit_terminal_line(run.message, kLiveMessageWidth);
        }
        lines.push_back(std::move(line));
    }
    return lines;
}

// Erases the live area (back to its first line, erase down), prints `above`
// for good, then draws the live lines and the bar, each cut to one column
// less than the terminal's width: a line never wraps, so "cursor up" by the
// count of lines drawn always lands on the first of them.
void WatchRenderer::redraw(const std::vector<std::string>& above, double now_s) {
    out_ << "\r";
    if (drawn_ > 1) out_ << "\033[" << drawn_ - 1 << "A";
    out_ << "\033[J";
    for (const auto& line : above) out_ << without_controls(line) << "\n";
    std::vector<std::string> lines = live_lines(now_s);
    lines.push_back(format_progress_bar(progress_));
    const std::size_t width = columns() - 1;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        out_ << (i ? "\n" : "") << fit_terminal_line(lines[i], width);
    }
    out_ << std::flush;
    drawn_ = lines.size();
}

std::size_t WatchRenderer::columns() const {
    const std::size_t asked = terminal_.columns ? terminal_.columns() : 0;
    // A 1-column terminal still gets 1 column per line.
    return asked == 0 ? kDefaultColumns : std::max<std::size_t>(asked, 2);
}

}  // namespace ds::hostctl
