// The run order of a sweep: rounds of its (configuration, workload) pairs,
// each shuffled from the spec's seed, so that slow drift of the host spreads
// over every configuration.
#pragma once

#include <utility>
#include <vector>

#include "daemon/plan/expand.h"
#include "daemon/spec/spec.h"

namespace ds {

// Randomised-interleaved order: spec.repetitions rounds of `pairs_to_run`
// appended to plan.runs, each round a Fisher-Yates shuffle of all pairs,
// drawn from one generator stream seeded by the spec (its seed, or its
// name's SHA-256). The same spec gives the same order on every platform.
void schedule_rounds(const SweepSpec& spec, const std::vector<std::pair<int, int>>& pairs_to_run,
                     SweepPlan& plan);

}  // namespace ds
