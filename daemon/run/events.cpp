#include "daemon/run/events.h"

#include <ctime>

#include "common/clock.h"

namespace ds {

void EventBus::publish(std::int64_t sweep_id, Json event) {
    event["sweep_id"] = sweep_id;
    event["time"] = utc_now_iso8601(clock_);
    // Measured outside the lock; the replace handler never throws.
    const std::size_t bytes = event.dump(-1, ' ', false, Json::error_handler_t::replace).size();
    {
        std::lock_guard lock(mutex_);
        history_.push_back(Entry{next_sequence_++, sweep_id, std::move(event), bytes});
        history_bytes_ += bytes;
        while (history_.size() > 1 &&
               (history_.size() > history_limit_ || history_bytes_ > history_bytes_limit_)) {
            history_bytes_ -= history_.front().bytes;
            history_.pop_front();
        }
    }
    changed_.notify_all();
}

std::size_t EventBus::history_size() const {
    std::lock_guard lock(mutex_);
    return history_.size();
}

std::size_t EventBus::history_bytes() const {
    std::lock_guard lock(mutex_);
    return history_bytes_;
}

std::uint64_t EventBus::latest() const {
    std::lock_guard lock(mutex_);
    return next_sequence_ - 1;
}

bool EventBus::is_shut_down() const {
    std::lock_guard lock(mutex_);
    return shutting_down_;
}

void EventBus::shutdown() {
    {
        std::lock_guard lock(mutex_);
        shutting_down_ = true;
    }
    changed_.notify_all();
}

std::vector<Json> EventBus::wait(std::int64_t sweep_id, std::uint64_t* cursor,
                                 std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    if (*cursor == 0) *cursor = next_sequence_ - 1;
    std::vector<Json> out;
    auto collect = [&] {
        for (const auto& entry : history_) {
            if (entry.sequence > *cursor && entry.sweep_id == sweep_id) out.push_back(entry.event);
        }
        if (!history_.empty()) *cursor = std::max(*cursor, history_.back().sequence);
        return !out.empty() || shutting_down_;
    };
    changed_.wait_for(lock, timeout, collect);
    return out;
}

}  // namespace ds
