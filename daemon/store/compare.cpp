#include "daemon/store/compare.h"

#include <algorithm>
#include <array>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "common/settings.h"
#include "common/stats.h"
#include "common/workload_output.h"

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
        ++counts_[run.status];
        if (run.status != run_status::kSucceeded) return;
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

std::string field_text(const Json& object, const char* key) {
    const auto found = object.is_object() ? object.find(key) : object.end();
    return object.is_object() && found != object.end() && found->is_string()
               ? found->get<std::string>()
               : "";
}

std::string filesystem_text(const Json& settings) {
    if (field_text(settings, "hypervisor") == kHostBaselineHypervisor)
        return "none (host, raw volume)";
    std::string text = settings.is_object() && settings.contains("filesystem")
                           ? filesystem_shorthand(settings["filesystem"])
                           : std::string("-");
    if (std::string block = block_settings_shorthand(settings); !block.empty()) text += " " + block;
    return text;
}

// Sets "durability_risks" (and "settings_error" when the stored settings no
// longer parse) on `row`: the configuration's, then the workload's.
void add_durability_risks(const Json& settings, const Json& server_variables, Json& row) {
    Result<StorageConfig> config = storage_config_from_json(settings);
    if (!config.ok()) {
        row["durability_risks"] = nullptr;
        row["settings_error"] = config.error().message;
        return;
    }
    std::vector<std::string> risks = durability_risks(config.value());
    for (std::string& risk : server_variable_risks(server_variables))
        risks.push_back(std::move(risk));
    row["durability_risks"] = risks;
}

// Whether a smaller value of `metric` is better: the kinds' primary metrics
// say so; otherwise times and latencies (by their unit suffix) are.
bool lower_is_better(const std::string& metric, const std::vector<std::string>& kinds) {
    for (const std::string& kind : kinds) {
        const PrimaryMetric primary = primary_metric_for_kind(kind);
        if (primary.name == metric) return primary.lower_is_better;
    }
    for (std::string_view suffix : {"_s", "_ms", "_us", "_ns"}) {
        if (metric.size() > suffix.size() && metric.ends_with(suffix)) return true;
    }
    return false;
}

bool is_host_baseline_row(const Json& row) {
    return field_text(row["settings"], "hypervisor") == kHostBaselineHypervisor;
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

}  // namespace

Result<Json> compare_sweep(Store& store, std::int64_t sweep_id, const CompareOptions& options) {
    Result<SweepRecord> sweep = store.get_sweep(sweep_id);
    DS_TRY(sweep);
    Result<std::vector<RunRecord>> runs = store.list_runs(sweep_id, RawOutput::kOmit);
    DS_TRY(runs);

    struct Row {
        std::string config_id;
        std::string workload_name;
        Json settings;
        Json workload;
        RowAccumulator accumulator;
    };
    std::vector<Row> rows;  // in first-sequence order (list_runs is ordered by sequence)
    std::map<std::pair<std::string, std::string>, std::size_t> row_index;
    for (const RunRecord& run : runs.value()) {
        const auto key = std::make_pair(run.config_id, run.workload_name);
        auto [found, inserted] = row_index.try_emplace(key, rows.size());
        if (inserted)
            rows.push_back(Row{run.config_id, run.workload_name, run.config, run.workload, {}});
        rows[found->second].accumulator.add(run);
    }

    std::set<std::string> metric_names;
    for (const Row& row : rows) row.accumulator.collect_metric_names(metric_names);

    Json rows_json = Json::array();
    for (const Row& row : rows) {
        Json row_json{
            {"config_id", row.config_id},
            {"workload", row.workload_name},
            {"settings", row.settings},
            {"runs", row.accumulator.counts_json()},
            {"metrics", row.accumulator.metrics_json()},
        };
        const Json server_variables = server_variables_of(row.workload);
        row_json["workload_kind"] = row.workload.value("kind", std::string());
        row_json["server_variables"] = server_variables;
        row_json["filesystem"] = filesystem_text(row.settings);
        row_json["options"] = options_text(server_variables);
        add_durability_risks(row.settings, server_variables, row_json);
        row_json["host_baseline"] = is_host_baseline_row(row_json);
        rows_json.push_back(std::move(row_json));
    }
    add_host_overhead(rows_json);

    std::vector<std::string> kinds;
    for (const Json& row : rows_json) {
        const std::string kind = row["workload_kind"].get<std::string>();
        if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
    }
    std::string metric = options.metric;
    if (metric.empty() && !kinds.empty()) {
        metric = std::string(primary_metric_for_kind(kinds.front()).name);
        for (const std::string& kind : kinds) {
            if (primary_metric_for_kind(kind).name != metric) metric.clear();
        }
    }
    Json primary = nullptr;
    Json ranking = Json::array();
    if (!metric.empty()) {
        const bool ascending = lower_is_better(metric, kinds);
        primary = Json{{"name", metric}, {"lower_is_better", ascending}};
        for (std::size_t index = 0; index < rows_json.size(); ++index) {
            const Json& row = rows_json[index];
            if (!row["metrics"].contains(metric)) continue;
            const Json& summary = row["metrics"][metric];
            ranking.push_back(Json{{"row", index},
                                   {"config_id", row["config_id"]},
                                   {"workload", row["workload"]},
                                   {"filesystem", row["filesystem"]},
                                   {"options", row["options"]},
                                   {"metric", metric},
                                   {"n", summary.value("n", Json(0))},
                                   {"mean", summary.value("mean", Json())},
                                   {"stddev", summary.value("stddev", Json())},
                                   {"durability_risks", row["durability_risks"]}});
        }
        std::stable_sort(ranking.begin(), ranking.end(), [ascending](const Json& a, const Json& b) {
            const double left = a["mean"].is_number() ? a["mean"].get<double>() : 0;
            const double right = b["mean"].is_number() ? b["mean"].get<double>() : 0;
            return ascending ? left < right : left > right;
        });
    }

    return Json{
        {"sweep_id", sweep_id},
        {"varying_axes", sweep->varying_axes},
        {"metrics", ordered_metric_names(metric_names)},
        {"rows", std::move(rows_json)},
        {"workload_kinds", kinds},
        {"primary_metric", primary},
        {"ranking", std::move(ranking)},
    };
}

Result<Json> results_for_config(Store& store, const std::string& config_id) {
    Result<Json> settings = store.get_configuration(config_id);
    DS_TRY(settings);
    Result<std::vector<RunRecord>> runs = store.runs_for_config(config_id, RawOutput::kOmit);
    DS_TRY(runs);

    struct Row {
        std::string workload_name;
        Json workload;
        std::vector<std::int64_t> sweep_ids;  // ascending: runs come by sweep
        RowAccumulator accumulator;
    };
    std::vector<Row> rows;
    // Keyed by name and the workload's JSON: the same name with other
    // parameters measured something else.
    std::map<std::pair<std::string, std::string>, std::size_t> row_index;
    for (const RunRecord& run : runs.value()) {
        const auto key = std::make_pair(run.workload_name, run.workload.dump());
        auto [found, inserted] = row_index.try_emplace(key, rows.size());
        if (inserted) rows.push_back(Row{run.workload_name, run.workload, {}, {}});
        Row& row = rows[found->second];
        if (row.sweep_ids.empty() || row.sweep_ids.back() != run.sweep_id) {
            row.sweep_ids.push_back(run.sweep_id);
        }
        row.accumulator.add(run);
    }

    std::set<std::string> metric_names;
    for (const Row& row : rows) row.accumulator.collect_metric_names(metric_names);

    Json rows_json = Json::array();
    for (const Row& row : rows) {
        rows_json.push_back(Json{
            {"workload", row.workload_name},
            {"workload_params", row.workload},
            {"sweep_ids", row.sweep_ids},
            {"runs", row.accumulator.counts_json()},
            {"metrics", row.accumulator.metrics_json()},
        });
    }

    Json result{
        {"config_id", config_id},
        {"settings", settings.value()},
        {"metrics", ordered_metric_names(metric_names)},
        {"rows", std::move(rows_json)},
    };
    add_durability_risks(settings.value(), Json::object(), result);
    return result;
}

}  // namespace ds
