// Rounds of a sweep: the runs a round plans, and, for adaptive repetitions
// (`repetitions = { min, max, ci }`), the decision whether a sweep whose
// planned rounds all ran gets one more (schedule/adaptive_rounds.h takes it
// and records it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "daemon/plan/expand.h"
#include "daemon/spec/spec.h"
#include "daemon/store/store.h"

namespace ds {

// The pending run record of one planned run of `plan`.
RunRecord planned_run_record(const SweepPlan& plan, const PlannedRun& planned);

// One configuration's (comparison row's) primary metric after some rounds:
// its 95% CI half-width as a fraction of the mean; unset when it has no
// interval (fewer than 2 succeeded runs, or a mean of 0).
struct RowPrecision {
    std::string label;  // "config 3f2a9c81d0e4 / workload randrw"
    std::optional<double> relative_half_width;
};

// What happens after round `rounds_done` (1-based count of finished rounds)
// of an adaptive sweep. The decision is the stored record
// {"after_round":N,"decision":"add_round"|"stop","reason":"..",
//  "widest":{"row":"..","half_width":0.041}|null}.
//  * stop when rounds_done >= max_repetitions;
//  * stop when the last round had a failed or timed-out run: more rounds
//    of a configuration that fails would not narrow its interval;
//  * add a round while any row's half-width is above ci_target or unknown;
//  * else stop: every row is within the target.
Json decide_round(const SweepSpec& spec, int rounds_done, bool last_round_failed,
                  const std::vector<RowPrecision>& rows);

}  // namespace ds
