// What one crash state lost, and what a configuration's crash states add up
// to (docs/durability.md). The checker guest's report (guestagent/
// crash_check.h) is untrusted like every guest message: it is checked here
// before use. A record counts as acknowledged before a crash point when its
// ack reached the host while the write log was no longer than the point's
// offset (daemon/run/ack_ledger.h): the write that made it durable lies in
// the log before that.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/settings.h"
#include "daemon/run/ack_ledger.h"

namespace ds {

// Inclusive id ranges, ascending and apart: [[1, 250], [252, 260]].
using IdRanges = std::vector<std::pair<long long, long long>>;

// The checker's report on one crash state.
struct CrashCheck {
    bool mounted = false;
    bool fsck_clean = false;  // fsck after mount and unmount found nothing
    bool recovered = false;   // the application came up (file variant: it mounted)
    IdRanges present;         // ledger ids found
    long long torn = 0;       // records that are neither right nor empty
    std::string problem;      // why it did not mount / recover, for people
};
// errc::kProtocol naming the field: ranges must be [first, last] integer
// pairs with 1 <= first <= last, ascending, not touching; at most
// kMaxCheckRanges of them.
inline constexpr std::size_t kMaxCheckRanges = 100000;
Result<CrashCheck> parse_crash_check(const Json& report);
// A checker guest's result.output for a job with check_disks
// (docs/agent-protocol.md): {"states": [report, ...]}, the reports in the
// order of job.check_disks. errc::kProtocol when it is not an object, has no
// `states` array of exactly `expected` reports, or a report does not parse
// (the message names "states[i]").
Result<std::vector<CrashCheck>> parse_crash_checks(const Json& output, std::size_t expected);

// How many records (ids 1..N) were acknowledged before a crash at
// `log_offset`: the acks whose log_bytes_at_ack <= log_offset. Acks without
// a log size count as not before any point.
long long acknowledged_before(const std::vector<AckEntry>& acks, std::uint64_t log_offset);

// Of the records 1..acknowledged, how many `present` lacks.
long long lost_records(long long acknowledged, const IdRanges& present);

// One crash state's outcome.
struct CrashStateResult {
    std::uint64_t log_offset = 0;
    long long acknowledged = 0;
    long long lost = 0;
    CrashCheck check;
};

// A configuration's durability: the crash states tried, the failures by
// kind, the acknowledged records lost (max and mean over the states). A
// state cut before the ledger's first acknowledgement counts a failed mount
// or fsck, but not a ledger that is not there to recover.
struct DurabilitySummary {
    int crash_states = 0;
    int mount_failures = 0;
    int fsck_failures = 0;
    int recovery_failures = 0;
    int states_with_losses = 0;
    long long max_lost = 0;
    double mean_lost = 0;
    // "kept every acknowledged commit in 50 crash states" or "lost
    // acknowledged commits in 7 of 50 crash states (up to 12)", with the
    // mount/fsck/recovery failures named when there are any.
    std::string verdict() const;
    Json to_json() const;
};
DurabilitySummary summarize(const std::vector<CrashStateResult>& states);

}  // namespace ds
