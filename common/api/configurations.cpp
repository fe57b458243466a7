#include "common/api/configurations.h"

namespace ds::api {

Result<ConfigResultRow> ConfigResultRow::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    ConfigResultRow row;
    in.read("workload", row.workload);
    in.read("workload_params", row.workload_params);
    in.read("sweep_ids", row.sweep_ids);
    in.read("partition", row.partition);
    in.read("runs", row.runs);
    in.read("metrics", row.metrics);
    return in.finish(std::move(row));
}

Json to_json(const ConfigResultRow& row) {
    return {{"workload", value_or_null(row.workload)},
            {"workload_params", row.workload_params},
            {"sweep_ids", row.sweep_ids},
            {"partition", value_or_null(row.partition)},
            {"runs", row.runs},
            {"metrics", row.metrics}};
}

Result<ConfigResultsReply> ConfigResultsReply::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    ConfigResultsReply reply;
    in.read("config_id", reply.config_id);
    in.read("settings", reply.settings);
    in.read("durability_risks", reply.durability_risks);
    in.read("settings_error", reply.settings_error);
    in.read("sweeps_pooled", reply.sweeps_pooled);
    in.read("partitions", reply.partitions);
    in.read("metrics", reply.metrics);
    in.read("rows", reply.rows);
    return in.finish(std::move(reply));
}

Json to_json(const ConfigResultsReply& reply) {
    Json json{{"config_id", value_or_null(reply.config_id)},
              {"settings", reply.settings},
              {"durability_risks", reply.settings_error ? Json() : Json(reply.durability_risks)},
              {"sweeps_pooled", value_or_null(reply.sweeps_pooled)},
              {"partitions", reply.partitions},
              {"metrics", reply.metrics},
              {"rows", json_array(reply.rows)}};
    if (reply.settings_error) json["settings_error"] = *reply.settings_error;
    return json;
}

Result<ApplyReply> ApplyReply::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    ApplyReply reply;
    in.read("config_id", reply.config_id);
    in.read("format", reply.format);
    in.read("settings", reply.settings);
    in.read("durability_risks", reply.durability_risks);
    in.read("notes", reply.notes);
    in.read("body", reply.body);
    in.read("snippet", reply.snippet);
    in.read("measured_durability", reply.measured_durability);
    in.read("workload", reply.workload);
    return in.finish(std::move(reply));
}

Json to_json(const ApplyReply& reply) {
    Json json{{"config_id", value_or_null(reply.config_id)},
              {"format", value_or_null(reply.format)},
              {"settings", reply.settings},
              {"durability_risks", reply.durability_risks},
              {"notes", reply.notes},
              {"body", value_or_null(reply.body)},
              {"snippet", value_or_null(reply.snippet)},
              {"measured_durability", reply.measured_durability}};
    if (reply.workload) json["workload"] = *reply.workload;
    return json;
}

}  // namespace ds::api
