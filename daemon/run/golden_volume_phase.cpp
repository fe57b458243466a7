#include "daemon/run/golden_volume_phase.h"

namespace ds {

Result<GoldenClone> GoldenVolumePhase::provision(const GoldenCloneRun& run,
                                                 const Preparation& prepare,
                                                 const Progress& progress,
                                                 const std::atomic<bool>& cancelled) const {
    if (goldens_ == nullptr) {
        return make_error(errc::kUnsupported,
                          "this disksweepd keeps no golden volumes (workload dataset \"golden\")");
    }
    progress("golden volume: preparing it or waiting for its preparation");
    StorageBackend& storage = *run.storage;
    const GoldenVolumes::Prepare prepare_golden =
        [&](const std::string& vm, const std::string& volume) -> Result<GoldenVolume> {
        const auto start = clock_->now();
        DS_ASSIGN_OR_RETURN(double prepare_s, prepare(vm, volume));
        GoldenVolume golden;
        golden.name = volume;
        golden.storage = &storage;
        golden.prepare_s = prepare_s;
        golden.preparation_s = seconds_since(start, *clock_);
        return golden;
    };
    DS_ASSIGN_OR_RETURN(
        auto golden,
        goldens_->acquire(run.sweep_id, golden_key(storage.name(), run.config, run.workload),
                          run.run_id, prepare_golden, cancelled));
    const auto clone_start = clock_->now();
    DS_ASSIGN_OR_RETURN(auto cloned,
                        storage.clone_volume(golden.name, run.volume_name, run.config));
    return GoldenClone{cloned.volume, golden_dataset_record(golden, run.run_id, cloned.method,
                                                            seconds_since(clone_start, *clock_))};
}

StorageConfig GoldenVolumePhase::preparation_config(StorageConfig config) {
    if (config.cache == CacheMode::kUnsafe) config.cache = CacheMode::kWriteback;
    return config;
}

Status GoldenVolumePhase::add_to_job(Json& job, JobRole role, bool agent_datasets) {
    if (!agent_datasets) {
        return make_error(errc::kUnsupported,
                          "the guest's agent cannot use a golden volume (its hello announces no "
                          "'dataset' capability): rebuild the guest image");
    }
    job["dataset"] = role == JobRole::kPrepare ? "prepare" : "prepared";
    return ok_status();
}

double GoldenVolumePhase::prepare_seconds(const std::map<std::string, double>& guest_timings) {
    double seconds = 0;
    for (const char* key : {"format_s", "post_format_s", "prepare_s"}) {
        const auto found = guest_timings.find(key);
        if (found != guest_timings.end()) seconds += found->second;
    }
    return seconds;
}

}  // namespace ds
