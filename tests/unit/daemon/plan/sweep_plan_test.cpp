// The sweep plan (daemon/plan/sweep_plan.h): duration estimates from past
// runs, and the plan's JSON for a spec.
#include "daemon/plan/sweep_plan.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

const char* kSpec = R"(
name = "plan"
repetitions = 2
[matrix]
cache = ["none", "unsafe"]
bus = ["virtio-blk", "scsi-single"]
ssd = true
[[workload]]
name = "randread"
kind = "fio"
rw = "randread"
size = "8m"
[[workload]]
name = "seqwrite"
kind = "fio"
rw = "write"
size = "8m"
)";

struct Planned {
    SweepSpec spec;
    SweepPlan plan;
};

Planned planned(const char* text) {
    auto spec = parse_sweep_spec(text, "plan.toml");
    REQUIRE(spec.ok());
    auto plan = expand_sweep(spec.value());
    REQUIRE(plan.ok());
    return {spec.value(), plan.value()};
}

RunRecord past_run(const std::string& config_id, const Workload& workload, RunStatus status,
                   double total_s) {
    static std::int64_t next_id = 1;
    RunRecord run;
    run.id = next_id++;
    run.config_id = config_id;
    run.workload_name = workload.name;
    run.workload = workload;
    run.status = status;
    run.timings = {{"total_s", total_s}, {"bench_s", total_s / 2}};
    return run;
}

}  // namespace

TEST_CASE("estimates: median of the same configuration and workload first", "[plan]") {
    const Planned p = planned(kSpec);
    const std::string none_id = config_id(p.plan.configs[0]);
    const std::string unsafe_id = config_id(p.plan.configs[1]);
    const Workload& randread = p.plan.workloads[0];
    Workload renamed = randread;  // same kind and parameters: the same work
    renamed.name = "other-name";
    renamed.timeout_s = 30;

    RunDurations durations({
        past_run(none_id, randread, RunStatus::kSucceeded, 10),
        past_run(none_id, renamed, RunStatus::kSucceeded, 60),
        past_run(none_id, randread, RunStatus::kSucceeded, 20),
        past_run(none_id, randread, RunStatus::kFailed, 1000),    // not a duration
        past_run(none_id, randread, RunStatus::kTimedOut, 2000),  // nor this
        past_run(unsafe_id, p.plan.workloads[1], RunStatus::kSucceeded, 7),
    });

    const DurationEstimate same = durations.estimate(none_id, randread);
    CHECK(same.basis == EstimateBasis::kSameConfiguration);
    CHECK(same.seconds == Approx(20));  // median of 10, 60, 20
    CHECK(same.based_on_runs == 3);

    const DurationEstimate elsewhere = durations.estimate(unsafe_id, randread);
    CHECK(elsewhere.basis == EstimateBasis::kSameWorkload);
    CHECK(elsewhere.seconds == Approx(20));
    CHECK(elsewhere.based_on_runs == 3);

    Workload never;
    never.name = "never";
    never.kind = "fio";
    never.params = {{"rw", "randwrite"}};
    const DurationEstimate unknown = durations.estimate(none_id, never);
    CHECK(unknown.basis == EstimateBasis::kUnknown);
    CHECK(unknown.based_on_runs == 0);
    CHECK(to_string(unknown.basis) == "unknown");
}

TEST_CASE("plan JSON: configurations, dropped, runs and the estimate", "[plan]") {
    const Planned p = planned(kSpec);
    // virtio-blk has no rotation rate: both virtio-blk combinations are dropped.
    REQUIRE(p.plan.configs.size() == 2);
    const std::string none_id = config_id(p.plan.configs[0]);
    const std::string unsafe_id = config_id(p.plan.configs[1]);
    RunDurations durations({
        past_run(none_id, p.plan.workloads[0], RunStatus::kSucceeded, 30),
        past_run(none_id, p.plan.workloads[0], RunStatus::kSucceeded, 50),
        past_run("ffffffffffffffff", p.plan.workloads[0], RunStatus::kSucceeded, 100),
    });

    const Json plan = sweep_plan_json(p.spec, p.plan, durations, 2);
    CHECK(plan["name"] == "plan");
    CHECK(plan["repetitions"] == 2);
    CHECK(plan["varying_axes"] == Json{"bus", "cache"});
    REQUIRE(plan["configurations"].size() == 2);
    CHECK(plan["configurations"][0]["config_id"] == none_id);
    CHECK(plan["configurations"][1]["durability_risks"] == Json{"cache=unsafe"});
    REQUIRE(plan["dropped"].size() == 2);
    CHECK(plan["dropped"][0]["reason"].get<std::string>().find("virtio-blk") != std::string::npos);
    CHECK(plan["total_runs"] == 8);  // 2 configurations × 2 workloads × 2 repetitions

    REQUIRE(plan["pairs"].size() == 4);
    const Json& first = plan["pairs"][0];
    CHECK(first["config_id"] == none_id);
    CHECK(first["workload"] == "randread");
    CHECK(first["runs"] == 2);
    CHECK(first["estimate_s"] == 40.0);  // median of 30 and 50
    CHECK(first["basis"] == "configuration");
    CHECK(first["based_on_runs"] == 2);
    CHECK(plan["pairs"][1]["basis"] == "unknown");  // seqwrite never ran
    CHECK(plan["pairs"][1]["estimate_s"].is_null());
    CHECK(plan["pairs"][2]["config_id"] == unsafe_id);
    CHECK(plan["pairs"][2]["estimate_s"] == 50.0);  // median of 30, 50, 100
    CHECK(plan["pairs"][2]["basis"] == "workload");

    const Json& estimate = plan["estimate"];
    CHECK(estimate["run_seconds"] == 180.0);  // 2 × 40 + 2 × 50
    CHECK(estimate["wall_seconds"] == 90.0);  // two at a time
    CHECK(estimate["max_parallel_runs"] == 2);
    CHECK(estimate["runs_estimated"] == 4);
    CHECK(estimate["runs_unknown"] == 4);
    // The configuration's 2 runs are among the workload's 3.
    CHECK(estimate["based_on_runs"] == 3);
    CHECK(estimate["complete"] == false);
}

TEST_CASE("plan JSON: nothing recorded yet, and a parallelism below 1", "[plan]") {
    const Planned p = planned(kSpec);
    const Json plan = sweep_plan_json(p.spec, p.plan, RunDurations({}), 0);
    CHECK(plan["estimate"]["runs_unknown"] == 8);
    CHECK(plan["estimate"]["runs_estimated"] == 0);
    CHECK(plan["estimate"]["run_seconds"] == 0.0);
    CHECK(plan["estimate"]["max_parallel_runs"] == 1);
    CHECK(plan["estimate"]["based_on_runs"] == 0);
}

}  // namespace ds
