#include "daemon/run/durability_trial.h"

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <utility>

#include "daemon/durability/replay.h"

namespace ds {

namespace {

namespace fs = std::filesystem;

Error io_error(const std::string& what, const std::error_code& error) {
    return make_error(errc::kIo, what + ": " + error.message());
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The log offsets of the first and last acknowledgements: crash points
// before the first fall in the guest's formatting and setup, after the last
// in the workload's shutdown. {0, 0} without acks (every flush counts).
std::pair<std::uint64_t, std::uint64_t> ack_span(const std::vector<AckEntry>& acks) {
    std::pair<std::uint64_t, std::uint64_t> span{0, 0};
    bool first = true;
    for (const AckEntry& ack : acks) {
        if (!ack.log_bytes) continue;
        if (first) span.first = *ack.log_bytes;
        span.second = *ack.log_bytes;
        first = false;
    }
    return span;
}

Json state_json(const durability::CrashState& state, const CrashStateResult& result) {
    const CrashCheck& check = result.check;
    return Json{{"flush_entry", state.flush_entry},
                {"log_offset", result.log_offset},
                {"acknowledged", result.acknowledged},
                {"lost", result.lost},
                {"mounted", check.mounted},
                {"fsck_clean", check.fsck_clean},
                {"recovered", check.recovered},
                {"torn", check.torn},
                {"problem", check.problem},
                {"extra_writes", state.applied.size() - state.durable_prefix}};
}

}  // namespace

Result<DurabilityTrial> DurabilityTrial::start(const std::string& durability_dir,
                                               std::int64_t run_id, const std::string& volume_path,
                                               std::uint64_t size_limit, CacheMode cache,
                                               const DurabilityOptions& options) {
    DurabilityTrial trial;
    trial.dir_ = durability_dir + "/run-" + std::to_string(run_id);
    trial.kept_dir_ = durability_dir + "-kept/run-" + std::to_string(run_id);
    trial.pre_run_path_ = trial.dir_ + "/pre-run.img";
    trial.log_path_ = trial.dir_ + "/write.log";
    trial.size_limit_ = size_limit;
    trial.cache_ = cache;
    trial.options_ = options;
    // The run's id: the same run's states can be rebuilt by hand.
    trial.seed_ = static_cast<std::uint64_t>(run_id);
    std::error_code error;
    fs::remove_all(trial.dir_, error);  // a retried run's leftovers
    fs::create_directories(trial.dir_, error);
    if (error) return io_error("cannot create the durability directory " + trial.dir_, error);
    auto copied = durability::clone_image(volume_path, trial.pre_run_path_);
    if (copied.ok()) {
        std::ofstream log(trial.log_path_, std::ios::binary | std::ios::trunc);
        if (log) return trial;
    }
    fs::remove_all(trial.dir_, error);
    if (!copied.ok()) return copied.error();
    return make_error(errc::kIo, "cannot create the write log " + trial.log_path_);
}

std::optional<std::uint64_t> DurabilityTrial::log_bytes() const {
    struct stat info {};
    if (::stat(log_path_.c_str(), &info) != 0) return std::nullopt;
    return static_cast<std::uint64_t>(info.st_size);
}

Status DurabilityTrial::plan(const std::vector<AckEntry>& acks) {
    DS_ASSIGN_OR_RETURN(log_, durability::read_log(log_path_));
    acks_ = acks;
    const auto [from, to] = ack_span(acks);
    from_log_offset_ = from;
    to_log_offset_ = to;
    durability::CrashModelOptions model;
    model.max_crash_points = static_cast<std::size_t>(options_.crash_points);
    model.volatile_cache = options_.volatile_cache;
    model.seed = seed_;
    model.from_log_offset = from_log_offset_;
    model.to_log_offset = to_log_offset_;
    states_ = durability::crash_states(log_, cache_, model);
    results_.assign(states_.size(), CrashStateResult{});
    return ok_status();
}

std::string DurabilityTrial::image_path(std::size_t state) const {
    return dir_ + "/crash-" + std::to_string(state) + ".img";
}

Result<std::vector<std::string>> DurabilityTrial::build_images(std::size_t first,
                                                               std::size_t count) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::string> paths;
    for (std::size_t state = first; state < first + count && state < states_.size(); ++state) {
        const std::string path = image_path(state);
        auto built = durability::build_crash_image(pre_run_path_, log_, log_path_,
                                                   states_[state].applied, path, size_limit_);
        if (!built.ok()) {
            return make_error(built.error().code, "crash state " + std::to_string(state) + ": " +
                                                      built.error().message);
        }
        paths.push_back(path);
    }
    images_s_ += seconds_since(start);
    return paths;
}

void DurabilityTrial::record_checks(std::size_t first, const std::vector<CrashCheck>& checks) {
    for (std::size_t i = 0; i < checks.size() && first + i < states_.size(); ++i) {
        const durability::CrashState& state = states_[first + i];
        CrashStateResult& result = results_[first + i];
        result.log_offset = state.log_offset;
        result.acknowledged = acknowledged_before(acks_, state.log_offset);
        result.lost = lost_records(result.acknowledged, checks[i].present);
        result.check = checks[i];
        std::error_code ignored;
        fs::remove(image_path(first + i), ignored);
    }
}

Json DurabilityTrial::result() const {
    std::size_t flushes = 0;
    for (const auto& entry : log_.entries) flushes += entry.is_flush() ? 1 : 0;
    Json states = Json::array();
    for (std::size_t i = 0; i < states_.size(); ++i)
        states.push_back(state_json(states_[i], results_[i]));
    Json result{{"crash_points", options_.crash_points},
                {"volatile_cache", options_.volatile_cache},
                {"model", durability::model_name(cache_)},
                {"seed", seed_},
                {"from_log_offset", from_log_offset_},
                {"to_log_offset", to_log_offset_},
                {"log",
                 {{"entries", log_.entries.size()},
                  {"flushes", flushes},
                  {"bytes", log_.file_size},
                  {"sector_size", log_.sector_size}}},
                {"summary", summarize(results_).to_json()},
                {"states", std::move(states)},
                {"images_s", images_s_},
                {"check_s", check_s_}};
    if (options_.keep_files) {
        result["kept_files"] = {{"log", kept_dir_ + "/write.log"},
                                {"pre_run", kept_dir_ + "/pre-run.img"}};
    }
    return result;
}

Status DurabilityTrial::keep_files() const {
    std::error_code error;
    fs::create_directories(kept_dir_, error);
    for (const char* name : {"/write.log", "/pre-run.img"}) {
        if (!error) fs::rename(dir_ + name, kept_dir_ + name, error);
    }
    if (error) return io_error("cannot keep the durability run's files in " + kept_dir_, error);
    return ok_status();
}

Status DurabilityTrial::remove() const {
    const Status kept = options_.keep_files ? keep_files() : ok_status();
    std::error_code error;
    fs::remove_all(dir_, error);
    if (error) return io_error("cannot remove the durability directory " + dir_, error);
    return kept;
}

}  // namespace ds
