#include "daemon/run/durability_trial.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

// A state's repair as stored (docs/schema.md); null when none was tried.
Json repair_json(const RepairOutcome& repair) {
    if (!repair.tried) return nullptr;
    return Json{{"commands", repair.commands},     {"exit_code", repair.exit_code},
                {"log_zeroed", repair.log_zeroed}, {"mounted", repair.mounted},
                {"recovered", repair.recovered},   {"torn", repair.torn},
                {"problem", repair.problem}};
}

Json state_json(const durability::CrashState& state, const CrashStateResult& result,
                std::size_t image) {
    const CrashCheck& check = result.check;
    return Json{{"flush_entry", state.flush_entry},
                {"image", image},
                {"log_offset", result.log_offset},
                {"acknowledged", result.acknowledged},
                {"lost", result.lost},
                {"mounted", check.mounted},
                {"fsck_clean", check.fsck_clean},
                {"recovered", check.recovered},
                {"torn", check.torn},
                {"problem", check.problem},
                {"lost_after_repair", result.lost_after_repair},
                {"repair", repair_json(check.repair)},
                {"extra_writes", state.applied.size() - state.durable_prefix},
                {"written_back", state.written_back}};
}

}  // namespace

std::optional<double> HostWriteback::window_s() const {
    if (dirty_writeback_centisecs <= 0) return std::nullopt;
    return static_cast<double>(dirty_expire_centisecs + dirty_writeback_centisecs) / 100.0;
}

Json HostWriteback::to_json() const {
    const std::optional<double> window = window_s();
    return Json{{"dirty_expire_centisecs", dirty_expire_centisecs},
                {"dirty_writeback_centisecs", dirty_writeback_centisecs},
                {"window_s", window ? Json(*window) : Json(nullptr)}};
}

Result<HostWriteback> read_host_writeback(const std::string& vm_dir) {
    const auto read_count = [&vm_dir](const char* name) -> Result<long long> {
        const std::string path = vm_dir + "/" + name;
        std::ifstream in(path);
        long long value = -1;
        if (!(in >> value) || value < 0)
            return make_error(errc::kIo, "cannot read " + path + " as a count of centiseconds");
        return value;
    };
    DS_ASSIGN_OR_RETURN(const long long expire, read_count("dirty_expire_centisecs"));
    DS_ASSIGN_OR_RETURN(const long long writeback, read_count("dirty_writeback_centisecs"));
    return HostWriteback{expire, writeback};
}

Result<DurabilityTrial> DurabilityTrial::start(const std::string& durability_dir,
                                               std::int64_t run_id, const std::string& volume_path,
                                               std::uint64_t size_limit, CacheMode cache,
                                               const DurabilityOptions& options) {
    DurabilityTrial trial;
    trial.volume_path_ = volume_path;
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

Status DurabilityTrial::mark(Result<HostWriteback> writeback) {
    const auto start = std::chrono::steady_clock::now();
    const int fd = ::open(volume_path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::fsync(fd) != 0) {
        const std::error_code error(errno, std::generic_category());
        if (fd >= 0) ::close(fd);
        return io_error("durability: cannot sync the volume " + volume_path_ + " at the mark",
                        error);
    }
    ::close(fd);
    host_sync_s_ = seconds_since(start);
    mark_log_offset_ = log_bytes();
    if (!mark_log_offset_) {
        return make_error(errc::kIo, "durability: cannot read the write log's size at the mark (" +
                                         log_path_ + ")");
    }
    writeback_.emplace(std::move(writeback));
    sampler_ = std::make_unique<LogSampler>(log_path_);
    return ok_status();
}

void DurabilityTrial::stop_clock() {
    if (!sampler_) return;
    samples_ = sampler_->stop();
    sampler_.reset();
}

Status DurabilityTrial::plan(const std::vector<AckEntry>& acks) {
    stop_clock();
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
    model.mark_log_offset = mark_log_offset_.value_or(0);
    images_.clear();
    worst_case_ = ModelStates{durability::crash_states(log_, cache_, model), {}};
    assign_images(worst_case_, false);
    host_writeback_.reset();
    const std::optional<double> window =
        writeback_ && writeback_->ok() ? writeback_->value().window_s() : std::nullopt;
    if (durability::host_cache_delays_writes(cache_) && window) {
        const durability::LogClock clock(samples_);
        model.clock = &clock;
        model.writeback_window_s = *window;
        host_writeback_.emplace(ModelStates{durability::crash_states(log_, cache_, model), {}});
        assign_images(*host_writeback_, true);
    }
    checks_.assign(images_.size(), CrashCheck{});
    return ok_status();
}

const durability::CrashState& DurabilityTrial::state_of(const ImageSource& source) const {
    return source.host_writeback ? host_writeback_->states[source.state]
                                 : worst_case_.states[source.state];
}

void DurabilityTrial::assign_images(ModelStates& model, bool host_writeback) {
    model.image_of.clear();
    for (std::size_t i = 0; i < model.states.size(); ++i) {
        std::size_t image = 0;
        while (image < images_.size() &&
               state_of(images_[image]).applied != model.states[i].applied)
            ++image;
        if (image == images_.size()) images_.push_back({host_writeback, i});
        model.image_of.push_back(image);
    }
}

std::string DurabilityTrial::image_path(std::size_t image) const {
    return dir_ + "/crash-" + std::to_string(image) + ".img";
}

Result<std::vector<std::string>> DurabilityTrial::build_images(std::size_t first,
                                                               std::size_t count) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::string> paths;
    for (std::size_t image = first; image < first + count && image < images_.size(); ++image) {
        const std::string path = image_path(image);
        auto built = durability::build_crash_image(
            pre_run_path_, log_, log_path_, state_of(images_[image]).applied, path, size_limit_);
        if (!built.ok()) {
            return make_error(built.error().code, "crash image " + std::to_string(image) + ": " +
                                                      built.error().message);
        }
        paths.push_back(path);
    }
    images_s_ += seconds_since(start);
    return paths;
}

void DurabilityTrial::record_checks(std::size_t first, const std::vector<CrashCheck>& checks) {
    for (std::size_t i = 0; i < checks.size() && first + i < images_.size(); ++i) {
        checks_[first + i] = checks[i];
        std::error_code ignored;
        fs::remove(image_path(first + i), ignored);
    }
}

std::vector<CrashStateResult> DurabilityTrial::results_of(const ModelStates& model) const {
    std::vector<CrashStateResult> results;
    for (std::size_t i = 0; i < model.states.size(); ++i) {
        const std::uint64_t offset = model.states[i].log_offset;
        results.push_back(crash_state_result(offset, acknowledged_before(acks_, offset),
                                             checks_[model.image_of[i]]));
    }
    return results;
}

Json DurabilityTrial::model_json(const ModelStates& model) const {
    const std::vector<CrashStateResult> results = results_of(model);
    Json states = Json::array();
    for (std::size_t i = 0; i < model.states.size(); ++i)
        states.push_back(state_json(model.states[i], results[i], model.image_of[i]));
    return Json{{"summary", summarize(results).to_json()}, {"states", std::move(states)}};
}

Json DurabilityTrial::mark_json() const {
    if (!mark_log_offset_) return nullptr;
    return Json{{"log_offset", *mark_log_offset_},
                {"entries_before", durability::entries_before_mark(log_, *mark_log_offset_)},
                {"host_sync_s", host_sync_s_}};
}

// What the host-writeback model measured, or why it did not.
Json DurabilityTrial::host_writeback_json() const {
    if (!writeback_) {
        return Json{
            {"not_measured", "the run has no mark (the guest never reached its measured window)"}};
    }
    if (!writeback_->ok()) return Json{{"not_measured", writeback_->error().message}};
    Json json = writeback_->value().to_json();
    if (!host_writeback_) {
        json["not_measured"] =
            "the host's periodic writeback is off (dirty_writeback_centisecs = 0): no write is "
            "ever old enough to be safe, the worst case stands";
        return json;
    }
    json["clock"] = durability::LogClock(samples_).to_json();
    json["clock"]["interval_s"] = std::chrono::duration<double>(LogSampler::kInterval).count();
    json.update(model_json(*host_writeback_));
    return json;
}

Json DurabilityTrial::result() const {
    std::size_t flushes = 0;
    for (const auto& entry : log_.entries) flushes += entry.is_flush() ? 1 : 0;
    Json worst_case = model_json(worst_case_);
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
                {"mark", mark_json()},
                {"summary", std::move(worst_case["summary"])},
                {"states", std::move(worst_case["states"])},
                {"checked_images", images_.size()},
                {"images_s", images_s_},
                {"check_s", check_s_}};
    if (durability::host_cache_delays_writes(cache_))
        result["host_writeback"] = host_writeback_json();
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
