// The expansion of a spec (spec/spec.h) into configurations, workloads and
// an execution order (docs/spec.md).
#include "daemon/plan/expand.h"

#include <algorithm>
#include <set>

#include "common/text.h"
#include "common/workload_kind.h"
#include "daemon/plan/run_order.h"
#include "daemon/spec/axis_values.h"
#include "daemon/spec/spec_text.h"

namespace ds {
namespace {

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

Result<SweepPlan> expand_sweep(const SweepSpec& spec) {
    DS_TRY(check_sweep_spec(spec));
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

// A tuning's settings are one server's: the axis may not reach workloads of
// two servers (a MariaDB variable would stop PostgreSQL from starting, and
// the other way round). The first workload of each server names it.
Status check_tunings_reach_one_server(const SweepSpec& spec) {
    if (spec.tuning_axis.empty()) return ok_status();
    const ServerSettingsRules* first = nullptr;
    std::string first_name;
    for (const Workload& workload : spec.workloads) {
        const ServerSettingsRules* rules = kind_server_settings(workload.kind, workload.params);
        if (rules == nullptr) continue;
        if (first == nullptr) {
            first = rules;
            first_name = workload.name;
        } else if (rules != first) {
            return spec_error("the tuning axis would set the same server settings on " +
                              std::string(first->server) + " workload " + in_quotes(first_name) +
                              " and " + std::string(rules->server) + " workload " +
                              in_quotes(workload.name) +
                              "; a tuning's settings are one server's: sweep each server's "
                              "workloads separately");
        }
    }
    return ok_status();
}

}  // namespace

Result<std::vector<Workload>> tuned_workloads(const SweepSpec& spec) {
    DS_TRY(check_tunings_reach_one_server(spec));
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
