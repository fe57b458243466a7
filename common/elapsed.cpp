#include "common/elapsed.h"

#include <cmath>

namespace ds {

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double seconds_since_rounded_to_ms(std::chrono::steady_clock::time_point start) {
    return std::round(seconds_since(start) * 1000.0) / 1000.0;
}

}  // namespace ds
