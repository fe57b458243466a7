// The crash-state model (docs/durability.md): which entries of a run's
// write log a simulated power cut leaves on the volume, as data.
//
// A crash point is a flush entry of the log (the moments the guest was told
// "this is durable"), all of them or an even sample, plus the end of the
// log when writes follow the last flush. Per host cache mode:
//  * a mode that honours flushes (none, writeback, writethrough,
//    directsync): a FLUSH entry is a barrier; a crash right after flush f
//    keeps exactly entries [0, f];
//  * unsafe: QEMU drops every guest flush, so nothing the run wrote is
//    known to be on the host's disk: a crash keeps a random subset of all
//    the writes before it.
// The volatile-cache rule (CrashMonkey's): the disk may also have persisted
// any subset of the writes after the barrier, so the crash moves to just
// before the next flush (or the log's end) and a seeded random subset of
// the writes in between is kept too. FUA writes there are always kept:
// their completion made them durable (QEMU logs none, see log_writes.h).
// The same seed and log give the same states, on any host.
//
// The measured window (issue 34): everything the guest wrote before the
// run's mark (its file system, post-format steps, the workload's own setup)
// was made durable on the host before the workload began, as a user's VM's
// file system was written long before a crash. No state drops an entry
// before the mark, in any mode.
//
// Two host models for the modes whose host page cache holds the guest's
// writes past their completion (host_cache_delays_writes: unsafe, and
// writeback between flushes):
//  * worst case: any write since the barrier (unsafe: since the mark) may
//    be lost;
//  * host writeback: the host's flusher threads write a dirty page back
//    within its writeback window (vm.dirty_expire_centisecs +
//    dirty_writeback_centisecs), so a write older than the window at the
//    crash is kept; younger ones may be lost as in the worst case. The
//    ages come from the log's clock (log_clock.h), bounded so that an
//    entry counts as old only when it surely is. Both models draw the same
//    coin per entry, so a host-writeback state holds its worst-case twin's
//    writes and the old ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/settings.h"
#include "daemon/durability/log_clock.h"
#include "daemon/durability/log_writes.h"

namespace ds::durability {

struct CrashModelOptions {
    std::size_t max_crash_points = 50;  // more flushes than this: an even sample
    bool volatile_cache = false;        // the volatile-cache rule above
    std::uint64_t seed = 0;             // the random subsets' only source
    // Crash points only at flushes that end at or after this log offset: a
    // durability run passes the log's size at the ledger's first
    // acknowledgement, since before it the guest was still formatting and
    // setting up, which is not what is measured. The end-of-log state is
    // always tried.
    std::uint64_t from_log_offset = 0;
    // And up to this offset (0: the log's end): a durability run passes the
    // log's size at the last acknowledgement, since what follows (the
    // workload's shutdown) has no records to lose; the log's last flush is
    // still tried.
    std::uint64_t to_log_offset = 0;
    // The mark: entries that end at or before this log offset are durable
    // (0: no mark, the log's first entry is the window's start).
    std::uint64_t mark_log_offset = 0;
    // The host-writeback model, for a mode that delays writes; absent: the
    // worst case. The clock must outlive the call.
    const LogClock* clock = nullptr;
    double writeback_window_s = 0;
};

// The two host models (applied_settings.durability, docs/durability.md).
inline constexpr std::string_view kWorstCaseModel = "worst-case";
inline constexpr std::string_view kHostWritebackModel = "host-writeback";

// Whether the host cache mode passes the guest's flushes to the disk.
bool honours_guest_flushes(CacheMode cache);
// Whether the host's page cache holds the guest's completed writes until
// a flush or its own writeback (unsafe, writeback): the modes for which the
// host-writeback model differs from the worst case.
bool host_cache_delays_writes(CacheMode cache);

// How many entries end at or before `mark_log_offset`: the durable prefix
// every crash state keeps.
std::size_t entries_before_mark(const LogIndex& log, std::uint64_t mark_log_offset);

// The model's name (applied_settings.durability.model): the host power cut
// for a mode that drops the guest's flushes (unsafe), else flush barriers.
inline constexpr std::string_view kFlushBarrierModel = "flush-barriers";
inline constexpr std::string_view kHostPowerCutModel = "host-power-cut";
inline std::string_view model_name(CacheMode cache) {
    return honours_guest_flushes(cache) ? kFlushBarrierModel : kHostPowerCutModel;
}

struct CrashState {
    // The crash point: the FLUSH entry it follows, or the log's end (-1).
    std::ptrdiff_t flush_entry = -1;
    // The log's size at the moment of the crash: every entry whose
    // end_offset is at most this was issued before it, and the ledger's
    // acknowledgements recorded at or below it happened before the crash.
    std::uint64_t log_offset = 0;
    // Entries [0, durable_prefix) are all on the disk (the barrier).
    std::size_t durable_prefix = 0;
    // What the replayer applies: [0, durable_prefix) and the chosen later
    // writes, ascending.
    std::vector<std::size_t> applied;
    // Of those after the barrier, how many the host-writeback model kept
    // for their age alone (0 in the worst case).
    std::size_t written_back = 0;
};

// The crash states of `log` under `cache` and `options`, in log order.
// Empty when the log has no entries.
std::vector<CrashState> crash_states(const LogIndex& log, CacheMode cache,
                                     const CrashModelOptions& options);

// The crash points, ascending: the FLUSH entries ending within
// [from_log_offset, to_log_offset] (to 0: the log's end), sampled evenly
// (first and last kept), plus two edges: the last flush before
// from_log_offset (a crash after it may come as late as the next flush,
// inside the span) and the log's last flush. At most `max_points` in all,
// but at least one point inside the span when it has any.
std::vector<std::size_t> sample_flush_points(const LogIndex& log, std::size_t max_points,
                                             std::uint64_t from_log_offset = 0,
                                             std::uint64_t to_log_offset = 0);

// {"flush_entry", "log_offset", "durable_prefix", "applied_entries"
// (a count), "extra_entries" (the positions chosen after the barrier),
// "written_back"}.
Json to_json(const CrashState& state);

}  // namespace ds::durability
