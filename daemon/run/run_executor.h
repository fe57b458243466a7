// Executes one run end to end: volume -> guest -> agent -> verify -> record
// -> teardown. Teardown always happens, whatever failed, so no VM, QEMU
// process or volume outlives its run.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "daemon/config.h"
#include "daemon/hypervisor/hypervisor.h"
#include "daemon/registry.h"
#include "daemon/run/events.h"
#include "daemon/storage/storage.h"
#include "daemon/store/store.h"

namespace ds {

// Names of everything the daemon creates start with this, so a restarted
// daemon can find and clean what an earlier one left behind.
inline constexpr std::string_view kResourcePrefix = "disksweep-r";

// Time the agent gets beyond a workload's timeout to stop it and report.
inline constexpr int kAgentGraceSeconds = 60;

struct RunEnvironment {
    Hypervisor* hypervisor = nullptr;
    // Each run's storage is looked up here by the configuration's name.
    const BackendCatalog* backends = nullptr;
    // Tests without a catalog: every run's storage.
    StorageBackend* storage = nullptr;
    Store* store = nullptr;
    EventBus* events = nullptr;
    const DaemonConfig* config = nullptr;
    // The base image (variant ""), used for every variant when
    // image_for_variant is unset (tests).
    GuestImage image;
    // The image of a variant (ds::image_variant_for_kind): "" = the base
    // image, "mariadb" = <image dir>/mariadb. An Error says what is missing.
    std::function<Result<GuestImage>(std::string_view variant)> image_for_variant;
    Accel accel = Accel::kTcg;
    // Set when the daemon is stopping: a run cancelled then is recorded as
    // interrupted (failed), not as cancelled by the user.
    const std::atomic<bool>* shutting_down = nullptr;
};

class RunExecutor {
  public:
    explicit RunExecutor(RunEnvironment environment) : env_(std::move(environment)) {}

    // Runs `run` (status pending in the store) and records its outcome:
    // succeeded, failed, cancelled, or timed_out when the workload's own time
    // limit stopped it (agent error code "timeout") or the daemon's deadline
    // for the result passed. The job's timeout_s is the workload's `timeout`
    // when set, else `run_timeout_s`; the daemon waits for the result until
    // max(run_timeout_s, workload timeout + kAgentGraceSeconds), so the
    // agent's own, more precise report comes first. `cancelled` is polled;
    // when set the run ends as cancelled. Returns the finished record as
    // stored.
    RunRecord execute(const RunRecord& run, int boot_timeout_s, int run_timeout_s,
                      const std::atomic<bool>& cancelled);

    static std::string vm_name_for(std::int64_t run_id);

  private:
    RunEnvironment env_;
};

}  // namespace ds
