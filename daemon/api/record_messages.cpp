#include "daemon/api/record_messages.h"

namespace ds {
namespace {
// An unset timestamp or reason ("" in the store) is absent in the API.
std::optional<std::string> unless_empty(const std::string& text) {
    return text.empty() ? std::nullopt : std::optional(text);
}
}  // namespace

Result<api::SweepSummary> sweep_summary(Store& store, const SweepRecord& sweep,
                                        Scheduler* scheduler) {
    api::SweepSummary summary;
    summary.id = sweep.id;
    summary.name = sweep.name;
    summary.status = to_string(sweep.status);
    summary.created_at = unless_empty(sweep.created_at);
    summary.started_at = unless_empty(sweep.started_at);
    summary.finished_at = unless_empty(sweep.finished_at);
    summary.total_runs = sweep.total_runs;
    summary.spec_source = sweep.spec_source;
    summary.spec_toml = sweep.spec_toml;
    summary.dropped = sweep.dropped;
    summary.varying_axes = sweep.varying_axes.get<std::vector<std::string>>();
    DS_ASSIGN_OR_RETURN(const auto counts, store.run_counts(sweep.id));
    summary.counts = api::RunCounts::from_by_status(counts);
    if (scheduler) {
        double eta = scheduler->eta_seconds(sweep.id);
        if (eta >= 0) summary.eta_s = eta;
    }
    return summary;
}

api::RunEntry run_entry(const RunRecord& run, RawOutput raw_output) {
    api::RunEntry entry;
    entry.id = run.id;
    entry.sweep_id = run.sweep_id;
    entry.sequence = run.sequence;
    entry.repetition = run.repetition;
    entry.attempt = run.attempt;
    if (run.superseded_by != 0) entry.superseded_by = run.superseded_by;
    entry.config_id = run.config_id;
    entry.config = to_json(run.config);
    entry.workload_name = run.workload_name;
    entry.workload = to_json(run.workload);
    entry.status = to_string(run.status);
    entry.failure_reason = unless_empty(run.failure_reason);
    entry.accel = unless_empty(run.accel);
    entry.vm_name = unless_empty(run.vm_name);
    entry.volume_name = unless_empty(run.volume_name);
    entry.console_log = unless_empty(run.console_log);
    entry.started_at = unless_empty(run.started_at);
    entry.finished_at = unless_empty(run.finished_at);
    entry.timings = run.timings;
    entry.versions = run.versions;
    entry.applied_settings = run.applied_settings;
    entry.metrics = Json(run.metrics);
    if (raw_output == RawOutput::kInclude) entry.raw_output = run.raw_output;
    return entry;
}

}  // namespace ds
