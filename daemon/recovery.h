// Recovery at start-up from what an earlier disksweepd left when it stopped
// (crashed, was killed, or shut down in order): its guests, its volumes, and
// its interrupted runs, which are run again as new attempts.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "daemon/backends/hypervisor/hypervisor.h"
#include "daemon/backends/storage/storage.h"
#include "daemon/store/store.h"

namespace ds {

class ResourceNames;  // daemon/run/resource_names.h

// How often one planned run is attempted when disksweepd keeps stopping
// during it: a configuration that kills the daemon every time must not make
// every start run it again.
inline constexpr int kMaxRunAttempts = 3;

struct RecoveryReport {
    // Recorded guests (Store::recorded_vms) destroyed by their handle, or
    // found gone, and forgotten.
    int recorded_guests_cleared = 0;
    int guests_destroyed = 0;
    int volumes_removed = 0;
    Store::InterruptedRuns runs;
    // What could not be done (listed, destroyed, removed, recorded); the
    // daemon starts all the same.
    std::vector<std::string> problems;
};

// A host's hypervisor with the host's name, as runs record it
// (Store::record_vm_handle).
struct RecoveryHost {
    std::string name;
    Hypervisor* hypervisor = nullptr;
};

// First destroys every guest a run recorded (Store::recorded_vms) by its
// handle on the host it names (Hypervisor::destroy_recorded_vm: also a guest
// its name alone does not find, such as a Proxmox clone not yet tagged) and
// forgets it; a host no longer configured keeps its record (a problem is
// reported). Then destroys every guest (of every hypervisor) and removes every volume whose
// name starts with names.prefix(): this daemon's own (nothing of it runs yet,
// so all are leftovers). What other instances created, on the same
// hypervisor or storage, is neither touched nor logged. Then
// Store::recover_interrupted_runs(max_attempts): runs left running are
// recorded failed, interrupted ones get a new pending attempt that resuming
// their sweep runs. Each step is logged through `log`.
RecoveryReport recover_leftovers(const ResourceNames& names, const std::vector<RecoveryHost>& hosts,
                                 const std::vector<StorageBackend*>& storages, Store& store,
                                 int max_attempts,
                                 const std::function<void(const std::string&)>& log);
// The same for one host while the daemon runs, after its connection was
// lost and made again (Hypervisor::take_reconnected): its guests and the
// volumes of `storages` (the host's own) whose names start with
// names.prefix(), except those of runs that run now (`running`: their VM
// names; a run's volume and checker guest are named from it) and golden
// volumes (a sweep in progress may use them; the sweep's end removes them).
RecoveryReport recover_host_leftovers(const ResourceNames& names, Hypervisor& hypervisor,
                                      const std::vector<StorageBackend*>& storages,
                                      const std::set<std::string>& running,
                                      const std::function<void(const std::string&)>& log);

// Removes every entry of `durability_dir` (RunEnvironment::durability_dir):
// nothing of this daemon runs yet, so each run's directory there is a
// leftover of an interrupted durability run. Logs each one and what failed.
void remove_durability_leftovers(const std::string& durability_dir,
                                 const std::function<void(const std::string&)>& log);

// The same, with one hypervisor, the host "local" (kLocalHostName).
RecoveryReport recover_leftovers(const ResourceNames& names, Hypervisor& hypervisor,
                                 const std::vector<StorageBackend*>& storages, Store& store,
                                 int max_attempts,
                                 const std::function<void(const std::string&)>& log);

}  // namespace ds
