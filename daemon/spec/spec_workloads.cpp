// A spec's [[workload]] tables: each kind's options (rows of
// common/workload_kind.h), checked where they are written, and the rules
// between them.
#include <algorithm>
#include <set>

#include "common/fio_options.h"
#include "common/io_options.h"
#include "common/text.h"
#include "common/units.h"
#include "daemon/backends/registry.h"
#include "daemon/spec/spec_parser.h"

namespace ds {
namespace {

// Keys every [[workload]] may have besides its kind's options.
const std::vector<std::string_view> kCommonWorkloadKeys = {"kind", "name", "filesystems", "timeout",
                                                           "dataset"};

// The ioengine a [[workload]] of kind io names, or the io table's default
// (an ioengine that is not a string is reported at its key).
std::string io_engine_named(const toml::table& table) {
    if (const auto* engine = table.get_as<std::string>("ioengine")) return engine->get();
    return std::string(find_io_option("ioengine")->default_value);
}

bool is_truthy(const Json& value) {
    return (value.is_boolean() && value.get<bool>()) ||
           (value.is_number_integer() && value.get<std::int64_t>() != 0);
}

}  // namespace

Json option_value_as_json(const toml::node& node) {
    if (const auto* table = node.as_table()) {
        Json object = Json::object();
        for (auto&& [key, value] : *table)
            object[std::string(key.str())] = option_value_as_json(value);
        return object;
    }
    if (const auto* text = node.as_string()) return text->get();
    if (const auto* integer = node.as_integer()) return integer->get();
    if (const auto* boolean = node.as_boolean()) return boolean->get();
    return nullptr;  // unreachable after check_workload_option
}

// Each option's value is checked by the checker of its OptionKind.
Status SpecParser::check_workload_option(const WorkloadOptionDef& option, const toml::node& node,
                                         std::string_view workload_name) const {
    using Checker = Status (SpecParser::*)(const OptionUnderCheck&) const;
    struct KindChecker {
        OptionKind kind;
        Checker check;
    };
    static constexpr KindChecker kCheckers[] = {
        {OptionKind::kEnum, &SpecParser::check_enum_option},
        {OptionKind::kSize, &SpecParser::check_size_option},
        {OptionKind::kBlockSize, &SpecParser::check_size_option},
        {OptionKind::kDuration, &SpecParser::check_duration_option},
        {OptionKind::kCount, &SpecParser::check_integer_option},
        {OptionKind::kNonNegative, &SpecParser::check_integer_option},
        {OptionKind::kPercent, &SpecParser::check_integer_option},
        {OptionKind::kFlag, &SpecParser::check_flag_option},
        {OptionKind::kBool, &SpecParser::check_bool_option},
        {OptionKind::kSeconds, &SpecParser::check_seconds_option},
        {OptionKind::kFioJobFile, &SpecParser::check_job_file_option},
        {OptionKind::kServerVariables, &SpecParser::check_option_table},
        {OptionKind::kFioOptions, &SpecParser::check_option_table},
    };
    const OptionUnderCheck value{option, node, std::string(option.name),
                                 " in workload " + in_quotes(workload_name)};
    for (const KindChecker& checker : kCheckers) {
        if (checker.kind == option.kind) return (this->*checker.check)(value);
    }
    return ok_status();
}

Error SpecParser::bad_option_value(const OptionUnderCheck& value, std::string_view detail) const {
    return error_at(value.node.source(),
                    in_quotes(value.key) + value.in_workload + ": " + std::string(detail));
}

Status SpecParser::check_enum_option(const OptionUnderCheck& value) const {
    const auto* text = value.node.as_string();
    if (text == nullptr) return type_error(value.key, value.node, "a string");
    if (!contains(value.option.values, text->get())) {
        return error_at(value.node.source(),
                        unknown_choice("value", text->get(), "for " + in_quotes(value.key),
                                       "valid values", value.option.values));
    }
    return ok_status();
}

// kSize and kBlockSize: fio's size may be a percentage of the file or
// device; bs may give read,write[,trim] sizes.
Status SpecParser::check_size_option(const OptionUnderCheck& value) const {
    if (const auto* integer = value.node.as_integer()) {
        if (integer->get() <= 0) return bad_option_value(value, "must be a positive size");
        return ok_status();
    }
    const auto* text = value.node.as_string();
    if (text == nullptr) return type_error(value.key, value.node, "a size string like \"4k\"");
    std::string_view size = text->get();
    if (value.option.name == "size" && size.ends_with('%')) {
        std::uint64_t percent = 0;
        if (parse_duration_text(size.substr(0, size.size() - 1), {}, percent) && percent >= 1 &&
            percent <= 100)
            return ok_status();
        return bad_option_value(value,
                                in_quotes(size) + " is not a percentage between 1% and 100%");
    }
    const std::size_t max_parts = value.option.kind == OptionKind::kBlockSize ? 3 : 1;
    std::size_t parts = 0;
    while (true) {
        const std::size_t comma = size.find(',');
        const auto bytes = parse_fio_size(size.substr(0, comma));
        if (!bytes || *bytes == 0 || ++parts > max_parts) {
            return bad_option_value(value, in_quotes(text->get()) +
                                               " is not a size; write e.g. \"4k\", \"256m\" or "
                                               "bytes");
        }
        if (comma == std::string_view::npos) break;
        size.remove_prefix(comma + 1);
    }
    return ok_status();
}

Status SpecParser::check_duration_option(const OptionUnderCheck& value) const {
    if (const auto* integer = value.node.as_integer()) {
        if (integer->get() < 0) return bad_option_value(value, "must not be negative");
        return ok_status();
    }
    const auto* text = value.node.as_string();
    if (text == nullptr) return type_error(value.key, value.node, "a duration string like \"10s\"");
    if (!parse_fio_time_us(text->get())) {
        return bad_option_value(value, in_quotes(text->get()) +
                                           " is not a duration; write e.g. \"10s\", \"500ms\", "
                                           "\"2m\" or whole seconds");
    }
    return ok_status();
}

// kCount, kNonNegative and kPercent.
Status SpecParser::check_integer_option(const OptionUnderCheck& value) const {
    const auto* integer = value.node.as_integer();
    if (integer == nullptr) return type_error(value.key, value.node, "an integer");
    const std::int64_t number = integer->get();
    switch (value.option.kind) {
        case OptionKind::kCount:
            if (number < 1) return bad_option_value(value, "must be >= 1");
            break;
        case OptionKind::kNonNegative:
            if (number < 0) return bad_option_value(value, "must be >= 0");
            break;
        case OptionKind::kPercent:
            if (number < 0 || number > 100)
                return bad_option_value(value, "must be between 0 and 100");
            break;
        default:
            break;
    }
    return ok_status();
}

Status SpecParser::check_flag_option(const OptionUnderCheck& value) const {
    if (value.node.is_boolean()) return ok_status();
    const auto* integer = value.node.as_integer();
    if (integer != nullptr && (integer->get() == 0 || integer->get() == 1)) return ok_status();
    return type_error(value.key, value.node, "a boolean (or 0/1)");
}

Status SpecParser::check_bool_option(const OptionUnderCheck& value) const {
    if (value.node.is_boolean()) return ok_status();
    return type_error(value.key, value.node, "a boolean");
}

Status SpecParser::check_seconds_option(const OptionUnderCheck& value) const {
    Result<int> seconds = read_timeout(value.key, value.node);
    if (!seconds.ok()) return seconds.error();
    return ok_status();
}

Status SpecParser::check_job_file_option(const OptionUnderCheck& value) const {
    const auto* text = value.node.as_string();
    if (text == nullptr) return type_error(value.key, value.node, "a string");
    if (text->get().empty()) return bad_option_value(value, "must not be empty");
    const Status job_file = check_fio_job_file(text->get());
    if (!job_file.ok()) return bad_option_value(value, job_file.error().message);
    return ok_status();
}

// kServerVariables and kFioOptions: a table of names to scalar values.
Status SpecParser::check_option_table(const OptionUnderCheck& value) const {
    const bool server_variables = value.option.kind == OptionKind::kServerVariables;
    const auto* table = value.node.as_table();
    if (table == nullptr) {
        return type_error(value.key, value.node,
                          server_variables
                              ? "a table of server variables, e.g. { innodb_doublewrite = 0 }"
                              : "a table of fio options, e.g. { fsync = 1 }");
    }
    for (auto&& [entry_key, entry_value] : *table) {
        const std::string name(entry_key.str());
        const std::string where = in_quotes(value.key) + value.in_workload + ": ";
        DS_TRY(check_option_table_name(value, entry_key, where));
        if (!entry_value.is_string() && !entry_value.is_integer() && !entry_value.is_boolean()) {
            return error_at(entry_value.source(),
                            where + in_quotes(name) +
                                " must be a string, an integer or a boolean, not " +
                                std::string(type_name(entry_value)));
        }
        if (!server_variables) {
            DS_TRY(check_fio_refusal(entry_key, entry_value, where + "fio option "));
        }
    }
    return ok_status();
}

// A server variable's name as SHOW VARIABLES prints it; a fio option's name
// as it can be passed as --KEY=VALUE.
Status SpecParser::check_option_table_name(const OptionUnderCheck& value,
                                           const toml::key& entry_key,
                                           const std::string& where) const {
    const std::string name(entry_key.str());
    if (value.option.kind == OptionKind::kServerVariables) {
        const bool valid_name = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
            return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
        });
        if (!valid_name) {
            return error_at(entry_key.source(), where + "server variable name " + in_quotes(name) +
                                                    " must be lower-case letters, digits and _ "
                                                    "(as SHOW VARIABLES prints it)");
        }
        return ok_status();
    }
    if (name.empty() || name.front() == '-' || name.find_first_of("= \t\n") != std::string::npos) {
        return error_at(entry_key.source(), where + "fio option name " + in_quotes(name) +
                                                " must not be empty, start with '-' or contain "
                                                "'=' or whitespace");
    }
    return ok_status();
}

// The kind's options of one [[workload]] into workload.params, each checked
// where it is written.
Status SpecParser::read_workload_options(const toml::table& table, const WorkloadKind& kind,
                                         Workload& workload) const {
    const bool is_io = kind.option_rules == OptionRules::kIoEngine;
    const std::string ioengine = is_io ? io_engine_named(table) : "";
    workload.params = Json::object();
    for (auto&& [key, value] : table) {
        if (contains(kCommonWorkloadKeys, key.str())) continue;
        if (is_io) {
            DS_TRY(check_io_option(key, value, ioengine, workload));
        } else {
            DS_TRY(check_kind_option(kind, key, value, workload));
        }
        workload.params[std::string(key.str())] = option_value_as_json(value);
    }
    return ok_status();
}

Error SpecParser::unknown_option(const toml::key& key, std::string_view kind_name,
                                 const Workload& workload,
                                 const std::vector<std::string_view>& valid) const {
    return error_at(
        key.source(),
        unknown_choice(std::string(kind_name) + " option", key.str(),
                       "in workload " + in_quotes(workload.name), "valid options", valid) +
            " Every workload also takes: " + join(kCommonWorkloadKeys, ", ") + ".");
}

// An option of a kind declared in its rows (common/workload_kind.h); with
// OptionRules::kFioCommandLine, one that reaches fio's command line must
// also pass common/fio_options.h.
Status SpecParser::check_kind_option(const WorkloadKind& kind, const toml::key& key,
                                     const toml::node& value, const Workload& workload) const {
    const auto option =
        std::find_if(kind.options.begin(), kind.options.end(),
                     [&](const WorkloadOptionDef& def) { return def.name == key.str(); });
    if (option == kind.options.end()) {
        std::vector<std::string_view> names;
        for (const auto& def : kind.options) names.push_back(def.name);
        return unknown_option(key, kind.name, workload, names);
    }
    DS_TRY(check_workload_option(*option, value, workload.name));
    const bool is_fio_argument = kind.option_rules == OptionRules::kFioCommandLine &&
                                 option->kind != OptionKind::kFioOptions &&
                                 option->kind != OptionKind::kFioJobFile;
    if (is_fio_argument) {
        DS_TRY(check_fio_refusal(key, value,
                                 "workload " + in_quotes(workload.name) + ": fio option "));
    }
    return ok_status();
}

Status SpecParser::check_fio_refusal(const toml::key& key, const toml::node& value,
                                     const std::string& prefix) const {
    const auto text = fio_value_text(option_value_as_json(value));
    const auto refusal =
        fio_option_refusal(key.str(), text.value_or(""), FioOptionPlace::kCommandLine);
    if (refusal) return error_at(key.source(), prefix + in_quotes(key.str()) + " " + *refusal);
    return ok_status();
}

// An option of kind io: a name and value of common/io_options.h, checked as
// the agent checks them.
Status SpecParser::check_io_option(const toml::key& key, const toml::node& value,
                                   std::string_view ioengine, const Workload& workload) const {
    const std::string_view name = key.str();
    if (find_io_option(name) == nullptr)
        return unknown_option(key, workload.kind, workload, workload_io_option_names());
    auto option = io_option_for(name, ioengine, IoOptionSetter::kWorkload);
    if (!option) {
        return error_at(key.source(),
                        "workload " + in_quotes(workload.name) + ": " + option.error().message);
    }
    auto converted = read_io_option(**option, option_value_as_json(value));
    if (!converted) {
        return error_at(value.source(), in_quotes(name) + " in workload " +
                                            in_quotes(workload.name) + ": " +
                                            converted.error().message);
    }
    return ok_status();
}

// The rules between io options (common/io_options.h), at the workload.
Status SpecParser::check_io_combination(const toml::table& table, const Workload& workload) const {
    auto resolved = resolve_io_options(workload.params, IoOptionSetter::kWorkload);
    if (!resolved) {
        return error_at(table.source(),
                        "workload " + in_quotes(workload.name) + ": " + resolved.error().message);
    }
    return ok_status();
}

// The rules between fio options, at the workload (or its `options`).
Status SpecParser::check_fio_combination(const toml::table& table, const Workload& workload) const {
    const Json& params = workload.params;
    // A job file is the whole job: options beside it would be ignored.
    if (params.contains("job_file") && params.size() > 1) {
        return error_at(table.source(), "workload " + in_quotes(workload.name) +
                                            " has job_file and other fio options; a job file "
                                            "is the whole job: put them in the file");
    }
    // An option given both typed and in `options` would reach fio twice.
    if (params.contains("options")) {
        for (const auto& [option_name, value] : params["options"].items()) {
            if (params.contains(option_name) && option_name != "options") {
                return error_at(table.get("options")->source(),
                                "workload " + in_quotes(workload.name) + " sets " +
                                    in_quotes(option_name) +
                                    " both as an option and in 'options'; set it once");
            }
        }
    }
    // fio with time_based and no runtime never stops.
    if (params.contains("time_based") && is_truthy(params["time_based"]) &&
        !params.contains("runtime")) {
        return error_at(table.source(), "workload " + in_quotes(workload.name) +
                                            " sets time_based without runtime; fio would "
                                            "run forever");
    }
    return ok_status();
}

// The kind's rules between options (OptionRules).
Status SpecParser::check_option_combination(const WorkloadKind& kind, const toml::table& table,
                                            const Workload& workload) const {
    if (auto variants = check_variant_options(kind, workload.params); !variants.ok()) {
        return error_at(table.source(),
                        "workload " + in_quotes(workload.name) + ": " + variants.error().message);
    }
    switch (kind.option_rules) {
        case OptionRules::kFioCommandLine:
            return check_fio_combination(table, workload);
        case OptionRules::kIoEngine:
            return check_io_combination(table, workload);
        case OptionRules::kListed:
            break;
    }
    return ok_status();
}

Status SpecParser::parse_workloads(const toml::node& node) {
    const auto* array = node.as_array();
    if (array == nullptr || !array->is_array_of_tables()) {
        return error_at(node.source(),
                        "'workload' must be an array of tables: write each as [[workload]]");
    }
    if (array->empty()) {
        return error_at(node.source(), "no [[workload]]: a sweep needs at least one workload");
    }
    std::set<std::string> names;
    for (std::size_t index = 0; index < array->size(); ++index) {
        const toml::table& table = *array->get(index)->as_table();
        const std::string where = "[[workload]] #" + std::to_string(index + 1);
        const toml::node* kind_node = table.get("kind");
        if (kind_node == nullptr)
            return error_at(table.source(), where + " has no 'kind'; valid kinds: " +
                                                join(workload_kind_names(), ", "));
        if (!kind_node->is_string()) return type_error("kind", *kind_node, "a string");
        const std::string kind_name = kind_node->as_string()->get();
        const WorkloadKind* kind = find_workload_kind(kind_name);
        if (kind == nullptr) {
            return error_at(kind_node->source(),
                            unknown_choice("workload kind", kind_name, "", "valid kinds",
                                           workload_kind_names()));
        }

        Workload workload;
        workload.kind = kind_name;
        workload.name = kind_name + "-" + std::to_string(index + 1);
        if (const toml::node* name_node = table.get("name")) {
            Result<std::string> name = read_name("name", *name_node);
            if (!name.ok()) return name.error();
            workload.name = name.value();
        }
        if (!names.insert(workload.name).second) {
            return error_at(table.source(), "workload name " + in_quotes(workload.name) +
                                                " is used twice; names must be unique");
        }

        if (const toml::node* filesystems = table.get("filesystems")) {
            DS_ASSIGN_OR_RETURN(
                workload.filesystems,
                read_filesystems(*filesystems, "workload " + in_quotes(workload.name)));
        }
        if (const toml::node* timeout = table.get("timeout")) {
            Result<int> seconds = read_timeout("timeout", *timeout);
            if (!seconds.ok()) return seconds.error();
            workload.timeout_s = seconds.value();
        }

        if (const toml::node* dataset = table.get("dataset")) {
            DS_ASSIGN_OR_RETURN(workload.dataset, read_dataset(*dataset, *kind));
        }

        DS_TRY(read_workload_options(table, *kind, workload));
        DS_TRY(check_option_combination(*kind, table, workload));
        spec_.workloads.push_back(std::move(workload));
    }
    return ok_status();
}

Result<DatasetSource> SpecParser::read_dataset(const toml::node& node,
                                               const WorkloadKind& kind) const {
    const auto* text = node.as_string();
    if (text == nullptr) return type_error("dataset", node, "\"fresh\" or \"golden\"");
    if (text->get() != "fresh" && text->get() != "golden") {
        return error_at(node.source(),
                        "dataset " + in_quotes(text->get()) + " is not \"fresh\" or \"golden\"");
    }
    if (text->get() == "fresh") return DatasetSource::kFresh;
    if (kind.preparation.step.empty()) {
        std::vector<std::string_view> preparing;
        for (const WorkloadKind& other : workload_kinds()) {
            if (!other.preparation.step.empty()) preparing.push_back(other.name);
        }
        return error_at(node.source(), "dataset \"golden\": workload kind " + in_quotes(kind.name) +
                                           " has no preparation step to do once; kinds that "
                                           "have one: " +
                                           join(preparing, ", "));
    }
    if (const std::string problem = storage_without_clone(); !problem.empty()) {
        return error_at(node.source(), "dataset \"golden\": " + problem);
    }
    return DatasetSource::kGolden;
}

std::vector<std::string> SpecParser::matrix_storages() const {
    const auto listed = spec_.matrix.find("storage");
    return listed == spec_.matrix.end() ? std::vector<std::string>{"file"} : listed->second;
}

std::string SpecParser::storage_without_clone() const {
    for (const std::string& storage : matrix_storages()) {
        const std::string kind = storage.substr(0, storage.find(':'));
        const StorageKindDef* definition = find_storage_kind(kind);
        if (definition != nullptr && definition->golden_clone.empty()) {
            std::vector<std::string_view> cloning;
            for (const StorageKindDef& other : storage_kinds()) {
                if (!other.golden_clone.empty()) cloning.push_back(other.kind);
            }
            return "storage " + in_quotes(storage) +
                   " cannot clone a golden volume (storages that can: " + join(cloning, ", ") + ")";
        }
    }
    return "";
}

}  // namespace ds
