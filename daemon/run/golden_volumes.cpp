#include "daemon/run/golden_volumes.h"

#include <chrono>

#include "common/workload_kind.h"

namespace ds {
namespace {

// How often a waiting run looks at its cancel flag.
constexpr auto kCancelPoll = std::chrono::milliseconds(200);

// A finished preparation as the runs that waited for it see it.
Result<GoldenVolume> outcome_for_waiter(const Result<GoldenVolume>& outcome) {
    if (outcome.ok()) return outcome;
    return make_error(
        outcome.error().code,
        "the golden volume this run clones could not be prepared: " + outcome.error().message);
}

}  // namespace

std::string golden_key(const std::string& storage, const StorageConfig& config,
                       const Workload& workload) {
    const FilesystemSpec& fs = config.filesystem;
    const Json key = {{"storage", storage},
                      {"disk_size_bytes", config.disk_size_bytes},
                      {"image_format", to_string(config.image_format)},
                      {"filesystem",
                       {{"type", fs.type},
                        {"mkfs_options", fs.mkfs_options},
                        {"post_format", fs.post_format},
                        {"mount_options", fs.mount_options}}},
                      {"workload", prepared_dataset_key(workload)}};
    return key.dump();
}

Json golden_dataset_record(const GoldenVolume& golden, std::int64_t run_id,
                           const std::string& clone_method, double clone_s) {
    return {{"source", "golden"},
            {"golden_volume", golden.name},
            {"prepare_s", golden.prepare_s},
            {"preparation_s", golden.preparation_s},
            {"prepared_by_this_run", golden.prepared_by_run == run_id},
            {"clone_method", clone_method},
            {"clone_s", clone_s}};
}

Json golden_savings(const std::vector<Json>& dataset_records) {
    std::map<std::string, double> preparations;  // golden volume -> its preparation_s
    int runs = 0;
    double avoided_s = 0;
    double clone_s = 0;
    for (const Json& record : dataset_records) {
        if (!record.is_object() || record.value("source", "") != "golden") continue;
        const std::string golden = record.value("golden_volume", "");
        ++runs;
        avoided_s += record.value("prepare_s", 0.0);
        clone_s += record.value("clone_s", 0.0);
        preparations[golden] = record.value("preparation_s", 0.0);
    }
    if (runs == 0) return nullptr;
    double preparation_s = 0;
    for (const auto& [golden, seconds] : preparations) preparation_s += seconds;
    return {{"runs", runs},           {"golden_volumes", preparations.size()},
            {"avoided_s", avoided_s}, {"preparation_s", preparation_s},
            {"clone_s", clone_s},     {"saved_s", avoided_s - preparation_s - clone_s}};
}

Result<GoldenVolume> GoldenVolumes::acquire(std::int64_t sweep_id, const std::string& key,
                                            std::int64_t run_id, const Prepare& prepare,
                                            const std::atomic<bool>& cancelled) {
    std::unique_lock lock(mutex_);
    const Key entry_key{sweep_id, key};
    for (;;) {
        const auto found = entries_.find(entry_key);
        // None yet, or its preparer was cancelled: this run prepares it.
        if (found == entries_.end()) {
            entries_.emplace(entry_key, Entry{});
            return prepare_entry(entry_key, run_id, prepare, lock);
        }
        if (found->second.ready) return outcome_for_waiter(*found->second.outcome);
        if (cancelled.load()) return make_error(errc::kCancelled, "cancelled");
        prepared_.wait_for(lock, kCancelPoll);
    }
}

Result<GoldenVolume> GoldenVolumes::prepare_entry(const Key& key, std::int64_t run_id,
                                                  const Prepare& prepare,
                                                  std::unique_lock<std::mutex>& lock) {
    const int index = next_index_[key.first]++;
    lock.unlock();
    Result<GoldenVolume> outcome = make_error(errc::kInternal, "golden preparation threw");
    try {
        outcome =
            prepare(names_.golden_vm(key.first, index), names_.golden_volume(key.first, index));
    } catch (const std::exception& error) {
        outcome =
            make_error(errc::kInternal,
                       std::string("internal error (bug): golden preparation: ") + error.what());
    }
    if (outcome.ok()) outcome->prepared_by_run = run_id;
    lock.lock();
    if (!outcome.ok() && outcome.error().code == errc::kCancelled) {
        entries_.erase(key);  // not the golden's fault: a later run tries again
    } else {
        Entry& entry = entries_[key];
        entry.ready = true;
        entry.outcome = outcome;
    }
    prepared_.notify_all();
    return outcome;
}

std::vector<std::string> GoldenVolumes::release_sweep(std::int64_t sweep_id) {
    std::vector<GoldenVolume> golden;
    {
        std::lock_guard lock(mutex_);
        for (auto it = entries_.begin(); it != entries_.end();) {
            if (it->first.first != sweep_id) {
                ++it;
                continue;
            }
            if (it->second.outcome && it->second.outcome->ok()) {
                golden.push_back(it->second.outcome->value());
            }
            it = entries_.erase(it);
        }
        next_index_.erase(sweep_id);
    }
    std::vector<std::string> problems;
    for (const GoldenVolume& volume : golden) {
        const Status removed = volume.storage->remove_golden(volume.name);
        if (!removed.ok()) problems.push_back(volume.name + ": " + removed.error().message);
    }
    return problems;
}

}  // namespace ds
