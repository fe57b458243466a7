// A Clock (common/clock.h) that moves only when told: a test steps it with
// advance(), and a sleep on it returns at once, having stepped it by the
// sleep's length. Time-driven behaviour (deadlines, retries, timings, the
// UTC times records keep) is then checked exactly and at once, with no real
// waiting and no wall-clock bounds. Safe to use from several threads.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "common/clock.h"

namespace ds::test {

class FakeClock final : public Clock {
  public:
    // 2026-01-01T00:00:00Z unless told otherwise.
    static constexpr std::chrono::sys_seconds kDefaultWallStart{std::chrono::seconds(1767225600)};

    explicit FakeClock(std::chrono::system_clock::time_point wall_start = kDefaultWallStart)
        : wall_start_(wall_start) {}

    time_point now() const override {
        std::lock_guard lock(mutex_);
        return steady_start_ + elapsed_;
    }
    std::chrono::system_clock::time_point wall_now() const override {
        std::lock_guard lock(mutex_);
        return wall_start_ +
               std::chrono::duration_cast<std::chrono::system_clock::duration>(elapsed_);
    }
    // Steps the clock by `wait`, records it, then runs the hook (if any) in
    // the sleeping thread: "something happened while it slept".
    void sleep_for(duration wait) const override {
        std::function<void(duration)> hook;
        {
            std::lock_guard lock(mutex_);
            elapsed_ += wait;
            sleeps_.push_back(wait);
            hook = on_sleep_;
        }
        if (hook) hook(wait);
    }

    void advance(duration step) {
        std::lock_guard lock(mutex_);
        elapsed_ += step;
    }
    // How far the clock has moved since it was made.
    duration elapsed() const {
        std::lock_guard lock(mutex_);
        return elapsed_;
    }
    // Every sleep so far, in order.
    std::vector<duration> sleeps() const {
        std::lock_guard lock(mutex_);
        return sleeps_;
    }
    void on_sleep(std::function<void(duration)> hook) {
        std::lock_guard lock(mutex_);
        on_sleep_ = std::move(hook);
    }

  private:
    // Any fixed point will do; a fake deadline never reaches a real wait.
    const time_point steady_start_ = time_point{} + std::chrono::hours(1000);
    const std::chrono::system_clock::time_point wall_start_;
    mutable std::mutex mutex_;
    mutable duration elapsed_{};
    mutable std::vector<duration> sleeps_;
    std::function<void(duration)> on_sleep_;
};

}  // namespace ds::test
