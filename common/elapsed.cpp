#include "common/elapsed.h"

#include <cmath>
#include <ctime>

namespace ds {

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double seconds_since_rounded_to_ms(std::chrono::steady_clock::time_point start) {
    return std::round(seconds_since(start) * 1000.0) / 1000.0;
}

std::string utc_now_iso8601() {
    std::time_t now = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&now, &utc);
    char buffer[32];
    std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return buffer;
}

}  // namespace ds
