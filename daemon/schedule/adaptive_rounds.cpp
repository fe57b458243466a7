#include "daemon/schedule/adaptive_rounds.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "daemon/compare/compare.h"
#include "daemon/plan/expand.h"
#include "daemon/plan/rounds.h"
#include "daemon/plan/sweep_specs.h"

namespace ds {
namespace {

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

Result<RoundOutcome> settle_round(Store& store, std::int64_t sweep_id, SweepSpecs* specs) {
    DS_ASSIGN_OR_RETURN(auto sweep, store.get_sweep(sweep_id));
    DS_ASSIGN_OR_RETURN(auto parsed, spec_of(specs, sweep));
    const SweepSpec& spec = *parsed;
    if (spec.ci_target <= 0) return RoundOutcome{};
    DS_ASSIGN_OR_RETURN(auto runs, store.list_runs(sweep_id, RawOutput::kOmit));
    const RoundState state = round_state(runs);
    if (!state.settled || state.rounds_done == 0 || already_decided(sweep, state.rounds_done)) {
        return RoundOutcome{};
    }
    CompareOptions compare_options;
    compare_options.specs = specs;
    DS_ASSIGN_OR_RETURN(auto comparison, compare_sweep(store, sweep_id, compare_options));
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
