#include "support/test_data.h"

namespace ds::test {

// DISKSWEEP_SOURCE_DIR is this checkout's root, an absolute path given by
// tests/CMakeLists.txt to this file alone: a definition is part of ccache's
// key, so only this file compiles again in another checkout.
std::filesystem::path repository_root() {
    return std::filesystem::path(DISKSWEEP_SOURCE_DIR).lexically_normal();
}

}  // namespace ds::test
