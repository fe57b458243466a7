#pragma once
#include <string_view>

namespace ds {
// The project's version (CMake's PROJECT_VERSION), recorded with every run.
std::string_view disksweep_version();
}  // namespace ds
