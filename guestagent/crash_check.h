// The checker's side of a durability run (docs/durability.md): on a crash
// image of a ledger run's data disk (the disk as it would be after a power
// cut at one point of the run), find out what survived:
//   1. fsck, read only, as the image is (before any journal replay);
//   2. mount it (ext4 and xfs replay their journals here; btrfs mounts its
//      last committed tree);
//   3. the ledger's records: the file variant's ledger.dat scanned record by
//      record, or, for the database variant, MariaDB started on the datadir
//      (InnoDB's crash recovery) and `SELECT id FROM test.ledger`;
//   4. unmount, and fsck, read only, again: the verdict on the file system
//      (an unreplayed journal makes the first run report what a mount
//      repairs anyway).
// The host compares the ids found with the ids it saw acknowledged before the
// crash point (daemon/durability/crash_verdict.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/process.h"
#include "common/result.h"
#include "common/settings.h"
#include "guestagent/guest_system.h"
#include "guestagent/ledger_workload.h"
#include "guestagent/workload.h"

namespace ds::agent {

// How one file system type is checked without changing it, and which exit
// codes mean "no errors". One row per type the agent formats.
struct ReadOnlyFsck {
    std::string_view fs_type;
    std::vector<std::string_view> argv;  // the device path is appended
    std::vector<int> clean_exit_codes;
};
// nullptr for a type without a row.
const ReadOnlyFsck* find_read_only_fsck(std::string_view fs_type);

// Runs the type's read-only fsck on `device`: {"exit_code": N, "clean":
// bool, "output": the last lines of its stdout+stderr}. An fsck that cannot
// run at all is {"error": "..."}.
Json run_read_only_fsck(ProcessRunner& runner, std::string_view fs_type, const std::string& device,
                        std::chrono::milliseconds timeout);

// Inclusive id ranges, ascending: [[1, 250], [252, 260]].
using IdRanges = std::vector<std::pair<long long, long long>>;
Json ranges_json(const IdRanges& ranges);
// Ascending ids as ranges (a repeated id counts once).
IdRanges ranges_of(const std::vector<long long>& sorted_ids);

// What ledger.dat holds: the ids whose record is exactly what the ledger
// wrote (ledger_record), in ranges, and the count of records that are
// neither that nor all zero (torn or foreign).
struct LedgerFileScan {
    IdRanges present;
    long long torn = 0;
};
Result<LedgerFileScan> scan_ledger_file(const std::string& path, std::uint64_t record_size);

// What is needed to check one crash image.
struct CrashCheckRequest {
    std::string device;       // the crash image's block device
    std::string fs_type;      // as the run formatted it
    std::string mount_point;  // an empty directory
    Workload ledger;          // the run's ledger workload (kind "ledger")
};

// Bounds on one report, so that protocol::kMaxCheckDisks of them always fit
// one result message (kMaxMessageBytes and kMaxMessageValues; checked at
// compile time in crash_check.cpp): ledger.present keeps its first
// kMaxReportedRanges ranges and then has "present_truncated": true (the
// ids after the cut then count as missing, never as kept), and every
// string is cut to kMaxReportTextBytes.
inline constexpr std::size_t kMaxReportedRanges = 4096;
inline constexpr std::size_t kMaxReportTextBytes = 2048;
void bound_report(Json& report);

// Steps 1-4 above; every step's outcome is in the report, a failed step is
// no Error: {"fsck_before": .., "mounted": bool, "mount_error": "..",
// "ledger": {"present": ranges, "torn": N} | {"recovered": bool,
// "recovery_error": "..", "present": ranges}, "fsck_after": ..}, within the
// bounds of bound_report.
// errc::kInvalidArgument when the request is not a ledger workload.
Result<Json> check_crash_state(const CrashCheckRequest& request, GuestSystem& system,
                               WorkloadContext& ctx);

// The database variant's step 3 (mariadb_workload.cpp): MariaDB on the
// datadir the run left under ctx.work_dir, no install; {"recovered": bool,
// "recovery_error": "..", "present": ranges}.
Json recover_ledger_database(const Workload& ledger, WorkloadContext& ctx);

}  // namespace ds::agent
