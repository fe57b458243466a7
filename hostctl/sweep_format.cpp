#include "hostctl/sweep_format.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

namespace ds::hostctl {
namespace {

// A run's full settings: the API calls them "config" (older drafts "settings").
const Json& run_settings(const Json& run) {
    const Json& config = field(run, "config");
    return config.is_object() ? config : field(run, "settings");
}

// A run's workload name: "workload_name", or "workload" when that is a name.
std::string run_workload(const Json& run) {
    const Json& name = field(run, "workload_name");
    if (name.is_string()) return text_of(name);
    const Json& workload = field(run, "workload");
    if (workload.is_object()) return text_field(workload, "name");
    return text_of(workload);
}

}  // namespace

std::string counts_phrase(const RunCounts& counts) {
    std::string text = std::to_string(counts.succeeded) + " succeeded, " +
                       std::to_string(counts.failed) + " failed, ";
    if (counts.timed_out > 0) text += std::to_string(counts.timed_out) + " timed out, ";
    return text + std::to_string(counts.cancelled) + " cancelled";
}

std::string round_decision_text(const Json& decision) {
    return "after round " + text_field(decision, "after_round") + ": " +
           (text_field(decision, "decision") == "add_round" ? "added a round" : "stopped") + " (" +
           single_line(text_field(decision, "reason")) + ")";
}

RunCounts parse_counts(const Json& counts) {
    RunCounts parsed;
    parsed.pending = integer_field(counts, "pending");
    parsed.running = integer_field(counts, "running");
    parsed.succeeded = integer_field(counts, "succeeded");
    parsed.failed = integer_field(counts, "failed");
    parsed.timed_out = integer_field(counts, "timed_out");
    parsed.cancelled = integer_field(counts, "cancelled");
    return parsed;
}

std::string format_sweep_list(const Json& reply) {
    const Json& sweeps = field(reply, "sweeps");
    if (!sweeps.is_array() || sweeps.empty()) return "no sweeps\n";
    Table table({{"id", Align::kRight},
                 {"name"},
                 {"status"},
                 {"done", Align::kRight},
                 {"failed", Align::kRight},
                 {"created"}});
    for (const auto& sweep : sweeps) {
        RunCounts counts = parse_counts(field(sweep, "counts"));
        table.add_row({text_field(sweep, "id"), text_field(sweep, "name"),
                       text_field(sweep, "status"),
                       std::to_string(counts.done()) + "/" +
                           std::to_string(integer_field(sweep, "total_runs")),
                       std::to_string(counts.failed), text_field(sweep, "created_at")});
    }
    return table.render();
}

std::string format_sweep_show(const Json& reply) {
    const Json& sweep = field(reply, "sweep");
    const Json& runs = field(reply, "runs");
    RunCounts counts = parse_counts(field(sweep, "counts"));
    std::string text = "sweep " + text_field(sweep, "id") + " \"" + text_field(sweep, "name", "") +
                       "\": " + text_field(sweep, "status") + ", " + std::to_string(counts.done()) +
                       "/" + std::to_string(integer_field(sweep, "total_runs")) + " runs done (" +
                       counts_phrase(counts) + ")";
    if (auto eta = number_field(sweep, "eta_s")) text += ", ETA " + format_duration(*eta);
    text += "\ncreated " + text_field(sweep, "created_at") + "\n";
    // Adaptive repetitions: each decision after a round, with its reason.
    if (const Json& decisions = field(sweep, "round_decisions"); decisions.is_array()) {
        for (const auto& decision : decisions) text += round_decision_text(decision) + "\n";
    }
    if (!runs.is_array() || runs.empty()) return text + "no runs\n";

    // The settings that tell this sweep's configurations apart.
    std::vector<std::string> differing;
    std::map<std::string, std::set<std::string>> values_by_key;
    for (const auto& run : runs) {
        const Json& settings = run_settings(run);
        if (!settings.is_object()) continue;
        for (const auto& item : settings.items())
            values_by_key[item.key()].insert(item.value().dump());
    }
    std::vector<std::string> axes = string_list(field(sweep, "varying_axes"));
    for (const auto& [key, values] : values_by_key) {
        if (values.size() > 1 && std::find(axes.begin(), axes.end(), key) == axes.end()) {
            axes.push_back(key);
        }
    }
    for (const auto& axis : axes) {
        auto it = values_by_key.find(axis);
        if (it != values_by_key.end()) differing.push_back(axis);
    }

    Table table({{"id", Align::kRight},
                 {"config"},
                 {"workload"},
                 {"rep", Align::kRight},
                 {"status"},
                 {"reason"}});
    for (const auto& run : runs) {
        std::string config = settings_summary(run_settings(run), differing);
        if (config.empty()) config = text_field(run, "config_id").substr(0, 12);
        // A repeated attempt (the daemon stopped during an earlier one) says so.
        std::string repetition = text_field(run, "repetition");
        if (const Json& attempt = field(run, "attempt"); attempt.is_number() && attempt > 1)
            repetition += " (attempt " + text_field(run, "attempt") + ")";
        table.add_row({text_field(run, "id"), config, run_workload(run), repetition,
                       text_field(run, "status"),
                       single_line(text_field(run, "failure_reason", ""))});
    }
    text += table.render();
    if (const Json& next = field(reply, "next_after"); next.is_number()) {
        text += "more runs follow: hostctl sweep show " + text_field(sweep, "id") + " --after " +
                text_of(next) + "\n";
    }
    return text;
}

std::string format_cancelled(const api::CancelReply& reply) {
    const api::SweepSummary& sweep = reply.sweep;
    std::string text = "sweep " + shown(sweep.id) + " " + shown(sweep.status);
    if (sweep.counts) text += " (" + counts_phrase(*sweep.counts) + ")";
    return text + "\n";
}

}  // namespace ds::hostctl
