// Turning a workload's fio parameters into a fio command line, and fio's
// output back into JSON.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/settings.h"

namespace ds::agent {

// fio options the agent sets itself and a workload may not override.
inline constexpr std::string_view kAgentOwnedFioOptions[] = {"name", "directory", "output-format",
                                                             "output"};

// fio --output-format=json --name=NAME --directory=DIR --KEY=VALUE...
// with the params in the object's (sorted) key order. Values: strings as is,
// numbers as JSON spells them, booleans as 1/0. errc::kInvalidArgument for a
// non-object `params`, a name that is empty, starts with '-', contains '=' or
// whitespace, or is one of kAgentOwnedFioOptions, and for a value that is
// null, an array or an object.
Result<std::vector<std::string>> build_fio_command(const std::string& workload_name,
                                                   const Json& params,
                                                   const std::string& directory);

// How long the fio run is planned to take: runtime + ramp_time, parsed the
// way fio does (a number with an optional unit us/ms/s/m/h/d, default
// seconds). nullopt when `runtime` is absent or unparseable (progress then
// carries no fraction).
std::optional<double> planned_fio_seconds(const Json& params);

// The JSON document in fio's stdout. fio may print notes before it, so this
// parses from the first line that starts with '{' to the last '}'.
// errc::kAgent with an excerpt when there is none or it does not parse.
Result<Json> parse_fio_stdout(std::string_view stdout_text);

}  // namespace ds::agent
