#include "daemon/recovery.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "common/clock.h"
#include "daemon/backends/hosts.h"
#include "daemon/run/events.h"
#include "daemon/run/resource_names.h"

namespace ds {
namespace {

using Log = std::function<void(const std::string&)>;

std::string outcome_note(const Status& status) {
    return status.ok() ? "" : " (failed: " + status.error().message + ")";
}

// Whether `name` is a guest's or volume's of a run in `running` (its VM
// names): the run's guest, its "-data" volume, its "-check" guest.
bool held_by(const std::string& name, const std::set<std::string>& running) {
    for (const std::string& vm : running) {
        if (name == vm || name.starts_with(vm + "-")) return true;
    }
    return false;
}

void destroy_leftover_guests(const ResourceNames& names, Hypervisor& hypervisor,
                             RecoveryReport& report, const Log& log,
                             const std::set<std::string>& running = {}) {
    auto vms = hypervisor.list_vms(names.prefix());
    if (!vms.ok()) {
        report.problems.push_back("cannot list guests: " + vms.error().message);
        log("recovery: " + report.problems.back());
        return;
    }
    for (const auto& vm : vms.value()) {
        if (held_by(vm, running)) continue;
        const Status destroyed = hypervisor.destroy_vm(vm);
        if (destroyed.ok()) {
            ++report.guests_destroyed;
        } else {
            report.problems.push_back("guest " + vm + ": " + destroyed.error().message);
        }
        log("recovery: destroyed leftover guest " + vm + outcome_note(destroyed));
    }
}

// The guests runs recorded before their backend created them, each
// destroyed by its handle on its own host; forgotten once gone.
void destroy_recorded_guests(const std::vector<RecoveryHost>& hosts, Store& store,
                             RecoveryReport& report, const Log& log) {
    auto recorded = store.recorded_vms();
    if (!recorded.ok()) {
        report.problems.push_back("cannot list recorded guests: " + recorded.error().message);
        log("recovery: " + report.problems.back());
        return;
    }
    for (const RecordedVm& vm : recorded.value()) {
        const std::string what = "guest " + vm.vm_name + " of run " + std::to_string(vm.run_id) +
                                 " on host " + vm.host + " (" + vm.handle.dump() + ")";
        const auto host = std::find_if(hosts.begin(), hosts.end(), [&](const RecoveryHost& one) {
            return one.name == vm.host;
        });
        if (host == hosts.end() || host->hypervisor == nullptr) {
            report.problems.push_back(what +
                                      ": the host is not configured; kept for a later start");
            log("recovery: " + report.problems.back());
            continue;
        }
        Status destroyed = host->hypervisor->destroy_recorded_vm(vm.vm_name, vm.handle);
        if (destroyed.ok()) destroyed = store.clear_vm_handle(vm.run_id);
        if (destroyed.ok()) {
            ++report.recorded_guests_cleared;
        } else {
            report.problems.push_back(what + ": " + destroyed.error().message);
        }
        log("recovery: destroyed recorded " + what + outcome_note(destroyed));
    }
}

void remove_leftover_volumes(const ResourceNames& names, StorageBackend& storage,
                             RecoveryReport& report, const Log& log,
                             const std::set<std::string>* running = nullptr) {
    auto volumes = storage.list_volumes(names.prefix());
    if (!volumes.ok()) {
        report.problems.push_back("cannot list volumes of storage " + storage.name() + ": " +
                                  volumes.error().message);
        log("recovery: " + report.problems.back());
        return;
    }
    // Clones before the golden volumes they may depend on (RBD).
    std::stable_partition(volumes->begin(), volumes->end(), [&](const std::string& volume) {
        return !names.is_golden_volume(volume);
    });
    for (const auto& volume : volumes.value()) {
        // While the daemon runs (`running` given), a golden volume may be in
        // use by a sweep.
        if (running != nullptr && (held_by(volume, *running) || names.is_golden_volume(volume)))
            continue;
        const Status removed = names.is_golden_volume(volume) ? storage.remove_golden(volume)
                                                              : storage.remove_volume(volume);
        if (removed.ok()) {
            ++report.volumes_removed;
        } else {
            report.problems.push_back("volume " + volume + ": " + removed.error().message);
        }
        log("recovery: removed leftover volume " + volume + " of storage " + storage.name() +
            outcome_note(removed));
    }
}

void log_recovered_runs(const Store::InterruptedRuns& runs, const Log& log) {
    for (const RunRecord& run : runs.marked_failed) {
        log("recovery: run " + std::to_string(run.id) + " was running: recorded failed (" +
            run.failure_reason + ")");
    }
    for (const RunRecord& run : runs.new_attempts) {
        log("recovery: run " + std::to_string(run.id) + " is attempt " +
            std::to_string(run.attempt) + " of sweep " + std::to_string(run.sweep_id) + ", " +
            run.workload_name + " repetition " + std::to_string(run.repetition) +
            " (the previous attempt was interrupted)");
    }
    for (const RunRecord& run : runs.given_up) {
        log("recovery: run " + std::to_string(run.id) + " is not run again: " + run.failure_reason);
    }
}

}  // namespace

RecoveryReport recover_leftovers(const ResourceNames& names, Hypervisor& hypervisor,
                                 const std::vector<StorageBackend*>& storages, Store& store,
                                 int max_attempts, const Log& log) {
    return recover_leftovers(names,
                             std::vector<RecoveryHost>{{std::string(kLocalHostName), &hypervisor}},
                             storages, store, max_attempts, log);
}

RecoveryReport recover_leftovers(const ResourceNames& names, const std::vector<RecoveryHost>& hosts,
                                 const std::vector<StorageBackend*>& storages, Store& store,
                                 int max_attempts, const Log& log) {
    RecoveryReport report;
    destroy_recorded_guests(hosts, store, report, log);
    for (const RecoveryHost& host : hosts) {
        if (host.hypervisor != nullptr)
            destroy_leftover_guests(names, *host.hypervisor, report, log);
    }
    for (StorageBackend* storage : storages) remove_leftover_volumes(names, *storage, report, log);
    auto runs = store.recover_interrupted_runs(max_attempts, utc_now_iso8601());
    if (!runs.ok()) {
        report.problems.push_back("cannot record interrupted runs: " + runs.error().message);
        log("recovery: " + report.problems.back());
        return report;
    }
    report.runs = std::move(runs).value();
    log_recovered_runs(report.runs, log);
    return report;
}

RecoveryReport recover_host_leftovers(const ResourceNames& names, Hypervisor& hypervisor,
                                      const std::vector<StorageBackend*>& storages,
                                      const std::set<std::string>& running, const Log& log) {
    RecoveryReport report;
    destroy_leftover_guests(names, hypervisor, report, log, running);
    for (StorageBackend* storage : storages) {
        remove_leftover_volumes(names, *storage, report, log, &running);
    }
    return report;
}

void remove_durability_leftovers(const std::string& durability_dir,
                                 const std::function<void(const std::string&)>& log) {
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(durability_dir, error)) {
        std::error_code removed;
        std::filesystem::remove_all(entry.path(), removed);
        log("recovery: " +
            (removed ? "cannot remove " + entry.path().string() + ": " + removed.message()
                     : "removed the durability run's files " + entry.path().string()));
    }
}

}  // namespace ds
