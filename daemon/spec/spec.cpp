// Sweep specs: TOML -> SweepSpec (grammar in docs/spec.md), and the expansion
// of a spec into configurations and an execution order.
#include "daemon/spec/spec.h"

#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <functional>
#include <limits>
#include <optional>
#include <set>

#include "common/fio_options.h"
#include "common/io_options.h"
#include "common/json_fields.h"
#include "common/sha256.h"
#include "common/text.h"
#include "common/units.h"
#include "common/workload_kind.h"
#include "daemon/backends/registry.h"
#include "daemon/spec/unchecked_levels.h"

namespace ds {
namespace {

// A sweep may schedule at most this many runs (and its matrix may have at
// most this many combinations): a guard against a typo exploding the matrix.
constexpr std::uint64_t kMaxRuns = 10000;

// The keys of a spec's top level, as docs/spec.md's "Top-level keys" table
// lists them (a test holds the two together).
constexpr std::array<std::string_view, 17> kTopLevelKeys = {"name",
                                                            "repetitions",
                                                            "seed",
                                                            "boot_timeout",
                                                            "run_timeout",
                                                            "hypervisor",
                                                            "guest",
                                                            "matrix",
                                                            "filesystems",
                                                            "tunings",
                                                            "workload",
                                                            "host_baseline",
                                                            "baseline",
                                                            "practical_difference",
                                                            "min_runs_for_verdict",
                                                            "durability",
                                                            kUncheckedLevelsKey};

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

// The ledger a `durability` table adds when the spec has none
// (docs/durability.md): long enough under TCG for a few hundred commits,
// short enough that its log and crash images stay small.
constexpr std::string_view kDurabilityLedgerName = "durability-ledger";
constexpr int kDurabilityLedgerSeconds = 20;
constexpr int kDurabilityLedgerRecords = 100000;
// durability.ledger_seconds: long enough for several host writeback windows
// (35 s by default), short enough for its log to stay a few GiB.
constexpr int kMaxLedgerSeconds = 3600;

// The matrix axis of the workloads' tunings: not a StorageConfig axis (a
// tuning is the workload's, not the disk's), so not in common/settings.h's
// axis table.
constexpr std::string_view kTuningAxis = "tuning";

// ---------------------------------------------------------------------------
// Small text helpers

std::string in_quotes(std::string_view text) {
    return "'" + std::string(text) + "'";
}

bool is_name(std::string_view text) {
    if (text.empty() || text.size() > 64) return false;
    return std::all_of(text.begin(), text.end(), [](char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               c == '.' || c == '_' || c == '-';
    });
}

bool contains(const std::vector<std::string_view>& words, std::string_view word) {
    return std::find(words.begin(), words.end(), word) != words.end();
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> previous(b.size() + 1), current(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        current[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
        }
        std::swap(previous, current);
    }
    return previous[b.size()];
}

// " Did you mean 'x'?" for the closest candidate within two edits, else "".
std::string suggestion(std::string_view word, const std::vector<std::string_view>& candidates) {
    std::string_view best;
    std::size_t best_distance = 3;
    for (std::string_view candidate : candidates) {
        const std::size_t distance = edit_distance(word, candidate);
        if (distance < best_distance && distance < std::max<std::size_t>(word.size(), 2)) {
            best = candidate;
            best_distance = distance;
        }
    }
    return best.empty() ? "" : " Did you mean " + in_quotes(best) + "?";
}

std::string unknown_choice(std::string_view what, std::string_view word, std::string_view where,
                           std::string_view valid_label,
                           const std::vector<std::string_view>& valid) {
    std::string message = "unknown " + std::string(what) + " " + in_quotes(word);
    if (!where.empty()) message += " " + std::string(where);
    message += "; " + std::string(valid_label) + ": " + join(valid, ", ") + ".";
    return message + suggestion(word, valid);
}

// ---------------------------------------------------------------------------
// Durations (sizes: common/units.h)

// "N" or "N" followed by one of `units` (name, multiplier). No fractions.
struct DurationUnit {
    std::string_view name;
    std::uint64_t multiplier;
};

bool parse_duration_text(std::string_view text, const std::vector<DurationUnit>& units,
                         std::uint64_t& value) {
    std::size_t digits = 0;
    std::uint64_t number = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
        if (number > 1'000'000'000'000ull) return false;
        number = number * 10 + static_cast<std::uint64_t>(text[digits] - '0');
        ++digits;
    }
    if (digits == 0) return false;
    const std::string_view suffix = text.substr(digits);
    if (suffix.empty()) {
        value = number;
        return true;
    }
    for (const auto& unit : units) {
        if (unit.name == suffix) {
            value = number * unit.multiplier;
            return true;
        }
    }
    return false;
}

// Spec timeouts: whole seconds, plain or with s, m, h. (fio's own times are
// read by parse_fio_time_us, common/units.h.)
const std::vector<DurationUnit> kTimeoutUnits = {{"s", 1}, {"m", 60}, {"h", 3600}};

// ---------------------------------------------------------------------------
// Workload kinds: their options are rows of common/workload_kind.h.

// Keys every [[workload]] may have besides its kind's options.
const std::vector<std::string_view> kCommonWorkloadKeys = {"kind", "name", "filesystems", "timeout",
                                                           "dataset"};

// ---------------------------------------------------------------------------
// Axis values -> settings

using ConfigSetter = std::function<void(StorageConfig&)>;

Error spec_error(std::string message) {
    return make_error(errc::kInvalidSpec, std::move(message));
}

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

// Checks one value of one axis and returns what it sets. The axis table says
// which axes exist; this says which StorageConfig field each one sets.
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
    return make_error(errc::kInternal,
                      "axis " + in_quotes(name) + " is declared but has no setter in spec.cpp");
}

// The axes [matrix] takes: the settings' table, then the tuning axis.
std::vector<std::string_view> axis_names() {
    std::vector<std::string_view> names;
    for (const auto& axis : axes()) names.push_back(axis.name);
    names.push_back(kTuningAxis);
    return names;
}

// The option of `kind` that takes MariaDB server variables (the one a
// tuning adds to), or nullptr when the kind has none.
const WorkloadOptionDef* server_variables_option_of(const WorkloadKind& kind) {
    const auto option = std::find_if(
        kind.options.begin(), kind.options.end(),
        [](const WorkloadOptionDef& def) { return def.kind == OptionKind::kServerVariables; });
    return option == kind.options.end() ? nullptr : &*option;
}

// ---------------------------------------------------------------------------
// TOML -> SweepSpec

std::string_view type_name(const toml::node& node) {
    switch (node.type()) {
        case toml::node_type::table:
            return "a table";
        case toml::node_type::array:
            return "an array";
        case toml::node_type::string:
            return "a string";
        case toml::node_type::integer:
            return "an integer";
        case toml::node_type::floating_point:
            return "a float";
        case toml::node_type::boolean:
            return "a boolean";
        case toml::node_type::date:
            return "a date";
        case toml::node_type::time:
            return "a time";
        case toml::node_type::date_time:
            return "a date-time";
        default:
            return "nothing";
    }
}

// A workload option as stored in Workload.params: tables as objects, strings,
// integers and booleans as themselves.
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

// The ioengine a [[workload]] of kind io names, or the io table's default
// (an ioengine that is not a string is reported at its key).
std::string io_engine_named(const toml::table& table) {
    if (const auto* engine = table.get_as<std::string>("ioengine")) return engine->get();
    return std::string(find_io_option("ioengine")->default_value);
}

// One [[workload]] option being checked: its row, its value, and how
// messages name it.
struct OptionUnderCheck {
    const WorkloadOptionDef& option;
    const toml::node& node;
    std::string key;          // the option's name
    std::string in_workload;  // " in workload \"NAME\""
};

class SpecParser {
  public:
    explicit SpecParser(std::string_view source_name) : source_(source_name) {}

    Result<SweepSpec> parse(const toml::table& root);

  private:
    // "SOURCE:LINE:COLUMN: message" (just "SOURCE: message" without a position).
    Error error_at(const toml::source_region& region, std::string message) const {
        std::string where = source_;
        if (region.begin.line > 0) {
            where +=
                ":" + std::to_string(region.begin.line) + ":" + std::to_string(region.begin.column);
        }
        return spec_error(where + ": " + message);
    }
    Error error_without_position(std::string message) const {
        return spec_error(source_ + ": " + message);
    }
    Error type_error(std::string_view key, const toml::node& node,
                     std::string_view expected) const {
        return error_at(node.source(), in_quotes(key) + " must be " + std::string(expected) +
                                           ", not " + std::string(type_name(node)));
    }

    Status check_keys(const toml::table& table, const std::vector<std::string_view>& known,
                      std::string_view what, std::string_view where) const;
    Result<std::string> read_name(std::string_view key, const toml::node& node) const;
    Result<int> read_timeout(std::string_view key, const toml::node& node) const;
    // `dataset = "fresh" | "golden"` of a workload of `kind`: golden only
    // for a kind with a preparation step, on storages that clone.
    Result<DatasetSource> read_dataset(const toml::node& node, const WorkloadKind& kind) const;
    // Why a storage of the matrix cannot give a golden dataset, "" if all can.
    std::string storage_without_clone() const;
    // The matrix's storage values as written ("file" when it lists none).
    std::vector<std::string> matrix_storages() const;
    // `unchecked_levels = "NAME"`, one of unchecked_level_policies().
    Status parse_unchecked_levels(const toml::node& node);
    // `durability = { crash_points, volatile_cache, workload }`, after the
    // workloads: marks the ledger workloads, adding one when there is none.
    Status parse_durability(const toml::node& node);
    Result<DurabilityOptions> read_durability_options(const toml::table& table) const;
    // durability.ledger_seconds, when set: 1..kMaxLedgerSeconds.
    Result<std::optional<int>> read_ledger_seconds(const toml::table& table) const;
    Status set_ledger_seconds(Workload& ledger, std::optional<int> seconds,
                              const toml::table& table) const;
    // Why the spec's hypervisor or a storage of its matrix cannot log a
    // run's writes, "" if they all can.
    std::string durability_unsupported() const;
    // The ledger a durability table adds: the database variant with the
    // server variables of the first workload that takes some, else the file
    // variant.
    Workload durability_ledger() const;
    Status parse_hypervisor(const toml::node& node);
    // `[guest] suite = "trixie"`, after [hypervisor]: the guest image's
    // Debian release (common/guest_suite.h).
    Status parse_guest(const toml::node& node);
    Status parse_hosts(const toml::node& node);
    Status parse_filesystems(const toml::node& node);
    Status parse_matrix(const toml::node& node);
    Status read_tuning_axis(const toml::node& node);
    Status parse_tunings(const toml::node* node);
    Status parse_tuning(const toml::key& key, const toml::node& definition_node);
    Status read_baseline_tuning(const toml::node& value);
    Result<std::string> axis_value_text(const AxisDef& axis, const toml::node& element) const;
    Status parse_repetitions(const toml::node& node);
    Result<double> read_percentage(std::string_view key, const toml::node& node) const;
    Status parse_verdict_rules(const toml::table& root);
    Status parse_baseline(const toml::node& node);
    Status parse_workloads(const toml::node& node);
    Status check_workload_option(const WorkloadOptionDef& option, const toml::node& node,
                                 std::string_view workload_name) const;
    Error bad_option_value(const OptionUnderCheck& value, std::string_view detail) const;
    Status check_enum_option(const OptionUnderCheck& value) const;
    Status check_size_option(const OptionUnderCheck& value) const;
    Status check_duration_option(const OptionUnderCheck& value) const;
    Status check_integer_option(const OptionUnderCheck& value) const;
    Status check_flag_option(const OptionUnderCheck& value) const;
    Status check_bool_option(const OptionUnderCheck& value) const;
    Status check_seconds_option(const OptionUnderCheck& value) const;
    Status check_job_file_option(const OptionUnderCheck& value) const;
    Status check_option_table(const OptionUnderCheck& value) const;
    Status check_option_table_name(const OptionUnderCheck& value, const toml::key& entry_key,
                                   const std::string& where) const;
    Status check_fio_refusal(const toml::key& key, const toml::node& value,
                             const std::string& prefix) const;
    Status check_io_option(const toml::key& key, const toml::node& value, std::string_view ioengine,
                           const Workload& workload) const;
    Status check_io_combination(const toml::table& table, const Workload& workload) const;
    Status check_fio_combination(const toml::table& table, const Workload& workload) const;
    Status check_option_combination(const WorkloadKind& kind, const toml::table& table,
                                    const Workload& workload) const;
    Status read_workload_options(const toml::table& table, const WorkloadKind& kind,
                                 Workload& workload) const;
    Status check_kind_option(const WorkloadKind& kind, const toml::key& key,
                             const toml::node& value, const Workload& workload) const;
    Error unknown_option(const toml::key& key, std::string_view kind_name, const Workload& workload,
                         const std::vector<std::string_view>& valid) const;
    Result<std::vector<std::string>> read_filesystems(const toml::node& node,
                                                      const std::string& owner) const;

    std::string source_;
    SweepSpec spec_;
    // Where each value of matrix.tuning is written, for errors found once
    // the [tunings.NAME] tables are read.
    std::vector<toml::source_region> tuning_value_regions_;
};

Status SpecParser::check_keys(const toml::table& table, const std::vector<std::string_view>& known,
                              std::string_view what, std::string_view where) const {
    for (auto&& [key, node] : table) {
        if (!contains(known, key.str())) {
            return error_at(key.source(),
                            unknown_choice(what, key.str(), where, "valid keys", known));
        }
    }
    return ok_status();
}

Result<std::string> SpecParser::read_name(std::string_view key, const toml::node& node) const {
    const auto* text = node.as_string();
    if (text == nullptr) return type_error(key, node, "a string");
    if (!is_name(text->get())) {
        return error_at(node.source(), in_quotes(key) + " " + in_quotes(text->get()) +
                                           " must be 1 to 64 of A-Z a-z 0-9 . _ -");
    }
    return text->get();
}

Result<int> SpecParser::read_timeout(std::string_view key, const toml::node& node) const {
    std::uint64_t seconds = 0;
    if (const auto* integer = node.as_integer()) {
        if (integer->get() <= 0)
            return error_at(node.source(), in_quotes(key) + " must be a positive duration");
        seconds = static_cast<std::uint64_t>(integer->get());
    } else if (const auto* text = node.as_string()) {
        if (!parse_duration_text(text->get(), kTimeoutUnits, seconds) || seconds == 0) {
            return error_at(node.source(), in_quotes(key) + " " + in_quotes(text->get()) +
                                               " is not a duration; write e.g. \"90s\", "
                                               "\"10m\", \"1h\" or whole seconds");
        }
    } else {
        return type_error(key, node, "a duration string like \"10m\" or an integer of seconds");
    }
    if (seconds > static_cast<std::uint64_t>(std::numeric_limits<int>::max()))
        return error_at(node.source(), in_quotes(key) + " is too long");
    return static_cast<int>(seconds);
}

Result<SweepSpec> SpecParser::parse(const toml::table& root) {
    DS_TRY(
        check_keys(root, {kTopLevelKeys.begin(), kTopLevelKeys.end()}, "key", "at the top level"));

    const toml::node* name = root.get("name");
    if (name == nullptr)
        return error_without_position("missing required key 'name' (the sweep's name)");
    Result<std::string> sweep_name = read_name("name", *name);
    if (!sweep_name.ok()) return sweep_name.error();
    spec_.name = sweep_name.value();

    if (const toml::node* node = root.get("repetitions")) DS_TRY(parse_repetitions(*node));
    DS_TRY(parse_verdict_rules(root));
    if (const toml::node* node = root.get("seed")) {
        const auto* integer = node->as_integer();
        if (integer == nullptr) return type_error("seed", *node, "an integer");
        if (integer->get() < 0) return error_at(node->source(), "'seed' must be >= 0");
        spec_.seed = static_cast<std::uint64_t>(integer->get());
    }
    if (const toml::node* node = root.get("boot_timeout")) {
        Result<int> seconds = read_timeout("boot_timeout", *node);
        if (!seconds.ok()) return seconds.error();
        spec_.boot_timeout_s = seconds.value();
    }
    if (const toml::node* node = root.get("run_timeout")) {
        Result<int> seconds = read_timeout("run_timeout", *node);
        if (!seconds.ok()) return seconds.error();
        spec_.run_timeout_s = seconds.value();
    }
    if (const toml::node* node = root.get("host_baseline")) {
        const auto* flag = node->as_boolean();
        if (flag == nullptr) return type_error("host_baseline", *node, "a boolean");
        spec_.host_baseline = flag->get();
    }
    if (const toml::node* node = root.get(kUncheckedLevelsKey))
        DS_TRY(parse_unchecked_levels(*node));
    if (const toml::node* node = root.get("hypervisor")) DS_TRY(parse_hypervisor(*node));
    if (const toml::node* node = root.get("guest")) DS_TRY(parse_guest(*node));
    // Named filesystems first: matrix.filesystem values may refer to them.
    if (const toml::node* node = root.get("filesystems")) DS_TRY(parse_filesystems(*node));
    if (const toml::node* node = root.get("matrix")) DS_TRY(parse_matrix(*node));
    // After the matrix: a tuning's filesystems are values listed there.
    DS_TRY(parse_tunings(root.get("tunings")));
    // After the matrix: the baseline names values listed there.
    if (const toml::node* node = root.get("baseline")) DS_TRY(parse_baseline(*node));

    const toml::node* workloads = root.get("workload");
    if (workloads == nullptr) {
        return error_without_position(
            "no [[workload]]: a sweep needs at least one workload to run");
    }
    DS_TRY(parse_workloads(*workloads));
    if (const toml::node* node = root.get("durability")) DS_TRY(parse_durability(*node));
    return std::move(spec_);
}

Status SpecParser::parse_unchecked_levels(const toml::node& node) {
    const auto* text = node.as_string();
    std::vector<std::string> names;
    for (const UncheckedLevelPolicyDef& def : unchecked_level_policies())
        names.push_back(in_quotes(def.name));
    const std::string choices = join(names, ", ");
    if (text == nullptr) return type_error(kUncheckedLevelsKey, node, "one of " + choices);
    const auto policy = find_unchecked_level_policy(text->get());
    if (!policy) {
        return error_at(node.source(), in_quotes(kUncheckedLevelsKey) + " " +
                                           in_quotes(text->get()) + " is not one of " + choices);
    }
    spec_.unchecked_levels = *policy;
    return ok_status();
}

Status SpecParser::parse_durability(const toml::node& node) {
    const auto* table = node.as_table();
    if (table == nullptr) {
        return type_error("durability", node, "a table (durability = { crash_points = 50 })");
    }
    DS_TRY(check_keys(
        *table, {"crash_points", "volatile_cache", "keep_files", "workload", "ledger_seconds"},
        "key", "in durability"));
    DS_ASSIGN_OR_RETURN(DurabilityOptions options, read_durability_options(*table));
    DS_ASSIGN_OR_RETURN(const std::optional<int> seconds, read_ledger_seconds(*table));
    if (const std::string problem = durability_unsupported(); !problem.empty()) {
        return error_at(node.source(), "durability: " + problem);
    }
    std::vector<Workload>& workloads = spec_.workloads;
    if (const toml::node* named = table->get("workload")) {
        DS_ASSIGN_OR_RETURN(std::string name, read_name("workload", *named));
        const auto found = std::find_if(workloads.begin(), workloads.end(),
                                        [&](const Workload& w) { return w.name == name; });
        if (found == workloads.end() || found->kind != "ledger") {
            return error_at(named->source(), "durability.workload " + in_quotes(name) +
                                                 " must name a [[workload]] of kind \"ledger\"");
        }
        found->durability = options;
        return set_ledger_seconds(*found, seconds, *table);
    }
    bool marked = false;
    for (Workload& workload : workloads) {
        if (workload.kind != "ledger") continue;
        workload.durability = options;
        DS_TRY(set_ledger_seconds(workload, seconds, *table));
        marked = true;
    }
    if (!marked) {
        workloads.push_back(durability_ledger());
        workloads.back().durability = options;
        if (seconds) workloads.back().params.erase("time");  // its default gives way
        DS_TRY(set_ledger_seconds(workloads.back(), seconds, *table));
    }
    return ok_status();
}

Result<std::optional<int>> SpecParser::read_ledger_seconds(const toml::table& table) const {
    const toml::node* node = table.get("ledger_seconds");
    if (node == nullptr) return std::optional<int>{};
    const auto* integer = node->as_integer();
    if (integer == nullptr) return type_error("ledger_seconds", *node, "an integer of seconds");
    if (integer->get() < 1 || integer->get() > kMaxLedgerSeconds) {
        return error_at(node->source(),
                        "'ledger_seconds' must be 1 to " + std::to_string(kMaxLedgerSeconds));
    }
    return std::optional<int>(static_cast<int>(integer->get()));
}

// The marked ledger runs for `seconds` (its own `time` must agree), with
// records enough not to end first.
Status SpecParser::set_ledger_seconds(Workload& ledger, std::optional<int> seconds,
                                      const toml::table& table) const {
    if (!seconds) return ok_status();
    const Json& time = json_read::field(ledger.params, "time");
    if (!time.is_null() && !(time.is_number_integer() && time.get<int>() == *seconds)) {
        return error_at(table.get("ledger_seconds")->source(),
                        "durability.ledger_seconds = " + std::to_string(*seconds) +
                            " and workload " + in_quotes(ledger.name) + "'s time = " + time.dump() +
                            " disagree: set one of them");
    }
    ledger.params["time"] = *seconds;
    if (!ledger.params.contains("records")) ledger.params["records"] = kDurabilityLedgerRecords;
    return ok_status();
}

Result<DurabilityOptions> SpecParser::read_durability_options(const toml::table& table) const {
    DurabilityOptions options;
    if (const toml::node* points = table.get("crash_points")) {
        const auto* integer = points->as_integer();
        if (integer == nullptr) return type_error("crash_points", *points, "an integer");
        if (integer->get() < 1 || integer->get() > kMaxCrashPoints) {
            return error_at(points->source(),
                            "'crash_points' must be 1 to " + std::to_string(kMaxCrashPoints));
        }
        options.crash_points = static_cast<int>(integer->get());
    }
    if (const toml::node* rule = table.get("volatile_cache")) {
        const auto* flag = rule->as_boolean();
        if (flag == nullptr) return type_error("volatile_cache", *rule, "true or false");
        options.volatile_cache = flag->get();
    }
    if (const toml::node* keep = table.get("keep_files")) {
        const auto* flag = keep->as_boolean();
        if (flag == nullptr) return type_error("keep_files", *keep, "true or false");
        options.keep_files = flag->get();
    }
    return options;
}

std::string SpecParser::durability_unsupported() const {
    const HypervisorKindDef* hypervisor = find_hypervisor_kind(spec_.hypervisor);
    if (hypervisor != nullptr && !hypervisor->no_write_log.empty()) {
        return std::string(hypervisor->no_write_log);
    }
    for (const std::string& storage : matrix_storages()) {
        const StorageKindDef* definition = find_storage_kind(storage.substr(0, storage.find(':')));
        if (definition == nullptr || !definition->pre_run_copy.empty()) continue;
        std::vector<std::string_view> copying;
        for (const StorageKindDef& other : storage_kinds()) {
            if (!other.pre_run_copy.empty()) copying.push_back(other.kind);
        }
        return "storage " + in_quotes(storage) +
               " cannot keep a copy of the volume as it was before the run, which every crash "
               "image starts from (storages that can: " +
               join(copying, ", ") + ")";
    }
    return "";
}

Workload SpecParser::durability_ledger() const {
    Workload ledger;
    ledger.name = std::string(kDurabilityLedgerName);
    ledger.kind = "ledger";
    ledger.params = {{"variant", "file"},
                     {"records", kDurabilityLedgerRecords},
                     {"time", kDurabilityLedgerSeconds}};
    for (const Workload& workload : spec_.workloads) {
        const WorkloadKind* kind = find_workload_kind(workload.kind);
        const bool takes_server =
            kind != nullptr && std::any_of(kind->options.begin(), kind->options.end(),
                                           [](const WorkloadOptionDef& option) {
                                               return option.kind == OptionKind::kServerVariables;
                                           });
        if (!takes_server) continue;
        ledger.params["variant"] = "database";
        if (workload.params.contains("server")) ledger.params["server"] = workload.params["server"];
        break;
    }
    return ledger;
}

Status SpecParser::parse_hypervisor(const toml::node& node) {
    const auto* table = node.as_table();
    if (table == nullptr) return type_error("hypervisor", node, "a table ([hypervisor])");
    DS_TRY(check_keys(*table, {"backend", "hosts", "identical_hosts"}, "key", "in [hypervisor]"));
    if (const toml::node* backend = table->get("backend")) {
        const auto* text = backend->as_string();
        if (text == nullptr) return type_error("backend", *backend, "a string");
        if (!contains(spec_hypervisor_names(), text->get())) {
            return error_at(backend->source(),
                            unknown_choice("hypervisor backend", text->get(), "", "valid backends",
                                           spec_hypervisor_names()));
        }
        spec_.hypervisor = text->get();
    }
    if (const toml::node* hosts = table->get("hosts")) DS_TRY(parse_hosts(*hosts));
    if (const toml::node* identical = table->get("identical_hosts")) {
        const auto* flag = identical->as_boolean();
        if (flag == nullptr) return type_error("identical_hosts", *identical, "true or false");
        spec_.identical_hosts = flag->get();
    }
    return ok_status();
}

Status SpecParser::parse_guest(const toml::node& node) {
    const auto* table = node.as_table();
    if (table == nullptr) return type_error("guest", node, "a table ([guest])");
    DS_TRY(check_keys(*table, {"suite"}, "key", "in [guest]"));
    const toml::node* suite = table->get("suite");
    if (suite == nullptr) return ok_status();
    const auto* text = suite->as_string();
    if (text == nullptr) return type_error("suite", *suite, "a string");
    if (find_guest_suite(text->get()) == nullptr) {
        return error_at(suite->source(), unknown_choice("guest suite", text->get(), "", "suites",
                                                        guest_suite_names()));
    }
    // A backend that boots its own template runs whatever guest that holds.
    const HypervisorKindDef* kind = find_hypervisor_kind(spec_.hypervisor);
    if (kind != nullptr && !kind->boots_project_image) {
        return error_at(suite->source(),
                        "[guest] suite: the " + spec_.hypervisor +
                            " backend boots its template's guest, not the project's image; "
                            "build the template from the suite's image instead "
                            "(scripts/pve-make-template.sh --from-image IMAGE_DIR/SUITE)");
    }
    spec_.guest_suite = text->get();
    return ok_status();
}

// `hosts = ["local", "node2"]`: the daemon's host names the runs may go to.
Status SpecParser::parse_hosts(const toml::node& node) {
    const auto* array = node.as_array();
    if (array == nullptr) return type_error("hosts", node, "an array of host names");
    if (array->empty()) {
        return error_at(node.source(),
                        "'hosts' is empty; leave it out to let the daemon place runs");
    }
    for (const toml::node& element : *array) {
        const auto* text = element.as_string();
        if (text == nullptr || text->get().empty())
            return type_error("hosts", element, "a host name");
        if (contains(std::vector<std::string_view>(spec_.hosts.begin(), spec_.hosts.end()),
                     text->get())) {
            return error_at(element.source(),
                            "host " + in_quotes(text->get()) + " is listed twice");
        }
        spec_.hosts.push_back(text->get());
    }
    return ok_status();
}

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

// `repetitions = N`, or `repetitions = { min = N, max = M, ci = "P%" }`
// (adaptive: see SweepSpec::ci_target).
Status SpecParser::parse_repetitions(const toml::node& node) {
    auto read_count = [&](std::string_view key, const toml::node& value) -> Result<int> {
        const auto* integer = value.as_integer();
        if (integer == nullptr) return type_error(key, value, "an integer");
        if (integer->get() < 1 || static_cast<std::uint64_t>(integer->get()) > kMaxRuns) {
            return error_at(value.source(),
                            in_quotes(key) + " must be between 1 and " + std::to_string(kMaxRuns));
        }
        return static_cast<int>(integer->get());
    };
    if (node.is_integer()) {
        Result<int> count = read_count("repetitions", node);
        if (!count.ok()) return count.error();
        spec_.repetitions = spec_.max_repetitions = count.value();
        return ok_status();
    }
    const auto* table = node.as_table();
    if (table == nullptr) {
        return type_error("repetitions", node,
                          "an integer or a table like { min = 3, max = 10, ci = \"3%\" }");
    }
    DS_TRY(check_keys(*table, {"min", "max", "ci"}, "key", "in 'repetitions'"));
    const toml::node* min = table->get("min");
    const toml::node* max = table->get("max");
    const toml::node* ci = table->get("ci");
    if (min == nullptr || max == nullptr || ci == nullptr) {
        return error_at(node.source(),
                        "'repetitions' as a table needs min, max and ci, e.g. "
                        "{ min = 3, max = 10, ci = \"3%\" }");
    }
    Result<int> min_count = read_count("repetitions.min", *min);
    if (!min_count.ok()) return min_count.error();
    Result<int> max_count = read_count("repetitions.max", *max);
    if (!max_count.ok()) return max_count.error();
    if (max_count.value() < min_count.value()) {
        return error_at(max->source(), "'repetitions.max' (" + std::to_string(max_count.value()) +
                                           ") is below 'repetitions.min' (" +
                                           std::to_string(min_count.value()) + ")");
    }
    Result<double> target = read_percentage("repetitions.ci", *ci);
    if (!target.ok()) return target.error();
    if (target.value() <= 0) return error_at(ci->source(), "'repetitions.ci' must be above 0%");
    spec_.repetitions = min_count.value();
    spec_.max_repetitions = max_count.value();
    spec_.ci_target = target.value();
    return ok_status();
}

// "P%" with 0 <= P < 100 (a decimal fraction allowed: "2.5%"), as a fraction.
Result<double> SpecParser::read_percentage(std::string_view key, const toml::node& node) const {
    const auto* text = node.as_string();
    if (text == nullptr) return type_error(key, node, "a percentage string like \"2%\"");
    const std::string& value = text->get();
    const std::string number = value.ends_with('%') ? value.substr(0, value.size() - 1) : "";
    const bool well_formed = !number.empty() &&
                             number.find_first_not_of("0123456789.") == std::string::npos &&
                             std::count(number.begin(), number.end(), '.') <= 1 && number != ".";
    const double percent = well_formed ? std::strtod(number.c_str(), nullptr) : -1;
    if (!well_formed || percent >= 100) {
        return error_at(node.source(), in_quotes(key) + " must be a percentage from \"0%\" to " +
                                           "below \"100%\", like \"2%\", not " + in_quotes(value));
    }
    return percent / 100;
}

// `practical_difference` and `min_runs_for_verdict` (ds::VerdictRules).
Status SpecParser::parse_verdict_rules(const toml::table& root) {
    if (const toml::node* node = root.get("practical_difference")) {
        Result<double> fraction = read_percentage("practical_difference", *node);
        if (!fraction.ok()) return fraction.error();
        spec_.verdict_rules.practical_difference = fraction.value();
    }
    if (const toml::node* node = root.get("min_runs_for_verdict")) {
        const auto* integer = node->as_integer();
        if (integer == nullptr) return type_error("min_runs_for_verdict", *node, "an integer");
        // Below 2 a side has no spread at all; above the run limit it could never be met.
        if (integer->get() < 2 || integer->get() > static_cast<std::int64_t>(kMaxRuns))
            return error_at(node->source(), "'min_runs_for_verdict' must be from 2 to " +
                                                std::to_string(kMaxRuns) + ", not " +
                                                std::to_string(integer->get()));
        spec_.verdict_rules.min_runs = static_cast<int>(integer->get());
    }
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

bool is_truthy(const Json& value) {
    return (value.is_boolean() && value.get<bool>()) ||
           (value.is_number_integer() && value.get<std::int64_t>() != 0);
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

// ---------------------------------------------------------------------------
// Run order

// splitmix64 (Steele, Lea, Flood 2014; constants as in Vigna's public-domain
// reference): a tiny generator whose output depends only on its 64-bit state,
// so the run order for a seed is the same on every platform and compiler.
class SplitMix64 {
  public:
    explicit SplitMix64(std::uint64_t seed) : state_(seed) {}

    std::uint64_t next() {
        state_ += 0x9e3779b97f4a7c15ull;
        std::uint64_t z = state_;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }

    // Uniform in [0, bound), bound > 0, without modulo bias: outputs below
    // 2^64 mod bound are rejected so every residue is equally likely.
    std::uint64_t below(std::uint64_t bound) {
        const std::uint64_t rejection_threshold = (0 - bound) % bound;
        std::uint64_t draw = next();
        while (draw < rejection_threshold) draw = next();
        return draw % bound;
    }

  private:
    std::uint64_t state_;
};

// The spec's seed, or (seed 0) the first 8 bytes of SHA-256(name), big-endian.
std::uint64_t shuffle_seed(const SweepSpec& spec) {
    if (spec.seed != 0) return spec.seed;
    const auto digest = sha256_digest(spec.name);
    std::uint64_t seed = 0;
    for (int i = 0; i < 8; ++i) seed = (seed << 8) | digest[i];
    return seed;
}

// Whether `config` has the value `value` of `axis`: setting it changes
// nothing.
bool has_axis_value(const SweepSpec& spec, const StorageConfig& config, const AxisDef& axis,
                    std::string_view value) {
    Result<ConfigSetter> setter = axis_setter(spec, axis, value);
    if (!setter.ok()) return false;
    StorageConfig changed = config;
    setter.value()(changed);
    return canonical_json(changed) == canonical_json(config);
}

// The one configuration with every value of spec.baseline, or an error
// naming the key, its line and how many matched.
Result<int> find_baseline_config(const SweepSpec& spec, const std::vector<StorageConfig>& configs) {
    std::vector<int> matching;
    for (std::size_t c = 0; c < configs.size(); ++c) {
        const bool all =
            std::all_of(spec.baseline.begin(), spec.baseline.end(), [&](const auto& kv) {
                const AxisDef* axis = find_axis(kv.first);
                return axis != nullptr && has_axis_value(spec, configs[c], *axis, kv.second);
            });
        if (all) matching.push_back(static_cast<int>(c));
    }
    if (matching.size() == 1) return matching.front();
    std::string wanted;
    for (const auto& [axis, value] : spec.baseline)
        wanted += (wanted.empty() ? "" : ", ") + axis + " = \"" + value + "\"";
    const std::string where = spec.baseline_where.empty() ? "" : spec.baseline_where + ": ";
    if (matching.empty()) {
        return spec_error(where + "baseline = { " + wanted +
                          " } selects no configuration (that combination was dropped as "
                          "impossible)");
    }
    return spec_error(where + "baseline = { " + wanted + " } selects " +
                      std::to_string(matching.size()) +
                      " configurations; name a value of each varying axis so that it selects "
                      "exactly one");
}

}  // namespace

// ---------------------------------------------------------------------------
// Public API

Result<SweepSpec> parse_sweep_spec(std::string_view toml_text, std::string_view source_name) {
    toml::table root;
    try {
        root = toml::parse(toml_text, source_name);
    } catch (const toml::parse_error& error) {
        const auto& begin = error.source().begin;
        std::string message = std::string(source_name) + ":" + std::to_string(begin.line) + ":" +
                              std::to_string(begin.column) + ": " +
                              std::string(error.description());
        // Sketches of specs often separate keys with ';', which TOML lacks.
        if (error.description().find("';'") != std::string_view::npos)
            message += " (TOML has no ';' separator: put each key = value on its own line)";
        return spec_error(std::move(message));
    } catch (const std::exception& error) {
        return spec_error(std::string(source_name) + ": cannot parse: " + error.what());
    }
    SpecParser parser(source_name);
    return parser.parse(root);
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

// Whether `workload` can also run from the host on a raw volume: its kind
// says so and it brings no job file (which names files below a directory).
bool runs_on_host(const Workload& workload) {
    const WorkloadKind* kind = find_workload_kind(workload.kind);
    return kind != nullptr && kind->runs_on_host && workload.params.is_object() &&
           !workload.params.contains("job_file");
}

// `host_baseline = true`: one baseline configuration per distinct storage
// (and pool and size) of the plan, appended to its configurations, paired
// with every workload that can run on the host.
Status add_host_baselines(const SweepSpec& spec, SweepPlan& plan,
                          std::vector<std::pair<int, int>>& pairs) {
    std::vector<int> host_workloads;
    for (std::size_t w = 0; w < plan.workloads.size(); ++w) {
        if (runs_on_host(plan.workloads[w])) host_workloads.push_back(static_cast<int>(w));
    }
    if (host_workloads.empty()) {
        std::vector<std::string> host_kinds;
        for (const WorkloadKind& kind : workload_kinds())
            if (kind.runs_on_host) host_kinds.push_back("\"" + std::string(kind.name) + "\"");
        return spec_error(
            "host_baseline = true, but no workload can run on the host: a baseline runs a "
            "workload of kind " +
            join(std::vector<std::string_view>(host_kinds.begin(), host_kinds.end()), " or ") +
            " (without job_file) on the raw volume");
    }
    std::vector<StorageConfig> baselines;
    for (const auto& config : plan.configs) {
        StorageConfig baseline = host_baseline_for(config);
        if (std::find(baselines.begin(), baselines.end(), baseline) == baselines.end())
            baselines.push_back(std::move(baseline));
    }
    for (auto& baseline : baselines) {
        const int index = static_cast<int>(plan.configs.size());
        plan.configs.push_back(std::move(baseline));
        for (int w : host_workloads) pairs.emplace_back(index, w);
    }
    return ok_status();
}

namespace {

// The checks that need no expansion: repetitions, workloads, the backend,
// distinct workload names and known, non-empty matrix axes.
Status check_sweep_shape(const SweepSpec& spec) {
    if (spec.repetitions < 1) return spec_error("repetitions must be >= 1");
    if (spec.workloads.empty()) return spec_error("a sweep needs at least one workload");
    if (!contains(spec_hypervisor_names(), spec.hypervisor)) {
        return spec_error(unknown_choice("hypervisor backend", spec.hypervisor, "",
                                         "valid backends", spec_hypervisor_names()));
    }
    std::set<std::string> workload_names;
    for (const auto& workload : spec.workloads) {
        if (!workload_names.insert(workload.name).second)
            return spec_error("workload name " + in_quotes(workload.name) + " is used twice");
    }
    for (const auto& [axis_name, values] : spec.matrix) {
        if (find_axis(axis_name) == nullptr) {
            return spec_error(
                unknown_choice("axis", axis_name, "in [matrix]", "valid axes", axis_names()));
        }
        if (values.empty())
            return spec_error("axis " + in_quotes(axis_name) + " in [matrix] lists no values");
    }
    return ok_status();
}

// Per axis (in table order), the setters of its values, and how many
// combinations their cross product has.
struct AxisSetters {
    std::vector<std::vector<ConfigSetter>> setters;
    std::uint64_t combinations = 1;
};

// The setters of one axis's values: the listed ones or the axis default.
// Two values that set the same thing ("1g", "1024m") would make identical
// configurations, so they are refused.
Result<std::vector<ConfigSetter>> setters_of_axis(const SweepSpec& spec, const AxisDef& axis,
                                                  const std::vector<std::string>& values) {
    std::vector<ConfigSetter> setters;
    std::vector<std::string> seen_json;
    for (const auto& value : values) {
        Result<ConfigSetter> setter = axis_setter(spec, axis, value);
        if (!setter.ok()) return setter.error();
        StorageConfig probe;
        setter.value()(probe);
        std::string probe_json = canonical_json(probe);
        const auto same = std::find(seen_json.begin(), seen_json.end(), probe_json);
        if (same != seen_json.end()) {
            return spec_error(
                "axis " + in_quotes(axis.name) + ": " + in_quotes(value) + " and " +
                in_quotes(values[static_cast<std::size_t>(same - seen_json.begin())]) +
                " are the same setting");
        }
        seen_json.push_back(std::move(probe_json));
        setters.push_back(std::move(setter).value());
    }
    return setters;
}

// The setters of every axis; records in `plan` the axes with more than one
// value. Refuses a matrix of more than kMaxRuns combinations.
Result<AxisSetters> matrix_setters(const SweepSpec& spec, SweepPlan& plan) {
    AxisSetters result;
    for (const AxisDef& axis : axes()) {
        const auto listed = spec.matrix.find(std::string(axis.name));
        const std::vector<std::string> values =
            listed != spec.matrix.end() ? listed->second
                                        : std::vector<std::string>{std::string(axis.default_value)};
        if (values.size() > 1) plan.varying_axes.emplace_back(axis.name);
        DS_ASSIGN_OR_RETURN(std::vector<ConfigSetter> setters, setters_of_axis(spec, axis, values));
        result.setters.push_back(std::move(setters));
        result.combinations *= values.size();
        if (result.combinations > kMaxRuns) {
            return spec_error("the matrix has more than " + std::to_string(kMaxRuns) +
                              " combinations; the limit is " + std::to_string(kMaxRuns) + " runs");
        }
    }
    return result;
}

// The cross product, first axis outermost (an odometer over value indices),
// into plan.configs; an impossible combination goes to plan.dropped.
// Refuses a plan whose combinations were all dropped.
Status expand_matrix(const SweepSpec& spec, const AxisSetters& matrix, SweepPlan& plan) {
    const std::vector<std::vector<ConfigSetter>>& setters = matrix.setters;
    std::vector<std::string> drop_reasons;  // distinct, in order of first appearance
    std::vector<std::size_t> odometer(setters.size(), 0);
    for (std::uint64_t n = 0; n < matrix.combinations; ++n) {
        StorageConfig config;
        config.hypervisor = spec.hypervisor;
        for (std::size_t a = 0; a < setters.size(); ++a) setters[a][odometer[a]](config);
        if (std::string reason = impossible_reason(config); !reason.empty()) {
            if (std::find(drop_reasons.begin(), drop_reasons.end(), reason) == drop_reasons.end())
                drop_reasons.push_back(reason);
            plan.dropped.push_back(DroppedCombination{to_json(config), std::move(reason)});
        } else {
            plan.configs.push_back(std::move(config));
        }
        for (std::size_t a = setters.size(); a-- > 0;) {
            if (++odometer[a] < setters[a].size()) break;
            odometer[a] = 0;
        }
    }
    if (plan.configs.empty()) {
        std::vector<std::string_view> reasons(drop_reasons.begin(), drop_reasons.end());
        return spec_error("all " + std::to_string(matrix.combinations) +
                          " combinations were dropped: " + join(reasons, "; "));
    }
    return ok_status();
}

// The (configuration, workload) pairs that run: a workload with
// `filesystems` only on configurations whose filesystem label (the matrix
// value as written) it lists. Counts the others in plan.skipped_pairs.
std::vector<std::pair<int, int>> runnable_pairs(SweepPlan& plan) {
    std::vector<std::pair<int, int>> pairs;
    for (std::size_t c = 0; c < plan.configs.size(); ++c) {
        for (std::size_t w = 0; w < plan.workloads.size(); ++w) {
            const std::vector<std::string>& only = plan.workloads[w].filesystems;
            if (!only.empty() && std::find(only.begin(), only.end(),
                                           plan.configs[c].filesystem.label) == only.end()) {
                ++plan.skipped_pairs;
                continue;
            }
            pairs.emplace_back(static_cast<int>(c), static_cast<int>(w));
        }
    }
    return pairs;
}

// Refuses a workload that is in no pair: its filesystems were all dropped.
Status check_every_workload_runs(const SweepPlan& plan,
                                 const std::vector<std::pair<int, int>>& pairs) {
    for (std::size_t w = 0; w < plan.workloads.size(); ++w) {
        const bool runs_somewhere = std::any_of(pairs.begin(), pairs.end(), [&](const auto& pair) {
            return pair.second == static_cast<int>(w);
        });
        if (!runs_somewhere) {
            std::vector<std::string_view> listed(plan.workloads[w].filesystems.begin(),
                                                 plan.workloads[w].filesystems.end());
            return spec_error("workload " + in_quotes(plan.workloads[w].name) +
                              " runs on no configuration: every configuration with filesystem " +
                              join(listed, " or ") + " was dropped");
        }
    }
    return ok_status();
}

// Refuses a sweep of more than kMaxRuns runs. Adaptive repetitions may grow
// the sweep up to max_repetitions rounds: the limit holds for that many.
Status check_run_limit(const SweepSpec& spec, const SweepPlan& plan,
                       std::uint64_t pairs_per_round) {
    const int most_rounds = std::max(spec.repetitions, spec.max_repetitions);
    if (pairs_per_round * static_cast<std::uint64_t>(most_rounds) <= kMaxRuns) return ok_status();
    std::string pairs = std::to_string(plan.configs.size()) + " configurations x " +
                        std::to_string(plan.workloads.size()) + " workloads";
    if (plan.skipped_pairs > 0) {
        pairs += " - " + std::to_string(plan.skipped_pairs) +
                 " pairs left out by workloads' filesystems";
    }
    return spec_error("the sweep would schedule up to " +
                      std::to_string(pairs_per_round * static_cast<std::uint64_t>(most_rounds)) +
                      " runs ((" + pairs + ") x " + std::to_string(most_rounds) +
                      " repetitions); the limit is " + std::to_string(kMaxRuns));
}

// Randomised-interleaved order: each round is a Fisher-Yates shuffle of all
// (config, workload) pairs, drawn from one generator stream.
void schedule_rounds(const SweepSpec& spec, const std::vector<std::pair<int, int>>& pairs_to_run,
                     SweepPlan& plan) {
    const std::uint64_t pairs_per_round = pairs_to_run.size();
    SplitMix64 generator(shuffle_seed(spec));
    plan.runs.reserve(pairs_per_round * static_cast<std::uint64_t>(spec.repetitions));
    for (int round = 0; round < spec.repetitions; ++round) {
        std::vector<PlannedRun> pairs;
        pairs.reserve(pairs_per_round);
        for (const auto& [c, w] : pairs_to_run) {
            PlannedRun run;
            run.config_index = c;
            run.workload_index = w;
            run.repetition = round;
            pairs.push_back(run);
        }
        for (std::size_t i = pairs.size(); i > 1; --i) {
            const std::size_t j = static_cast<std::size_t>(generator.below(i));
            std::swap(pairs[i - 1], pairs[j]);
        }
        for (auto& run : pairs) {
            run.sequence = static_cast<int>(plan.runs.size());
            plan.runs.push_back(run);
        }
    }
}

}  // namespace

Result<SweepPlan> expand_sweep(const SweepSpec& spec) {
    DS_TRY(check_sweep_shape(spec));
    SweepPlan plan;
    DS_ASSIGN_OR_RETURN(plan.workloads, tuned_workloads(spec));
    DS_ASSIGN_OR_RETURN(const AxisSetters matrix, matrix_setters(spec, plan));
    DS_TRY(expand_matrix(spec, matrix, plan));
    std::vector<std::pair<int, int>> pairs = runnable_pairs(plan);
    if (!spec.baseline.empty()) {
        DS_ASSIGN_OR_RETURN(plan.baseline_config, find_baseline_config(spec, plan.configs));
    }
    plan.baseline_tuning = !spec.baseline_tuning.empty() ? spec.baseline_tuning
                           : !spec.tuning_axis.empty()   ? spec.tuning_axis.front()
                                                         : std::string(kDefaultTuning);
    if (spec.host_baseline) DS_TRY(add_host_baselines(spec, plan, pairs));
    DS_TRY(check_every_workload_runs(plan, pairs));
    DS_TRY(check_run_limit(spec, plan, pairs.size()));
    schedule_rounds(spec, pairs, plan);
    return plan;
}

namespace {

// `workload` under the named tuning: its server variables added, its
// filesystems intersected (in the workload's order).
Result<Workload> tuned_variant(const Workload& workload, const std::string& name,
                               const WorkloadTuning& tuning) {
    Workload variant = workload;
    variant.name = workload.name + "." + name;
    variant.tuning = name;
    variant.variant_of = workload.name;
    if (!is_name(variant.name)) {
        return spec_error("workload " + in_quotes(workload.name) + " under tuning " +
                          in_quotes(name) + " is named " + in_quotes(variant.name) +
                          ", longer than 64 characters: shorten the workload's or the "
                          "tuning's name");
    }
    if (!variant.params.is_object()) variant.params = Json::object();
    Json& server = variant.params["server"];
    if (!server.is_object()) server = Json::object();
    for (const auto& [variable, value] : tuning.server.items()) {
        if (server.contains(variable)) {
            return spec_error("tuning " + in_quotes(name) + " sets server variable " +
                              in_quotes(variable) + ", which workload " + in_quotes(workload.name) +
                              " sets itself; set it in one place");
        }
        server[variable] = value;
    }
    if (tuning.filesystems.empty()) return variant;
    variant.filesystems.clear();
    for (const std::string& filesystem :
         workload.filesystems.empty() ? tuning.filesystems : workload.filesystems) {
        if (std::find(tuning.filesystems.begin(), tuning.filesystems.end(), filesystem) !=
            tuning.filesystems.end())
            variant.filesystems.push_back(filesystem);
    }
    if (variant.filesystems.empty()) {
        return spec_error("workload " + in_quotes(workload.name) + " and tuning " +
                          in_quotes(name) +
                          " share no filesystem: their 'filesystems' lists have none in common");
    }
    return variant;
}

}  // namespace

Result<std::vector<Workload>> tuned_workloads(const SweepSpec& spec) {
    std::vector<Workload> workloads;
    for (const Workload& workload : spec.workloads) {
        const WorkloadKind* kind = find_workload_kind(workload.kind);
        const WorkloadOptionDef* server =
            kind == nullptr ? nullptr : server_variables_option_of(*kind);
        if (spec.tuning_axis.empty() || server == nullptr ||
            !option_applies(*server, *kind, workload.params)) {
            workloads.push_back(workload);  // nothing a tuning sets
            continue;
        }
        for (const std::string& name : spec.tuning_axis) {
            if (name == kDefaultTuning) {
                workloads.push_back(workload);
                continue;
            }
            const auto tuning = spec.tunings.find(name);
            if (tuning == spec.tunings.end())
                return spec_error("tuning " + in_quotes(name) + " of [matrix] has no [tunings." +
                                  name + "] table");
            DS_ASSIGN_OR_RETURN(Workload variant, tuned_variant(workload, name, tuning->second));
            workloads.push_back(std::move(variant));
        }
    }
    std::set<std::string> names;
    for (const Workload& workload : workloads) {
        if (!names.insert(workload.name).second)
            return spec_error("workload name " + in_quotes(workload.name) +
                              " is used twice (a tuning's variant of workload W is named "
                              "W.TUNING)");
    }
    return workloads;
}

std::span<const std::string_view> spec_top_level_keys() {
    return kTopLevelKeys;
}

Result<std::vector<PlannedRun>> plan_round(const SweepSpec& spec, int round, int first_sequence) {
    if (round < 0) return spec_error("round must be >= 0");
    SweepSpec through_round = spec;
    through_round.repetitions = round + 1;
    through_round.max_repetitions = std::max(spec.max_repetitions, round + 1);
    Result<SweepPlan> plan = expand_sweep(through_round);
    if (!plan.ok()) return plan.error();
    std::vector<PlannedRun> runs;
    for (PlannedRun run : plan->runs) {
        if (run.repetition != round) continue;
        run.sequence = first_sequence + static_cast<int>(runs.size());
        runs.push_back(run);
    }
    return runs;
}

}  // namespace ds
