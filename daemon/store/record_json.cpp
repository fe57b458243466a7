// The API shapes of the store's records (docs/api.md).
#include "daemon/store/store.h"

namespace ds {
namespace {
Json text_or_null(const std::string& value) {
    return value.empty() ? Json(nullptr) : Json(value);
}
}  // namespace

Json to_json(const SweepRecord& sweep) {
    return Json{
        {"id", sweep.id},
        {"name", sweep.name},
        {"status", to_string(sweep.status)},
        {"created_at", text_or_null(sweep.created_at)},
        {"started_at", text_or_null(sweep.started_at)},
        {"finished_at", text_or_null(sweep.finished_at)},
        {"total_runs", sweep.total_runs},
        {"spec_source", sweep.spec_source},
        {"spec_toml", sweep.spec_toml},
        {"dropped", sweep.dropped},
        {"varying_axes", sweep.varying_axes},
    };
}

Json to_json(const RunRecord& run, bool include_raw_output) {
    Json json{
        {"id", run.id},
        {"sweep_id", run.sweep_id},
        {"sequence", run.sequence},
        {"repetition", run.repetition},
        {"attempt", run.attempt},
        {"superseded_by", run.superseded_by == 0 ? Json(nullptr) : Json(run.superseded_by)},
        {"config_id", run.config_id},
        {"config", to_json(run.config)},
        {"workload_name", run.workload_name},
        {"workload", to_json(run.workload)},
        {"status", to_string(run.status)},
        {"failure_reason", text_or_null(run.failure_reason)},
        {"accel", text_or_null(run.accel)},
        {"vm_name", text_or_null(run.vm_name)},
        {"volume_name", text_or_null(run.volume_name)},
        {"console_log", text_or_null(run.console_log)},
        {"started_at", text_or_null(run.started_at)},
        {"finished_at", text_or_null(run.finished_at)},
        {"timings", run.timings},
        {"versions", run.versions},
        {"applied_settings", run.applied_settings},
        {"metrics", Json(run.metrics)},
    };
    if (include_raw_output) json["raw_output"] = run.raw_output;
    return json;
}

}  // namespace ds
