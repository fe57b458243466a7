// How hostctl prints the daemon's answers to a sweep spec: submitted (POST
// /v1/sweeps) or only planned (POST /v1/sweeps/plan). Both name the varying
// axes, the combinations dropped as impossible and the spec's warnings.
#pragma once

#include <string>

#include "common/api/plan.h"
#include "common/api/sweeps.h"
#include "hostctl/format.h"

namespace ds::hostctl {

// POST /v1/sweeps reply: id, name, run count, varying axes, dropped
// combinations with their reasons.
std::string format_submitted(const api::SweepSubmitReply& reply);
// POST /v1/sweeps/plan reply: the run count, the configurations (the varying
// settings as columns, a "!" column naming durability risks), the dropped
// combinations with their reasons, and the estimated duration with how many
// past runs it rests on (or what is unknown).
std::string format_sweep_plan(const api::SweepPlanReply& reply);

}  // namespace ds::hostctl
