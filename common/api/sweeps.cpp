#include "common/api/sweeps.h"

namespace ds::api {

Result<RunCounts> RunCounts::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    RunCounts counts;
    in.read("pending", counts.pending);
    in.read("running", counts.running);
    in.read("succeeded", counts.succeeded);
    in.read("failed", counts.failed);
    in.read("timed_out", counts.timed_out);
    in.read("cancelled", counts.cancelled);
    return in.finish(counts);
}

RunCounts RunCounts::from_by_status(const std::map<std::string, int>& by_status) {
    // An object of integers always reads; the keys are from_json's.
    auto counts = from_json(Json(by_status));
    return counts.ok() ? counts.value() : RunCounts{};
}

Json to_json(const RunCounts& counts) {
    return {{"pending", counts.pending},     {"running", counts.running},
            {"succeeded", counts.succeeded}, {"failed", counts.failed},
            {"timed_out", counts.timed_out}, {"cancelled", counts.cancelled}};
}

Result<SweepSummary> SweepSummary::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    SweepSummary sweep;
    in.read("id", sweep.id);
    in.read("name", sweep.name);
    in.read("status", sweep.status);
    in.read("created_at", sweep.created_at);
    in.read("started_at", sweep.started_at);
    in.read("finished_at", sweep.finished_at);
    in.read("total_runs", sweep.total_runs);
    in.read("spec_source", sweep.spec_source);
    in.read("spec_toml", sweep.spec_toml);
    in.read("dropped", sweep.dropped);
    in.read("varying_axes", sweep.varying_axes);
    in.read("counts", sweep.counts);
    in.read("eta_s", sweep.eta_s);
    in.read("round_decisions", sweep.round_decisions);
    return in.finish(std::move(sweep));
}

Json to_json(const SweepSummary& sweep) {
    Json json{{"id", value_or_null(sweep.id)},
              {"name", value_or_null(sweep.name)},
              {"status", value_or_null(sweep.status)},
              {"created_at", value_or_null(sweep.created_at)},
              {"started_at", value_or_null(sweep.started_at)},
              {"finished_at", value_or_null(sweep.finished_at)},
              {"total_runs", value_or_null(sweep.total_runs)},
              {"spec_source", value_or_null(sweep.spec_source)},
              {"spec_toml", value_or_null(sweep.spec_toml)},
              {"dropped", sweep.dropped},
              {"varying_axes", sweep.varying_axes},
              {"counts", sweep.counts ? to_json(*sweep.counts) : Json()}};
    if (sweep.eta_s) json["eta_s"] = *sweep.eta_s;
    if (sweep.round_decisions) json["round_decisions"] = *sweep.round_decisions;
    return json;
}

Result<SweepListReply> SweepListReply::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    SweepListReply reply;
    in.read("sweeps", reply.sweeps);
    return in.finish(std::move(reply));
}

Json to_json(const SweepListReply& reply) {
    return {{"sweeps", json_array(reply.sweeps)}};
}

Result<SweepSubmitReply> SweepSubmitReply::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    SweepSubmitReply reply;
    in.read("sweep", reply.sweep);
    in.read("dropped", reply.dropped);
    in.read("varying_axes", reply.varying_axes);
    in.read("skipped_by_filesystems", reply.skipped_by_filesystems);
    in.read("warnings", reply.warnings);
    return in.finish(std::move(reply));
}

Json to_json(const SweepSubmitReply& reply) {
    return {{"sweep", to_json(reply.sweep)},
            {"dropped", reply.dropped},
            {"varying_axes", reply.varying_axes},
            {"skipped_by_filesystems", value_or_null(reply.skipped_by_filesystems)},
            {"warnings", reply.warnings}};
}

Result<SweepShowReply> SweepShowReply::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    SweepShowReply reply;
    in.read("sweep", reply.sweep);
    auto page = RunsPage::from_json(json, path);
    if (!page.ok()) return page.error();
    reply.page = std::move(page).value();
    return in.finish(std::move(reply));
}

Json to_json(const SweepShowReply& reply) {
    Json json = to_json(reply.page);
    json["sweep"] = to_json(reply.sweep);
    return json;
}

Result<CancelReply> CancelReply::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    CancelReply reply;
    in.read("sweep", reply.sweep);
    return in.finish(std::move(reply));
}

Json to_json(const CancelReply& reply) {
    return {{"sweep", to_json(reply.sweep)}};
}

}  // namespace ds::api
