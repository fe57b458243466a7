#include "daemon/run/host_fio.h"

#include <sys/utsname.h>

#include <algorithm>

#include "common/clock.h"
#include "common/fio_options.h"
#include "common/text.h"
#include "common/units.h"

namespace ds {

namespace {

using Steady = std::chrono::steady_clock;

// The prefill writes in large sequential blocks: it only has to touch every
// block of the region once.
constexpr std::string_view kPrefillBlockSize = "1m";
constexpr std::string_view kRbdPrefillBlockSize = "4m";  // one RADOS object

// A fio option's value as text (sizes and counts may be numbers or strings).
std::optional<std::string> option_text(const Json& options, const char* name) {
    const auto found = options.find(name);
    if (found == options.end()) return std::nullopt;
    return fio_value_text(*found);
}

Error layout_error(const char* option, const std::string& value, const char* expected) {
    return make_error(errc::kInvalidArgument, "host baseline: fio option '" + std::string(option) +
                                                  "' is '" + value + "', expected " + expected);
}

// `env CEPH_CONF=...` in front of an RBD job: librados reads its monitors
// and keyring from there (fio's rbd engine has no option for it).
std::vector<std::string> command_prefix(const DiskSource& source) {
    const auto* rbd = std::get_if<RbdDisk>(&source);
    if (rbd == nullptr || rbd->ceph_conf.empty()) return {};
    return {"env", "CEPH_CONF=" + rbd->ceph_conf};
}

Result<std::vector<std::string>> prefill_command(const FioTarget& target,
                                                 const RawVolumeLayout& layout) {
    const bool rbd = std::holds_alternative<FioRbdImage>(target);
    Json params = {
        {"rw", "write"},
        {"bs", std::string(rbd ? kRbdPrefillBlockSize : kPrefillBlockSize)},
        {"size", layout.prefill_bytes},
        {"end_fsync", true},
    };
    // An RBD target brings its engine; a file or device is written plainly.
    if (!rbd) params["ioengine"] = "psync";
    return build_fio_command("prefill", params, target);
}

Result<ProcessOutput> run_fio(ProcessRunner& runner, const std::vector<std::string>& argv,
                              std::chrono::seconds timeout) {
    auto output = runner.run(argv, timeout);
    if (!output.ok()) return output.error();
    if (output->timed_out) {
        return make_error(errc::kTimeout, describe_command(argv) + " did not finish within " +
                                              std::to_string(timeout.count()) + " s");
    }
    if (output->exit_code != 0) {
        return make_error(errc::kIo, describe_fio_failure(argv, output->stderr_text,
                                                          output->exit_code, output->signal));
    }
    return output;
}

}  // namespace

Result<RawVolumeLayout> plan_raw_volume_layout(const Json& params, std::uint64_t volume_bytes) {
    const Json options = effective_fio_options(params);
    RawVolumeLayout layout;
    layout.job_bytes = volume_bytes;
    if (auto size = option_text(options, "size")) {
        auto bytes = parse_fio_size(*size);
        if (!bytes || *bytes == 0) return layout_error("size", *size, "a size such as 256m");
        layout.job_bytes = std::min(*bytes, volume_bytes);
    }
    if (auto numjobs = option_text(options, "numjobs")) {
        auto count = parse_size(*numjobs, SizePrefixes::kFio);
        if (!count || *count == 0) return layout_error("numjobs", *numjobs, "a count >= 1");
        layout.numjobs = *count;
    }
    layout.separate_regions =
        layout.numjobs > 1 && layout.job_bytes <= volume_bytes / layout.numjobs;
    layout.prefill_bytes =
        layout.separate_regions ? layout.job_bytes * layout.numjobs : layout.job_bytes;
    return layout;
}

Json to_json(const RawVolumeLayout& layout) {
    return {{"job_bytes", layout.job_bytes},
            {"numjobs", layout.numjobs},
            {"separate_regions", layout.separate_regions},
            {"prefill_bytes", layout.prefill_bytes}};
}

Result<FioTarget> host_fio_target(const DiskSource& source) {
    if (const auto* file = std::get_if<FileDisk>(&source))
        return FioTarget{FioRawVolume{file->path}};
    if (const auto* block = std::get_if<BlockDisk>(&source))
        return FioTarget{FioRawVolume{block->path}};
    if (const auto* rbd = std::get_if<RbdDisk>(&source))
        return FioTarget{FioRbdImage{rbd->pool, rbd->image, rbd->user}};
    return make_error(errc::kUnsupported,
                      "a host baseline needs a volume the host can reach; a disk the hypervisor "
                      "allocates itself has none");
}

Result<HostFioCommands> host_fio_commands(const Workload& workload, const DiskSource& source,
                                          const RawVolumeLayout& layout) {
    DS_ASSIGN_OR_RETURN(auto target, host_fio_target(source));
    DS_ASSIGN_OR_RETURN(auto job, build_fio_command(workload.name, workload.params, target));
    if (layout.separate_regions)
        job.push_back("--offset_increment=" + std::to_string(layout.job_bytes));
    HostFioCommands commands;
    const std::vector<std::string> prefix = command_prefix(source);
    commands.job = prefix;
    commands.job.insert(commands.job.end(), job.begin(), job.end());
    if (layout.prefill_bytes > 0) {
        DS_ASSIGN_OR_RETURN(auto prefill, prefill_command(target, layout));
        commands.prefill = prefix;
        commands.prefill.insert(commands.prefill.end(), prefill.begin(), prefill.end());
    }
    return commands;
}

Result<HostFioResult> run_host_fio(const Workload& workload, const DiskSource& source,
                                   std::uint64_t volume_bytes, ProcessRunner& runner,
                                   std::chrono::seconds timeout) {
    DS_ASSIGN_OR_RETURN(auto layout, plan_raw_volume_layout(workload.params, volume_bytes));
    auto commands = host_fio_commands(workload, source, layout);
    if (!commands.ok()) return commands.error();
    HostFioResult result;
    result.layout = to_json(layout);
    result.layout["prefill_command"] = describe_command(commands->prefill);
    result.layout["job_command"] = describe_command(commands->job);

    auto phase_start = Steady::now();
    if (!commands->prefill.empty()) {
        DS_ASSIGN_OR_RETURN(auto prefilled, run_fio(runner, commands->prefill, timeout));
    }
    result.prefill_s = seconds_since(phase_start);
    phase_start = Steady::now();
    DS_ASSIGN_OR_RETURN(auto ran, run_fio(runner, commands->job, timeout));
    result.bench_s = seconds_since(phase_start);
    DS_ASSIGN_OR_RETURN(auto document, parse_fio_stdout(ran.stdout_text));
    if (auto failed = fio_job_error(document)) return make_error(errc::kIo, *failed);
    result.fio_output = std::move(document);
    return result;
}

std::string host_fio_version(ProcessRunner& runner) {
    auto output = runner.run({"fio", "--version"}, std::chrono::seconds(10));
    if (!output.ok() || output->exit_code != 0) return "";
    return trim_trailing(output->stdout_text);
}

std::string host_kernel_release() {
    utsname names{};
    return uname(&names) == 0 ? std::string(names.release) : "";
}

}  // namespace ds
