#include "common/version.h"

namespace ds {
std::string_view disksweep_version() {
    return DISKSWEEP_VERSION;
}
}  // namespace ds
