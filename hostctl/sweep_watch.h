// Following a sweep until it finishes, for `sweep watch` and `sweep submit
// --wait`: the watch's options, and the watch itself over the sweep's event
// stream (GET /v1/sweeps/{id}/events), drawn by WatchRenderer.
#pragma once

#include <optional>
#include <vector>

#include "hostctl/invocation.h"

namespace ds::hostctl {

// The options of a watch, the same for `sweep watch` and `sweep submit
// --wait` (the global --json is the third way of showing one).
const std::vector<FlagSpec>& watch_flags();

// A usage error (printed, its exit code) when the watch's options contradict
// each other; nullopt when they do not.
std::optional<ExitCode> refuse_watch_flags(const Invocation& invocation);

// Follows a sweep's events until it finishes. kOk when every run succeeded,
// kFailed when some did not (or the stream broke), kUnreachable as usual.
ExitCode watch_sweep(Invocation& invocation, long sweep_id);

}  // namespace ds::hostctl
