#include "daemon/spec/axis_values.h"

#include <algorithm>
#include <optional>

#include "common/units.h"
#include "common/workload_kind.h"
#include "daemon/backends/registry.h"
#include "daemon/spec/spec_text.h"

namespace ds {
namespace {

template <class Enum>
Result<ConfigSetter> enum_setter(const AxisDef& axis, std::string_view value,
                                 Enum StorageConfig::*field) {
    Enum parsed{};
    if (!parse_enum(value, parsed)) {
        return spec_error(unknown_choice("value", value, "for axis " + in_quotes(axis.name),
                                         "valid values", axis.values));
    }
    return ConfigSetter([parsed, field](StorageConfig& config) { config.*field = parsed; });
}

Result<ConfigSetter> bool_setter(const AxisDef& axis, std::string_view value,
                                 bool StorageConfig::*field) {
    if (value != "true" && value != "false") {
        return spec_error("axis " + in_quotes(axis.name) + " takes true or false, not " +
                          in_quotes(value));
    }
    const bool parsed = value == "true";
    return ConfigSetter([parsed, field](StorageConfig& config) { config.*field = parsed; });
}

// The axis's default_value ("default", "none": leave the setting out) or a
// decimal integer >= minimum.
Result<ConfigSetter> default_or_count_setter(const AxisDef& axis, std::string_view value,
                                             std::uint64_t minimum,
                                             std::optional<std::uint64_t> StorageConfig::*field) {
    std::optional<std::uint64_t> parsed;
    if (value != axis.default_value) {
        std::uint64_t number = 0;
        if (!parse_duration_text(value, {}, number) || number < minimum) {
            return spec_error(
                "axis " + in_quotes(axis.name) + " takes \"" + std::string(axis.default_value) +
                "\" or an integer >= " + std::to_string(minimum) + ", not " + in_quotes(value));
        }
        parsed = number;
    }
    return ConfigSetter([parsed, field](StorageConfig& config) { config.*field = parsed; });
}

// The axis's default_value (leave the setting out) or a size > 0 in
// disk_size's units.
Result<ConfigSetter> default_or_size_setter(const AxisDef& axis, std::string_view value,
                                            std::optional<std::uint64_t> StorageConfig::*field) {
    std::optional<std::uint64_t> parsed;
    if (value != axis.default_value) {
        const auto bytes = parse_size(value, SizePrefixes::kBinary);
        if (!bytes || *bytes == 0) {
            return spec_error("axis " + in_quotes(axis.name) + " takes \"" +
                              std::string(axis.default_value) +
                              "\" or a size above 0 (bytes, or a number with k, m, g or t), not " +
                              in_quotes(value));
        }
        parsed = *bytes;
    }
    return ConfigSetter([parsed, field](StorageConfig& config) { config.*field = parsed; });
}

}  // namespace

Result<ConfigSetter> axis_setter(const SweepSpec& spec, const AxisDef& axis,
                                 std::string_view value) {
    const std::string_view name = axis.name;
    if (name == "storage") {
        const std::size_t colon = value.find(':');
        const std::string backend(value.substr(0, colon));
        std::string pool;
        if (colon != std::string_view::npos) {
            pool = std::string(value.substr(colon + 1));
            if (pool.empty() || pool.find_first_of(" \t") != std::string::npos)
                return spec_error("storage " + in_quotes(value) + " needs a pool name after ':'");
        }
        if (!contains(storage_kind_names(), backend)) {
            return spec_error(unknown_choice("storage backend", backend, "", "valid backends",
                                             storage_kind_names()));
        }
        return ConfigSetter([backend, pool](StorageConfig& config) {
            config.storage = backend;
            config.storage_pool = pool;
        });
    }
    if (name == "image_format") return enum_setter(axis, value, &StorageConfig::image_format);
    if (name == "disk_size") {
        const auto bytes = parse_size(value, SizePrefixes::kBinary);
        if (!bytes || *bytes == 0) {
            return spec_error("disk_size " + in_quotes(value) +
                              " is not a size; write bytes or a number with k, m, g or t, "
                              "e.g. \"1g\"");
        }
        return ConfigSetter(
            [bytes = *bytes](StorageConfig& config) { config.disk_size_bytes = bytes; });
    }
    if (name == "bus") return enum_setter(axis, value, &StorageConfig::bus);
    if (name == "cache") return enum_setter(axis, value, &StorageConfig::cache);
    if (name == "aio") return enum_setter(axis, value, &StorageConfig::aio);
    if (name == "discard") return bool_setter(axis, value, &StorageConfig::discard);
    if (name == "detect_zeroes") return enum_setter(axis, value, &StorageConfig::detect_zeroes);
    if (name == "ssd") return bool_setter(axis, value, &StorageConfig::ssd);
    if (name == "iothread") return bool_setter(axis, value, &StorageConfig::iothread);
    if (name == "iops_limit")
        return default_or_count_setter(axis, value, 1, &StorageConfig::iops_limit);
    if (name == "bandwidth_limit")
        return default_or_size_setter(axis, value, &StorageConfig::bandwidth_limit);
    if (name == "queues") return default_or_count_setter(axis, value, 1, &StorageConfig::queues);
    if (name == "scheduler") return enum_setter(axis, value, &StorageConfig::scheduler);
    if (name == "read_ahead_kb")
        return default_or_count_setter(axis, value, 0, &StorageConfig::read_ahead_kb);
    if (name == "nr_requests")
        return default_or_count_setter(axis, value, 1, &StorageConfig::nr_requests);
    if (name == "filesystem") {
        Result<FilesystemSpec> filesystem = resolve_filesystem(spec, value);
        if (!filesystem.ok()) return filesystem.error();
        return ConfigSetter([resolved = std::move(filesystem).value()](StorageConfig& config) {
            config.filesystem = resolved;
        });
    }
    return make_error(errc::kInternal, "axis " + in_quotes(name) +
                                           " is declared but has no setter in axis_values.cpp");
}

std::vector<std::string_view> axis_names() {
    std::vector<std::string_view> names;
    for (const auto& axis : axes()) names.push_back(axis.name);
    names.push_back(kTuningAxis);
    return names;
}

const WorkloadOptionDef* server_variables_option_of(const WorkloadKind& kind) {
    const auto option = std::find_if(
        kind.options.begin(), kind.options.end(),
        [](const WorkloadOptionDef& def) { return def.kind == OptionKind::kServerVariables; });
    return option == kind.options.end() ? nullptr : &*option;
}

Result<FilesystemSpec> resolve_filesystem(const SweepSpec& spec, std::string_view value) {
    if (const auto named = spec.filesystems.find(std::string(value));
        named != spec.filesystems.end())
        return named->second;

    // TYPE[+STEP...][:MOUNTOPTS]
    FilesystemSpec filesystem;
    filesystem.label = std::string(value);
    const std::size_t colon = value.find(':');
    std::string_view head = value.substr(0, colon);
    if (colon != std::string_view::npos) {
        filesystem.mount_options = std::string(value.substr(colon + 1));
        if (filesystem.mount_options.empty())
            return spec_error("filesystem " + in_quotes(value) + " has no mount options after ':'");
        if (filesystem.mount_options.find_first_of(" \t") != std::string::npos)
            return spec_error("filesystem " + in_quotes(value) + ": mount options contain a space");
    }
    const std::size_t plus = head.find('+');
    filesystem.type = std::string(head.substr(0, plus));
    const auto types = filesystem_types();
    if (std::find(types.begin(), types.end(), filesystem.type) == types.end()) {
        std::vector<std::string_view> choices(types.begin(), types.end());
        for (const auto& [name, named] : spec.filesystems) choices.push_back(name);
        return spec_error(
            unknown_choice("filesystem", filesystem.type, "", "valid filesystems", choices) +
            " Shorthand: TYPE[+STEP...][:MOUNTOPTS].");
    }
    if (plus != std::string_view::npos) {
        std::string_view steps = head.substr(plus + 1);
        while (true) {
            const std::size_t next = steps.find('+');
            const std::string step(steps.substr(0, next));
            if (find_post_format_step(step) == nullptr) {
                std::vector<std::string_view> known_steps;
                for (const auto& known : post_format_steps()) known_steps.push_back(known.name);
                return spec_error(unknown_choice("post-format step", step,
                                                 "in filesystem " + in_quotes(value), "valid steps",
                                                 known_steps));
            }
            filesystem.post_format.push_back(step);
            if (next == std::string_view::npos) break;
            steps.remove_prefix(next + 1);
        }
    }
    if (std::string problem = filesystem_problem(filesystem); !problem.empty())
        return spec_error("filesystem " + in_quotes(value) + ": " + problem);
    return filesystem;
}

}  // namespace ds
