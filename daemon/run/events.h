// Progress events for the API's event stream. In memory only: the durable
// state is in the Store; events say what changed, live.
//
// The history is bounded twice, by count and by bytes (each event's compact
// JSON), so the memory it holds has a ceiling whatever is published: the
// oldest events go first when either bound is passed. A waiter that falls
// further behind than the history misses what was dropped (the event stream
// starts from a store snapshot, so it can always catch up from there).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "common/api/events.h"
#include "common/clock.h"
#include "common/settings.h"

namespace ds {

class EventBus {
  public:
    static constexpr std::size_t kDefaultHistoryEvents = 10000;
    static constexpr std::size_t kDefaultHistoryBytes = 4u << 20;  // 4 MiB

    explicit EventBus(std::size_t history_limit = kDefaultHistoryEvents,
                      std::size_t history_bytes_limit = kDefaultHistoryBytes,
                      const Clock& clock = real_clock())
        : history_limit_(history_limit), history_bytes_limit_(history_bytes_limit), clock_(clock) {}

    // Appends an event for a sweep; adds "sweep_id" and "time" (UTC ISO-8601,
    // the clock's wall time).
    // The newest event is always kept, even one larger than the byte bound.
    void publish(std::int64_t sweep_id, Json event);
    // The daemon's events are api::SweepEvent, the stream's line (docs/api.md
    // "Event stream"); the history holds them encoded.
    void publish(std::int64_t sweep_id, const api::SweepEvent& event) {
        publish(sweep_id, to_json(event));
    }

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

    // What the history holds now: events, and bytes as counted for the bound.
    std::size_t history_size() const;
    std::size_t history_bytes() const;

  private:
    struct Entry {
        std::uint64_t sequence;
        std::int64_t sweep_id;
        Json event;
        std::size_t bytes;  // size of the event's compact JSON
    };
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::deque<Entry> history_;        // guarded by mutex_
    std::size_t history_bytes_ = 0;    // guarded by mutex_: sum of history_[i].bytes
    std::uint64_t next_sequence_ = 1;  // guarded by mutex_
    bool shutting_down_ = false;       // guarded by mutex_
    const std::size_t history_limit_;
    const std::size_t history_bytes_limit_;
    const Clock& clock_;
};

}  // namespace ds
