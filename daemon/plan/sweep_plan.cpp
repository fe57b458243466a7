#include "daemon/plan/sweep_plan.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "daemon/model/stats.h"

namespace ds {
namespace {

// What a run of the workload does: its kind and parameters.
std::string workload_key(const Workload& workload) {
    const Json params = workload.params.is_null() ? Json::object() : workload.params;
    return workload.kind + "\n" + params.dump();
}

std::optional<double> run_seconds(const RunRecord& run) {
    if (run.status != RunStatus::kSucceeded) return std::nullopt;
    const auto total = run.timings.find("total_s");
    if (total == run.timings.end() || !total->is_number()) return std::nullopt;
    const double seconds = total->get<double>();
    if (!std::isfinite(seconds) || seconds < 0) return std::nullopt;
    return seconds;
}

template <class Group>
DurationEstimate median_of(EstimateBasis basis, const Group& group) {
    return {basis, summarize(group.seconds).median, static_cast<int>(group.seconds.size()),
            group.run_ids};
}

// (config index, workload index) -> number of runs, in the order of first run.
struct PlannedPair {
    int config_index = 0;
    int workload_index = 0;
    int runs = 0;
};

std::vector<PlannedPair> planned_pairs(const SweepPlan& plan) {
    std::vector<PlannedPair> pairs;
    std::map<std::pair<int, int>, std::size_t> index;
    for (const auto& run : plan.runs) {
        const auto key = std::make_pair(run.config_index, run.workload_index);
        auto [found, inserted] = index.try_emplace(key, pairs.size());
        if (inserted) pairs.push_back({run.config_index, run.workload_index, 0});
        ++pairs[found->second].runs;
    }
    std::sort(pairs.begin(), pairs.end(), [](const PlannedPair& a, const PlannedPair& b) {
        return std::tie(a.config_index, a.workload_index) <
               std::tie(b.config_index, b.workload_index);
    });
    return pairs;
}

Json configurations_json(const SweepPlan& plan) {
    Json configurations = Json::array();
    for (const auto& config : plan.configs) {
        configurations.push_back({{"config_id", config_id(config)},
                                  {"settings", to_json(config)},
                                  {"durability_risks", durability_risks(config)}});
    }
    return configurations;
}

Json workloads_json(const SweepPlan& plan) {
    Json workloads = Json::array();
    for (const auto& workload : plan.workloads)
        workloads.push_back({{"name", workload.name}, {"kind", workload.kind}});
    return workloads;
}

Json dropped_json(const SweepPlan& plan) {
    Json dropped = Json::array();
    for (const auto& combination : plan.dropped)
        dropped.push_back({{"settings", combination.settings}, {"reason", combination.reason}});
    return dropped;
}

// The per-pair estimates, and their sum over every run.
struct EstimatedPlan {
    Json pairs = Json::array();
    double run_seconds = 0;
    int runs_estimated = 0;
    int runs_unknown = 0;
    std::set<std::int64_t> past_runs;  // the past runs the estimates rest on
};

EstimatedPlan estimate_pairs(const SweepPlan& plan, const RunDurations& durations) {
    EstimatedPlan estimated;
    for (const PlannedPair& pair : planned_pairs(plan)) {
        const StorageConfig& config = plan.configs[static_cast<std::size_t>(pair.config_index)];
        const Workload& workload = plan.workloads[static_cast<std::size_t>(pair.workload_index)];
        const std::string id = config_id(config);
        const DurationEstimate estimate = durations.estimate(id, workload);
        const bool known = estimate.basis != EstimateBasis::kUnknown;
        estimated.pairs.push_back({{"config_id", id},
                                   {"workload", workload.name},
                                   {"runs", pair.runs},
                                   {"estimate_s", known ? Json(estimate.seconds) : Json()},
                                   {"basis", std::string(to_string(estimate.basis))},
                                   {"based_on_runs", estimate.based_on_runs}});
        if (!known) {
            estimated.runs_unknown += pair.runs;
            continue;
        }
        estimated.runs_estimated += pair.runs;
        estimated.run_seconds += estimate.seconds * pair.runs;
        estimated.past_runs.insert(estimate.run_ids.begin(), estimate.run_ids.end());
    }
    return estimated;
}

}  // namespace

std::string_view to_string(EstimateBasis basis) {
    switch (basis) {
        case EstimateBasis::kSameConfiguration:
            return "configuration";
        case EstimateBasis::kSameWorkload:
            return "workload";
        case EstimateBasis::kUnknown:
            return "unknown";
    }
    return "unknown";
}

RunDurations::RunDurations(const std::vector<RunRecord>& runs) {
    for (const auto& run : runs) {
        const auto seconds = run_seconds(run);
        if (!seconds) continue;
        const std::string key = workload_key(run.workload);
        for (Group* group : {&by_config_and_workload_[{run.config_id, key}], &by_workload_[key]}) {
            group->seconds.push_back(*seconds);
            group->run_ids.push_back(run.id);
        }
    }
}

DurationEstimate RunDurations::estimate(const std::string& config_id,
                                        const Workload& workload) const {
    const std::string key = workload_key(workload);
    if (const auto same = by_config_and_workload_.find({config_id, key});
        same != by_config_and_workload_.end())
        return median_of(EstimateBasis::kSameConfiguration, same->second);
    if (const auto any = by_workload_.find(key); any != by_workload_.end())
        return median_of(EstimateBasis::kSameWorkload, any->second);
    return {};
}

Json sweep_plan_json(const SweepSpec& spec, const SweepPlan& plan, const RunDurations& durations,
                     int max_parallel_runs) {
    const int parallel = std::max(1, max_parallel_runs);
    const EstimatedPlan estimated = estimate_pairs(plan, durations);
    // Adaptive repetitions may add whole rounds up to max_repetitions.
    const int max_rounds = std::max(spec.repetitions, spec.max_repetitions);
    const double round_scale = static_cast<double>(max_rounds) / std::max(1, spec.repetitions);
    return {{"name", spec.name},
            {"repetitions", spec.repetitions},
            {"max_repetitions", max_rounds},
            {"ci_target", spec.ci_target > 0 ? Json(spec.ci_target) : Json()},
            {"max_total_runs", plan.runs.size() / std::max(1, spec.repetitions) * max_rounds},
            {"varying_axes", plan.varying_axes},
            {"configurations", configurations_json(plan)},
            {"workloads", workloads_json(plan)},
            {"dropped", dropped_json(plan)},
            {"skipped_by_filesystems", plan.skipped_pairs},
            {"total_runs", plan.runs.size()},
            {"pairs", estimated.pairs},
            {"estimate",
             {{"run_seconds", estimated.run_seconds},
              {"wall_seconds", estimated.run_seconds / parallel},
              {"max_wall_seconds", estimated.run_seconds * round_scale / parallel},
              {"max_parallel_runs", parallel},
              {"runs_estimated", estimated.runs_estimated},
              {"runs_unknown", estimated.runs_unknown},
              {"based_on_runs", estimated.past_runs.size()},
              {"complete", estimated.runs_unknown == 0}}}};
}

}  // namespace ds
