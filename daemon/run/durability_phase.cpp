#include "daemon/run/durability_phase.h"

#include <algorithm>
#include <variant>

#include "common/protocol.h"
#include "daemon/run/agent_session.h"
#include "daemon/run/run_executor.h"

namespace ds {
namespace {

// Crash images one checker guest checks: its data disk and the extra disks.
constexpr std::size_t kMaxCheckImages = protocol::kMaxCheckDisks;

// A crash image's checker gives each image this long (MariaDB's crash
// recovery under TCG included), and its guest this long to say hello.
constexpr int kCheckSecondsPerImage = 120;

// The disk settings of a checker guest: the run's file system, on virtio-blk
// (one PCI device per image); the images are throwaway copies, so no cache
// mode of theirs matters and unsafe is the fastest.
StorageConfig checker_config(const StorageConfig& run_config) {
    StorageConfig config;
    config.filesystem = run_config.filesystem;
    config.disk_size_bytes = run_config.disk_size_bytes;
    config.image_format = run_config.image_format;
    config.bus = Bus::kVirtioBlk;
    config.cache = CacheMode::kUnsafe;
    return config;
}

// `source` (a file volume) with its file at `path`: a crash image is the
// volume file's copy, in the volume's own format.
DiskSource at_path(DiskSource source, const std::string& path) {
    if (auto* file = std::get_if<FileDisk>(&source)) file->path = path;
    return source;
}

// Boots the checker guest of `request`, gives it `job` and returns the
// checks of `image_count` images it reports.
Result<std::vector<CrashCheck>> run_checker(const VmRequest& request, const Json& job,
                                            std::size_t image_count, const CheckerGuests& checkers,
                                            const Clock& clock,
                                            const std::atomic<bool>& cancelled) {
    Hypervisor& hypervisor = *checkers.hypervisor;
    const int timeout_s = job.at("timeout_s").get<int>();
    DS_TRY(hypervisor.start_vm(request));
    const auto deadline = clock.now() + std::chrono::seconds(checkers.boot_timeout_s);
    DS_ASSIGN_OR_RETURN(auto channel, hypervisor.open_agent_channel(
                                          request.name,
                                          std::chrono::steady_clock::now() +
                                              std::chrono::seconds(checkers.boot_timeout_s),
                                          &cancelled));
    AgentSession session(std::move(channel), &cancelled, clock);
    DS_ASSIGN_OR_RETURN(auto hello, session.receive_hello(deadline));
    if (std::find(hello.capabilities.begin(), hello.capabilities.end(),
                  protocol::kCheckCapability) == hello.capabilities.end()) {
        return make_error(errc::kUnsupported,
                          "the guest's agent cannot check crash images (its hello announces "
                          "no 'check' capability): rebuild the guest image");
    }
    DS_TRY(session.send_job(job));
    DS_ASSIGN_OR_RETURN(
        auto result,
        session.await_result(clock.now() + std::chrono::seconds(timeout_s + kAgentGraceSeconds),
                             [](const guest::Progress&) {}));
    session.send_shutdown();
    return parse_crash_checks(result.output, image_count);
}

}  // namespace

Result<DurabilityPhase> DurabilityPhase::start(const std::string& durability_dir,
                                               std::int64_t run_id, const StorageConfig& config,
                                               const DiskSource& volume,
                                               const DurabilityOptions& options) {
    const auto* file = std::get_if<FileDisk>(&volume);
    if (file == nullptr || durability_dir.empty()) {
        return make_error(errc::kUnsupported,
                          file == nullptr
                              ? "durability: only a file volume can be copied before the run"
                              : "durability: this disksweepd has no durability directory");
    }
    // A qcow2 file may grow past the disk's size with its metadata.
    const std::uint64_t size_limit =
        config.disk_size_bytes * (file->format == ImageFormat::kQcow2 ? 2 : 1);
    DS_ASSIGN_OR_RETURN(auto trial, DurabilityTrial::start(durability_dir, run_id, file->path,
                                                           size_limit, config.cache, options));
    return DurabilityPhase(std::move(trial), config, volume);
}

Status DurabilityPhase::add_to_job(Json& job, bool agent_marks) {
    if (!agent_marks) {
        return make_error(errc::kUnsupported,
                          "the guest's agent cannot mark a durability run's measured window (its "
                          "hello announces no 'mark' capability): rebuild the guest image");
    }
    job["mark"] = true;
    return ok_status();
}

Status DurabilityPhase::mark(const std::string& vm_sysctl_dir) {
    return trial_.mark(read_host_writeback(vm_sysctl_dir));
}

Result<Json> DurabilityPhase::measure(const std::vector<AckEntry>& acks,
                                      const CheckerGuests& checkers, const Clock& clock,
                                      const std::atomic<bool>& cancelled,
                                      const Progress& progress) {
    DS_TRY(trial_.plan(acks));
    const std::size_t states = trial_.state_count();
    for (std::size_t first = 0; first < states; first += kMaxCheckImages) {
        if (cancelled.load()) return make_error(errc::kCancelled, "cancelled");
        progress("checking crash states " + std::to_string(first + 1) + "-" +
                     std::to_string(std::min(states, first + kMaxCheckImages)) + " of " +
                     std::to_string(states),
                 static_cast<double>(first) / static_cast<double>(states));
        DS_ASSIGN_OR_RETURN(auto images, trial_.build_images(first, kMaxCheckImages));
        const auto check_start = clock.now();
        auto checks = check_crash_images(images, checkers, clock, cancelled);
        trial_.add_check_seconds(seconds_since(check_start, clock));
        if (!checks.ok()) {
            return make_error(checks.error().code, "durability: checking crash states from " +
                                                       std::to_string(first) + ": " +
                                                       checks.error().message);
        }
        trial_.record_checks(first, checks.value());
    }
    return trial_.result();
}

Result<std::vector<CrashCheck>> DurabilityPhase::check_crash_images(
    const std::vector<std::string>& images, const CheckerGuests& checkers, const Clock& clock,
    const std::atomic<bool>& cancelled) const {
    const std::string& vm = checkers.vm_name;
    VmRequest request;
    request.name = vm;
    request.config = checker_config(config_);
    request.data_disk = at_path(volume_, images.front());
    Json disks = Json::array({std::string(protocol::kDataDiskSerial)});
    for (std::size_t i = 1; i < images.size(); ++i) {
        request.extra_disks.push_back(
            {at_path(volume_, images[i]), protocol::crash_disk_serial(i)});
        disks.push_back(protocol::crash_disk_serial(i));
    }
    request.image = checkers.image;
    request.accel = checkers.accel;
    request.vcpus = checkers.vcpus;
    request.memory_mib = checkers.memory_mib;
    Json job = checkers.job;
    job["timeout_s"] = kCheckSecondsPerImage * static_cast<int>(images.size());
    job["check"] = true;
    job["check_disks"] = disks;
    auto checks = run_checker(request, job, images.size(), checkers, clock, cancelled);
    Hypervisor& hypervisor = *checkers.hypervisor;
    const Status destroyed = hypervisor.destroy_vm(vm);
    if (checks.ok() && destroyed.ok()) hypervisor.discard_console(vm);
    if (checks.ok() && !destroyed.ok()) return destroyed.error();
    if (!checks.ok()) {
        return make_error(checks.error().code,
                          "checker guest " + vm + ": " + checks.error().message +
                              "; console log: " + hypervisor.console_location(vm));
    }
    return checks;
}

}  // namespace ds
