// Progress events for the API's event stream. In memory only: the durable
// state is in the Store; events say what changed, live.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "common/settings.h"

namespace ds {

class EventBus {
  public:
    explicit EventBus(std::size_t history_limit = 10000) : history_limit_(history_limit) {}

    // Appends an event for a sweep; adds "sweep_id" and "time" (UTC ISO-8601).
    void publish(std::int64_t sweep_id, Json event);

    // Events of `sweep_id` with a sequence number > *cursor, waiting up to
    // `timeout` for the first one. Advances *cursor past what it returns.
    // A cursor of 0 starts from "now" (history is not replayed; the stream
    // starts with a snapshot from the store instead).
    std::vector<Json> wait(std::int64_t sweep_id, std::uint64_t* cursor,
                           std::chrono::milliseconds timeout);

    // The sequence number of the newest event (a cursor that skips history).
    std::uint64_t latest() const;

    // Wakes all waiters (daemon shutdown); wait() then returns at once.
    void shutdown();
    bool is_shut_down() const;

  private:
    struct Entry {
        std::uint64_t sequence;
        std::int64_t sweep_id;
        Json event;
    };
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::deque<Entry> history_;        // guarded by mutex_
    std::uint64_t next_sequence_ = 1;  // guarded by mutex_
    bool shutting_down_ = false;       // guarded by mutex_
    std::size_t history_limit_;
};

// "2026-11-29T20:00:00Z"
std::string utc_now_iso8601();

}  // namespace ds
