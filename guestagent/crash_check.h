// The checker's side of a durability run (docs/durability.md): on a crash
// image of a ledger run's data disk (the disk as it would be after a power
// cut at one point of the run), find out what survived:
//   1. fsck, read only, as the image is (before any journal replay);
//   2. mount it (ext4 and xfs replay their journals here; btrfs mounts its
//      last committed tree); when that fails, repair it as a user would
//      after a crash (find_repair_sequence) and mount again;
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
#include <optional>
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

// How a user repairs one file system type that no longer mounts after a
// crash: steps run in order until the image mounts. A step runs only when
// the image is still unmountable and, when only_after_exit is set, the step
// before exited with that code (xfs_repair's 2: "unable to proceed due to a
// dirty log"); no mount is tried between a step and a next one that its
// exit code asks for. One row per type the agent formats.
struct RepairStep {
    std::vector<std::string_view> argv;  // the device path is appended
    std::optional<int> only_after_exit;
    bool zeroes_log = false;  // discards the journal/log: changes since its last commit are gone
};
struct RepairSequence {
    std::string_view fs_type;
    std::vector<RepairStep> steps;
};
// nullptr for a type without a row.
const RepairSequence* find_repair_sequence(std::string_view fs_type);

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
// The most steps a RepairSequence has (the report's budget counts them).
inline constexpr std::size_t kMaxRepairSteps = 2;
void bound_report(Json& report);

// Steps 1-4 above; every step's outcome is in the report, a failed step is
// no Error: {"fsck_before": .., "mounted": bool, "mount_error": "..",
// "repair": .., "ledger": {"present": ranges, "torn": N} | {"recovered":
// bool, "recovery_error": "..", "present": ranges}, "fsck_after": ..},
// within the bounds of bound_report. "mounted" is the first mount, as the
// crash left the image; only when it failed is there a "repair":
// {"steps": [{"command": "e2fsck -f -y /dev/sdb", "exit_code": N, "output":
// last lines} | {"command": .., "error": ".."}, ...], "log_zeroed": bool,
// "mounted": bool, "problem": why it still does not mount}, and "ledger"
// then holds what the repaired image kept (absent when it did not mount).
// "fsck_after" is run on the image as it ends, repaired or not.
// errc::kInvalidArgument when the request's workload is not of a kind that
// acknowledges records (ds::kind_acknowledges, common/workload_kind.h: ledger).
Result<Json> check_crash_state(const CrashCheckRequest& request, GuestSystem& system,
                               WorkloadContext& ctx);

// Step 3 of each ledger variant (ledger_workload.h, LedgerVariant::scan):
// the file variant's ledger.dat under ctx.work_dir, {"present": ranges,
// "torn": ..} or {"error": ..};
Json scan_ledger_file_on_mount(const Workload& ledger, const LedgerPlan& plan,
                               WorkloadContext& ctx);
// the database variant's (ledger_database.cpp): MariaDB on the datadir the
// run left under ctx.work_dir, no install; {"recovered": bool,
// "recovery_error": "..", "present": ranges};
Json recover_ledger_database(const Workload& ledger, WorkloadContext& ctx);
// the postgresql variant's (ledger_postgresql.cpp): PostgreSQL on the
// cluster the run left, replaying its WAL; the same shape.
Json recover_ledger_postgresql(const Workload& ledger, WorkloadContext& ctx);

}  // namespace ds::agent
