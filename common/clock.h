// The one place that reads time: a Clock gives the steady time (timings,
// deadlines), the wall time (created_at, events) and sleeps. Components that
// decide by time take a `const Clock&`, so a unit test hands them a fake one
// (tests/support/fake_clock.h) and steps it, instead of sleeping and
// bounding the wall clock.
//
// A deadline handed to the outside world (poll on a socket, an HTTP request,
// a child process) is a wait of at most a short real slice; what a deadline
// means, whether it has passed, is decided by the component's Clock.
#pragma once

#include <chrono>
#include <string>

namespace ds {

class Clock {
  public:
    using time_point = std::chrono::steady_clock::time_point;
    using duration = std::chrono::steady_clock::duration;

    virtual ~Clock() = default;
    // Monotonic: durations and deadlines are measured on this.
    virtual time_point now() const = 0;
    // The wall clock, for times people read and records keep.
    virtual std::chrono::system_clock::time_point wall_now() const = 0;
    // Lets `wait` pass (a fake clock steps itself instead of blocking).
    virtual void sleep_for(duration wait) const = 0;
};

// The process's real clocks: std::chrono::steady_clock, system_clock and
// std::this_thread::sleep_for.
const Clock& real_clock();

// Seconds since `start` on `clock`, at the clock's full precision.
double seconds_since(Clock::time_point start, const Clock& clock = real_clock());

// The same, rounded to the millisecond: what the agent reports in its
// results (a stable number of digits in the JSON it sends).
double seconds_since_rounded_to_ms(Clock::time_point start, const Clock& clock = real_clock());

// `time` in UTC, to the second: "2026-11-29T20:00:00Z".
std::string utc_iso8601(std::chrono::system_clock::time_point time);

// The clock's wall time in UTC, to the second.
std::string utc_now_iso8601(const Clock& clock = real_clock());

}  // namespace ds
