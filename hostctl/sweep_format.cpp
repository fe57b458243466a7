#include "hostctl/sweep_format.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

namespace ds::hostctl {
namespace {

// A run's workload name: "workload_name", or "workload" when that is a name.
std::string run_workload(const api::RunEntry& run) {
    if (run.workload_name) return shown(run.workload_name);
    if (run.workload.is_object()) return text_field(run.workload, "name");
    return text_of(run.workload);
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

std::string format_sweep_list(const api::SweepListReply& reply) {
    if (reply.sweeps.empty()) return "no sweeps\n";
    Table table({{"id", Align::kRight},
                 {"name"},
                 {"status"},
                 {"done", Align::kRight},
                 {"failed", Align::kRight},
                 {"created"}});
    for (const api::SweepSummary& sweep : reply.sweeps) {
        const RunCounts counts = sweep.counts.value_or(RunCounts{});
        table.add_row(
            {shown(sweep.id), shown(sweep.name), shown(sweep.status),
             std::to_string(counts.done()) + "/" + std::to_string(sweep.total_runs.value_or(0)),
             std::to_string(counts.failed), shown(sweep.created_at)});
    }
    return table.render();
}

namespace {

// The sweep's line, when it was created, and its round decisions.
std::string sweep_heading(const api::SweepSummary& sweep) {
    const RunCounts counts = sweep.counts.value_or(RunCounts{});
    std::string text = "sweep " + shown(sweep.id) + " \"" + shown(sweep.name, "") +
                       "\": " + shown(sweep.status) + ", " + std::to_string(counts.done()) + "/" +
                       std::to_string(sweep.total_runs.value_or(0)) + " runs done (" +
                       counts_phrase(counts) + ")";
    if (sweep.eta_s) text += ", ETA " + format_duration(*sweep.eta_s);
    text += "\ncreated " + shown(sweep.created_at) + "\n";
    // Adaptive repetitions: each decision after a round, with its reason.
    if (sweep.round_decisions && sweep.round_decisions->is_array()) {
        for (const auto& decision : *sweep.round_decisions)
            text += round_decision_text(decision) + "\n";
    }
    return text;
}

// The settings that tell the runs' configurations apart: the sweep's
// varying axes, then any other setting with more than one value.
std::vector<std::string> differing_settings(const api::SweepSummary& sweep,
                                            const std::vector<api::RunEntry>& runs) {
    std::map<std::string, std::set<std::string>> values_by_key;
    for (const api::RunEntry& run : runs) {
        if (!run.config.is_object()) continue;
        for (const auto& item : run.config.items())
            values_by_key[item.key()].insert(item.value().dump());
    }
    std::vector<std::string> axes = sweep.varying_axes;
    for (const auto& [key, values] : values_by_key) {
        if (values.size() > 1 && std::find(axes.begin(), axes.end(), key) == axes.end()) {
            axes.push_back(key);
        }
    }
    std::vector<std::string> differing;
    for (const auto& axis : axes) {
        if (values_by_key.contains(axis)) differing.push_back(axis);
    }
    return differing;
}

}  // namespace

std::string format_sweep_show(const api::SweepShowReply& reply) {
    const api::SweepSummary& sweep = reply.sweep;
    const std::vector<api::RunEntry>& runs = reply.page.runs;
    std::string text = sweep_heading(sweep);
    if (runs.empty()) return text + "no runs\n";

    const std::vector<std::string> differing = differing_settings(sweep, runs);
    Table table({{"id", Align::kRight},
                 {"config"},
                 {"workload"},
                 {"rep", Align::kRight},
                 {"status"},
                 {"reason"}});
    for (const api::RunEntry& run : runs) {
        std::string config = settings_summary(run.config, differing);
        if (config.empty()) config = shown(run.config_id).substr(0, 12);
        // A repeated attempt (the daemon stopped during an earlier one) says so.
        std::string repetition = shown(run.repetition);
        if (run.attempt && *run.attempt > 1)
            repetition += " (attempt " + std::to_string(*run.attempt) + ")";
        table.add_row({shown(run.id), config, run_workload(run), repetition, shown(run.status),
                       single_line(shown(run.failure_reason, ""))});
    }
    text += table.render();
    if (reply.page.next_after) {
        text += "more runs follow: hostctl sweep show " + shown(sweep.id) + " --after " +
                std::to_string(*reply.page.next_after) + "\n";
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
