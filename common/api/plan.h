// POST /v1/sweeps/plan (docs/api.md): what POST /v1/sweeps would run, and
// for how long, without storing or running anything.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/api/json_codec.h"

namespace ds::api {

// One configuration of the plan, in expansion order. Its settings are kept
// as JSON: the canonical settings, which hostctl prints axis by axis as it
// prints a run's.
struct PlannedConfiguration {
    std::optional<std::string> config_id;
    Json settings;
    std::vector<std::string> durability_risks;

    static Result<PlannedConfiguration> from_json(const Json& json, std::string_view path = "");
    bool operator==(const PlannedConfiguration&) const = default;
};
Json to_json(const PlannedConfiguration& configuration);

struct PlannedWorkload {
    std::optional<std::string> name;
    std::optional<std::string> kind;

    static Result<PlannedWorkload> from_json(const Json& json, std::string_view path = "");
    bool operator==(const PlannedWorkload&) const = default;
};
Json to_json(const PlannedWorkload& workload);

// A (configuration, workload) pair's runs and their estimated duration.
struct PlannedPair {
    std::optional<std::string> config_id;
    std::optional<std::string> workload;  // its name
    std::int64_t runs = 0;
    std::optional<double> estimate_s;  // null when unknown
    std::optional<std::string> basis;  // "configuration", "workload" or "unknown"
    std::optional<std::int64_t> based_on_runs;

    static Result<PlannedPair> from_json(const Json& json, std::string_view path = "");
    bool operator==(const PlannedPair&) const = default;
};
Json to_json(const PlannedPair& pair);

// The plan's duration: the seconds leave out the runs whose duration is
// unknown, `complete` says whether any are.
struct PlanEstimate {
    std::optional<double> run_seconds;       // summed over the runs
    std::optional<double> wall_seconds;      // run_seconds / max_parallel_runs
    std::optional<double> max_wall_seconds;  // with every adaptive round
    std::int64_t max_parallel_runs = 1;
    std::optional<std::int64_t> runs_estimated;
    std::int64_t runs_unknown = 0;
    std::int64_t based_on_runs = 0;  // distinct past runs used
    std::optional<bool> complete;

    static Result<PlanEstimate> from_json(const Json& json, std::string_view path = "");
    bool operator==(const PlanEstimate&) const = default;
};
Json to_json(const PlanEstimate& estimate);

// The whole reply (daemon/plan/sweep_plan.h builds it). The dropped
// combinations are kept as JSON, as in SweepSummary.
struct SweepPlanReply {
    std::optional<std::string> name;
    std::int64_t repetitions = 1;
    std::optional<std::int64_t> max_repetitions;
    std::optional<double> ci_target;  // adaptive repetitions only
    std::optional<std::int64_t> max_total_runs;
    std::vector<std::string> varying_axes;
    std::vector<PlannedConfiguration> configurations;
    std::vector<PlannedWorkload> workloads;
    Json dropped;  // [{"settings", "reason"}]
    std::int64_t skipped_by_filesystems = 0;
    std::int64_t total_runs = 0;
    std::vector<PlannedPair> pairs;
    std::optional<PlanEstimate> estimate;
    std::optional<std::string> refused;  // why this daemon would refuse it; null when it would not
    std::vector<std::string> warnings;

    static Result<SweepPlanReply> from_json(const Json& json, std::string_view path = "");
    bool operator==(const SweepPlanReply&) const = default;
};
Json to_json(const SweepPlanReply& reply);

}  // namespace ds::api
