// The agent's diagnostics: one line per event on stderr, which in the guest
// is the serial console the host keeps as the run's console log.
#pragma once

#include <cstdio>
#include <string_view>

namespace ds::agent {

inline void log_line(std::string_view message) {
    std::fprintf(stderr, "[disksweep-agent] %.*s\n", static_cast<int>(message.size()),
                 message.data());
    std::fflush(stderr);
}

}  // namespace ds::agent
