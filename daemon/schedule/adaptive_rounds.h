// Adaptive repetitions (`repetitions = { min, max, ci }`): once every
// planned run of a sweep finished, one more round or not, decided by
// decide_round (plan/rounds.h) from the sweep's comparison (compare/
// compare.h), which is why this step sits above both.
#pragma once

#include <cstdint>
#include <vector>

#include "common/result.h"
#include "daemon/store/store.h"

namespace ds {

class SweepSpecs;

// After every planned run of an adaptive sweep finished: decides (from the
// store's comparison of the sweep) and records the decision with the new
// round's runs in one transaction (Store::add_round). Returns the runs
// added, as stored (pending, with ids), and the decision; for a sweep that
// is not adaptive (ci_target 0) nothing is recorded and both are empty.
// The spec comes from `specs` (the daemon's one owner); null: it is parsed
// for this call (tests).
struct RoundOutcome {
    Json decision;  // null when not adaptive
    std::vector<RunRecord> added_runs;
};
Result<RoundOutcome> settle_round(Store& store, std::int64_t sweep_id, SweepSpecs* specs = nullptr);

}  // namespace ds
