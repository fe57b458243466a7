// What a [matrix] value sets: each axis of common/settings.h's table, its
// value checked and turned into a setter of a StorageConfig field, and the
// tuning axis beside them. The parser checks the values with it; the planner
// (plan/expand.cpp) builds the configurations with it.
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/settings.h"
#include "daemon/spec/spec.h"

namespace ds {

struct WorkloadKind;
struct WorkloadOptionDef;

// The matrix axis of the workloads' tunings: not a StorageConfig axis (a
// tuning is the workload's, not the disk's), so not in common/settings.h's
// axis table.
inline constexpr std::string_view kTuningAxis = "tuning";

using ConfigSetter = std::function<void(StorageConfig&)>;

// Checks one value of one axis and returns what it sets. The axis table says
// which axes exist; this says which StorageConfig field each one sets.
Result<ConfigSetter> axis_setter(const SweepSpec& spec, const AxisDef& axis,
                                 std::string_view value);

// The axes [matrix] takes: the settings' table, then the tuning axis.
std::vector<std::string_view> axis_names();

// The option of `kind` that takes MariaDB server variables (the one a
// tuning adds to), or nullptr when the kind has none.
const WorkloadOptionDef* server_variables_option_of(const WorkloadKind& kind);

}  // namespace ds
