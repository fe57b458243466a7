#include "common/clock.h"

#include <cmath>
#include <ctime>
#include <thread>

namespace ds {

namespace {
class RealClock final : public Clock {
  public:
    time_point now() const override { return std::chrono::steady_clock::now(); }
    std::chrono::system_clock::time_point wall_now() const override {
        return std::chrono::system_clock::now();
    }
    void sleep_for(duration wait) const override { std::this_thread::sleep_for(wait); }
};
}  // namespace

const Clock& real_clock() {
    static const RealClock clock;
    return clock;
}

double seconds_since(Clock::time_point start, const Clock& clock) {
    return std::chrono::duration<double>(clock.now() - start).count();
}

double seconds_since_rounded_to_ms(Clock::time_point start, const Clock& clock) {
    return std::round(seconds_since(start, clock) * 1000.0) / 1000.0;
}

std::string utc_iso8601(std::chrono::system_clock::time_point time) {
    const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    char buffer[32];
    std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return buffer;
}

std::string utc_now_iso8601(const Clock& clock) {
    return utc_iso8601(clock.wall_now());
}

}  // namespace ds
