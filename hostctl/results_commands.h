// hostctl's `results` commands: compare a sweep's configurations, show one
// run, the sweep's HTML report, and a configuration as you would apply it.
#pragma once

#include <string>
#include <vector>

#include "hostctl/invocation.h"

namespace ds::hostctl {

// The rows of the command table for `results compare|show|report|apply`.
const std::vector<CommandSpec>& results_commands();

// How `results compare` prints: the narrow table, every metric (--all), CSV.
enum class CompareView { kNarrow, kAll, kCsv };

// Prints sweep `sweep_id`'s comparison (GET /v1/sweeps/{id}/compare) in
// `view`, ranked by `metric` when one is given; `sweep submit --wait` ends
// with it too.
ExitCode print_compare(Invocation& invocation, long sweep_id, CompareView view,
                       const std::string& metric = "");

}  // namespace ds::hostctl
