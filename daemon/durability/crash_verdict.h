// What one crash state lost, and what a configuration's crash states add up
// to (docs/durability.md). The checker guest's report (guestagent/
// crash_check.h) is untrusted like every guest message: it is checked here
// before use. A record counts as acknowledged before a crash point when its
// ack reached the host while the write log was no longer than the point's
// offset (ack_entry.h): the write that made it durable lies in the log
// before that.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/settings.h"
#include "daemon/durability/ack_entry.h"

namespace ds {

// Inclusive id ranges, ascending and apart: [[1, 250], [252, 260]].
using IdRanges = std::vector<std::pair<long long, long long>>;

// What a user's repair of a state that did not mount gave (the report's
// "repair", docs/agent-protocol.md "Checking crash images").
struct RepairOutcome {
    bool tried = false;       // the report has a repair (older agents: never)
    std::string commands;     // the command lines run, "; " between them
    int exit_code = -1;       // the last command's; -1 when it did not run to its end
    bool log_zeroed = false;  // xfs_repair -L or btrfs rescue zero-log ran
    bool mounted = false;     // the repaired image mounted
    bool recovered = false;   // and the application came up on it
    IdRanges present;         // ledger ids found after repair
    long long torn = 0;
    std::string problem;  // why it still did not mount / recover
};

// The checker's report on one crash state.
struct CrashCheck {
    bool mounted = false;     // the first mount, of the image as the crash left it
    bool fsck_clean = false;  // mounted, and fsck after mount and unmount found nothing
    bool recovered = false;   // the application came up (file variant: it mounted)
    IdRanges present;         // ledger ids found (none when it did not mount)
    long long torn = 0;       // records that are neither right nor empty
    std::string problem;      // why it did not mount / recover, for people
    RepairOutcome repair;     // only for a state that did not mount
};
// errc::kProtocol naming the field: ranges must be [first, last] integer
// pairs with 1 <= first <= last, ascending, not touching; at most
// kMaxCheckRanges of them. A report with "mounted": false may have a
// "repair" object: "steps" an array of at most kMaxCheckRepairSteps objects with
// a string "command" and an integer "exit_code" in [-1, 255] (or a string
// "error"), "mounted" a boolean, "log_zeroed" and "problem" optional; when
// it mounted, the report's "ledger" is what the repaired image kept. A
// report without "repair" (older agents) reads as no repair tried.
inline constexpr std::size_t kMaxCheckRanges = 100000;
inline constexpr std::size_t kMaxCheckRepairSteps = 8;
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

// One crash state's outcome. `lost` is what the crash itself left: a state
// that did not mount lost every acknowledged record. `lost_after_repair` is
// what a user has after repairing it: equal to `lost` for a state that
// mounted (or was not repaired), every acknowledged record when the repair
// did not make it mount and recover.
struct CrashStateResult {
    std::uint64_t log_offset = 0;
    long long acknowledged = 0;
    long long lost = 0;
    long long lost_after_repair = 0;
    CrashCheck check;
};
// The result for `check` at `log_offset` with `acknowledged` records
// acknowledged before it: both losses computed.
CrashStateResult crash_state_result(std::uint64_t log_offset, long long acknowledged,
                                    CrashCheck check);
// The losses after repair of a state checked as `check`.
long long lost_after_repair(long long acknowledged, long long lost, const CrashCheck& check);

// A configuration's durability: the crash states tried, the failures by
// kind, the acknowledged records lost (max and mean over the states). A
// state cut before the ledger's first acknowledgement counts a failed mount
// or fsck, but not a ledger that is not there to recover.
// The *_after_repair figures count every state, as lost_after_repair does;
// without a repair they equal the ones before it.
struct DurabilitySummary {
    int crash_states = 0;
    int mount_failures = 0;
    int fsck_failures = 0;
    int recovery_failures = 0;
    int states_with_losses = 0;
    long long max_lost = 0;
    double mean_lost = 0;
    int states_repaired = 0;       // did not mount, and a repair was tried
    int mounted_after_repair = 0;  // of those, the ones that mounted after it
    int states_with_losses_after_repair = 0;
    long long max_lost_after_repair = 0;
    double mean_lost_after_repair = 0;
    // "kept every acknowledged commit in 50 crash states" or "lost
    // acknowledged commits in 7 of 8 crash states (up to 300)", with the
    // mount/fsck/recovery failures named when there are any, and after
    // repairs "7 did not mount, 6 mounted after repair, lost after repair
    // in 1 (up to 164)".
    std::string verdict() const;
    // Every field by its name, and "verdict".
    Json to_json() const;
};
DurabilitySummary summarize(const std::vector<CrashStateResult>& states);

}  // namespace ds
