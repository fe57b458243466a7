// Time as runs and records show it: elapsed seconds on the steady clock
// (timings, results) and the wall clock's UTC time (created_at, events).
#pragma once

#include <chrono>
#include <string>

namespace ds {

// Seconds since `start` on the steady clock, at the clock's full precision.
double seconds_since(std::chrono::steady_clock::time_point start);

// The same, rounded to the millisecond: what the agent reports in its
// results (a stable number of digits in the JSON it sends).
double seconds_since_rounded_to_ms(std::chrono::steady_clock::time_point start);

// The wall clock now, in UTC, to the second: "2026-11-29T20:00:00Z".
std::string utc_now_iso8601();

}  // namespace ds
