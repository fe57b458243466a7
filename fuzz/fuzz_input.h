// What every fuzz target shares: the fuzzer's bytes as text, and a check that
// aborts (a crash libFuzzer saves) when a property of the code under test
// does not hold.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace ds::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

// A property that must hold for every input; its failure is a bug.
inline void require(bool holds, const char* property) {
    if (holds) return;
    std::fprintf(stderr, "fuzz property violated: %s\n", property);
    std::abort();
}

}  // namespace ds::fuzz
