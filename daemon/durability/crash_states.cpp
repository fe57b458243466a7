#include "daemon/durability/crash_states.h"

#include <algorithm>
#include <optional>
#include <random>

namespace ds::durability {
namespace {

// The window of a crash point: the entries after its barrier that the
// crash may or may not have kept, and the log size at the crash.
struct Window {
    std::size_t barrier = 0;  // entries [0, barrier) are durable
    std::size_t end = 0;      // the crash comes after entries [0, end)
};

// The first FLUSH entry at or after `from`, or the log's size.
std::size_t next_flush(const LogIndex& log, std::size_t from) {
    while (from < log.entries.size() && !log.entries[from].is_flush()) ++from;
    return from;
}

// The position after the last FLUSH entry before `end`, 0 if none.
std::size_t after_last_flush(const LogIndex& log, std::size_t end) {
    while (end > 0 && !log.entries[end - 1].is_flush()) --end;
    return end;
}

// A crash right after flush `point` (or, for the log's end, after its last
// entry); with the volatile-cache rule it moves to just before the next
// flush, so the writes in between are in the window.
// Nothing before the mark is in the window: a crash before the mark keeps
// everything up to it.
Window window_of(const LogIndex& log, std::ptrdiff_t flush_entry, CacheMode cache,
                 const CrashModelOptions& options) {
    const std::size_t size = log.entries.size();
    std::size_t end = flush_entry < 0 ? size : static_cast<std::size_t>(flush_entry) + 1;
    if (options.volatile_cache && flush_entry >= 0) end = next_flush(log, end);
    const std::size_t flushed = honours_guest_flushes(cache) ? after_last_flush(log, end) : 0;
    const std::size_t marked = entries_before_mark(log, options.mark_log_offset);
    return Window{std::min(std::max(flushed, marked), end), end};
}

// The log offset a crash after entries [0, end) comes at.
std::uint64_t crash_offset(const LogIndex& log, std::size_t end) {
    return end == 0 ? log.sector_size : log.entries[end - 1].end_offset;
}

// A seeded generator per crash point, so one state does not shift the
// others' choices. mt19937_64's output sequence is fixed by the C++
// standard (unlike the distributions'), so bits are taken from it directly.
std::mt19937_64 generator_for(std::uint64_t seed, std::size_t point_number) {
    return std::mt19937_64(seed ^ (0x9e3779b97f4a7c15ULL * (point_number + 1)));
}

// The writes of the window the crash keeps: every FUA write, each other one
// with probability 1/2 (none without a volatile cache), and under the
// host-writeback model every one older than the window at the crash. The
// coin is drawn for every write whatever the model, so the models differ
// only by the old writes.
struct Kept {
    std::vector<std::size_t> entries;
    std::size_t written_back = 0;
};
Kept kept_after_barrier(const LogIndex& log, const Window& window, bool random_subset,
                        const CrashModelOptions& options, bool writeback_applies,
                        std::mt19937_64& random) {
    const double crash_s =
        writeback_applies ? options.clock->crash_not_before(crash_offset(log, window.end)) : 0;
    Kept kept;
    for (std::size_t i = window.barrier; i < window.end; ++i) {
        const LogEntry& entry = log.entries[i];
        if (!entry.changes_device()) continue;
        const bool coin = random_subset && (random() >> 63) != 0;
        const bool old =
            writeback_applies &&
            options.clock->written_by(entry.end_offset) + options.writeback_window_s <= crash_s;
        if (entry.is_fua() || coin || old) kept.entries.push_back(i);
        if (old && !entry.is_fua() && !coin) ++kept.written_back;
    }
    return kept;
}

CrashState state_at(const LogIndex& log, std::ptrdiff_t flush_entry, std::size_t point_number,
                    CacheMode cache, const CrashModelOptions& options) {
    const Window window = window_of(log, flush_entry, cache, options);
    // unsafe keeps a subset whatever the rule: its host cache is volatile
    // for the whole run.
    const bool random_subset = options.volatile_cache || !honours_guest_flushes(cache);
    const bool writeback_applies = options.clock != nullptr && host_cache_delays_writes(cache);
    std::mt19937_64 random = generator_for(options.seed, point_number);
    CrashState state;
    state.flush_entry = flush_entry;
    state.log_offset = crash_offset(log, window.end);
    state.durable_prefix = window.barrier;
    state.applied.reserve(window.barrier);
    for (std::size_t i = 0; i < window.barrier; ++i) state.applied.push_back(i);
    Kept kept = kept_after_barrier(log, window, random_subset, options, writeback_applies, random);
    state.applied.insert(state.applied.end(), kept.entries.begin(), kept.entries.end());
    state.written_back = kept.written_back;
    return state;
}

}  // namespace

bool honours_guest_flushes(CacheMode cache) {
    return cache != CacheMode::kUnsafe;
}

bool host_cache_delays_writes(CacheMode cache) {
    return cache == CacheMode::kUnsafe || cache == CacheMode::kWriteback;
}

std::size_t entries_before_mark(const LogIndex& log, std::uint64_t mark_log_offset) {
    std::size_t count = 0;
    while (count < log.entries.size() && log.entries[count].end_offset <= mark_log_offset) ++count;
    return count;
}

std::vector<std::size_t> sample_flush_points(const LogIndex& log, std::size_t max_points,
                                             std::uint64_t from_log_offset,
                                             std::uint64_t to_log_offset) {
    if (max_points == 0) return {};
    std::vector<std::size_t> inside;
    std::optional<std::size_t> last_before;  // the last flush before from_log_offset
    std::optional<std::size_t> last;         // the log's last flush
    for (std::size_t i = 0; i < log.entries.size(); ++i) {
        const LogEntry& entry = log.entries[i];
        if (!entry.is_flush()) continue;
        last = i;
        if (entry.end_offset < from_log_offset) {
            last_before = i;
        } else if (to_log_offset == 0 || entry.end_offset <= to_log_offset) {
            inside.push_back(i);
        }
    }
    // The edges: the flush before the span, whose crash lies anywhere up to
    // the next flush, the span included (without flushes in it, ext4
    // barrier=0, it is the only point whose volatile-cache window holds the
    // workload's writes), and the log's last flush, after which every
    // acknowledged record must be there.
    std::vector<std::size_t> edges;
    if (from_log_offset > 0 && last_before) edges.push_back(*last_before);
    if (last && (inside.empty() || inside.back() != *last)) edges.push_back(*last);
    std::vector<std::size_t> points = edges;
    const std::size_t room = max_points > edges.size() ? max_points - edges.size() : 1;
    if (inside.size() <= room) {
        points.insert(points.end(), inside.begin(), inside.end());
    } else {
        // Evenly spread: the k-th of `room` at k * (n - 1) / (room - 1).
        const std::size_t n = inside.size();
        for (std::size_t k = 0; k < room; ++k)
            points.push_back(inside[room == 1 ? n - 1 : k * (n - 1) / (room - 1)]);
    }
    std::sort(points.begin(), points.end());
    points.erase(std::unique(points.begin(), points.end()), points.end());
    return points;
}

std::vector<CrashState> crash_states(const LogIndex& log, CacheMode cache,
                                     const CrashModelOptions& options) {
    std::vector<CrashState> states;
    if (log.entries.empty()) return states;
    const std::vector<std::size_t> points = sample_flush_points(
        log, options.max_crash_points, options.from_log_offset, options.to_log_offset);
    for (std::size_t k = 0; k < points.size(); ++k) {
        states.push_back(state_at(log, static_cast<std::ptrdiff_t>(points[k]), k, cache, options));
    }
    // Writes after the last flush: a crash at the log's end may lose them.
    if (!log.entries.back().is_flush()) {
        states.push_back(state_at(log, -1, points.size(), cache, options));
    }
    return states;
}

Json to_json(const CrashState& state) {
    Json extra = Json::array();
    for (std::size_t i = state.durable_prefix; i < state.applied.size(); ++i)
        extra.push_back(state.applied[i]);
    return Json{{"flush_entry", state.flush_entry},
                {"log_offset", state.log_offset},
                {"durable_prefix", state.durable_prefix},
                {"applied_entries", state.applied.size()},
                {"extra_entries", extra},
                {"written_back", state.written_back}};
}

}  // namespace ds::durability
