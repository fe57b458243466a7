#include "daemon/compare.h"

#include <algorithm>
#include <array>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "common/settings.h"
#include "common/stats.h"

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

// The runs of one report row: counts every run, keeps the metric values of
// the succeeded ones.
class RowAccumulator {
  public:
    RowAccumulator() {
        for (std::string_view status : all_run_statuses()) counts_[std::string(status)] = 0;
    }

    void add(const RunRecord& run) {
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

// Sets "durability_risks" (and "settings_error" when the stored settings no
// longer parse) on `row`.
void add_durability_risks(const Json& settings, Json& row) {
    Result<StorageConfig> config = storage_config_from_json(settings);
    if (!config.ok()) {
        row["durability_risks"] = nullptr;
        row["settings_error"] = config.error().message;
        return;
    }
    row["durability_risks"] = durability_risks(config.value());
}

}  // namespace

Result<Json> compare_sweep(Store& store, std::int64_t sweep_id) {
    Result<SweepRecord> sweep = store.get_sweep(sweep_id);
    DS_TRY(sweep);
    Result<std::vector<RunRecord>> runs = store.list_runs(sweep_id, RawOutput::kOmit);
    DS_TRY(runs);

    struct Row {
        std::string config_id;
        std::string workload_name;
        Json settings;
        RowAccumulator accumulator;
    };
    std::vector<Row> rows;  // in first-sequence order (list_runs is ordered by sequence)
    std::map<std::pair<std::string, std::string>, std::size_t> row_index;
    for (const RunRecord& run : runs.value()) {
        const auto key = std::make_pair(run.config_id, run.workload_name);
        auto [found, inserted] = row_index.try_emplace(key, rows.size());
        if (inserted) rows.push_back(Row{run.config_id, run.workload_name, run.config, {}});
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
        add_durability_risks(row.settings, row_json);
        rows_json.push_back(std::move(row_json));
    }

    return Json{
        {"sweep_id", sweep_id},
        {"varying_axes", sweep->varying_axes},
        {"metrics", ordered_metric_names(metric_names)},
        {"rows", std::move(rows_json)},
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
    add_durability_risks(settings.value(), result);
    return result;
}

}  // namespace ds
