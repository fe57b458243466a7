#include "common/api/events.h"

namespace ds::api {

Result<SweepEvent> SweepEvent::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    SweepEvent event;
    in.read("type", event.type);
    in.read("sweep_id", event.sweep_id);
    in.read("time", event.time);
    in.read("status", event.status);
    in.read("total_runs", event.total_runs);
    in.read("counts", event.counts);
    in.read("eta_s", event.eta_s);
    in.read("run_id", event.run_id);
    in.read("config_id", event.config_id);
    in.read("config_label", event.config_label);
    in.read("workload", event.workload);
    in.read("repetition", event.repetition);
    in.read("phase", event.phase);
    in.read("message", event.message);
    in.read("elapsed_s", event.elapsed_s);
    in.read("fraction", event.fraction);
    in.read("total_s", event.total_s);
    in.read("decision", event.decision);
    return in.finish(std::move(event));
}

namespace {
// `json[key]` = `value` when it is set.
template <class T>
void set_if(Json& json, const char* key, const std::optional<T>& value) {
    if (value) json[key] = *value;
}
}  // namespace

Json to_json(const SweepEvent& event) {
    Json json = Json::object();
    set_if(json, "type", event.type);
    set_if(json, "sweep_id", event.sweep_id);
    set_if(json, "time", event.time);
    set_if(json, "status", event.status);
    set_if(json, "total_runs", event.total_runs);
    if (event.counts) json["counts"] = to_json(*event.counts);
    set_if(json, "eta_s", event.eta_s);
    set_if(json, "run_id", event.run_id);
    set_if(json, "config_id", event.config_id);
    set_if(json, "config_label", event.config_label);
    set_if(json, "workload", event.workload);
    set_if(json, "repetition", event.repetition);
    set_if(json, "phase", event.phase);
    set_if(json, "message", event.message);
    set_if(json, "elapsed_s", event.elapsed_s);
    set_if(json, "fraction", event.fraction);
    set_if(json, "total_s", event.total_s);
    set_if(json, "decision", event.decision);
    return json;
}

}  // namespace ds::api
