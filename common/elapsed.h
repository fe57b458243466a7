// Elapsed time on the steady clock, in seconds, for timings and results.
#pragma once

#include <chrono>

namespace ds {

// Seconds since `start` on the steady clock, at the clock's full precision.
double seconds_since(std::chrono::steady_clock::time_point start);

// The same, rounded to the millisecond: what the agent reports in its
// results (a stable number of digits in the JSON it sends).
double seconds_since_rounded_to_ms(std::chrono::steady_clock::time_point start);

}  // namespace ds
