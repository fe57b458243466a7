// The matrix part of a spec: [filesystems.NAME], [matrix], [tunings.NAME],
// `baseline`, and the `filesystems` lists of workloads and tunings.
#include <algorithm>

#include "common/text.h"
#include "daemon/spec/axis_values.h"
#include "daemon/spec/spec_parser.h"

namespace ds {
namespace {

// PVE's and QEMU's per-direction and burst limits (qemu-server's drive keys
// iops_rd, mbps_wr_max, ...; QEMU's bps_rd, iops_size): refused as axes with
// the reason, not as unknown words, since Proxmox users write them.
constexpr std::string_view kDirectionLimitsRefused =
    "per-direction and burst limits are not swept: sweep the totals iops_limit and "
    "bandwidth_limit, which every level verifies; a run whose QEMU shows any other limit fails "
    "(docs/verification.md)";
bool is_direction_or_burst_limit(std::string_view key) {
    const bool limit =
        key.starts_with("iops_") || key.starts_with("mbps_") || key.starts_with("bps_");
    return limit && key != "iops_limit";
}

}  // namespace

Status SpecParser::parse_filesystems(const toml::node& node) {
    const auto* table = node.as_table();
    if (table == nullptr) return type_error("filesystems", node, "a table ([filesystems.NAME])");
    for (auto&& [key, definition_node] : *table) {
        const std::string name(key.str());
        if (!is_name(name)) {
            return error_at(key.source(), "filesystem name " + in_quotes(name) +
                                              " must be 1 to 64 of A-Z a-z 0-9 . _ -");
        }
        const auto fs_types = filesystem_types();
        if (std::find(fs_types.begin(), fs_types.end(), name) != fs_types.end()) {
            return error_at(key.source(), "filesystem name " + in_quotes(name) +
                                              " is a filesystem type; pick another name");
        }
        const auto* definition = definition_node.as_table();
        if (definition == nullptr)
            return type_error("filesystems." + name, definition_node, "a table");
        const std::string where = "in [filesystems." + name + "]";
        DS_TRY(check_keys(*definition, {"type", "mkfs", "mount", "post_format"}, "key", where));

        FilesystemSpec filesystem;
        filesystem.label = name;
        const toml::node* type = definition->get("type");
        if (type == nullptr)
            return error_at(definition->source(), "missing required key 'type' " + where);
        if (!type->is_string()) return type_error("type", *type, "a string");
        filesystem.type = type->as_string()->get();
        const std::vector<std::string_view> valid_types(fs_types.begin(), fs_types.end());
        if (!contains(valid_types, filesystem.type)) {
            return error_at(type->source(), unknown_choice("filesystem type", filesystem.type,
                                                           where, "valid types", valid_types));
        }

        auto read_strings = [&](std::string_view key_name, std::vector<std::string>& out,
                                std::string_view expected) -> Status {
            const toml::node* list = definition->get(key_name);
            if (list == nullptr) return ok_status();
            const auto* array = list->as_array();
            if (array == nullptr) return type_error(key_name, *list, expected);
            for (const toml::node& element : *array) {
                if (!element.is_string()) return type_error(key_name, element, "a string");
                out.push_back(element.as_string()->get());
            }
            return ok_status();
        };
        DS_TRY(read_strings("mkfs", filesystem.mkfs_options,
                            "an array of strings (mkfs arguments, in order)"));
        DS_TRY(read_strings("post_format", filesystem.post_format,
                            "an array of post-format step names"));
        if (const toml::node* mount = definition->get("mount")) {
            if (!mount->is_string())
                return type_error("mount", *mount, "a string of comma-separated mount options");
            filesystem.mount_options = mount->as_string()->get();
        }
        if (std::string problem = filesystem_problem(filesystem); !problem.empty())
            return error_at(definition->source(), "[filesystems." + name + "]: " + problem);
        spec_.filesystems[name] = std::move(filesystem);
    }
    return ok_status();
}

// What an axis value in the spec says, as matrix values are kept: booleans
// "true"/"false", integers in decimal, strings as written.
Result<std::string> SpecParser::axis_value_text(const AxisDef& axis,
                                                const toml::node& element) const {
    std::string expected;
    switch (axis.kind) {
        case AxisKind::kBool:
            expected = "true or false";
            break;
        case AxisKind::kSize:
            expected = "a size string like \"1g\" or an integer of bytes";
            break;
        case AxisKind::kDefaultOrCount:
            expected = "\"" + std::string(axis.default_value) + "\" or an integer";
            break;
        case AxisKind::kDefaultOrSize:
            expected = "\"" + std::string(axis.default_value) +
                       "\", a size string like \"8m\" or an integer of bytes";
            break;
        default:
            expected = "a string";
            break;
    }
    if (axis.kind == AxisKind::kBool && element.is_boolean())
        return std::string(element.as_boolean()->get() ? "true" : "false");
    if ((axis.kind == AxisKind::kSize || axis.kind == AxisKind::kDefaultOrCount ||
         axis.kind == AxisKind::kDefaultOrSize) &&
        element.is_integer()) {
        if (element.as_integer()->get() < 0) {
            return error_at(element.source(),
                            "values of axis " + in_quotes(axis.name) + " must not be negative");
        }
        return std::to_string(element.as_integer()->get());
    }
    if (axis.kind != AxisKind::kBool && element.is_string()) return element.as_string()->get();
    return error_at(element.source(), "values of axis " + in_quotes(axis.name) + " must be " +
                                          expected + ", not " + std::string(type_name(element)));
}

Status SpecParser::parse_matrix(const toml::node& node) {
    const auto* table = node.as_table();
    if (table == nullptr) return type_error("matrix", node, "a table ([matrix])");
    for (auto&& [key, value_node] : *table) {
        if (key.str() == kTuningAxis) {
            DS_TRY(read_tuning_axis(value_node));
            continue;
        }
        const AxisDef* axis = find_axis(key.str());
        if (axis == nullptr && is_direction_or_burst_limit(key.str())) {
            return error_at(key.source(), in_quotes(key.str()) + " in [matrix]: " +
                                              std::string(kDirectionLimitsRefused));
        }
        if (axis == nullptr) {
            return error_at(key.source(), unknown_choice("axis", key.str(), "in [matrix]",
                                                         "valid axes", axis_names()));
        }
        std::vector<const toml::node*> elements;
        if (const auto* array = value_node.as_array()) {
            if (array->empty()) {
                return error_at(value_node.source(),
                                "axis " + in_quotes(axis->name) +
                                    " in [matrix] lists no values; list at least one, or leave "
                                    "the axis out for its default " +
                                    in_quotes(axis->default_value));
            }
            for (const toml::node& element : *array) elements.push_back(&element);
        } else {
            elements.push_back(&value_node);
        }

        std::vector<std::string> values;
        for (const toml::node* element : elements) {
            Result<std::string> value_text = axis_value_text(*axis, *element);
            if (!value_text.ok()) return value_text.error();
            std::string text = std::move(value_text).value();
            Result<ConfigSetter> setter = axis_setter(spec_, *axis, text);
            if (!setter.ok()) return error_at(element->source(), setter.error().message);
            if (std::find(values.begin(), values.end(), text) != values.end()) {
                return error_at(element->source(), "value " + in_quotes(text) + " of axis " +
                                                       in_quotes(axis->name) + " is listed twice");
            }
            values.push_back(std::move(text));
        }
        spec_.matrix[std::string(axis->name)] = std::move(values);
    }
    return ok_status();
}

// `tuning = "NAME"` or `tuning = ["defaults", "NAME", ...]` in [matrix]:
// names as written; parse_tunings checks that each is "defaults" or a
// [tunings.NAME].
Status SpecParser::read_tuning_axis(const toml::node& node) {
    std::vector<const toml::node*> elements;
    if (const auto* array = node.as_array()) {
        if (array->empty()) {
            return error_at(node.source(),
                            "axis 'tuning' in [matrix] lists no values; list at "
                            "least one, or leave the axis out to run the "
                            "workloads as written");
        }
        for (const toml::node& element : *array) elements.push_back(&element);
    } else {
        elements.push_back(&node);
    }
    for (const toml::node* element : elements) {
        const auto* text = element->as_string();
        if (text == nullptr) {
            return error_at(element->source(), "values of axis 'tuning' must be a string, not " +
                                                   std::string(type_name(*element)));
        }
        const std::string& value = text->get();
        if (std::find(spec_.tuning_axis.begin(), spec_.tuning_axis.end(), value) !=
            spec_.tuning_axis.end()) {
            return error_at(element->source(),
                            "value " + in_quotes(value) + " of axis 'tuning' is listed twice");
        }
        spec_.tuning_axis.push_back(value);
        tuning_value_regions_.push_back(element->source());
    }
    return ok_status();
}

// The [tunings.NAME] tables (`node` may be null: none), then the check that
// every value of matrix.tuning is "defaults" or one of them.
Status SpecParser::parse_tunings(const toml::node* node) {
    if (node != nullptr) {
        const auto* table = node->as_table();
        if (table == nullptr) return type_error("tunings", *node, "a table ([tunings.NAME])");
        for (auto&& [key, definition] : *table) DS_TRY(parse_tuning(key, definition));
    }
    std::vector<std::string_view> valid = {kDefaultTuning};
    for (const auto& [name, tuning] : spec_.tunings) valid.push_back(name);
    for (std::size_t i = 0; i < spec_.tuning_axis.size(); ++i) {
        const std::string& value = spec_.tuning_axis[i];
        if (!contains(valid, value)) {
            return error_at(tuning_value_regions_[i],
                            unknown_choice("tuning", value, "in [matrix]", "valid tunings", valid) +
                                " A tuning is a [tunings.NAME] table.");
        }
    }
    return ok_status();
}

// One [tunings.NAME]: `server` (required, checked as a workload's) and
// `filesystems` (as a workload's).
Status SpecParser::parse_tuning(const toml::key& key, const toml::node& definition_node) {
    const std::string name(key.str());
    if (!is_name(name) || name == kDefaultTuning) {
        return error_at(key.source(), "tuning name " + in_quotes(name) +
                                          " must be 1 to 64 of A-Z a-z 0-9 . _ - and not "
                                          "\"defaults\" (the workloads as written)");
    }
    const auto* definition = definition_node.as_table();
    if (definition == nullptr) return type_error("tunings." + name, definition_node, "a table");
    const std::string where = "in [tunings." + name + "]";
    DS_TRY(check_keys(*definition, {"server", "filesystems"}, "key", where));
    const toml::node* server = definition->get("server");
    if (server == nullptr) {
        return error_at(definition->source(),
                        "missing required key 'server' " + where +
                            " (the MariaDB server variables the tuning sets)");
    }
    const WorkloadOptionDef* server_option = nullptr;
    for (const WorkloadKind& kind : workload_kinds())
        if (server_option == nullptr) server_option = server_variables_option_of(kind);
    if (server_option == nullptr) return spec_error("no workload kind takes server variables");
    DS_TRY(check_option_table(
        OptionUnderCheck{*server_option, *server, "server", " in tuning " + in_quotes(name)}));
    WorkloadTuning tuning;
    tuning.server = option_value_as_json(*server);
    if (tuning.server.empty())
        return error_at(server->source(), "'server' " + where + " sets no variable");
    if (const toml::node* filesystems = definition->get("filesystems")) {
        DS_ASSIGN_OR_RETURN(tuning.filesystems,
                            read_filesystems(*filesystems, "tuning " + in_quotes(name)));
    }
    spec_.tunings[name] = std::move(tuning);
    return ok_status();
}

// `baseline.tuning`: a value of matrix.tuning ("defaults" when the matrix
// has no tuning axis).
Status SpecParser::read_baseline_tuning(const toml::node& value) {
    const auto* text = value.as_string();
    if (text == nullptr) return type_error("baseline.tuning", value, "a string");
    const std::vector<std::string> values =
        spec_.tuning_axis.empty() ? std::vector<std::string>{std::string(kDefaultTuning)}
                                  : spec_.tuning_axis;
    if (std::find(values.begin(), values.end(), text->get()) == values.end()) {
        const std::vector<std::string_view> choices(values.begin(), values.end());
        return error_at(value.source(), "baseline.tuning = " + in_quotes(text->get()) +
                                            " is not a value of the matrix; [matrix] tuning "
                                            "has: " +
                                            join(choices, ", "));
    }
    spec_.baseline_tuning = text->get();
    return ok_status();
}

// `baseline = { axis = value, ... }`: each key a matrix axis, each value one
// the matrix lists for it (or the axis default when the matrix leaves it
// out). Whether they select exactly one configuration is expand_sweep's
// check, once the combinations are known.
Status SpecParser::parse_baseline(const toml::node& node) {
    const auto* table = node.as_table();
    if (table == nullptr) {
        return type_error("baseline", node,
                          "a table like { cache = \"none\", filesystem = \"ext4\" }");
    }
    if (table->empty()) return error_at(node.source(), "'baseline' names no axis value");
    for (auto&& [key, value] : *table) {
        if (key.str() == kTuningAxis) {
            DS_TRY(read_baseline_tuning(value));
            continue;
        }
        const AxisDef* axis = find_axis(key.str());
        if (axis == nullptr) {
            return error_at(key.source(), unknown_choice("axis", key.str(), "in 'baseline'",
                                                         "valid axes", axis_names()));
        }
        Result<std::string> text = axis_value_text(*axis, value);
        if (!text.ok()) return text.error();
        const auto listed = spec_.matrix.find(std::string(axis->name));
        const std::vector<std::string> values =
            listed != spec_.matrix.end()
                ? listed->second
                : std::vector<std::string>{std::string(axis->default_value)};
        if (std::find(values.begin(), values.end(), text.value()) == values.end()) {
            std::vector<std::string_view> choices(values.begin(), values.end());
            return error_at(value.source(), "baseline." + std::string(axis->name) + " = " +
                                                in_quotes(text.value()) +
                                                " is not a value of the matrix; [matrix] " +
                                                std::string(axis->name) +
                                                " has: " + join(choices, ", "));
        }
        spec_.baseline[std::string(axis->name)] = text.value();
    }
    const toml::source_region& region = node.source();
    spec_.baseline_where =
        source_ + (region.begin.line > 0 ? ":" + std::to_string(region.begin.line) + ":" +
                                               std::to_string(region.begin.column)
                                         : std::string());
    return ok_status();
}

// `filesystems = [...]` of `owner` (a workload or a tuning, as errors name
// it): each a value of matrix.filesystem exactly as written there (or the
// axis default when the matrix leaves it out).
Result<std::vector<std::string>> SpecParser::read_filesystems(const toml::node& node,
                                                              const std::string& owner) const {
    const auto* array = node.as_array();
    if (array == nullptr)
        return type_error("filesystems", node, "an array of matrix.filesystem values");
    if (array->empty()) {
        return error_at(node.source(), "'filesystems' in " + owner +
                                           " is empty; leave it out to run on every filesystem");
    }
    std::vector<std::string> matrix_values;
    if (const auto listed = spec_.matrix.find("filesystem"); listed != spec_.matrix.end()) {
        matrix_values = listed->second;
    } else {
        matrix_values.emplace_back(find_axis("filesystem")->default_value);
    }
    const std::vector<std::string_view> valid(matrix_values.begin(), matrix_values.end());
    std::vector<std::string> filesystems;
    for (const toml::node& element : *array) {
        const auto* text = element.as_string();
        if (text == nullptr) return type_error("filesystems", element, "a string");
        const std::string& value = text->get();
        if (!contains(valid, value)) {
            return error_at(element.source(),
                            "'filesystems' in " + owner + ": " + in_quotes(value) +
                                " is not a value of matrix.filesystem (as written there); "
                                "its values: " +
                                join(valid, ", ") + "." + suggestion(value, valid));
        }
        if (std::find(filesystems.begin(), filesystems.end(), value) != filesystems.end()) {
            return error_at(element.source(),
                            "'filesystems' in " + owner + " lists " + in_quotes(value) + " twice");
        }
        filesystems.push_back(value);
    }
    return filesystems;
}

}  // namespace ds
