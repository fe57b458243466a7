// hostctl's commands about the daemon itself: its status, the check of one
// of its hosts, its version.
#pragma once

#include <vector>

#include "hostctl/invocation.h"

namespace ds::hostctl {

// The rows of the command table for `status`, `hosts check` and `version`.
const std::vector<CommandSpec>& daemon_commands();

}  // namespace ds::hostctl
