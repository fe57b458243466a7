// A durability run's phase (workload `durability`, docs/durability.md), as
// RunAttempt calls it: at provision the run's trial (durability_trial.h: the
// pre-run copy and the write log the guest's QEMU fills), at the guest's
// mark_ready the mark, and after verify, with the run's guest stopped, its
// crash states checked in checker guests, a batch of crash images each,
// into applied_settings.durability. It boots only checker guests, on the
// run's host and as the run's own guest was booted (CheckerGuests).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "common/settings.h"
#include "daemon/backends/hypervisor/hypervisor.h"
#include "daemon/backends/storage/storage.h"
#include "daemon/run/ack_ledger.h"
#include "daemon/run/durability_trial.h"

namespace ds {

// How the run's checker guests boot: on the run's host, with its image (as
// staged there), accelerator and size.
struct CheckerGuests {
    Hypervisor* hypervisor = nullptr;
    std::string vm_name;  // ResourceNames::checker_vm of the run
    GuestImage image;
    Accel accel = Accel::kTcg;
    int vcpus = 1;
    int memory_mib = 1024;
    int boot_timeout_s = 0;  // each checker's, to its hello
    // The run's job fields every check job repeats: run_id, filesystem and
    // workload (docs/agent-protocol.md).
    Json job = Json::object();
};

class DurabilityPhase {
  public:
    // Told before each batch of crash states is checked: which, and the
    // fraction of the states checked so far.
    using Progress = std::function<void(const std::string& message, double fraction)>;

    // At provision, on the run's fresh volume `volume` made with `config`:
    // its trial (DurabilityTrial::start) in `durability_dir`.
    // errc::kUnsupported unless the volume is a file and this daemon has a
    // durability directory.
    static Result<DurabilityPhase> start(const std::string& durability_dir, std::int64_t run_id,
                                         const StorageConfig& config, const DiskSource& volume,
                                         const DurabilityOptions& options);

    // The write log the run's guest's QEMU fills (VmRequest::write_log_path).
    const std::string& log_path() const { return trial_.log_path(); }
    // The log's size now: where an acknowledgement falls in it.
    std::optional<std::uint64_t> log_bytes() const { return trial_.log_bytes(); }

    // The job's "mark" (docs/agent-protocol.md): the guest waits at
    // mark_ready for the host's mark. errc::kUnsupported when its agent
    // announced no "mark" capability (`agent_marks`).
    static Status add_to_job(Json& job, bool agent_marks);
    // At the guest's mark_ready: DurabilityTrial::mark, with the host's
    // writeback read from `vm_sysctl_dir`.
    Status mark(const std::string& vm_sysctl_dir);

    // After verify, once the run's guest stopped (QEMU writes the last of
    // the log as it stops): the crash states planned from `acks`, built and
    // checked in `checkers`, and their result, applied_settings.durability.
    // errc::kCancelled when `cancelled` is set between batches.
    Result<Json> measure(const std::vector<AckEntry>& acks, const CheckerGuests& checkers,
                         const Clock& clock, const std::atomic<bool>& cancelled,
                         const Progress& progress);

    // At teardown: the trial's files removed (DurabilityTrial::remove).
    Status remove() const { return trial_.remove(); }

  private:
    DurabilityPhase(DurabilityTrial trial, const StorageConfig& config, const DiskSource& volume)
        : trial_(std::move(trial)), config_(config), volume_(volume) {}

    // One checker guest on `images` (crash images, in state order): each
    // one's report.
    Result<std::vector<CrashCheck>> check_crash_images(const std::vector<std::string>& images,
                                                       const CheckerGuests& checkers,
                                                       const Clock& clock,
                                                       const std::atomic<bool>& cancelled) const;

    DurabilityTrial trial_;
    StorageConfig config_;  // the run's: a checker's disks are made alike
    DiskSource volume_;     // the run's volume: crash images are copies of its file
};

}  // namespace ds
