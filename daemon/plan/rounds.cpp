#include "daemon/plan/rounds.h"

#include <algorithm>
#include <cstdio>

namespace ds {
namespace {

std::string percent(double fraction) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f%%", fraction * 100);
    return text;
}

Json stop(int rounds_done, std::string reason, Json widest = nullptr) {
    return {{"after_round", rounds_done},
            {"decision", "stop"},
            {"reason", std::move(reason)},
            {"widest", std::move(widest)}};
}

// The row whose interval is widest; a row without one counts as widest.
const RowPrecision* widest_row(const std::vector<RowPrecision>& rows) {
    const RowPrecision* widest = nullptr;
    for (const RowPrecision& row : rows) {
        if (widest == nullptr) {
            widest = &row;
        } else if (!row.relative_half_width) {
            if (widest->relative_half_width) widest = &row;
        } else if (widest->relative_half_width &&
                   *row.relative_half_width > *widest->relative_half_width) {
            widest = &row;
        }
    }
    return widest;
}

Json widest_json(const RowPrecision& row) {
    return {
        {"row", row.label},
        {"half_width", row.relative_half_width ? Json(*row.relative_half_width) : Json(nullptr)}};
}

}  // namespace

RunRecord planned_run_record(const SweepPlan& plan, const PlannedRun& planned) {
    const StorageConfig& config = plan.configs[planned.config_index];
    const Workload& workload = plan.workloads[planned.workload_index];
    RunRecord run;
    run.sequence = planned.sequence;
    run.repetition = planned.repetition;
    run.config_id = config_id(config);
    run.config = config;
    run.workload_name = workload.name;
    run.workload = workload;
    run.status = RunStatus::kPending;
    return run;
}

Json decide_round(const SweepSpec& spec, int rounds_done, bool last_round_failed,
                  const std::vector<RowPrecision>& rows) {
    const RowPrecision* widest = widest_row(rows);
    const Json widest_record = widest == nullptr ? Json(nullptr) : widest_json(*widest);
    if (rounds_done >= spec.max_repetitions) {
        return stop(rounds_done,
                    "reached max = " + std::to_string(spec.max_repetitions) + " rounds",
                    widest_record);
    }
    if (last_round_failed) {
        return stop(rounds_done,
                    "round " + std::to_string(rounds_done) +
                        " had failed runs; more rounds would not narrow their intervals",
                    widest_record);
    }
    if (widest == nullptr) return stop(rounds_done, "no configuration has results");
    const std::string target = percent(spec.ci_target);
    if (!widest->relative_half_width) {
        return {
            {"after_round", rounds_done},
            {"decision", "add_round"},
            {"reason", widest->label + " has no confidence interval yet (target ±" + target + ")"},
            {"widest", widest_record}};
    }
    if (*widest->relative_half_width > spec.ci_target) {
        return {{"after_round", rounds_done},
                {"decision", "add_round"},
                {"reason", widest->label + ": 95% CI ±" + percent(*widest->relative_half_width) +
                               " of the mean, above the target ±" + target},
                {"widest", widest_record}};
    }
    return stop(rounds_done,
                "every configuration within ±" + target + " (widest ±" +
                    percent(*widest->relative_half_width) + ", " + widest->label + ")",
                widest_record);
}

}  // namespace ds
