// A sweep stored as the API stores it, for the compare tests: the spec's
// text kept with the sweep (compare reads its baseline and verdict rules
// from it) and every run of expand_sweep's plan pending.
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "daemon/plan/expand.h"
#include "daemon/spec/spec.h"
#include "daemon/store/store.h"
#include "support/fakes/daemon_fakes.h"

namespace ds::testing {

struct SweepFromSpec {
    std::int64_t id = 0;
    SweepPlan plan;
};

inline SweepFromSpec create_sweep_from_spec(Store& store, const std::string& spec_text,
                                            const std::string& source = "cmp.toml") {
    Result<SweepSpec> spec = parse_sweep_spec(spec_text, source);
    if (!spec.ok()) FAIL(spec.error().message);
    Result<SweepPlan> plan = expand_sweep(spec.value());
    if (!plan.ok()) FAIL(plan.error().message);
    std::vector<RunRecord> runs;
    for (const PlannedRun& planned : plan->runs) {
        runs.push_back(
            planned_run(plan->configs[static_cast<std::size_t>(planned.config_index)],
                        plan->workloads[static_cast<std::size_t>(planned.workload_index)],
                        planned.sequence, planned.repetition));
    }
    SweepRecord sweep;
    sweep.name = spec->name;
    sweep.spec_toml = spec_text;
    sweep.spec_source = source;
    sweep.created_at = "t0";
    sweep.varying_axes = plan->varying_axes;
    auto id = store.create_sweep(sweep, runs);
    REQUIRE(id.ok());
    return {id.value(), std::move(plan).value()};
}

// The compare report's row of configuration `config` (and of `workload`,
// when one is named); fails the test when there is none.
inline const Json& row_of(const Json& report, const std::string& config,
                          const std::string& workload = "") {
    for (const Json& row : report["rows"])
        if (row["config_id"] == config && (workload.empty() || row["workload"] == workload))
            return row;
    FAIL("no row for " << config << (workload.empty() ? "" : " / " + workload));
    static const Json kNone;
    return kNone;
}

}  // namespace ds::testing
