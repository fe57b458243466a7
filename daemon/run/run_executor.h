// Executes one run end to end in explicit phases: provision (the volume),
// boot (the guest, up to its agent's hello), job (the workload, up to its
// result), verify (the settings in force), teardown, record. A host baseline
// run (ds::is_host_baseline) has no guest: provision, job (fio from the host
// on the raw volume, daemon/run/host_fio.h), teardown, record. Teardown always
// happens, whatever failed, so no VM, QEMU process or volume outlives its
// run. Each phase is timed ("PHASE_s" in the run's timings, record excepted:
// it stores them) and reported to an optional observer.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "common/clock.h"
#include "common/guest_suite.h"
#include "common/process.h"
#include "daemon/backends/hosts.h"
#include "daemon/backends/hypervisor/hypervisor.h"
#include "daemon/backends/registry.h"
#include "daemon/backends/storage/storage.h"
#include "daemon/run/events.h"
#include "daemon/run/golden_volumes.h"
#include "daemon/run/resource_names.h"
#include "daemon/spec/unchecked_levels.h"
#include "daemon/store/store.h"

namespace ds {

// Time the agent gets beyond a workload's timeout to stop it and report.
inline constexpr int kAgentGraceSeconds = 60;

// kDurability: a durability run's crash states, built and checked after
// verify (docs/durability.md).
enum class RunPhase { kProvision, kBoot, kJob, kVerify, kDurability, kTeardown, kRecord };
std::string_view to_string(RunPhase);  // "provision", "boot", "job", "verify", ...

// Where host telemetry (and tests) attach to runs: told on the run's worker
// thread when each phase starts and how it ended. A phase that did not start
// (an earlier one failed) is not reported. Implementations must be quick;
// an exception from them is a bug, caught and logged, and never fails a run.
class RunObserver {
  public:
    virtual ~RunObserver() = default;
    virtual void phase_started(std::int64_t run_id, RunPhase phase) = 0;
    virtual void phase_finished(std::int64_t run_id, RunPhase phase, double seconds,
                                const Status& outcome) = 0;
};

struct RunEnvironment {
    // Every environment names what its runs create: no default, so a caller
    // cannot leave runs under names its recovery would not look for.
    explicit RunEnvironment(ResourceNames resource_names) : names(std::move(resource_names)) {}

    // The names of the runs' guests and volumes (this daemon's instance).
    ResourceNames names;
    // Where runs' guests run: a host leased from `hosts` (daemon/backends/hosts.h),
    // or, without a pool (tests), `hypervisor` for every run.
    HostPool* hosts = nullptr;
    // Where a sweep's runs may go; unset = anywhere, hosts apart.
    std::function<SweepPlacement(std::int64_t sweep_id)> placement;
    // A sweep's `unchecked_levels` (its spec); unset = the default,
    // kFailUnlessForbidden.
    std::function<UncheckedLevelPolicy(std::int64_t sweep_id)> unchecked_levels;
    Hypervisor* hypervisor = nullptr;
    // Each run's storage is looked up here by the configuration's name.
    const BackendCatalog* backends = nullptr;
    // Tests without a catalog: every run's storage.
    StorageBackend* storage = nullptr;
    Store* store = nullptr;
    EventBus* events = nullptr;
    // Times the runs' phases, gives their started and finished times, and
    // decides the agent's deadlines (the hypervisor's own waits stay real).
    const Clock* clock = &real_clock();
    // The size of every run's guest (the daemon's vcpus and memory-mib).
    int vcpus = 1;
    int memory_mib = 1024;
    // The default image (ImageChoice{}), used for every run when image_for
    // is unset (tests).
    GuestImage image;
    // The image of a suite and variant (common/guest_suite.h): the run's
    // sweep's suite and its workload's ds::image_variant_for_kind. An Error
    // says what is missing.
    std::function<Result<GuestImage>(const ImageChoice& image)> image_for;
    // A sweep's `[guest] suite` (its spec); unset = kDefaultGuestSuite.
    std::function<std::string(std::int64_t sweep_id)> guest_suite;
    Accel accel = Accel::kTcg;
    // Whether a run whose guest runs with another accelerator than `accel`
    // fails (as a host's Host::accel_enforced; used when `hosts` is null).
    bool accel_enforced = false;
    // Set when the daemon is stopping: a run cancelled then is recorded as
    // interrupted (failed), not as cancelled by the user.
    const std::atomic<bool>* shutting_down = nullptr;
    RunObserver* observer = nullptr;  // optional
    // Runs fio on the host for host baseline runs; without it they fail.
    ProcessRunner* host_processes = nullptr;
    // The sweeps' golden volumes (workload `dataset = "golden"`): a run of
    // such a workload clones one, preparing it first when it is the first
    // to need it (in a guest of its own, on the run's host slot, within the
    // run's provision phase). Without it such runs fail.
    GoldenVolumes* goldens = nullptr;
    // Where durability runs (workload `durability`) keep their pre-run copy,
    // write log and crash images, one directory per run; empty: such runs
    // fail with the reason.
    std::string durability_dir;
    // Where a durability run reads the host's writeback settings
    // (read_host_writeback, durability_trial.h).
    std::string vm_sysctl_dir = "/proc/sys/vm";
};

// A boot without a job: an ordinary run attempt whose job is the agent's
// hello (the KVM probe, daemon.h decide_acceleration). It provisions a
// volume named `name` (disk_size_bytes, default settings otherwise) on
// `environment.storage`, boots a guest of that name on
// `environment.hypervisor` with `environment.accel`, the size and image of
// the environment, waits up to `boot_timeout_s` for the hello, and tears
// both down as every run does, after clearing what an earlier probe of that
// name left. It records nothing: the environment's store and events may be
// null. Returns the seconds from the start of the boot to the hello, or why
// the guest did not get there (also when it runs without `accel`).
struct HelloProbe {
    std::string name;
    std::uint64_t disk_size_bytes = 64ull << 20;
    int boot_timeout_s = 20;
};
Result<double> run_hello_probe(const RunEnvironment& environment, const HelloProbe& probe);

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
    // Whether `run` can start now on a host (HostPool::hold): then a slot is
    // kept for it, which its execute() takes or frees. True without a pool
    // and for runs that need no host or will fail before placing.
    bool hold_host(const RunRecord& run);

  private:
    RunEnvironment env_;
};

}  // namespace ds
