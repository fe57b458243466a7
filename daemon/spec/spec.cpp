// Sweep specs: TOML -> SweepSpec (grammar in docs/spec.md). This file reads
// the top level, [hypervisor], [guest], the repetitions and the verdict
// rules; the other tables have a file each (spec_parser.h).
#include "daemon/spec/spec.h"

#include <toml++/toml.h>

#include <array>
#include <limits>
#include <set>

#include "common/text.h"
#include "daemon/backends/registry.h"
#include "daemon/spec/axis_values.h"
#include "daemon/spec/spec_parser.h"
#include "daemon/spec/unchecked_levels.h"

namespace ds {
namespace {

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

// Spec timeouts: whole seconds, plain or with s, m, h. (fio's own times are
// read by parse_fio_time_us, common/units.h.)
const std::vector<DurationUnit> kTimeoutUnits = {{"s", 1}, {"m", 60}, {"h", 3600}};

}  // namespace

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

Status check_sweep_spec(const SweepSpec& spec) {
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

std::span<const std::string_view> spec_top_level_keys() {
    return kTopLevelKeys;
}

}  // namespace ds
