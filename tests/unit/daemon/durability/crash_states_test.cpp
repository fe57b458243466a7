#include "daemon/durability/crash_states.h"

#include <catch2/catch.hpp>
#include <set>

using namespace ds::durability;
using ds::CacheMode;

namespace {

// An index as read_log makes it, from a pattern: 'w' a one-sector write,
// 'f' a flush, 'u' a FUA write, 'd' a discard.
LogIndex log_of(const std::string& pattern) {
    LogIndex log;
    log.sector_size = 512;
    std::uint64_t offset = 512;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        LogEntry entry;
        entry.sector = i;
        entry.offset = offset;
        entry.data_offset = offset + 512;
        entry.nr_sectors = pattern[i] == 'f' ? 0 : 1;
        if (pattern[i] == 'f') entry.flags = log_format::kFlagFlush;
        if (pattern[i] == 'u') entry.flags = log_format::kFlagFua;
        if (pattern[i] == 'd') entry.flags = log_format::kFlagDiscard;
        entry.data_bytes = pattern[i] == 'w' || pattern[i] == 'u' ? 512 : 0;
        entry.end_offset = entry.data_offset + entry.data_bytes;
        offset = entry.end_offset;
        log.entries.push_back(entry);
    }
    return log;
}

std::vector<std::size_t> extras(const CrashState& state) {
    return {state.applied.begin() + static_cast<std::ptrdiff_t>(state.durable_prefix),
            state.applied.end()};
}

using Positions = std::vector<std::size_t>;

}  // namespace

TEST_CASE("every cache mode but unsafe honours the guest's flushes", "[durability]") {
    CHECK(honours_guest_flushes(CacheMode::kNone));
    CHECK(honours_guest_flushes(CacheMode::kWriteback));
    CHECK(honours_guest_flushes(CacheMode::kWritethrough));
    CHECK(honours_guest_flushes(CacheMode::kDirectsync));
    CHECK_FALSE(honours_guest_flushes(CacheMode::kUnsafe));
}

TEST_CASE("with flushes honoured a crash keeps exactly what the last flush covered",
          "[durability]") {
    const LogIndex log = log_of("wwfwwfw");
    const auto states = crash_states(log, CacheMode::kNone, CrashModelOptions{});
    REQUIRE(states.size() == 3);
    CHECK(states[0].flush_entry == 2);
    CHECK(states[0].applied == Positions{0, 1, 2});
    CHECK(states[0].log_offset == log.entries[2].end_offset);
    CHECK(states[1].flush_entry == 5);
    CHECK(states[1].applied == Positions{0, 1, 2, 3, 4, 5});
    // The log's end: the write after the last flush is lost, though issued.
    CHECK(states[2].flush_entry == -1);
    CHECK(states[2].applied == Positions{0, 1, 2, 3, 4, 5});
    CHECK(states[2].log_offset == log.entries[6].end_offset);
}

TEST_CASE("the volatile-cache rule adds a seeded subset of the writes before the next flush",
          "[durability]") {
    const LogIndex log = log_of("wwfwwwwwwwfw");
    CrashModelOptions options;
    options.volatile_cache = true;
    std::set<Positions> seen;
    for (std::uint64_t seed = 0; seed < 16; ++seed) {
        options.seed = seed;
        const auto states = crash_states(log, CacheMode::kWriteback, options);
        REQUIRE(states.size() == 3);
        // The crash moves to just before flush 10: entries 3..9 are in play.
        CHECK(states[0].durable_prefix == 3);
        CHECK(states[0].log_offset == log.entries[9].end_offset);
        for (std::size_t position : extras(states[0])) CHECK((position >= 3 && position < 10));
        seen.insert(extras(states[0]));
        // Reproducible: the same seed gives the same states.
        const auto again = crash_states(log, CacheMode::kWriteback, options);
        CHECK(again[0].applied == states[0].applied);
        CHECK(again[2].applied == states[2].applied);
    }
    CHECK(seen.size() > 4);  // different seeds choose differently
}

TEST_CASE("a FUA write after the barrier is always kept", "[durability]") {
    CrashModelOptions options;
    options.volatile_cache = true;
    for (std::uint64_t seed = 0; seed < 8; ++seed) {
        options.seed = seed;
        const auto states = crash_states(log_of("wfwuwf"), CacheMode::kNone, options);
        const auto kept = extras(states.at(0));
        CHECK(std::find(kept.begin(), kept.end(), 3) != kept.end());
    }
}

TEST_CASE("with cache unsafe no flush is a barrier: any write of the run may be lost",
          "[durability]") {
    const LogIndex log = log_of("wwwwfwwwwf");
    std::set<std::size_t> dropped;
    for (std::uint64_t seed = 0; seed < 16; ++seed) {
        CrashModelOptions options;
        options.seed = seed;
        const auto states = crash_states(log, CacheMode::kUnsafe, options);
        REQUIRE(states.size() == 2);
        for (const auto& state : states) {
            CHECK(state.durable_prefix == 0);
            const std::set<std::size_t> applied(state.applied.begin(), state.applied.end());
            for (std::size_t i = 0; i <= static_cast<std::size_t>(state.flush_entry); ++i)
                if (log.entries[i].changes_device() && !applied.count(i)) dropped.insert(i);
        }
    }
    CHECK(dropped.count(0) == 1);  // even the run's first write, before two flushes
}

TEST_CASE("a log without flushes is crashed at its end", "[durability]") {
    const auto states = crash_states(log_of("wwdw"), CacheMode::kNone, CrashModelOptions{});
    REQUIRE(states.size() == 1);
    CHECK(states[0].flush_entry == -1);
    CHECK(states[0].applied.empty());
    CHECK(crash_states(log_of(""), CacheMode::kNone, CrashModelOptions{}).empty());
}

TEST_CASE("more flushes than crash points are sampled evenly, first and last kept",
          "[durability]") {
    std::string pattern;
    for (int i = 0; i < 200; ++i) pattern += "wf";
    const LogIndex log = log_of(pattern);
    const auto points = sample_flush_points(log, 50);
    REQUIRE(points.size() == 50);
    CHECK(points.front() == 1);
    CHECK(points.back() == 399);
    for (std::size_t k = 1; k < points.size(); ++k) {
        CHECK(points[k] > points[k - 1]);
        CHECK(points[k] - points[k - 1] <= 10);  // spread over the run, no gap > 2x the mean
    }
    CHECK(crash_states(log, CacheMode::kNone, CrashModelOptions{}).size() == 50);
    CHECK(sample_flush_points(log_of("wfwf"), 50) == Positions{1, 3});
    CHECK(sample_flush_points(log_of("wfwf"), 0).empty());
}

TEST_CASE("a crash state's JSON lists the entries chosen after the barrier", "[durability]") {
    CrashState state;
    state.flush_entry = 4;
    state.log_offset = 9000;
    state.durable_prefix = 2;
    state.applied = {0, 1, 5, 7};
    const auto json = to_json(state);
    CHECK(json.at("flush_entry") == 4);
    CHECK(json.at("applied_entries") == 4);
    CHECK(json.at("extra_entries") == ds::Json::array({5, 7}));
}

// A durability run's crash points start at the ledger's first ack
// (from_log_offset), with the flush before it kept: under the volatile-cache
// rule its crash reaches to the next flush, so a file system that sends no
// flush while the ledger runs (ext4 barrier=0) still has a crash state
// whose window holds the ledger's writes.
TEST_CASE("crash points start at the first ack, with the flush before it", "[durability]") {
    // mkfs: w f w f | ledger from entry 4: w w w w w w w w | unmount: f
    const LogIndex log = log_of("wfwfwwwwwwwwf");
    const std::uint64_t first_ack = log.entries[4].end_offset;
    CHECK(sample_flush_points(log, 50, first_ack) == Positions{3, 12});
    CHECK(sample_flush_points(log, 50, 0) == Positions{1, 3, 12});
    CrashModelOptions options;
    options.volatile_cache = true;
    options.seed = 7;
    options.from_log_offset = first_ack;
    const auto states = crash_states(log, CacheMode::kNone, options);
    REQUIRE(states.size() == 2);
    // From flush 3 to just before flush 12: the ledger's eight writes are
    // the window, a random subset of them kept, the log offset at the last.
    CHECK(states[0].durable_prefix == 4);
    CHECK(states[0].log_offset == log.entries[11].end_offset);
    CHECK(extras(states[0]).size() < 8);
    // Without the rule the point before the first ack is a crash there.
    options.volatile_cache = false;
    const auto plain = crash_states(log, CacheMode::kNone, options);
    CHECK(plain[0].applied == Positions{0, 1, 2, 3});
    CHECK(plain[0].log_offset < first_ack);
}

// What follows the last ack (MariaDB's shutdown flushes hundreds of times)
// has no records to lose: the sample stays within the acks' span, plus the
// flush before it and the log's last flush.
TEST_CASE("crash points stay within the acks' span, its edges kept", "[durability]") {
    // 0 w, 1 f | span: 2 w 3 w 4 f 5 w 6 w 7 f 8 w 9 w 10 f | 11-14 f f f f
    const LogIndex log = log_of("wfwwfwwfwwfffff");
    const std::uint64_t from = log.entries[2].end_offset;
    const std::uint64_t to = log.entries[10].end_offset;
    CHECK(sample_flush_points(log, 50, from, to) == Positions{1, 4, 7, 10, 14});
    CHECK(sample_flush_points(log, 4, from, to) == Positions{1, 4, 10, 14});
    // Two edges take two of three points; one stays for the span.
    CHECK(sample_flush_points(log, 3, from, to) == Positions{1, 10, 14});
    CHECK(sample_flush_points(log, 1, from, to) == Positions{1, 10, 14});
    CHECK(sample_flush_points(log, 0, from, to).empty());
}

TEST_CASE("no crash state drops a write before the mark, in any cache mode", "[durability]") {
    // Entries 0-3 are the format and setup (no flush: unsafe drops them, and
    // barrier=0 sends none), the mark ends at entry 3, the workload follows.
    const LogIndex log = log_of("wwwwwwfwwwwfww");
    for (CacheMode cache : {CacheMode::kUnsafe, CacheMode::kNone, CacheMode::kWriteback}) {
        CrashModelOptions options;
        options.volatile_cache = true;
        options.mark_log_offset = log.entries[3].end_offset;
        CHECK(entries_before_mark(log, options.mark_log_offset) == 4);
        for (std::uint64_t seed = 0; seed < 32; ++seed) {
            options.seed = seed;
            for (const CrashState& state : crash_states(log, cache, options)) {
                REQUIRE(state.durable_prefix >= 4);
                CHECK(Positions(state.applied.begin(), state.applied.begin() + 4) ==
                      Positions{0, 1, 2, 3});
            }
        }
    }
}

TEST_CASE("without a mark unsafe may drop the format itself", "[durability]") {
    const LogIndex log = log_of("wwwwwwfwwwwfww");
    CrashModelOptions options;
    bool dropped_before_entry_4 = false;
    for (std::uint64_t seed = 0; seed < 32 && !dropped_before_entry_4; ++seed) {
        options.seed = seed;
        for (const CrashState& state : crash_states(log, CacheMode::kUnsafe, options))
            dropped_before_entry_4 |= state.applied.size() < 4 || state.applied[3] != 3;
    }
    CHECK(dropped_before_entry_4);
}

TEST_CASE("the log clock bounds each entry's time on the safe side", "[durability]") {
    // Samples every second; the log grows 1000 bytes at 2 s and at 4 s.
    const LogClock clock({{0, 1000}, {1, 1000}, {2, 2000}, {3, 2000}, {4, 3000}, {5, 3000}});
    CHECK(clock.written_by(1000) == 0);
    CHECK(clock.written_by(1500) == 2);  // appended in (1, 2]: surely by 2
    CHECK(clock.written_by(3000) == 4);
    CHECK(clock.written_by(3001) == LogClock::kNever);
    CHECK(clock.crash_not_before(1500) == 1);  // not yet there at 1
    CHECK(clock.crash_not_before(3000) == 3);
    CHECK(clock.crash_not_before(500) == 0);
    CHECK(clock.max_gap_s() == 1);
    // The stored series keeps only the samples that bound something, and
    // gives the same bounds.
    const ds::Json stored = clock.to_json();
    CHECK(stored["samples"] == 6);
    std::vector<LogSample> series;
    for (const auto& pair : stored["series"]) series.push_back({pair[0], pair[1]});
    CHECK(series.size() == 6);  // every sample here sits at a change
    const LogClock again(series);
    for (std::uint64_t offset : {500, 1000, 1500, 2000, 2500, 3000, 3001}) {
        CHECK(again.written_by(offset) == clock.written_by(offset));
        CHECK(again.crash_not_before(offset) == clock.crash_not_before(offset));
    }
}

TEST_CASE("the log clock drops samples that go back in time or size", "[durability]") {
    const LogClock clock({{0, 1000}, {2, 2000}, {1, 3000}, {3, 1500}, {4, 2500}});
    CHECK(clock.samples().size() == 3);
    CHECK(clock.written_by(2500) == 4);
}

TEST_CASE("host writeback keeps the writes older than its window, the worst case does not",
          "[durability]") {
    // unsafe: mark after entry 1; then one write a second (entries 2..11,
    // a flush at 12 the host drops), crash at the log's end.
    const LogIndex log = log_of("wwwwwwwwwwwwf");
    std::vector<LogSample> samples;
    for (std::size_t i = 1; i < log.entries.size(); ++i)
        samples.push_back({static_cast<double>(i - 1), log.entries[i].end_offset});
    const LogClock clock(samples);  // entry i surely written by i - 1 s
    CrashModelOptions worst;
    worst.mark_log_offset = log.entries[1].end_offset;
    CrashModelOptions writeback = worst;
    writeback.clock = &clock;
    writeback.writeback_window_s = 5;
    for (std::uint64_t seed = 0; seed < 16; ++seed) {
        worst.seed = writeback.seed = seed;
        const auto worst_states = crash_states(log, CacheMode::kUnsafe, worst);
        const auto writeback_states = crash_states(log, CacheMode::kUnsafe, writeback);
        REQUIRE(worst_states.size() == writeback_states.size());
        // The last flush: the crash comes no earlier than 10 s (entry 12
        // not yet there at 10 s, sample 11), so entries written by 5 s
        // (entries 2..6) are on the disk.
        const CrashState& state = writeback_states.back();
        const std::set<std::size_t> kept(state.applied.begin(), state.applied.end());
        for (std::size_t i = 0; i <= 6; ++i) CHECK(kept.count(i) == 1);
        // Each host-writeback state holds its worst-case twin's writes.
        for (std::size_t k = 0; k < worst_states.size(); ++k) {
            const std::set<std::size_t> more(writeback_states[k].applied.begin(),
                                             writeback_states[k].applied.end());
            for (std::size_t i : worst_states[k].applied) CHECK(more.count(i) == 1);
            CHECK(writeback_states[k].applied.size() - worst_states[k].applied.size() ==
                  writeback_states[k].written_back);
            CHECK(worst_states[k].written_back == 0);
        }
    }
}

TEST_CASE("host writeback changes nothing for modes that write through the host's cache",
          "[durability]") {
    const LogIndex log = log_of("wwfwwwwwwwfw");
    std::vector<LogSample> samples;
    for (std::size_t i = 0; i < log.entries.size(); ++i)
        samples.push_back({10.0 * static_cast<double>(i), log.entries[i].end_offset});
    const LogClock clock(samples);
    CrashModelOptions worst;
    worst.volatile_cache = true;
    CrashModelOptions writeback = worst;
    writeback.clock = &clock;
    writeback.writeback_window_s = 1;
    CHECK_FALSE(host_cache_delays_writes(CacheMode::kNone));
    CHECK(host_cache_delays_writes(CacheMode::kWriteback));
    const auto a = crash_states(log, CacheMode::kNone, worst);
    const auto b = crash_states(log, CacheMode::kNone, writeback);
    REQUIRE(a.size() == b.size());
    for (std::size_t k = 0; k < a.size(); ++k) CHECK(a[k].applied == b[k].applied);
    // writeback between flushes: the old writes in the window are kept.
    const auto c = crash_states(log, CacheMode::kWriteback, writeback);
    std::size_t written_back = 0;
    for (const CrashState& state : c) written_back += state.written_back;
    CHECK(written_back > 0);
}
