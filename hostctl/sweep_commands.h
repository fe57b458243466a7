// hostctl's `sweep` commands: submit or plan a sweep spec, list sweeps, show,
// cancel and watch one.
#pragma once

#include <vector>

#include "hostctl/invocation.h"

namespace ds::hostctl {

// The rows of the command table for `sweep submit|plan|list|show|cancel|watch`.
const std::vector<CommandSpec>& sweep_commands();

}  // namespace ds::hostctl
