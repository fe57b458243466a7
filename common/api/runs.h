// A sweep's runs as the API shows them (docs/api.md): the runs page
// (GET /v1/sweeps/ID/runs, which GET /v1/sweeps/ID repeats) and one run
// (GET /v1/runs/ID).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/api/json_codec.h"

namespace ds::api {

// One run: the store's record (empty texts as nullopt). The configuration,
// workload, timings, versions, applied settings and metrics are kept as
// JSON: hostctl prints them generically, key by key.
struct RunEntry {
    std::optional<std::int64_t> id;
    std::optional<std::int64_t> sweep_id;
    std::optional<std::int64_t> sequence;       // execution order within the sweep
    std::optional<std::int64_t> repetition;     // 0-based
    std::optional<std::int64_t> attempt;        // 1 unless the daemon stopped during one
    std::optional<std::int64_t> superseded_by;  // the attempt repeating this one
    std::optional<std::string> config_id;
    Json config;  // the settings; older drafts sent them as "settings"
    std::optional<std::string> workload_name;
    Json workload;                      // its parameters (older drafts: its name)
    std::optional<std::string> status;  // common/status.h's spelling
    std::optional<std::string> failure_reason;
    std::optional<std::string> accel;
    std::optional<std::string> vm_name;
    std::optional<std::string> volume_name;
    std::optional<std::string> console_log;
    std::optional<std::string> started_at;
    std::optional<std::string> finished_at;
    Json timings;
    Json versions;
    Json applied_settings;
    Json metrics;                           // {name: value}
    std::optional<std::string> raw_output;  // GET /v1/runs/ID only

    static Result<RunEntry> from_json(const Json& json, std::string_view path = "");
    bool operator==(const RunEntry&) const = default;
};
Json to_json(const RunEntry& run);

// What a page of runs asks for: the runs after sequence `after` (default:
// from the first), at most `limit` (default and maximum: the daemon's).
struct RunsPageRequest {
    std::optional<std::int64_t> after;
    std::optional<std::int64_t> limit;

    // "?limit=N&after=SEQ", the given ones only; "" when neither is.
    std::string query() const;
    // The request from its query parameters' values (`lookup` answers one
    // by name, nullptr when it was not sent): errc::kInvalidArgument for a
    // value that is not a non-negative integer.
    template <class Lookup>
    static Result<RunsPageRequest> from_query(Lookup lookup);
};

// The runs page: its runs, and the sequence to ask `after` for the next
// page (nullopt on the last).
struct RunsPage {
    std::vector<RunEntry> runs;
    std::optional<std::int64_t> next_after;

    static Result<RunsPage> from_json(const Json& json, std::string_view path = "");
    bool operator==(const RunsPage&) const = default;
};
Json to_json(const RunsPage& page);

// GET /v1/runs/ID: the run with its raw output.
struct RunShowReply {
    std::optional<RunEntry> run;

    static Result<RunShowReply> from_json(const Json& json, std::string_view path = "");
    bool operator==(const RunShowReply&) const = default;
};
Json to_json(const RunShowReply& reply);

// One query parameter of a runs page: a non-negative integer.
Result<std::optional<std::int64_t>> runs_page_parameter(std::string_view name,
                                                        const std::string* given);

template <class Lookup>
Result<RunsPageRequest> RunsPageRequest::from_query(Lookup lookup) {
    RunsPageRequest request;
    for (auto [name, target] :
         {std::pair{"limit", &request.limit}, std::pair{"after", &request.after}}) {
        DS_ASSIGN_OR_RETURN(const std::string* given, lookup(name));
        DS_ASSIGN_OR_RETURN(*target, runs_page_parameter(name, given));
    }
    return request;
}

}  // namespace ds::api
