#include "hostctl/sweep_progress.h"

#include <cmath>
#include <cstdio>
#include <ctime>

#include "common/settings.h"
#include "common/status.h"
#include "common/workload_kind.h"

namespace ds::hostctl {
void SweepProgress::apply(const api::SweepEvent& event, double seconds_since_start) {
    const std::string type = event.type.value_or("");
    if (event.total_runs) total_runs_ = *event.total_runs;

    if (event.counts) {
        counts_ = *event.counts;
    } else if (type == "run_started") {
        // Between authoritative counts, keep the bar moving on our own.
        if (counts_.pending > 0) --counts_.pending;
        ++counts_.running;
    } else if (type == "run_finished") {
        if (counts_.running > 0) --counts_.running;
        const auto status = parse_run_status(event.status.value_or(""));
        if (status == RunStatus::kSucceeded)
            ++counts_.succeeded;
        else if (status == RunStatus::kFailed)
            ++counts_.failed;
        else if (status == RunStatus::kTimedOut)
            ++counts_.timed_out;
        else if (status == RunStatus::kCancelled)
            ++counts_.cancelled;
    }

    if (type == "sweep_finished") {
        finished_ = true;
        final_status_ = event.status.value_or("");
        eta_seconds_.reset();
        return;
    }
    if (type == "keepalive" || type == "run_progress") return;  // counts unchanged

    if (!first_seen_at_) {
        first_seen_at_ = seconds_since_start;
        done_when_first_seen_ = counts_.done();
    }
    // The daemon's estimate wins whenever it has given one; ours is the rate
    // of runs finished while watching, once there is a second to go by.
    const long remaining = std::max(0L, total_runs_ - counts_.done());
    const double watched = seconds_since_start - *first_seen_at_;
    if (const std::optional<double> eta = event.eta_s; eta && std::isfinite(*eta)) {
        eta_seconds_ = std::max(0.0, *eta);
        daemon_estimates_ = true;
    } else if (long done_since = counts_.done() - done_when_first_seen_;
               !daemon_estimates_ && done_since > 0 && watched >= 1.0) {
        eta_seconds_ = watched / static_cast<double>(done_since) * static_cast<double>(remaining);
    }
    if (remaining == 0) eta_seconds_.reset();
}

bool SweepProgress::all_succeeded() const {
    if (!finished_) return false;
    if (!final_status_.empty()) return parse_sweep_status(final_status_) == SweepStatus::kSucceeded;
    return counts_.failed == 0 && counts_.timed_out == 0 && counts_.cancelled == 0 &&
           counts_.succeeded == total_runs();
}

std::string format_progress_bar(const SweepProgress& progress, int bar_width) {
    const RunCounts& counts = progress.counts();
    long total = progress.total_runs();
    int filled = total > 0 ? static_cast<int>(bar_width * counts.done() / total) : 0;
    std::string bar = "[" + std::string(static_cast<std::size_t>(filled), '#') +
                      std::string(static_cast<std::size_t>(bar_width - filled), '-') + "]";
    std::string text = bar + "  " + std::to_string(counts.done()) + "/" + std::to_string(total) +
                       " runs  " + std::to_string(counts.succeeded) + " ok  " +
                       std::to_string(counts.failed) + " failed";
    if (counts.timed_out > 0) text += "  " + std::to_string(counts.timed_out) + " timed out";
    if (counts.cancelled > 0) text += "  " + std::to_string(counts.cancelled) + " cancelled";
    text += "  " + std::to_string(counts.running) + " running";
    if (!progress.finished() && counts.done() < total) {
        auto eta = progress.eta_seconds();
        text += "  ETA " + (eta ? format_duration(*eta) : std::string("?"));
    }
    return text;
}

std::string format_tally(const SweepProgress& progress) {
    const RunCounts& counts = progress.counts();
    std::string text = "(" + std::to_string(counts.done()) + "/" +
                       std::to_string(progress.total_runs()) + " done, " +
                       std::to_string(counts.failed) + " failed";
    if (auto eta = progress.eta_seconds()) text += ", ETA " + format_duration(*eta);
    return text + ")";
}

std::string format_event_line(const api::SweepEvent& event, const SweepProgress& progress) {
    const std::string type = event.type.value_or("");
    const std::string run = "run " + shown(event.run_id);
    const std::string message = single_line(shown(event.message, ""));
    const RunCounts& counts = progress.counts();
    auto tally = [&] { return format_tally(progress); };
    if (type == "snapshot") {
        return "sweep " + shown(event.sweep_id) + " " + shown(event.status) + ": " +
               std::to_string(counts.done()) + "/" + std::to_string(progress.total_runs()) +
               " runs done (" + counts_phrase(counts) + "), " + std::to_string(counts.running) +
               " running";
    }
    if (type == "run_started") {
        std::string text = run + " started";
        std::string workload = shown(event.workload, "");
        if (!workload.empty()) text += ": " + workload;
        if (event.repetition) text += " repetition " + shown(event.repetition);
        return text;
    }
    if (type == "run_progress") {
        if (message.empty()) return "";
        std::string phase = shown(event.phase, "");
        return run + ": " + (phase.empty() ? "" : phase + ": ") + message;
    }
    if (type == "run_finished") {
        std::string text = run + " " + shown(event.status);
        if (!message.empty()) text += ": " + message;
        return text + " " + tally();
    }
    if (type == "round_decision") return round_decision_text(event.decision.value_or(Json()));
    if (type == "sweep_finished") return format_watch_summary(event.sweep_id.value_or(0), progress);
    return "";  // progress, keepalive and types newer than this client
}

std::string format_judged_metric(const api::RunEntry& run) {
    const Json& workload = run.workload;
    const WorkloadKind* kind = find_workload_kind(text_field(workload, "kind", ""));
    if (kind == nullptr) return "";
    const std::string name(judged_metric(*kind, field(workload, "params")).name);
    const auto value = number_field(run.metrics, name);
    if (!value || !std::isfinite(*value)) return "";
    char digits[32];
    std::snprintf(digits, sizeof digits, std::fabs(*value) >= 100 ? "%.0f" : "%.3g", *value);
    return name + " " + digits;
}

std::optional<long long> parse_utc_seconds(std::string_view text) {
    std::tm utc{};
    const std::string copy(text);
    const char* end = ::strptime(copy.c_str(), "%Y-%m-%dT%H:%M:%SZ", &utc);
    if (end == nullptr || *end != '\0') return std::nullopt;
    return static_cast<long long>(::timegm(&utc));
}

RunIdentity run_identity(const api::RunEntry& run) {
    RunIdentity identity;
    identity.config_label = run_config_label(run.config);
    identity.workload = run.workload_name.value_or("");
    identity.started_at = parse_utc_seconds(run.started_at.value_or(""));
    return identity;
}

std::string format_watch_summary(long sweep_id, const SweepProgress& progress) {
    std::string status = progress.final_status().empty() ? "finished" : progress.final_status();
    return "sweep " + std::to_string(sweep_id) + " " + status + ": " +
           counts_phrase(progress.counts()) + " of " + std::to_string(progress.total_runs()) +
           " runs";
}

}  // namespace ds::hostctl
