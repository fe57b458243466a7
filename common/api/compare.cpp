#include "common/api/compare.h"

namespace ds::api {

Result<ComparedMetric> ComparedMetric::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    ComparedMetric metric;
    in.read("name", metric.name);
    in.read("lower_is_better", metric.lower_is_better);
    return in.finish(std::move(metric));
}

Json to_json(const ComparedMetric& metric) {
    return {{"name", value_or_null(metric.name)},
            {"lower_is_better", value_or_null(metric.lower_is_better)}};
}

Result<CompareBaseline> CompareBaseline::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    CompareBaseline baseline;
    in.read("config_id", baseline.config_id);
    in.read("chosen_by", baseline.chosen_by);
    in.read("tuning", baseline.tuning);
    return in.finish(std::move(baseline));
}

Json to_json(const CompareBaseline& baseline) {
    return {{"config_id", value_or_null(baseline.config_id)},
            {"chosen_by", value_or_null(baseline.chosen_by)},
            {"tuning", value_or_null(baseline.tuning)}};
}

Result<GoldenDatasetSavings> GoldenDatasetSavings::from_json(const Json& json,
                                                             std::string_view path) {
    ObjectReader in(json, path);
    GoldenDatasetSavings savings;
    in.read("runs", savings.runs);
    in.read("golden_volumes", savings.golden_volumes);
    in.read("avoided_s", savings.avoided_s);
    in.read("preparation_s", savings.preparation_s);
    in.read("clone_s", savings.clone_s);
    in.read("saved_s", savings.saved_s);
    return in.finish(std::move(savings));
}

Json to_json(const GoldenDatasetSavings& savings) {
    return {{"runs", value_or_null(savings.runs)},
            {"golden_volumes", value_or_null(savings.golden_volumes)},
            {"avoided_s", value_or_null(savings.avoided_s)},
            {"preparation_s", value_or_null(savings.preparation_s)},
            {"clone_s", value_or_null(savings.clone_s)},
            {"saved_s", value_or_null(savings.saved_s)}};
}

Result<CompareRow> CompareRow::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    CompareRow row;
    in.read("config_id", row.config_id);
    in.read("workload", row.workload);
    in.read("settings", row.settings);
    in.read("partition", row.partition);
    in.read("runs", row.runs);
    in.read("metrics", row.metrics);
    in.read("workload_kind", row.workload_kind);
    in.read("server_variables", row.server_variables);
    in.read("filesystem", row.filesystem);
    in.read("options", row.options);
    in.read("primary_metric", row.primary_metric);
    in.read("durability_risks", row.durability_risks);
    in.read("settings_error", row.settings_error);
    in.read("host_baseline", row.host_baseline);
    in.read("is_baseline", row.is_baseline);
    in.read("vs_host", row.vs_host);
    in.read("vs_baseline", row.vs_baseline);
    in.read("durability", row.durability);
    in.read("not_checked", row.not_checked);
    return in.finish(std::move(row));
}

Json to_json(const CompareRow& row) {
    Json json{{"config_id", value_or_null(row.config_id)},
              {"workload", value_or_null(row.workload)},
              {"settings", row.settings},
              {"partition", value_or_null(row.partition)},
              {"runs", row.runs},
              {"metrics", row.metrics},
              {"workload_kind", value_or_null(row.workload_kind)},
              {"server_variables", row.server_variables},
              {"filesystem", value_or_null(row.filesystem)},
              {"options", value_or_null(row.options)},
              {"primary_metric", row.primary_metric ? to_json(*row.primary_metric) : Json()},
              {"durability_risks", row.settings_error ? Json() : Json(row.durability_risks)},
              {"host_baseline", value_or_null(row.host_baseline)},
              {"is_baseline", value_or_null(row.is_baseline)},
              {"durability", row.durability},
              {"not_checked", row.not_checked}};
    if (row.settings_error) json["settings_error"] = *row.settings_error;
    if (row.vs_host) json["vs_host"] = *row.vs_host;
    if (row.vs_baseline) json["vs_baseline"] = *row.vs_baseline;
    return json;
}

Result<CompareReply> CompareReply::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    CompareReply reply;
    in.read("sweep_id", reply.sweep_id);
    in.read("varying_axes", reply.varying_axes);
    in.read("metrics", reply.metrics);
    in.read("partitions", reply.partitions);
    in.read("baseline", reply.baseline);
    in.read("practical_difference", reply.practical_difference);
    in.read("min_runs_for_verdict", reply.min_runs_for_verdict);
    in.read("significance_level", reply.significance_level);
    in.read("comparisons", reply.comparisons);
    in.read("rows", reply.rows);
    in.read("workload_kinds", reply.workload_kinds);
    in.read("primary_metric", reply.primary_metric);
    in.read("ranking", reply.ranking);
    in.read("golden_datasets", reply.golden_datasets);
    return in.finish(std::move(reply));
}

Json to_json(const CompareReply& reply) {
    return {{"sweep_id", value_or_null(reply.sweep_id)},
            {"varying_axes", reply.varying_axes},
            {"metrics", reply.metrics},
            {"partitions", reply.partitions},
            {"baseline", reply.baseline ? to_json(*reply.baseline) : Json()},
            {"practical_difference", value_or_null(reply.practical_difference)},
            {"min_runs_for_verdict", value_or_null(reply.min_runs_for_verdict)},
            {"significance_level", value_or_null(reply.significance_level)},
            {"comparisons", value_or_null(reply.comparisons)},
            {"rows", json_array(reply.rows)},
            {"workload_kinds", reply.workload_kinds},
            {"primary_metric", reply.primary_metric ? to_json(*reply.primary_metric) : Json()},
            {"ranking", reply.ranking},
            {"golden_datasets", reply.golden_datasets ? to_json(*reply.golden_datasets) : Json()}};
}

}  // namespace ds::api
