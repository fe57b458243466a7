#include "common/api/plan.h"

namespace ds::api {

Result<PlannedConfiguration> PlannedConfiguration::from_json(const Json& json,
                                                             std::string_view path) {
    ObjectReader in(json, path);
    PlannedConfiguration configuration;
    in.read("config_id", configuration.config_id);
    in.read("settings", configuration.settings);
    in.read("durability_risks", configuration.durability_risks);
    return in.finish(std::move(configuration));
}

Json to_json(const PlannedConfiguration& configuration) {
    return {{"config_id", value_or_null(configuration.config_id)},
            {"settings", configuration.settings},
            {"durability_risks", configuration.durability_risks}};
}

Result<PlannedWorkload> PlannedWorkload::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    PlannedWorkload workload;
    in.read("name", workload.name);
    in.read("kind", workload.kind);
    return in.finish(std::move(workload));
}

Json to_json(const PlannedWorkload& workload) {
    return {{"name", value_or_null(workload.name)}, {"kind", value_or_null(workload.kind)}};
}

Result<PlannedPair> PlannedPair::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    PlannedPair pair;
    in.read("config_id", pair.config_id);
    in.read("workload", pair.workload);
    in.read("runs", pair.runs);
    in.read("estimate_s", pair.estimate_s);
    in.read("basis", pair.basis);
    in.read("based_on_runs", pair.based_on_runs);
    return in.finish(std::move(pair));
}

Json to_json(const PlannedPair& pair) {
    return {{"config_id", value_or_null(pair.config_id)},
            {"workload", value_or_null(pair.workload)},
            {"runs", pair.runs},
            {"estimate_s", value_or_null(pair.estimate_s)},
            {"basis", value_or_null(pair.basis)},
            {"based_on_runs", value_or_null(pair.based_on_runs)}};
}

Result<PlanEstimate> PlanEstimate::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    PlanEstimate estimate;
    in.read("run_seconds", estimate.run_seconds);
    in.read("wall_seconds", estimate.wall_seconds);
    in.read("max_wall_seconds", estimate.max_wall_seconds);
    in.read("max_parallel_runs", estimate.max_parallel_runs);
    in.read("runs_estimated", estimate.runs_estimated);
    in.read("runs_unknown", estimate.runs_unknown);
    in.read("based_on_runs", estimate.based_on_runs);
    in.read("complete", estimate.complete);
    return in.finish(std::move(estimate));
}

Json to_json(const PlanEstimate& estimate) {
    return {{"run_seconds", value_or_null(estimate.run_seconds)},
            {"wall_seconds", value_or_null(estimate.wall_seconds)},
            {"max_wall_seconds", value_or_null(estimate.max_wall_seconds)},
            {"max_parallel_runs", estimate.max_parallel_runs},
            {"runs_estimated", value_or_null(estimate.runs_estimated)},
            {"runs_unknown", estimate.runs_unknown},
            {"based_on_runs", estimate.based_on_runs},
            {"complete", value_or_null(estimate.complete)}};
}

Result<SweepPlanReply> SweepPlanReply::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    SweepPlanReply reply;
    in.read("name", reply.name);
    in.read("repetitions", reply.repetitions);
    in.read("max_repetitions", reply.max_repetitions);
    in.read("ci_target", reply.ci_target);
    in.read("max_total_runs", reply.max_total_runs);
    in.read("varying_axes", reply.varying_axes);
    in.read("configurations", reply.configurations);
    in.read("workloads", reply.workloads);
    in.read("dropped", reply.dropped);
    in.read("skipped_by_filesystems", reply.skipped_by_filesystems);
    in.read("total_runs", reply.total_runs);
    in.read("pairs", reply.pairs);
    in.read("estimate", reply.estimate);
    in.read("refused", reply.refused);
    in.read("warnings", reply.warnings);
    return in.finish(std::move(reply));
}

Json to_json(const SweepPlanReply& reply) {
    return {{"name", value_or_null(reply.name)},
            {"repetitions", reply.repetitions},
            {"max_repetitions", value_or_null(reply.max_repetitions)},
            {"ci_target", value_or_null(reply.ci_target)},
            {"max_total_runs", value_or_null(reply.max_total_runs)},
            {"varying_axes", reply.varying_axes},
            {"configurations", json_array(reply.configurations)},
            {"workloads", json_array(reply.workloads)},
            {"dropped", reply.dropped},
            {"skipped_by_filesystems", reply.skipped_by_filesystems},
            {"total_runs", reply.total_runs},
            {"pairs", json_array(reply.pairs)},
            {"estimate", reply.estimate ? to_json(*reply.estimate) : Json()},
            {"refused", value_or_null(reply.refused)},
            {"warnings", reply.warnings}};
}

}  // namespace ds::api
