// A run's golden-volume phase (workload `dataset = "golden"`,
// docs/golden-volumes.md), as RunAttempt calls it within its provision
// phase: the run's volume is a clone of its sweep's golden volume, which
// the first run to need it prepares in a guest of its own while the others
// wait (GoldenVolumes). The preparation itself is an attempt of RunAttempt's
// (on the run's host slot and under its id); this phase gives it the rules
// a preparation follows (the static members).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "common/settings.h"
#include "daemon/backends/storage/storage.h"
#include "daemon/run/golden_volumes.h"

namespace ds {

// The run whose volume is cloned.
struct GoldenCloneRun {
    std::int64_t sweep_id = 0;
    std::int64_t run_id = 0;
    std::string volume_name;  // the clone's
    // The run's storage, settings and workload: the golden's key
    // (golden_key), and where the clone is made.
    StorageBackend* storage = nullptr;
    StorageConfig config;
    Workload workload;
};

// The run's volume, and its applied_settings.dataset (golden_dataset_record).
struct GoldenClone {
    Volume volume;
    Json dataset_record;
};

class GoldenVolumePhase {
  public:
    // Prepares the golden volume `volume` in a guest `vm`; returns what a
    // fresh run would spend on what the golden now holds
    // (GoldenVolume::prepare_s). On failure it leaves nothing of either.
    using Preparation =
        std::function<Result<double>(const std::string& vm, const std::string& volume)>;
    // Told once, before the run prepares the golden or waits for it.
    using Progress = std::function<void(const std::string& message)>;

    // `goldens` null: this daemon keeps no golden volumes (provision() fails,
    // saying so).
    GoldenVolumePhase(GoldenVolumes* goldens, const Clock& clock)
        : goldens_(goldens), clock_(&clock) {}

    // The golden volume of `run` (prepared with `prepare` when the run is
    // the first to need it), cloned as the run's volume. A waiter whose
    // `cancelled` is set stops waiting (errc::kCancelled).
    Result<GoldenClone> provision(const GoldenCloneRun& run, const Preparation& prepare,
                                  const Progress& progress,
                                  const std::atomic<bool>& cancelled) const;

    // A preparation's settings: the run's, except that every flush must
    // reach the golden volume before its guest is destroyed (no unsafe
    // cache).
    static StorageConfig preparation_config(StorageConfig config);
    // The job's "dataset" (docs/agent-protocol.md): "prepare" for a
    // preparation, "prepared" for a run on a clone. errc::kUnsupported when
    // the guest's agent announced no "dataset" capability
    // (`agent_datasets`).
    enum class JobRole { kPrepare, kUseClone };
    static Status add_to_job(Json& job, JobRole role, bool agent_datasets);
    // What a preparation's guest spent on what the golden now holds, from
    // its result's timings: mkfs, the post-format steps and the workload's
    // preparation.
    static double prepare_seconds(const std::map<std::string, double>& guest_timings);

  private:
    GoldenVolumes* goldens_;
    const Clock* clock_;
};

}  // namespace ds
