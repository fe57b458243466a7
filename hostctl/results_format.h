// How hostctl prints what `results show` and `results apply` ask of the
// daemon: one run, and one configuration as you would apply it.
#pragma once

#include <string>

#include "common/api/configurations.h"
#include "common/api/runs.h"
#include "hostctl/format.h"

namespace ds::hostctl {

// GET /v1/runs/{id} reply: scalar fields, then each object field as an
// aligned section; raw_output only by size (it is in --json).
std::string format_run(const api::RunShowReply& reply);
// GET /v1/configurations/{id}/apply reply: its "snippet" as it is (the
// format's own comment lines carry the warnings and notes, so the output
// redirected into a file is a valid snippet).
std::string format_apply(const api::ApplyReply& reply);

}  // namespace ds::hostctl
