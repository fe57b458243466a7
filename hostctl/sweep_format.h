// How hostctl prints a sweep as the daemon holds it: the list of sweeps, one
// sweep with its runs, a cancelled sweep; and the pieces of that text the
// watch of a sweep prints again (its counts, a round decision).
#pragma once

#include <string>

#include "common/api/sweeps.h"
#include "hostctl/format.h"

namespace ds::hostctl {

// Per-status run counts of a sweep, as the API sends them.
using api::RunCounts;

// "3 succeeded, 1 failed, 0 cancelled" (timed out runs named when any).
std::string counts_phrase(const RunCounts& counts);

// One of a sweep's "round_decisions" (adaptive repetitions): "after round
// 3: added a round (REASON)" or "... stopped (REASON)".
std::string round_decision_text(const Json& decision);

// GET /v1/sweeps reply.
std::string format_sweep_list(const api::SweepListReply& reply);
// GET /v1/sweeps/{id} reply: summary line, then one row per run. The config
// column shows the settings that differ between the sweep's runs.
std::string format_sweep_show(const api::SweepShowReply& reply);
// POST /v1/sweeps/{id}/cancel reply.
std::string format_cancelled(const api::CancelReply& reply);

}  // namespace ds::hostctl
