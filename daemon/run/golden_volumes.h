// The golden volumes of the running sweeps (spec `dataset = "golden"`,
// docs/golden-volumes.md): one per sweep and preparation key, prepared in a
// guest by the first run that needs it while the runs that need the same one
// wait, then cloned by every run. Removed when the sweep ends
// (release_sweep); a daemon that crashed leaves them to recovery, which finds
// them by name (ResourceNames::golden_volume).
//
// Threading: every method may be called from any run's worker thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "daemon/backends/storage/storage.h"
#include "daemon/run/resource_names.h"

namespace ds {

struct GoldenVolume {
    std::string name;                   // the volume on `storage`
    StorageBackend* storage = nullptr;  // where it is, and its clones
    // What a fresh run spends on what the golden did once, as its guest
    // measured it: mkfs, the post-format steps and the workload's preparation.
    double prepare_s = 0;
    // The whole preparation as the daemon saw it: the volume, the guest's
    // boot, its job, teardown and sealing (what the golden costs).
    double preparation_s = 0;
    std::int64_t prepared_by_run = 0;  // the run whose worker prepared it
};

// What runs that may share a golden volume agree on: the storage (its
// name()), the disk (size, image format), the file system as made and
// mounted (type, mkfs options, post-format steps, mount options: compress
// or nodatacow shape how the prepared data is written) and the workload's
// prepared_dataset_key (its kind, hence the guest image, and the params its
// preparation depends on). A canonical text.
std::string golden_key(const std::string& storage, const StorageConfig& config,
                       const Workload& workload);

// applied_settings.dataset of a run cloned from `golden` (docs/schema.md):
// {"source": "golden", "golden_volume", "prepare_s", "preparation_s",
//  "prepared_by_this_run", "clone_method", "clone_s"}.
Json golden_dataset_record(const GoldenVolume& golden, std::int64_t run_id,
                           const std::string& clone_method, double clone_s);

// What the golden volumes of a sweep saved, from its runs'
// applied_settings.dataset records (others are skipped); null when no run
// cloned one. {"runs": cloned runs, "golden_volumes": distinct goldens,
//  "avoided_s": sum of the runs' prepare_s (what each would have spent on
//  mkfs, post-format steps and the preparation on a fresh disk, as the
//  golden's guest measured it), "preparation_s": sum over the goldens of
//  their whole preparation (boot of their guest included), "clone_s": sum of
//  the clones' seconds, "saved_s": avoided_s - preparation_s - clone_s (may
//  be negative: a golden pays off only over enough runs)}.
Json golden_savings(const std::vector<Json>& dataset_records);

class GoldenVolumes {
  public:
    // Makes, fills and seals the golden volume `volume` with a guest named
    // `vm`; on failure leaves nothing of either.
    using Prepare =
        std::function<Result<GoldenVolume>(const std::string& vm, const std::string& volume)>;

    explicit GoldenVolumes(ResourceNames names) : names_(std::move(names)) {}

    // The golden volume of (`sweep_id`, `key`). The first caller prepares it
    // (`prepare`) while later ones wait; a failed preparation fails every
    // run that needs it, with its reason, for the rest of the sweep (a
    // cancelled one is forgotten: the next run prepares anew). A waiter whose
    // `cancelled` is set stops waiting (errc::kCancelled).
    Result<GoldenVolume> acquire(std::int64_t sweep_id, const std::string& key, std::int64_t run_id,
                                 const Prepare& prepare, const std::atomic<bool>& cancelled);

    // Removes the sweep's golden volumes (StorageBackend::remove_golden) once
    // none of its runs is left; what could not be removed, one line each
    // (recovery retries at the next start).
    std::vector<std::string> release_sweep(std::int64_t sweep_id);

  private:
    struct Entry {
        bool ready = false;  // prepared (outcome set) or failed
        std::optional<Result<GoldenVolume>> outcome;
    };
    using Key = std::pair<std::int64_t, std::string>;

    Result<GoldenVolume> prepare_entry(const Key& key, std::int64_t run_id, const Prepare& prepare,
                                       std::unique_lock<std::mutex>& lock);

    ResourceNames names_;
    std::mutex mutex_;
    std::condition_variable prepared_;
    std::map<Key, Entry> entries_;            // guarded by mutex_
    std::map<std::int64_t, int> next_index_;  // guarded by mutex_: per sweep
};

}  // namespace ds
