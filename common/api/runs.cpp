#include "common/api/runs.h"

#include <charconv>

namespace ds::api {

Result<RunEntry> RunEntry::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    RunEntry run;
    in.read("id", run.id);
    in.read("sweep_id", run.sweep_id);
    in.read("sequence", run.sequence);
    in.read("repetition", run.repetition);
    in.read("attempt", run.attempt);
    in.read("superseded_by", run.superseded_by);
    in.read("config_id", run.config_id);
    in.read("config", run.config);
    if (!run.config.is_object()) in.read("settings", run.config);
    in.read("workload_name", run.workload_name);
    in.read("workload", run.workload);
    in.read("status", run.status);
    in.read("failure_reason", run.failure_reason);
    in.read("accel", run.accel);
    in.read("vm_name", run.vm_name);
    in.read("volume_name", run.volume_name);
    in.read("console_log", run.console_log);
    in.read("started_at", run.started_at);
    in.read("finished_at", run.finished_at);
    in.read("timings", run.timings);
    in.read("versions", run.versions);
    in.read("applied_settings", run.applied_settings);
    in.read("metrics", run.metrics);
    in.read("raw_output", run.raw_output);
    return in.finish(std::move(run));
}

Json to_json(const RunEntry& run) {
    Json json{
        {"id", value_or_null(run.id)},
        {"sweep_id", value_or_null(run.sweep_id)},
        {"sequence", value_or_null(run.sequence)},
        {"repetition", value_or_null(run.repetition)},
        {"attempt", value_or_null(run.attempt)},
        {"superseded_by", value_or_null(run.superseded_by)},
        {"config_id", value_or_null(run.config_id)},
        {"config", run.config},
        {"workload_name", value_or_null(run.workload_name)},
        {"workload", run.workload},
        {"status", value_or_null(run.status)},
        {"failure_reason", value_or_null(run.failure_reason)},
        {"accel", value_or_null(run.accel)},
        {"vm_name", value_or_null(run.vm_name)},
        {"volume_name", value_or_null(run.volume_name)},
        {"console_log", value_or_null(run.console_log)},
        {"started_at", value_or_null(run.started_at)},
        {"finished_at", value_or_null(run.finished_at)},
        {"timings", run.timings},
        {"versions", run.versions},
        {"applied_settings", run.applied_settings},
        {"metrics", run.metrics},
    };
    if (run.raw_output) json["raw_output"] = *run.raw_output;
    return json;
}

std::string RunsPageRequest::query() const {
    std::string query;
    for (auto [name, value] : {std::pair{"limit", limit}, std::pair{"after", after}}) {
        if (value)
            query += (query.empty() ? "?" : "&") + std::string(name) + "=" + std::to_string(*value);
    }
    return query;
}

Result<std::optional<std::int64_t>> runs_page_parameter(std::string_view name,
                                                        const std::string* given) {
    if (!given) return std::optional<std::int64_t>();
    const std::string& text = *given;
    int number = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || number < 0)
        return make_error(errc::kInvalidArgument, "query parameter '" + std::string(name) +
                                                      "' must be a non-negative integer, not '" +
                                                      text + "'");
    return std::optional<std::int64_t>(number);
}

Result<RunsPage> RunsPage::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    RunsPage page;
    in.read("runs", page.runs);
    in.read("next_after", page.next_after);
    return in.finish(std::move(page));
}

Json to_json(const RunsPage& page) {
    return {{"runs", json_array(page.runs)}, {"next_after", value_or_null(page.next_after)}};
}

Result<RunShowReply> RunShowReply::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    RunShowReply reply;
    in.read("run", reply.run);
    return in.finish(std::move(reply));
}

Json to_json(const RunShowReply& reply) {
    return {{"run", reply.run ? to_json(*reply.run) : Json()}};
}

}  // namespace ds::api
