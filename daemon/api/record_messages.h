// The store's records as the API's typed messages (common/api/): what a
// handler sends of a sweep and of a run.
#pragma once

#include "common/api/runs.h"
#include "common/api/sweeps.h"
#include "daemon/schedule/scheduler.h"
#include "daemon/store/store.h"

namespace ds {

// The sweep with its run counts and, when `scheduler` has one, its estimate
// of the time left. Its round decisions are GET /v1/sweeps/ID's to add.
Result<api::SweepSummary> sweep_summary(Store& store, const SweepRecord& sweep,
                                        Scheduler* scheduler);

// The run; its raw output only with RawOutput::kInclude (GET /v1/runs/ID).
api::RunEntry run_entry(const RunRecord& run, RawOutput raw_output);

}  // namespace ds
