#include "guestagent/agent_job.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include "common/protocol.h"
#include "common/workload_kind.h"
#include "guestagent/workload_kinds.h"

namespace ds::agent {
namespace {

const std::array<PostFormatCommand, 2> kPostFormatCommands = {{
    // -f: btrfs refuses to lower metadata redundancy (dup -> single) without it.
    {"single", {"btrfs", "balance", "start", "-f", "-mconvert=single", "-sconvert=single"}},
    // On the empty top directory, so every file fio creates inherits No_COW.
    {"nocow", {"chattr", "+C"}},
}};

// Field readers for parse_job: each names the field in its error.
Error bad_field(const std::string& path, const std::string& what) {
    return make_error(errc::kInvalidArgument, path + ": " + what);
}

Result<const Json*> object_field(const Json& parent, const char* key, const std::string& path) {
    const auto found = parent.find(key);
    if (found == parent.end()) return bad_field(path, "is missing");
    if (!found->is_object()) {
        return bad_field(path, std::string("is a ") + found->type_name() + ", expected an object");
    }
    return &*found;
}

Result<std::string> string_field(const Json& parent, const char* key, const std::string& path,
                                 std::optional<std::string> default_value = std::nullopt) {
    const auto found = parent.find(key);
    if (found == parent.end()) {
        if (default_value) return *default_value;
        return bad_field(path, "is missing");
    }
    if (!found->is_string()) {
        return bad_field(path, std::string("is a ") + found->type_name() + ", expected a string");
    }
    return found->get<std::string>();
}

Result<std::vector<std::string>> string_list_field(const Json& parent, const char* key,
                                                   const std::string& path) {
    const auto found = parent.find(key);
    if (found == parent.end()) return std::vector<std::string>{};
    if (!found->is_array()) {
        return bad_field(path, std::string("is a ") + found->type_name() + ", expected an array");
    }
    std::vector<std::string> values;
    for (std::size_t i = 0; i < found->size(); ++i) {
        const Json& item = (*found)[i];
        if (!item.is_string()) {
            return bad_field(path + "[" + std::to_string(i) + "]",
                             std::string("is a ") + item.type_name() + ", expected a string");
        }
        values.push_back(item.get<std::string>());
    }
    return values;
}

// job.filesystem.type: one of the types the agent can create.
Result<std::string> parse_filesystem_type(const Json& fs) {
    auto type = string_field(fs, "type", "job.filesystem.type");
    if (!type) return type.error();
    const auto types = filesystem_types();
    if (std::find(types.begin(), types.end(), *type) == types.end()) {
        std::string valid;
        for (const auto known : types) valid += (valid.empty() ? "" : ", ") + std::string(known);
        return bad_field("job.filesystem.type", "'" + *type + "' is not one of " + valid);
    }
    return type;
}

// job.filesystem.post_format: known steps, each for the job's type.
Result<std::vector<std::string>> parse_post_format_steps(const Json& fs,
                                                         const std::string& filesystem_type) {
    auto steps = string_list_field(fs, "post_format", "job.filesystem.post_format");
    if (!steps) return steps.error();
    for (std::size_t i = 0; i < steps->size(); ++i) {
        const std::string& step = (*steps)[i];
        const std::string path = "job.filesystem.post_format[" + std::to_string(i) + "]";
        const PostFormatStepDef* definition = find_post_format_step(step);
        if (definition == nullptr || find_post_format_command(step) == nullptr) {
            return bad_field(path, "unknown post-format step '" + step + "'");
        }
        if (definition->filesystem_type != filesystem_type) {
            return bad_field(path, "step '" + step + "' applies to " +
                                       std::string(definition->filesystem_type) + ", not " +
                                       filesystem_type);
        }
    }
    return steps;
}

Result<FilesystemSpec> parse_filesystem(const Json& message) {
    auto filesystem = object_field(message, "filesystem", "job.filesystem");
    if (!filesystem) return filesystem.error();
    const Json& fs = **filesystem;
    FilesystemSpec spec;
    auto type = parse_filesystem_type(fs);
    if (!type) return type.error();
    spec.type = *type;
    spec.label = fs.value("label", *type);
    auto mkfs_options = string_list_field(fs, "mkfs_options", "job.filesystem.mkfs_options");
    if (!mkfs_options) return mkfs_options.error();
    spec.mkfs_options = *mkfs_options;
    auto mount_options =
        string_field(fs, "mount_options", "job.filesystem.mount_options", std::string());
    if (!mount_options) return mount_options.error();
    spec.mount_options = *mount_options;
    auto steps = parse_post_format_steps(fs, spec.type);
    if (!steps) return steps.error();
    spec.post_format = *steps;
    return spec;
}

// job.workload.kind: the table entry of a kind the agent runs.
Result<const WorkloadKindEntry*> parse_workload_kind(const Json& w) {
    auto kind = string_field(w, "kind", "job.workload.kind");
    if (!kind) return kind.error();
    const WorkloadKindEntry* entry = find_workload_kind_entry(*kind);
    if (entry == nullptr) {
        std::string valid;
        for (const auto& known : workload_kind_table()) {
            valid += (valid.empty() ? "" : ", ") + std::string(known.kind);
        }
        return bad_field("job.workload.kind",
                         "'" + *kind + "' is not supported (known: " + valid + ")");
    }
    return entry;
}

Result<Workload> parse_workload(const Json& message) {
    auto object = object_field(message, "workload", "job.workload");
    if (!object) return object.error();
    const Json& w = **object;
    auto name = string_field(w, "name", "job.workload.name");
    if (!name) return name.error();
    // fio derives file names from it: keep it a plain file name.
    if (name->empty() || name->find('/') != std::string::npos) {
        return bad_field("job.workload.name", "'" + *name + "' must be non-empty without '/'");
    }
    auto entry = parse_workload_kind(w);
    if (!entry) return entry.error();
    Workload workload;
    workload.name = *name;
    workload.kind = std::string((*entry)->kind);
    workload.params = w.value("params", Json::object());
    if (!workload.params.is_object()) {
        return bad_field("job.workload.params", "is not an object");
    }
    // Refuse bad params now, before the disk is formatted.
    if (auto checked = (*entry)->check_params(workload); !checked) {
        return bad_field("job.workload.params", checked.error().message);
    }
    return workload;
}

// job.timeout_s: positive, at most a week; rounded up to whole seconds.
Result<int> parse_timeout(const Json& message) {
    const auto timeout = message.find("timeout_s");
    if (timeout == message.end()) return bad_field("job.timeout_s", "is missing");
    if (!timeout->is_number() || !(timeout->get<double>() > 0) ||
        timeout->get<double>() > 7 * 24 * 3600) {
        return bad_field("job.timeout_s",
                         "is " + timeout->dump() + ", expected a positive number of seconds");
    }
    return static_cast<int>(std::ceil(timeout->get<double>()));
}

// job.KEY: an optional boolean, false when absent (trim, check).
Result<bool> optional_flag(const Json& message, const char* key) {
    const auto flag = message.find(key);
    if (flag == message.end() || flag->is_null()) return false;
    if (!flag->is_boolean())
        return bad_field(std::string("job.") + key, "is " + flag->dump() + ", expected a boolean");
    return flag->get<bool>();
}

// job.mark: only a kind that acknowledges records has a measured window to
// mark (its runner calls WorkloadContext::begin_measurement).
Result<bool> parse_mark(const Json& message, const std::string& kind_name) {
    auto mark = optional_flag(message, "mark");
    if (!mark) return mark.error();
    if (*mark && !kind_acknowledges(kind_name)) {
        return bad_field("job.mark",
                         "marks the measured window of a kind that acknowledges "
                         "records (ledger), not of '" +
                             kind_name + "'");
    }
    return *mark;
}

// job.check_disks: the serials of the crash images a check job checks in
// one boot, in order; empty when absent (the check is of the data disk).
Result<std::vector<std::string>> parse_check_disks(const Json& message, bool check) {
    const auto found = message.find("check_disks");
    if (found == message.end() || found->is_null()) return std::vector<std::string>{};
    if (!check) return bad_field("job.check_disks", "is only for a job with check: true");
    auto serials = string_list_field(message, "check_disks", "job.check_disks");
    if (!serials) return serials.error();
    if (serials->empty() || serials->size() > protocol::kMaxCheckDisks) {
        return bad_field("job.check_disks", "has " + std::to_string(serials->size()) +
                                                " serials, expected 1 to " +
                                                std::to_string(protocol::kMaxCheckDisks));
    }
    for (std::size_t i = 0; i < serials->size(); ++i) {
        const std::string path = "job.check_disks[" + std::to_string(i) + "]";
        const std::string& serial = (*serials)[i];
        const std::string problem = protocol::disk_serial_problem(serial);
        if (!problem.empty()) return bad_field(path, problem);
        if (std::find(serials->begin(), serials->begin() + static_cast<std::ptrdiff_t>(i),
                      serial) != serials->begin() + static_cast<std::ptrdiff_t>(i)) {
            return bad_field(path, "serial " + serial + " is listed twice");
        }
    }
    return serials;
}

// job.dataset: "fresh" when absent.
Result<DatasetMode> parse_dataset(const Json& message) {
    auto text = string_field(message, "dataset", "job.dataset", std::string("fresh"));
    if (!text) return text.error();
    if (*text == "fresh") return DatasetMode::kFresh;
    if (*text == "prepare") return DatasetMode::kPrepareOnly;
    if (*text == "prepared") return DatasetMode::kPrepared;
    return bad_field("job.dataset", "'" + *text + "' is not one of fresh, prepare, prepared");
}

}  // namespace

const PostFormatCommand* find_post_format_command(std::string_view step) {
    for (const auto& command : kPostFormatCommands) {
        if (command.step == step) return &command;
    }
    return nullptr;
}

Result<AgentJob> parse_job(const Json& message) {
    AgentJob job;
    auto run_id = string_field(message, "run_id", "job.run_id");
    if (!run_id) return run_id.error();
    if (run_id->empty()) return bad_field("job.run_id", "is empty");
    job.run_id = *run_id;

    auto filesystem = parse_filesystem(message);
    if (!filesystem) return filesystem.error();
    job.filesystem = std::move(*filesystem);

    auto workload = parse_workload(message);
    if (!workload) return workload.error();
    job.workload = std::move(*workload);

    const auto block = message.find("block");
    auto tuning = parse_block_tuning(block == message.end() ? nullptr : &*block);
    if (!tuning) return tuning.error();
    job.block = *tuning;

    auto timeout_s = parse_timeout(message);
    if (!timeout_s) return timeout_s.error();
    job.timeout_s = *timeout_s;

    auto trim = optional_flag(message, "trim");
    if (!trim) return trim.error();
    job.trim = *trim;

    auto mark = parse_mark(message, job.workload.kind);
    if (!mark) return mark.error();
    job.mark = *mark;

    auto check = optional_flag(message, "check");
    if (!check) return check.error();
    job.check = *check;
    if (job.check && (!kind_acknowledges(job.workload.kind) || job.trim)) {
        return bad_field("job.check", "checks a ledger workload's crash image, without trim");
    }
    auto check_disks = parse_check_disks(message, job.check);
    if (!check_disks) return check_disks.error();
    job.check_disks = std::move(*check_disks);

    auto dataset = parse_dataset(message);
    if (!dataset) return dataset.error();
    job.dataset = *dataset;
    const WorkloadKind* kind = find_workload_kind(job.workload.kind);
    if (job.dataset != DatasetMode::kFresh && (kind == nullptr || kind->preparation.step.empty())) {
        return bad_field("job.dataset", "workload kind '" + job.workload.kind +
                                            "' has no preparation step, so no prepared dataset");
    }
    return job;
}

}  // namespace ds::agent
