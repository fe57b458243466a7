#include "hostctl/submission_format.h"

#include <map>
#include <vector>

#include "common/status.h"
#include "common/text.h"

namespace ds::hostctl {
namespace {

// "warning: TEXT" per line of the daemon's warnings of a submission; ""
// when none (or an older daemon's answer without them).
std::string warnings_text(const std::vector<std::string>& warnings) {
    std::string text;
    for (const std::string& warning : warnings) text += "warning: " + warning + "\n";
    return text;
}

// "dropped N combinations that cannot exist:" and one line each, naming it by
// the varying `axes` and giving the reason; "" when none was dropped.
std::string dropped_text(const Json& dropped, const std::vector<std::string>& axes) {
    if (!dropped.is_array() || dropped.empty()) return "";
    std::string text = "dropped " +
                       plural(static_cast<long>(dropped.size()), "combination", "combinations") +
                       " that cannot exist:\n";
    for (const auto& combination : dropped) {
        const Json& settings = field(combination, "settings");
        // The varying settings say which combination it was; the rest
        // is the same for every combination.
        std::string which = settings_summary(settings, axes);
        if (which.empty() && settings.is_object()) {
            std::vector<std::string> keys;
            for (const auto& item : settings.items()) keys.push_back(item.key());
            which = settings_summary(settings, keys);
        }
        text += "  " + (which.empty() ? std::string("(unnamed)") : which) + ": " +
                single_line(text_field(combination, "reason")) + "\n";
    }
    return text;
}

// "N (configuration, workload) pairs LEFT_OUT by their workload's
// `filesystems`": the pairs of the spec that their workload's list of
// filesystems leaves out; "" when none.
std::string skipped_pairs_text(long skipped, std::string_view left_out) {
    if (skipped <= 0) return "";
    return plural(skipped, "(configuration, workload) pair", "(configuration, workload) pairs") +
           " " + std::string(left_out) + " by their workload's `filesystems`\n";
}

// The plan's configurations: the varying settings as columns (the id when
// nothing varies), "!" naming durability risks when any has one.
std::string plan_configurations_table(const std::vector<api::PlannedConfiguration>& configurations,
                                      const std::vector<std::string>& axes) {
    bool any_risk = false;
    for (const auto& configuration : configurations)
        any_risk = any_risk || !configuration.durability_risks.empty();
    std::vector<Table::Column> header = {{"config"}};
    for (const auto& axis : axes) header.push_back({axis});
    if (any_risk) header.push_back({"!"});
    Table table(std::move(header));
    for (const auto& configuration : configurations) {
        const Json& settings = configuration.settings;
        std::vector<std::string> line = {shown(configuration.config_id).substr(0, 12)};
        for (const auto& axis : axes) {
            // The disk_size axis is stored as disk_size_bytes.
            const std::string key = settings.contains(axis) ? axis : axis + "_bytes";
            line.push_back(setting_text(settings, key));
        }
        if (any_risk) line.push_back(join(configuration.durability_risks, " "));
        table.add_row(std::move(line));
    }
    return table.render();
}

// How many planned runs each basis of the estimate covers.
std::map<std::string, long> runs_by_basis(const std::vector<api::PlannedPair>& pairs) {
    std::map<std::string, long> runs;
    for (const auto& pair : pairs) runs[shown(pair.basis)] += pair.runs;
    return runs;
}

std::string plan_estimate_text(const api::SweepPlanReply& reply) {
    const api::PlanEstimate estimate = reply.estimate.value_or(api::PlanEstimate{});
    const long total = reply.total_runs;
    const long unknown = estimate.runs_unknown;
    if (total > 0 && unknown >= total) {
        return "estimated duration: unknown (no run of its workloads has succeeded on this "
               "daemon yet)\n";
    }
    const auto wall = estimate.wall_seconds;
    std::map<std::string, long> runs = runs_by_basis(reply.pairs);
    std::string text = "estimated duration: " + std::string(unknown > 0 ? "at least " : "") +
                       (wall ? format_duration(*wall) : "-");
    const auto max_wall = estimate.max_wall_seconds;
    if (max_wall && wall && *max_wall > *wall) {
        text += ", up to " + format_duration(*max_wall) + " with every adaptive round";
    }
    text += " (" + plural(estimate.max_parallel_runs, "run", "runs") + " at a time)\n";
    text += "  from the median durations of " +
            plural(estimate.based_on_runs, "past run", "past runs") + ": " +
            std::to_string(runs["configuration"]) +
            " planned runs by the same configuration and workload, " +
            std::to_string(runs["workload"]) + " by the same workload on other configurations";
    if (unknown > 0) text += ", " + std::to_string(unknown) + " unknown (workload never run here)";
    return text + "\n";
}

}  // namespace

std::string format_submitted(const api::SweepSubmitReply& reply) {
    const api::SweepSummary& sweep = reply.sweep;
    std::string text = "sweep " + shown(sweep.id) + " \"" + shown(sweep.name, "") +
                       "\" submitted: " + plural(sweep.total_runs.value_or(0), "run", "runs") +
                       ", " + shown(sweep.status, to_string(SweepStatus::kQueued)) + "\n";
    const std::vector<std::string>& axes =
        reply.varying_axes.empty() ? sweep.varying_axes : reply.varying_axes;
    if (!axes.empty()) text += "varying: " + join(axes, ", ") + "\n";
    text += skipped_pairs_text(reply.skipped_by_filesystems.value_or(0), "not run: left out");
    return text + warnings_text(reply.warnings) + dropped_text(reply.dropped, axes);
}

std::string format_sweep_plan(const api::SweepPlanReply& reply) {
    const long config_count = static_cast<long>(reply.configurations.size());
    const long workload_count = static_cast<long>(reply.workloads.size());
    std::string text = "sweep \"" + shown(reply.name, "") + "\" would run " +
                       plural(reply.total_runs, "run", "runs") + ": " +
                       plural(config_count, "configuration", "configurations") + " × " +
                       plural(workload_count, "workload", "workloads") + " × " +
                       plural(reply.repetitions, "repetition", "repetitions") + "\n";
    if (reply.ci_target) {
        text += "adaptive: up to " + plural(reply.max_total_runs.value_or(0), "run", "runs") +
                " (" + std::to_string(reply.max_repetitions.value_or(0)) +
                " rounds) while a configuration's 95% CI is wider than ±" +
                percent_text(*reply.ci_target) + " of its mean\n";
    }
    text += skipped_pairs_text(reply.skipped_by_filesystems, "left out");
    const std::vector<std::string>& axes = reply.varying_axes;
    if (!axes.empty()) text += "varying: " + join(axes, ", ") + "\n";
    if (config_count > 0)
        text += "\n" + plan_configurations_table(reply.configurations, axes) + "\n";
    text += dropped_text(reply.dropped, axes);
    text += warnings_text(reply.warnings);
    text += plan_estimate_text(reply);
    if (reply.refused) text += "this daemon would refuse it: " + single_line(*reply.refused) + "\n";
    return text;
}

}  // namespace ds::hostctl
