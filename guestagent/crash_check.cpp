#include "guestagent/crash_check.h"

#include <algorithm>
#include <fstream>

#include "common/protocol.h"
#include "common/workload_kind.h"

namespace ds::agent {
namespace {

// -n answers "no" to every question: e2fsck, xfs_repair and btrfs check
// then change nothing. -f: check even a file system marked clean.
// e2fsck exits 4 for errors left uncorrected; xfs_repair -n 1; btrfs 1.
const std::vector<ReadOnlyFsck>& read_only_fscks() {
    static const std::vector<ReadOnlyFsck> table = {
        {"ext4", {"e2fsck", "-n", "-f"}, {0}},
        {"xfs", {"xfs_repair", "-n"}, {0}},
        {"btrfs", {"btrfs", "check", "--readonly"}, {0}},
    };
    return table;
}

// What a user runs on a file system that no longer mounts after a crash.
// The image is the host's throwaway copy (each crash image is built fresh
// from the run's pre-run copy and deleted once checked), so repairing it in
// place is repairing a copy, as the manuals advise.
//  * ext4: e2fsck(8) -f -y. Its exit code is a sum: 1 "errors corrected",
//    2 "corrected, reboot", 4 and up "errors left uncorrected" or worse;
//    the image is mounted whatever it says, and the code is reported.
//  * xfs: the mount that failed was the log replay xfs_repair(8) ("DIRTY
//    LOGS") asks for first; xfs_repair then, and when it exits 2 ("unable to
//    proceed due to a dirty log") xfs_repair -L, which zeroes the log: the
//    report says so (log_zeroed).
//  * btrfs: never `btrfs check --repair`. btrfs-check(8) of btrfs-progs 6.2
//    (Debian 12's, the checker guest's) lists it under DANGEROUS OPTIONS:
//    "Do not use --repair unless you are advised to do so by a developer or
//    an experienced user"; an unattended checker is neither. btrfs-rescue(8)
//    instead: `zero-log` ("may fix a specific set of problem when the
//    filesystem mount fails due to the log replay"; it loses what was
//    fsynced since the last transaction commit: log_zeroed), then
//    `super-recover -y` ("recover bad superblocks from good copies").
const std::vector<RepairSequence>& repair_sequences() {
    static const std::vector<RepairSequence> table = {
        {"ext4", {{{"e2fsck", "-f", "-y"}, std::nullopt, false}}},
        {"xfs", {{{"xfs_repair"}, std::nullopt, false}, {{"xfs_repair", "-L"}, 2, true}}},
        {"btrfs",
         {{{"btrfs", "rescue", "zero-log"}, std::nullopt, true},
          {{"btrfs", "rescue", "super-recover", "-y"}, std::nullopt, false}}},
    };
    return table;
}

// The last `lines` lines of `text`.
std::string last_lines(const std::string& text, int lines) {
    std::size_t at = text.size();
    while (at > 0 && (text[at - 1] == '\n')) --at;
    for (int seen = 0; at > 0; --at) {
        if (text[at - 1] == '\n' && ++seen == lines) break;
    }
    return text.substr(at);
}

bool all_zero(std::string_view bytes) {
    return std::all_of(bytes.begin(), bytes.end(), [](char c) { return c == '\0'; });
}

// The most values and strings a report holds besides its ranges (fsck
// before and after with 3 values each, mounted, the errors, the ledger
// section's own, the repair's kMaxRepairSteps steps with 3 values and 2
// strings each and its own 3: at most 40 values and 10 strings), with room
// to spare, and the most bytes one value other
// than a string takes in JSON ("[-9223372036854775808," is 22).
constexpr std::size_t kReportValuesBesideRanges = 64;
constexpr std::size_t kReportStrings = 16;
constexpr std::size_t kMaxScalarBytes = 24;
constexpr std::size_t kMaxReportValues = kReportValuesBesideRanges + 3 * kMaxReportedRanges;
// A string's byte may become 6 in JSON (\u001f); keys and structure ~1 KiB.
constexpr std::size_t kMaxReportBytes =
    1024 + kReportStrings * kMaxReportTextBytes * 6 + kMaxReportValues * kMaxScalarBytes;
// A result with protocol::kMaxCheckDisks reports, plus its own few fields.
static_assert(protocol::kMaxCheckDisks * kMaxReportValues + 64 <= protocol::kMaxMessageValues);
static_assert(protocol::kMaxCheckDisks * kMaxReportBytes + 4096 <= protocol::kMaxMessageBytes);

void cut_strings(Json& value) {
    if (value.is_string()) {
        auto& text = value.get_ref<std::string&>();
        if (text.size() > kMaxReportTextBytes) text.resize(kMaxReportTextBytes);
    } else if (value.is_structured()) {
        for (Json& item : value) cut_strings(item);
    }
}

// Runs one repair step on `device`: {"command": .., "exit_code": N,
// "output": last lines} or {"command": .., "error": ..}; the exit code, or
// nothing when the tool did not run to its end.
std::optional<int> run_repair_step(ProcessRunner& runner, const RepairStep& step,
                                   const std::string& device, std::chrono::milliseconds timeout,
                                   Json& steps) {
    std::vector<std::string> argv(step.argv.begin(), step.argv.end());
    argv.push_back(device);
    Json record = {{"command", describe_command(argv)}};
    auto output = runner.run(argv, timeout);
    if (!output.ok()) {
        record["error"] = output.error().message;
    } else if (output->timed_out) {
        record["error"] = describe_command(argv) + " timed out";
    } else {
        record["exit_code"] = output->exit_code;
        record["output"] = last_lines(output->stdout_text + output->stderr_text, 8);
    }
    steps.push_back(std::move(record));
    if (!output.ok() || output->timed_out) return std::nullopt;
    return output->exit_code;
}

// Whether the step after `step` is one its exit code asks for (then the
// image is not mounted in between).
bool next_step_follows(const RepairSequence& sequence, std::size_t step, int exit_code) {
    return step + 1 < sequence.steps.size() &&
           sequence.steps[step + 1].only_after_exit == exit_code;
}

// Repairs the unmountable image as repair_sequences() says and mounts it
// again: the report's "repair" section (check_crash_state).
Json repair_and_mount(const CrashCheckRequest& request, GuestSystem& system, ProcessRunner& runner,
                      std::chrono::milliseconds timeout) {
    Json repair = {{"steps", Json::array()}, {"log_zeroed", false}, {"mounted", false}};
    const RepairSequence* sequence = find_repair_sequence(request.fs_type);
    if (sequence == nullptr) {
        repair["problem"] = "no repair for " + request.fs_type;
        return repair;
    }
    std::optional<int> last_exit;
    for (std::size_t i = 0; i < sequence->steps.size(); ++i) {
        const RepairStep& step = sequence->steps[i];
        if (step.only_after_exit && step.only_after_exit != last_exit) continue;
        last_exit = run_repair_step(runner, step, request.device, timeout, repair["steps"]);
        if (!last_exit) {
            repair["problem"] = repair["steps"].back()["error"];
            return repair;
        }
        if (step.zeroes_log) repair["log_zeroed"] = true;
        if (next_step_follows(*sequence, i, *last_exit)) continue;
        const Status mounted =
            system.mount(request.device, request.mount_point, request.fs_type, "");
        repair["mounted"] = mounted.ok();
        if (mounted.ok()) {
            repair.erase("problem");
            return repair;
        }
        repair["problem"] = mounted.error().message;
    }
    return repair;
}

// The ledger's records on the mounted image, then unmounted: into `report`.
void count_and_unmount(const CrashCheckRequest& request, const LedgerPlan& plan,
                       GuestSystem& system, WorkloadContext& ctx, Json& report) {
    ctx.work_dir = request.mount_point;
    report["ledger"] = find_ledger_variant(plan.variant)->scan(request.ledger, plan, ctx);
    system.sync();
    if (auto unmounted = system.unmount(request.mount_point); !unmounted.ok()) {
        report["unmount_error"] = unmounted.error().message;
    }
}

}  // namespace

void bound_report(Json& report) {
    cut_strings(report);
    const auto ledger = report.find("ledger");
    if (ledger == report.end() || !ledger->is_object()) return;
    const auto present = ledger->find("present");
    if (present == ledger->end() || !present->is_array() || present->size() <= kMaxReportedRanges) {
        return;
    }
    present->erase(present->begin() + static_cast<std::ptrdiff_t>(kMaxReportedRanges),
                   present->end());
    (*ledger)["present_truncated"] = true;
}

const RepairSequence* find_repair_sequence(std::string_view fs_type) {
    for (const RepairSequence& row : repair_sequences()) {
        if (row.fs_type == fs_type) return &row;
    }
    return nullptr;
}

const ReadOnlyFsck* find_read_only_fsck(std::string_view fs_type) {
    for (const ReadOnlyFsck& row : read_only_fscks()) {
        if (row.fs_type == fs_type) return &row;
    }
    return nullptr;
}

Json run_read_only_fsck(ProcessRunner& runner, std::string_view fs_type, const std::string& device,
                        std::chrono::milliseconds timeout) {
    const ReadOnlyFsck* fsck = find_read_only_fsck(fs_type);
    if (fsck == nullptr) return Json{{"error", "no read-only fsck for " + std::string(fs_type)}};
    std::vector<std::string> argv(fsck->argv.begin(), fsck->argv.end());
    argv.push_back(device);
    auto output = runner.run(argv, timeout);
    if (!output.ok()) return Json{{"error", output.error().message}};
    if (output->timed_out) return Json{{"error", describe_command(argv) + " timed out"}};
    const bool clean = std::find(fsck->clean_exit_codes.begin(), fsck->clean_exit_codes.end(),
                                 output->exit_code) != fsck->clean_exit_codes.end();
    return Json{{"exit_code", output->exit_code},
                {"clean", clean},
                {"output", last_lines(output->stdout_text + output->stderr_text, 8)}};
}

IdRanges ranges_of(const std::vector<long long>& sorted_ids) {
    IdRanges ranges;
    for (long long id : sorted_ids) {
        if (!ranges.empty() && ranges.back().second + 1 == id) {
            ranges.back().second = id;
        } else if (ranges.empty() || ranges.back().second < id) {
            ranges.emplace_back(id, id);
        }
    }
    return ranges;
}

Json ranges_json(const IdRanges& ranges) {
    Json array = Json::array();
    for (const auto& [first, last] : ranges) array.push_back({first, last});
    return array;
}

Result<LedgerFileScan> scan_ledger_file(const std::string& path, std::uint64_t record_size) {
    std::ifstream file(path, std::ios::binary);
    if (!file) return make_error(errc::kNotFound, "no ledger file " + path);
    LedgerFileScan scan;
    std::vector<long long> present;
    std::string record(static_cast<std::size_t>(record_size), '\0');
    for (long long id = 1; file.read(record.data(), static_cast<std::streamsize>(record.size()));
         ++id) {
        if (record == ledger_record(id, record_size)) {
            present.push_back(id);
        } else if (!all_zero(record)) {
            ++scan.torn;
        }
    }
    // A last, partial record is torn too (unless it is only zeros).
    const auto partial = static_cast<std::size_t>(file.gcount());
    if (partial > 0 && !all_zero(std::string_view(record).substr(0, partial))) ++scan.torn;
    scan.present = ranges_of(present);
    return scan;
}

Result<Json> check_crash_state(const CrashCheckRequest& request, GuestSystem& system,
                               WorkloadContext& ctx) {
    if (!kind_acknowledges(request.ledger.kind)) {
        return make_error(errc::kInvalidArgument,
                          "a crash state is checked for a ledger workload, "
                          "not " +
                              request.ledger.kind);
    }
    DS_ASSIGN_OR_RETURN(const LedgerPlan plan, parse_ledger_plan(request.ledger.params));
    const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(ctx.time_limit);
    Json report = {
        {"fsck_before", run_read_only_fsck(ctx.runner, request.fs_type, request.device, timeout)}};
    DS_TRY(system.make_directories(request.mount_point));
    const Status mounted = system.mount(request.device, request.mount_point, request.fs_type, "");
    report["mounted"] = mounted.ok();
    if (!mounted.ok()) {
        report["mount_error"] = mounted.error().message;
        report["repair"] = repair_and_mount(request, system, ctx.runner, timeout);
    }
    if (mounted.ok() || report["repair"]["mounted"] == true) {
        count_and_unmount(request, plan, system, ctx, report);
    }
    report["fsck_after"] = run_read_only_fsck(ctx.runner, request.fs_type, request.device, timeout);
    bound_report(report);
    return report;
}

Json scan_ledger_file_on_mount(const Workload&, const LedgerPlan& plan, WorkloadContext& ctx) {
    auto scan = scan_ledger_file(ctx.work_dir + "/ledger.dat", plan.record_size);
    if (!scan.ok()) return Json{{"error", scan.error().message}};
    return Json{{"present", ranges_json(scan->present)}, {"torn", scan->torn}};
}

}  // namespace ds::agent
