#include "daemon/plan/rounds.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "daemon/compare/compare.h"

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

struct RoundState {
    int rounds_done = 0;
    bool last_round_failed = false;
    bool settled = false;  // a run is still pending or running
};

RoundState round_state(const std::vector<RunRecord>& runs) {
    RoundState state;
    for (const RunRecord& run : runs) {
        if (run.superseded_by != 0) continue;
        state.rounds_done = std::max(state.rounds_done, run.repetition + 1);
    }
    state.settled = true;
    for (const RunRecord& run : runs) {
        if (run.superseded_by != 0) continue;
        if (run.status == RunStatus::kPending || run.status == RunStatus::kRunning) {
            state.settled = false;
        }
        if (run.repetition == state.rounds_done - 1 &&
            (run.status == RunStatus::kFailed || run.status == RunStatus::kTimedOut)) {
            state.last_round_failed = true;
        }
    }
    return state;
}

bool already_decided(const SweepRecord& sweep, int rounds_done) {
    if (!sweep.round_decisions.is_array()) return false;
    return std::any_of(sweep.round_decisions.begin(), sweep.round_decisions.end(),
                       [rounds_done](const Json& decision) {
                           return decision.is_object() &&
                                  decision.value("after_round", -1) == rounds_done;
                       });
}

std::optional<double> number_at(const Json& object, const char* key) {
    if (!object.is_object() || !object.contains(key) || !object.at(key).is_number()) {
        return std::nullopt;
    }
    return object.at(key).get<double>();
}

// Each comparison row's precision on its analysed (primary) metric.
std::vector<RowPrecision> row_precisions(const Json& comparison) {
    std::vector<RowPrecision> rows;
    for (const Json& row : comparison.value("rows", Json::array())) {
        RowPrecision precision;
        precision.label = "config " + row.value("config_id", std::string()).substr(0, 12) +
                          " / workload " + row.value("workload", std::string());
        const std::string metric =
            row.contains("primary_metric") && row["primary_metric"].is_object()
                ? row["primary_metric"].value("name", std::string())
                : std::string();
        const Json& metrics = row.value("metrics", Json::object());
        const Json summary =
            metrics.is_object() && metrics.contains(metric) ? metrics.at(metric) : Json::object();
        const auto mean = number_at(summary, "mean");
        const auto low = number_at(summary, "ci95_low");
        const auto high = number_at(summary, "ci95_high");
        if (mean && low && high && *mean != 0) {
            precision.relative_half_width = (*high - *low) / 2 / std::fabs(*mean);
        }
        rows.push_back(std::move(precision));
    }
    return rows;
}

// Stores the next round's runs with the decision, and returns them as stored.
Result<std::vector<RunRecord>> add_next_round(Store& store, std::int64_t sweep_id,
                                              const SweepSpec& spec, int round,
                                              const Json& decision) {
    DS_ASSIGN_OR_RETURN(auto plan, expand_sweep(spec));
    DS_ASSIGN_OR_RETURN(auto planned, plan_round(spec, round, 0));
    std::vector<RunRecord> records;
    for (const PlannedRun& run : planned) {
        records.push_back(planned_run_record(plan, run));
    }
    DS_TRY(store.add_round(sweep_id, decision, records));
    DS_ASSIGN_OR_RETURN(auto runs, store.list_runs(sweep_id, RawOutput::kOmit));
    std::vector<RunRecord> added;
    for (RunRecord& run : runs) {
        if (run.repetition == round && run.status == RunStatus::kPending) {
            added.push_back(std::move(run));
        }
    }
    return added;
}

}  // namespace

RunRecord planned_run_record(const SweepPlan& plan, const PlannedRun& planned) {
    const StorageConfig& config = plan.configs[planned.config_index];
    const Workload& workload = plan.workloads[planned.workload_index];
    RunRecord run;
    run.sequence = planned.sequence;
    run.repetition = planned.repetition;
    run.config_id = config_id(config);
    run.config = to_json(config);
    run.workload_name = workload.name;
    run.workload = to_json(workload);
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

Result<RoundOutcome> settle_round(Store& store, std::int64_t sweep_id) {
    DS_ASSIGN_OR_RETURN(auto sweep, store.get_sweep(sweep_id));
    DS_ASSIGN_OR_RETURN(auto spec, parse_sweep_spec(sweep.spec_toml, sweep.spec_source));
    if (spec.ci_target <= 0) return RoundOutcome{};
    DS_ASSIGN_OR_RETURN(auto runs, store.list_runs(sweep_id, RawOutput::kOmit));
    const RoundState state = round_state(runs);
    if (!state.settled || state.rounds_done == 0 || already_decided(sweep, state.rounds_done)) {
        return RoundOutcome{};
    }
    DS_ASSIGN_OR_RETURN(auto comparison, compare_sweep(store, sweep_id));
    RoundOutcome outcome;
    outcome.decision =
        decide_round(spec, state.rounds_done, state.last_round_failed, row_precisions(comparison));
    if (outcome.decision.value("decision", "") != "add_round") {
        DS_TRY(store.add_round(sweep_id, outcome.decision, {}));
        return outcome;
    }
    DS_ASSIGN_OR_RETURN(auto added,
                        add_next_round(store, sweep_id, spec, state.rounds_done, outcome.decision));
    outcome.added_runs = std::move(added);
    return outcome;
}

}  // namespace ds
