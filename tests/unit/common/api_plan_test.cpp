// POST /v1/sweeps/plan as a typed message (common/api/plan.h): it encodes
// and decodes to itself, reads an older daemon's shape, and names the path
// of a mistyped field.
#include <catch2/catch.hpp>

#include "common/api/plan.h"
#include "unit/api_messages.h"

namespace ds::api {

using test::decode_error;
using test::decoded;
using test::round_trip;

namespace {

// A plan as daemon/plan/sweep_plan.cpp and the handler answer it.
const Json kPlan = Json::parse(R"({
    "name": "seed", "repetitions": 2, "max_repetitions": 6, "ci_target": 0.05,
    "max_total_runs": 6, "varying_axes": ["cache"],
    "configurations": [{"config_id": "0123", "settings": {"cache": "unsafe"},
                        "durability_risks": ["cache=unsafe"]}],
    "workloads": [{"name": "randread", "kind": "fio"}],
    "dropped": [{"settings": {"bus": "virtio-blk"}, "reason": "no rotation rate"}],
    "skipped_by_filesystems": 0, "total_runs": 2,
    "pairs": [{"config_id": "0123", "workload": "randread", "runs": 2, "estimate_s": 40.5,
               "basis": "configuration", "based_on_runs": 3}],
    "estimate": {"run_seconds": 81.0, "wall_seconds": 81.0, "max_wall_seconds": 243.0,
                 "max_parallel_runs": 1, "runs_estimated": 2, "runs_unknown": 0,
                 "based_on_runs": 3, "complete": true},
    "refused": "cannot run sweeps: no guest image", "warnings": ["rounds may spread"]})");

}  // namespace

TEST_CASE("a plan reply reads the daemon's shape and round-trips", "[api][plan]") {
    const auto plan = decoded<SweepPlanReply>(kPlan);
    CHECK(plan.configurations.at(0).durability_risks == std::vector<std::string>{"cache=unsafe"});
    CHECK(plan.pairs.at(0).estimate_s == 40.5);
    CHECK(plan.estimate->max_wall_seconds == 243.0);
    CHECK(to_json(plan) == kPlan);
    CHECK(round_trip(plan) == plan);
}

TEST_CASE("an older daemon's plan reads, absent fields as their fallback", "[api][plan]") {
    // Before adaptive repetitions, refusals and warnings.
    const auto older = decoded<SweepPlanReply>(Json::parse(R"({"name": "p", "total_runs": 3,
        "pairs": [{"runs": 3, "estimate_s": null}], "estimate": {"wall_seconds": 10}})"));
    CHECK(older.repetitions == 1);
    CHECK_FALSE(older.ci_target);
    CHECK_FALSE(older.refused);
    CHECK(older.warnings.empty());
    CHECK_FALSE(older.pairs.at(0).estimate_s);
    CHECK(older.estimate->max_parallel_runs == 1);
    CHECK_FALSE(older.estimate->max_wall_seconds);
}

TEST_CASE("a mistyped plan field names its path", "[api][plan]") {
    CHECK(decode_error<SweepPlanReply>(Json::parse(R"({"pairs": [{"runs": "3"}]})")) ==
          "pairs[0].runs: expected an integer, got string");
    CHECK(decode_error<SweepPlanReply>(
              Json::parse(R"({"configurations": [{"durability_risks": [1]}]})")) ==
          "configurations[0].durability_risks[0]: expected a string, got number");
    CHECK(decode_error<SweepPlanReply>(Json::parse(R"({"estimate": {"complete": "no"}})")) ==
          "estimate.complete: expected a boolean, got string");
}

}  // namespace ds::api
