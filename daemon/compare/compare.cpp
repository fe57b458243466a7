#include "daemon/compare/compare.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "common/json_fields.h"
#include "common/settings.h"
#include "common/workload_kind.h"
#include "common/workload_output.h"
#include "daemon/compare/comparison.h"
#include "daemon/compare/durability_results.h"
#include "daemon/model/stats.h"
#include "daemon/plan/expand.h"
#include "daemon/plan/sweep_specs.h"
#include "daemon/run/golden_volumes.h"
#include "daemon/spec/spec.h"

namespace ds {
namespace {

// The metrics people look at first, in the order a report shows them. Others
// follow alphabetically.
constexpr std::array<std::string_view, 6> kPreferredMetricOrder = {
    "read_iops",      "write_iops",       "read_bw_mib_s",
    "write_bw_mib_s", "read_clat_p99_us", "write_clat_p99_us",
};

std::vector<std::string> ordered_metric_names(const std::set<std::string>& names) {
    std::vector<std::string> ordered;
    for (std::string_view preferred : kPreferredMetricOrder) {
        if (names.count(std::string(preferred))) ordered.emplace_back(preferred);
    }
    for (const std::string& name : names) {  // std::set: alphabetical
        if (std::find(kPreferredMetricOrder.begin(), kPreferredMetricOrder.end(), name) ==
            kPreferredMetricOrder.end()) {
            ordered.push_back(name);
        }
    }
    return ordered;
}

// The runs of one report row: counts every current attempt (an attempt
// superseded after an interruption is history, as in Store::run_counts),
// keeps the metric values of the succeeded ones.
class RowAccumulator {
  public:
    RowAccumulator() {
        for (std::string_view status : all_run_statuses()) counts_[std::string(status)] = 0;
    }

    void add(const RunRecord& run) {
        if (run.superseded_by != 0) return;
        ++counts_[to_string(run.status)];
        if (run.status != RunStatus::kSucceeded) return;
        for (const auto& [name, value] : run.metrics) values_by_metric_[name].push_back(value);
    }

    // Adds this row's metric names to `names`.
    void collect_metric_names(std::set<std::string>& names) const {
        for (const auto& [name, values] : values_by_metric_) names.insert(name);
    }

    Json counts_json() const { return Json(counts_); }

    Json metrics_json() const {
        Json metrics = Json::object();
        for (const auto& [name, values] : values_by_metric_) {
            metrics[name] = to_json(summarize(values));
        }
        return metrics;
    }

  private:
    std::map<std::string, int> counts_;
    std::map<std::string, std::vector<double>> values_by_metric_;
};

// The `server` table of a stored workload's params, or an empty object.
Json server_variables_of(const Json& workload) {
    if (!workload.is_object() || !workload.contains("params")) return Json::object();
    const Json& params = workload["params"];
    if (!params.is_object() || !params.contains("server") || !params["server"].is_object())
        return Json::object();
    return params["server"];
}

// "k=v k=v" (JSON objects iterate sorted by key), or "defaults".
std::string options_text(const Json& server_variables) {
    std::string text;
    for (const auto& [name, value] : server_variables.items()) {
        if (!text.empty()) text += ' ';
        text += name + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
    }
    return text.empty() ? "defaults" : text;
}

std::string filesystem_text(const Json& settings) {
    if (json_read::string_or_empty(settings, "hypervisor") == kHostBaselineHypervisor)
        return "none (host, raw volume)";
    std::string text = settings.is_object() && settings.contains("filesystem")
                           ? filesystem_shorthand(settings["filesystem"])
                           : std::string("-");
    if (std::string block = block_settings_shorthand(settings); !block.empty()) text += " " + block;
    return text;
}

// Sets "durability_risks" (and "settings_error" when the stored settings no
// longer parse) on `row`: the configuration's, then the workload's by its
// kind's server settings rules for its params (`kind` "": no workload).
void add_durability_risks(const Json& settings, std::string_view kind, const Json& params,
                          Json& row) {
    Result<StorageConfig> config = storage_config_from_json(settings);
    if (!config.ok()) {
        row["durability_risks"] = nullptr;
        row["settings_error"] = config.error().message;
        return;
    }
    std::vector<std::string> risks = durability_risks(config.value());
    for (std::string& risk : server_settings_risks(kind, params)) risks.push_back(std::move(risk));
    row["durability_risks"] = risks;
}

bool is_host_baseline_row(const Json& row) {
    return json_read::string_or_empty(row["settings"], "hypervisor") == kHostBaselineHypervisor;
}

// Whether `baseline` measured the bare storage under `row`: the same storage,
// pool and size, and the same workload.
bool measures_storage_of(const Json& baseline, const Json& row) {
    const Json& a = baseline["settings"];
    const Json& b = row["settings"];
    for (const char* key : {"storage", "storage_pool", "disk_size_bytes"}) {
        if (a.value(key, Json()) != b.value(key, Json())) return false;
    }
    return baseline["workload"] == row["workload"];
}

// Each guest row with a host baseline of its storage gets "vs_host": the
// baseline's row and, per metric both have, the ratio of the means.
void add_host_overhead(Json& rows) {
    for (Json& row : rows) {
        if (is_host_baseline_row(row)) continue;
        for (std::size_t b = 0; b < rows.size(); ++b) {
            const Json& baseline = rows[b];
            if (!is_host_baseline_row(baseline) || !measures_storage_of(baseline, row)) continue;
            Json ratios = Json::object();
            for (const auto& [metric, summary] : row["metrics"].items()) {
                const Json* base =
                    baseline["metrics"].contains(metric) ? &baseline["metrics"][metric] : nullptr;
                if (base == nullptr || !summary["mean"].is_number() ||
                    !(*base)["mean"].is_number() || (*base)["mean"].get<double>() == 0)
                    continue;
                ratios[metric] = summary["mean"].get<double>() / (*base)["mean"].get<double>();
            }
            row["vs_host"] = {{"baseline_row", b}, {"ratios", std::move(ratios)}};
            break;
        }
    }
}

// ---------------------------------------------------------------------------
// The comparison of a sweep, phase by phase.

constexpr std::array<const char*, 6> kPartitionKeys = {"accel",   "host",   "qemu",
                                                       "libvirt", "kernel", "proxmox"};

Json number_or_null(double value) {
    return std::isfinite(value) ? Json(value) : Json(nullptr);
}

struct CompareRow {
    std::string config_id;
    std::string workload_name;
    std::string partition_key;
    std::map<std::string, int> counts;
    std::map<std::string, Summary> summaries;
    std::set<std::string> full_summaries;  // metrics summarised from values (with median)
    std::vector<RoundValue> analysed_values;
    PrimaryMetric analysed;
    std::string analysed_name;  // owns the text analysed.name points into
    // The workload the row is compared under (baseline_workload_of).
    std::string baseline_workload;
};

// What the sweep's spec says about the comparison.
struct SpecChoices {
    std::string baseline_config_id;  // "" = the first run's configuration
    std::string chosen_by = "first configuration";
    std::string baseline_tuning = std::string(kDefaultTuning);
    VerdictRules verdict_rules;
};

SpecChoices spec_choices(const SweepRecord& sweep, SweepSpecs* specs) {
    SpecChoices choices;
    auto spec = spec_of(specs, sweep);
    if (!spec.ok()) return choices;  // a stored spec this build no longer reads
    choices.verdict_rules = spec.value()->verdict_rules;
    Result<SweepPlan> plan = expand_sweep(*spec.value());
    if (!plan.ok() || plan->configs.empty()) return choices;
    choices.baseline_tuning = plan->baseline_tuning;
    const int index = std::max(plan->baseline_config, 0);
    choices.baseline_config_id = config_id(plan->configs[static_cast<std::size_t>(index)]);
    if (plan->baseline_config >= 0) choices.chosen_by = "spec";
    return choices;
}

// Rows from the store's groups: one per (config, workload, partition); the
// groups of runs that never ran join their configuration's first row.
std::vector<CompareRow> rows_from_groups(const std::vector<RunGroup>& groups) {
    std::vector<CompareRow> rows;
    std::map<std::tuple<std::string, std::string, std::string>, std::size_t> index;
    std::vector<const RunGroup*> never_ran;
    for (const RunGroup& group : groups) {
        if (group.partition_key.empty()) {
            never_ran.push_back(&group);
            continue;
        }
        index[{group.config_id, group.workload_name, group.partition_key}] = rows.size();
        rows.push_back(CompareRow{group.config_id,
                                  group.workload_name,
                                  group.partition_key,
                                  group.counts,
                                  {},
                                  {},
                                  {},
                                  {},
                                  {},
                                  {}});
    }
    for (const RunGroup* group : never_ran) {
        auto same = std::find_if(rows.begin(), rows.end(), [&](const CompareRow& row) {
            return row.config_id == group->config_id && row.workload_name == group->workload_name;
        });
        if (same == rows.end()) {
            rows.push_back(CompareRow{
                group->config_id, group->workload_name, "", group->counts, {}, {}, {}, {}, {}, {}});
            continue;
        }
        for (const auto& [status, count] : group->counts) same->counts[status] += count;
    }
    // First-run order: the groups came by first sequence; merged rows keep it.
    return rows;
}

std::size_t find_row(const std::vector<CompareRow>& rows, const std::string& config,
                     const std::string& workload, const std::string& partition) {
    for (std::size_t r = 0; r < rows.size(); ++r) {
        if (rows[r].config_id == config && rows[r].workload_name == workload &&
            rows[r].partition_key == partition)
            return r;
    }
    return rows.size();
}

// Summaries from the store's aggregates (no median), then, for the analysed
// metrics, from the values themselves.
Status add_summaries(Store& store, std::int64_t sweep_id, const CompareOptions& options,
                     std::vector<CompareRow>& rows) {
    Result<std::vector<MetricAggregate>> aggregates = store.metric_aggregates(sweep_id);
    DS_TRY(aggregates);
    for (const MetricAggregate& aggregate : aggregates.value()) {
        const std::size_t r =
            find_row(rows, aggregate.config_id, aggregate.workload_name, aggregate.partition_key);
        if (r < rows.size())
            rows[r].summaries[aggregate.metric] = summarize_moments(aggregate.moments);
    }
    std::set<std::string> analysed;
    for (const CompareRow& row : rows) analysed.insert(row.analysed_name);
    const std::vector<std::string> names =
        options.all_metrics ? std::vector<std::string>{}
                            : std::vector<std::string>(analysed.begin(), analysed.end());
    Result<std::vector<MetricSeries>> series = store.metric_series(sweep_id, names);
    DS_TRY(series);
    for (MetricSeries& one : series.value()) {
        const std::size_t r = find_row(rows, one.config_id, one.workload_name, one.partition_key);
        if (r == rows.size()) continue;
        std::vector<double> values;
        values.reserve(one.values.size());
        for (const RoundValue& value : one.values) values.push_back(value.value);
        rows[r].summaries[one.metric] = summarize(values);
        rows[r].full_summaries.insert(one.metric);
        if (one.metric == rows[r].analysed_name) rows[r].analysed_values = std::move(one.values);
    }
    return ok_status();
}

Json metrics_json(const CompareRow& row) {
    Json metrics = Json::object();
    for (const auto& [name, summary] : row.summaries)
        metrics[name] = to_json(summary, is_rate_metric(name));
    return metrics;
}

// The workload a row of `workload_name` is compared under: of the same
// spec workload (itself, or the one it is a tuning's variant of), the
// variant with the baseline tuning, else the spec workload as written. So
// every tuning of a workload is compared with one baseline.
std::string baseline_workload_of(const std::map<std::string, Json>& workloads,
                                 const std::string& workload_name,
                                 const std::string& baseline_tuning) {
    const auto found = workloads.find(workload_name);
    std::string family =
        found == workloads.end() ? "" : json_read::string_or_empty(found->second, "variant_of");
    if (family.empty()) family = workload_name;
    if (baseline_tuning == kDefaultTuning) return family;
    for (const auto& [name, workload] : workloads) {
        if (json_read::string_or_empty(workload, "variant_of") == family &&
            json_read::string_or_empty(workload, "tuning") == baseline_tuning)
            return name;
    }
    return family;
}

// The row each row is compared with: the baseline configuration's row of
// the row's baseline workload in the same partition; rows.size() when there
// is none.
std::size_t baseline_row_of(const std::vector<CompareRow>& rows, std::size_t r,
                            const std::string& baseline_config) {
    return find_row(rows, baseline_config, rows[r].baseline_workload, rows[r].partition_key);
}

// Fills "vs_baseline" and "is_baseline" of every row, Holm-adjusting the
// p-values across the sweep. Returns how many comparisons have a p-value.
int add_comparisons(const std::vector<CompareRow>& rows, const std::string& baseline_config,
                    const VerdictRules& rules, Json& rows_json) {
    std::vector<RatioEstimate> estimates(rows.size());
    std::vector<std::size_t> baselines(rows.size(), rows.size());
    std::vector<double> p_values(rows.size(), std::nan(""));
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const bool is_baseline = rows[r].config_id == baseline_config &&
                                 rows[r].workload_name == rows[r].baseline_workload;
        rows_json[r]["is_baseline"] = is_baseline;
        if (rows_json[r]["host_baseline"] == true || is_baseline) continue;
        baselines[r] = baseline_row_of(rows, r, baseline_config);
        if (baselines[r] == rows.size()) continue;
        estimates[r] = estimate_ratio(rows[r].analysed_values, rows[baselines[r]].analysed_values);
        // Too few runs is no test: it stays out of Holm's family.
        if (has_enough_runs(estimates[r], rules)) p_values[r] = estimates[r].p_value;
    }
    const std::vector<double> adjusted = holm_adjust(p_values);
    int comparisons = 0;
    for (std::size_t r = 0; r < rows.size(); ++r) {
        if (rows_json[r]["is_baseline"] == true || rows_json[r]["host_baseline"] == true) continue;
        if (baselines[r] == rows.size()) {
            rows_json[r]["vs_baseline"] = {
                {"verdict", "no baseline"},
                {"reason", rows[r].partition_key.empty()
                               ? "no run of this configuration finished yet"
                               : "the baseline configuration has no runs of this workload in "
                                 "this partition (acceleration, host and versions)"}};
            continue;
        }
        const RatioEstimate& estimate = estimates[r];
        if (!std::isnan(adjusted[r])) ++comparisons;
        const Verdict verdict =
            decide_verdict(estimate, adjusted[r], rows[r].analysed.lower_is_better, rules);
        rows_json[r]["vs_baseline"] = {
            {"baseline_row", baselines[r]},
            {"metric", rows[r].analysed_name},
            {"ratio", number_or_null(estimate.ratio)},
            {"ci95_low", number_or_null(estimate.ci95_low)},
            {"ci95_high", number_or_null(estimate.ci95_high)},
            {"method", to_string(estimate.method)},
            {"pairs", estimate.pairs},
            {"n", estimate.n_candidate},
            {"baseline_n", estimate.n_baseline},
            {"p_value", number_or_null(estimate.p_value)},
            {"p_adjusted", number_or_null(adjusted[r])},
            {"verdict", to_string(verdict)},
        };
    }
    return comparisons;
}

// Whether row a ranks before row b within their partition and metric: the
// better log-scale centre (the ratios' scale), rows without one last.
bool ranks_before(const std::vector<CompareRow>& rows, const std::vector<double>& centres,
                  std::size_t a, std::size_t b) {
    if (std::isnan(centres[a]) || std::isnan(centres[b]))
        return !std::isnan(centres[a]) && std::isnan(centres[b]);
    return rows[a].analysed.lower_is_better ? centres[a] < centres[b] : centres[a] > centres[b];
}

// Ranking entries: by partition, then analysed metric (first appearance:
// rows judged by different metrics are not ranked against each other), then
// best first by the geometric mean, the scale of the ratios.
Json ranking_json(const std::vector<CompareRow>& rows, const Json& rows_json) {
    std::vector<std::size_t> order;
    std::vector<double> centres(rows.size());
    for (std::size_t r = 0; r < rows.size(); ++r) {
        centres[r] = log_scale_centre(rows[r].analysed_values);
        if (rows[r].summaries.count(rows[r].analysed_name)) order.push_back(r);
    }
    std::map<std::string, std::size_t> metric_order;
    for (const CompareRow& row : rows)
        metric_order.try_emplace(row.analysed_name, metric_order.size());
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const auto pa = rows_json[a]["partition"].get<int>();
        const auto pb = rows_json[b]["partition"].get<int>();
        if (pa != pb) return pa < pb;
        const auto ma = metric_order[rows[a].analysed_name];
        const auto mb = metric_order[rows[b].analysed_name];
        if (ma != mb) return ma < mb;
        return ranks_before(rows, centres, a, b);
    });
    Json ranking = Json::array();
    for (std::size_t r : order) {
        const Json& row = rows_json[r];
        const Summary& summary = rows[r].summaries.at(rows[r].analysed_name);
        const Json& versus = row.contains("vs_baseline") ? row["vs_baseline"] : Json::object();
        ranking.push_back(
            Json{{"row", r},
                 {"config_id", row["config_id"]},
                 {"workload", row["workload"]},
                 {"filesystem", row["filesystem"]},
                 {"options", row["options"]},
                 {"partition", row["partition"]},
                 {"metric", rows[r].analysed_name},
                 {"n", summary.n},
                 {"geomean", number_or_null(centres[r])},
                 {"mean", number_or_null(summary.mean)},
                 {"stddev", number_or_null(summary.stddev)},
                 {"ci95_low", number_or_null(summary.ci95_low)},
                 {"ci95_high", number_or_null(summary.ci95_high)},
                 {"ratio", versus.value("ratio", Json())},
                 {"verdict",
                  row["is_baseline"] == true ? Json("baseline") : versus.value("verdict", Json())},
                 {"durability_risks", row["durability_risks"]}});
    }
    return ranking;
}

}  // namespace

bool metric_lower_is_better(const std::string& metric, const std::vector<std::string>& kinds) {
    for (const std::string& kind : kinds) {
        const PrimaryMetric primary = primary_metric_for_kind(kind);
        if (primary.name == metric) return primary.lower_is_better;
    }
    // Rates of work (IOPS, MiB/s, tps, qps) are better larger, though MiB/s
    // ends like a time; rates of trouble (errors_per_s) are not work.
    if (is_rate_metric(metric) && !metric.ends_with("per_s")) return false;
    // Costs per unit of work (host_cpu_us_per_io): the less the better.
    if (metric.ends_with("_per_io")) return true;
    for (std::string_view suffix : {"_s", "_ms", "_us", "_ns"}) {
        if (metric.size() > suffix.size() && metric.ends_with(suffix)) return true;
    }
    return false;
}

// A stored partition key is a JSON array in kPartitionKeys' order.
Json partition_from_key(const std::string& partition_key) {
    Json object = Json::object();
    const Json values = Json::parse(partition_key.empty() ? "[]" : partition_key, nullptr, false);
    for (std::size_t i = 0; i < kPartitionKeys.size(); ++i) {
        const bool present = values.is_array() && i < values.size();
        object[kPartitionKeys[i]] = present && values[i].is_string()  ? values[i].get<std::string>()
                                    : present && !values[i].is_null() ? values[i].dump()
                                                                      : std::string();
    }
    return object;
}

PrimaryMetric primary_metric_of_workload(const Json& workload) {
    const std::string kind = workload.is_object() ? workload.value("kind", std::string()) : "";
    const WorkloadKind* descriptor = find_workload_kind(kind);
    if (descriptor == nullptr) return primary_metric_for_kind(kind);
    return judged_metric(*descriptor, workload.value("params", Json::object()));
}

namespace {

// Names each row's analysed metric (the option's, else its workload's
// primary metric); returns the workload kinds of the rows, in the order
// first seen. A workload the sweep does not list reads as null.
std::vector<std::string> analyse_rows(std::vector<CompareRow>& rows,
                                      std::map<std::string, Json>& workloads,
                                      const CompareOptions& options) {
    std::vector<std::string> kinds;
    for (CompareRow& row : rows) {
        const Json& workload = workloads[row.workload_name];
        const std::string kind = workload.value("kind", std::string());
        if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
        row.analysed_name = options.metric.empty()
                                ? std::string(primary_metric_of_workload(workload).name)
                                : options.metric;
        row.analysed = {row.analysed_name, metric_lower_is_better(row.analysed_name, {kind})};
    }
    return kinds;
}

// The rows as JSON, with what they name: their partition keys (in the order
// first seen; a row refers to one by index) and their metrics.
struct RowsJson {
    Json rows = Json::array();
    std::vector<std::string> partitions;
    std::set<std::string> metric_names;
};

// The index of `partition_key` in `partitions`, appended when new. A row
// whose runs never ran has no partition yet (null).
Json partition_index(std::vector<std::string>& partitions, const std::string& partition_key) {
    if (partition_key.empty()) return nullptr;
    auto partition = std::find(partitions.begin(), partitions.end(), partition_key);
    if (partition == partitions.end())
        partition = partitions.insert(partitions.end(), partition_key);
    return partition - partitions.begin();
}

Json row_to_json(const CompareRow& row, const Json& settings, Json partition,
                 const Json& workload) {
    const Json server_variables = server_variables_of(workload);
    const std::string kind = workload.value("kind", std::string());
    Json row_json{
        {"config_id", row.config_id},
        {"workload", row.workload_name},
        {"settings", settings},
        {"partition", std::move(partition)},
        {"runs", row.counts},
        {"metrics", metrics_json(row)},
        {"workload_kind", kind},
        {"server_variables", server_variables},
        {"filesystem", filesystem_text(settings)},
        {"options", options_text(server_variables)},
        {"primary_metric",
         {{"name", row.analysed_name}, {"lower_is_better", row.analysed.lower_is_better}}}};
    // Medians exist only for metrics summarised from their values.
    for (auto& [name, summary] : row_json["metrics"].items())
        if (!row.full_summaries.count(name)) summary["median"] = nullptr;
    const Json params =
        workload.is_object() ? workload.value("params", Json::object()) : Json::object();
    add_durability_risks(settings, kind, params, row_json);
    row_json["host_baseline"] = is_host_baseline_row(row_json);
    return row_json;
}

// Reads each configuration's settings from the store once.
Result<RowsJson> rows_to_json(Store& store, const std::vector<CompareRow>& rows,
                              std::map<std::string, Json>& workloads) {
    RowsJson result;
    std::map<std::string, Json> settings_by_config;
    for (const CompareRow& row : rows) {
        auto [settings, inserted] = settings_by_config.try_emplace(row.config_id);
        if (inserted) {
            Result<Json> stored = store.get_configuration(row.config_id);
            DS_TRY(stored);
            settings->second = stored.value();
        }
        Json partition = partition_index(result.partitions, row.partition_key);
        for (const auto& [name, summary] : row.summaries) result.metric_names.insert(name);
        result.rows.push_back(
            row_to_json(row, settings->second, std::move(partition), workloads[row.workload_name]));
    }
    return result;
}

// The metric every row analyses (or the one asked for); null when the rows
// analyse different ones.
Json primary_metric_json(const std::vector<CompareRow>& rows, const CompareOptions& options) {
    if (rows.empty()) return nullptr;
    const bool same = std::all_of(rows.begin(), rows.end(), [&](const CompareRow& row) {
        return row.analysed_name == rows.front().analysed_name;
    });
    if (!same && options.metric.empty()) return nullptr;
    return Json{{"name", rows.front().analysed_name},
                {"lower_is_better", rows.front().analysed.lower_is_better}};
}

}  // namespace

namespace {

// golden_savings of the sweep's runs: null when none cloned a golden volume.
Json sweep_golden_savings(const std::vector<RunRecord>& runs) {
    std::vector<Json> records;
    for (const RunRecord& run : runs) {
        if (const auto found = run.applied_settings.find("dataset");
            found != run.applied_settings.end()) {
            records.push_back(*found);
        }
    }
    return golden_savings(records);
}

// Whether a row's workload kind acknowledges its records (ledger): the
// kind durability runs measure with.
bool row_acknowledges(const Json& row) {
    return kind_acknowledges(json_read::string_or_empty(row, "workload_kind"));
}

// Sets every row's "durability": the durability runs of the row itself
// (its configuration, workload and partition); for a row of another kind
// than ledger without any, those of the ledger rows of the same
// configuration and partition whose workloads set the same server variables
// (docs/durability.md, "What you see").
void add_durability(const std::vector<CompareRow>& rows, const std::vector<RunRecord>& runs,
                    Json& rows_json) {
    std::vector<DurabilityResult> own(rows.size());
    for (const RunRecord& run : runs) {
        const std::size_t r = find_row(rows, run.config_id, run.workload_name, run.partition_key);
        if (r < rows.size()) own[r].add(run);
    }
    for (std::size_t r = 0; r < rows.size(); ++r) {
        DurabilityResult result = own[r];
        const Json& row = rows_json[r];
        if (!result.measured() && !row_acknowledges(row)) {
            for (std::size_t other = 0; other < rows.size(); ++other) {
                const Json& ledger = rows_json[other];
                if (row_acknowledges(ledger) && rows[other].config_id == rows[r].config_id &&
                    rows[other].partition_key == rows[r].partition_key &&
                    ledger["server_variables"] == row["server_variables"])
                    result.merge(own[other]);
            }
        }
        rows_json[r]["durability"] = result.to_json();
    }
}

// Sets every row's "not_checked": the distinct entries of its runs'
// applied_settings.verification.not_checked (docs/verification.md), each
// with "runs", how many of the row's runs listed it, in first-seen order.
void add_not_checked(const std::vector<CompareRow>& rows, const std::vector<RunRecord>& runs,
                     Json& rows_json) {
    std::vector<Json> lists(rows.size(), Json::array());
    for (const RunRecord& run : runs) {
        const std::size_t r = find_row(rows, run.config_id, run.workload_name, run.partition_key);
        const Json& entries =
            json_read::field(json_read::field(run.applied_settings, "verification"), "not_checked");
        if (r >= rows.size() || !entries.is_array()) continue;
        for (const Json& entry : entries) {
            if (!entry.is_object()) continue;
            Json& list = lists[r];
            auto same = std::find_if(list.begin(), list.end(), [&](const Json& known) {
                Json bare = known;
                bare.erase("runs");
                return bare == entry;
            });
            if (same == list.end()) {
                list.push_back(entry);
                list.back()["runs"] = 1;
            } else {
                (*same)["runs"] = same->value("runs", 0) + 1;
            }
        }
    }
    for (std::size_t r = 0; r < rows.size(); ++r) rows_json[r]["not_checked"] = std::move(lists[r]);
}

}  // namespace

Result<Json> compare_sweep(Store& store, std::int64_t sweep_id, const CompareOptions& options) {
    Result<SweepRecord> sweep = store.get_sweep(sweep_id);
    DS_TRY(sweep);
    Result<std::vector<RunGroup>> groups = store.run_groups(sweep_id);
    DS_TRY(groups);
    Result<std::map<std::string, Json>> workloads = store.sweep_workloads(sweep_id);
    DS_TRY(workloads);
    std::vector<CompareRow> rows = rows_from_groups(groups.value());
    const std::vector<std::string> kinds = analyse_rows(rows, workloads.value(), options);
    DS_TRY(add_summaries(store, sweep_id, options, rows));

    SpecChoices choices = spec_choices(sweep.value(), options.specs);
    if (choices.baseline_config_id.empty() && !rows.empty())
        choices.baseline_config_id = rows.front().config_id;
    for (CompareRow& row : rows)
        row.baseline_workload =
            baseline_workload_of(workloads.value(), row.workload_name, choices.baseline_tuning);

    DS_ASSIGN_OR_RETURN(RowsJson rows_out, rows_to_json(store, rows, workloads.value()));
    add_host_overhead(rows_out.rows);
    const int comparisons =
        add_comparisons(rows, choices.baseline_config_id, choices.verdict_rules, rows_out.rows);

    Json primary = primary_metric_json(rows, options);
    Json partitions_json = Json::array();
    for (const std::string& key : rows_out.partitions)
        partitions_json.push_back(partition_from_key(key));
    DS_ASSIGN_OR_RETURN(auto runs, store.list_runs(sweep_id, RawOutput::kOmit));
    add_durability(rows, runs, rows_out.rows);
    add_not_checked(rows, runs, rows_out.rows);
    Json ranking = ranking_json(rows, rows_out.rows);
    Json golden_datasets = sweep_golden_savings(runs);

    return Json{
        {"sweep_id", sweep_id},
        {"varying_axes", sweep->varying_axes},
        {"metrics", ordered_metric_names(rows_out.metric_names)},
        {"partitions", std::move(partitions_json)},
        {"baseline",
         {{"config_id",
           choices.baseline_config_id.empty() ? Json() : Json(choices.baseline_config_id)},
          {"chosen_by", choices.chosen_by},
          {"tuning", choices.baseline_tuning}}},
        {"practical_difference", choices.verdict_rules.practical_difference},
        {"min_runs_for_verdict", choices.verdict_rules.min_runs},
        {"significance_level", kSignificanceLevel},
        {"comparisons", comparisons},
        {"rows", std::move(rows_out.rows)},
        {"workload_kinds", kinds},
        {"primary_metric", primary},
        {"ranking", std::move(ranking)},
        {"golden_datasets", std::move(golden_datasets)},
    };
}

namespace {

// One row of results_for_config: the runs of one workload (name and
// parameters) in one sweep (or every sweep, pooled) and one partition.
struct ConfigResultRow {
    std::string workload_name;
    Workload workload;
    std::int64_t sweep_key = 0;  // the sweep; 0 when sweeps are pooled
    std::string partition_key;   // "" for runs that never finished
    std::vector<std::int64_t> sweep_ids;
    RowAccumulator accumulator;

    void add(const RunRecord& run) {
        if (sweep_ids.empty() || sweep_ids.back() != run.sweep_id)
            sweep_ids.push_back(run.sweep_id);
        accumulator.add(run);
    }
};

// The rows of `runs` (by sweep, then sequence): runs that finished by their
// partition, the way compare_sweep keeps them; runs that never did (no
// partition yet) join the first row of their workload and sweep key, or a
// row of their own at the end.
std::vector<ConfigResultRow> config_result_rows(const std::vector<RunRecord>& runs,
                                                SweepPooling pooling) {
    std::vector<ConfigResultRow> rows;
    auto find = [&](const RunRecord& run, std::int64_t sweep_key, bool any_partition) {
        return std::find_if(rows.begin(), rows.end(), [&](const ConfigResultRow& row) {
            return row.workload_name == run.workload_name && row.workload == run.workload &&
                   row.sweep_key == sweep_key &&
                   (any_partition || row.partition_key == run.partition_key);
        });
    };
    for (const bool finished : {true, false}) {
        for (const RunRecord& run : runs) {
            if (run.partition_key.empty() == finished) continue;
            const std::int64_t sweep_key = pooling == SweepPooling::kPooled ? 0 : run.sweep_id;
            auto row = find(run, sweep_key, !finished);
            if (row == rows.end()) {
                rows.push_back(ConfigResultRow{
                    run.workload_name, run.workload, sweep_key, run.partition_key, {}, {}});
                row = rows.end() - 1;
            }
            row->add(run);
        }
    }
    return rows;
}

}  // namespace

Result<Json> results_for_config(Store& store, const std::string& config_id, SweepPooling pooling) {
    Result<Json> settings = store.get_configuration(config_id);
    DS_TRY(settings);
    Result<std::vector<RunRecord>> runs = store.runs_for_config(config_id, RawOutput::kOmit);
    DS_TRY(runs);
    const std::vector<ConfigResultRow> rows = config_result_rows(runs.value(), pooling);

    std::set<std::string> metric_names;
    std::vector<std::string> partitions;
    Json rows_json = Json::array();
    for (const ConfigResultRow& row : rows) {
        row.accumulator.collect_metric_names(metric_names);
        rows_json.push_back(Json{
            {"workload", row.workload_name},
            {"workload_params", to_json(row.workload)},
            {"sweep_ids", row.sweep_ids},
            {"partition", partition_index(partitions, row.partition_key)},
            {"runs", row.accumulator.counts_json()},
            {"metrics", row.accumulator.metrics_json()},
        });
    }
    Json partitions_json = Json::array();
    for (const std::string& key : partitions) partitions_json.push_back(partition_from_key(key));

    Json result{
        {"config_id", config_id},
        {"settings", settings.value()},
        {"sweeps_pooled", pooling == SweepPooling::kPooled},
        {"partitions", std::move(partitions_json)},
        {"metrics", ordered_metric_names(metric_names)},
        {"rows", std::move(rows_json)},
    };
    add_durability_risks(settings.value(), "", Json::object(), result);
    return result;
}

}  // namespace ds
