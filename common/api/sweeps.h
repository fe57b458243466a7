// A sweep as the API shows it (docs/api.md), and the replies built around
// it: GET /v1/sweeps, POST /v1/sweeps, GET /v1/sweeps/ID and
// POST /v1/sweeps/ID/cancel.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/api/json_codec.h"
#include "common/api/runs.h"

namespace ds::api {

// A sweep's runs by status (the daemon sends every status, hostctl reads
// an absent one as 0).
struct RunCounts {
    std::int64_t pending = 0;
    std::int64_t running = 0;
    std::int64_t succeeded = 0;
    std::int64_t failed = 0;
    std::int64_t timed_out = 0;  // stopped at the workload's time limit
    std::int64_t cancelled = 0;
    std::int64_t done() const { return succeeded + failed + timed_out + cancelled; }

    static Result<RunCounts> from_json(const Json& json, std::string_view path = "");
    // From counts by status spelling (the store's run_counts); a status it
    // does not name counts 0.
    static RunCounts from_by_status(const std::map<std::string, int>& by_status);
    bool operator==(const RunCounts&) const = default;
};
Json to_json(const RunCounts& counts);

// One sweep: its record (the store's, empty timestamps as nullopt), its
// run counts and, while it runs, the scheduler's estimate of what is left.
struct SweepSummary {
    std::optional<std::int64_t> id;
    std::optional<std::string> name;
    std::optional<std::string> status;  // common/status.h's spelling
    std::optional<std::string> created_at;
    std::optional<std::string> started_at;
    std::optional<std::string> finished_at;
    std::optional<std::int64_t> total_runs;
    std::optional<std::string> spec_source;
    std::optional<std::string> spec_toml;
    // [{"settings":{..},"reason":".."}]: kept as JSON (a submission's reply
    // repeats it at its top, which hostctl prints).
    Json dropped;
    std::vector<std::string> varying_axes;
    std::optional<RunCounts> counts;
    std::optional<double> eta_s;  // sent only while the scheduler has an estimate
    // GET /v1/sweeps/ID only: the adaptive repetitions' decisions, kept as
    // JSON: hostctl prints them as it prints the watch's round events.
    std::optional<Json> round_decisions;

    static Result<SweepSummary> from_json(const Json& json, std::string_view path = "");
    bool operator==(const SweepSummary&) const = default;
};
Json to_json(const SweepSummary& sweep);

// GET /v1/sweeps: every sweep, oldest first.
struct SweepListReply {
    std::vector<SweepSummary> sweeps;

    static Result<SweepListReply> from_json(const Json& json, std::string_view path = "");
    bool operator==(const SweepListReply&) const = default;
};
Json to_json(const SweepListReply& reply);

// POST /v1/sweeps (201): the sweep as stored, and what the submitter should
// know: the combinations dropped as impossible (kept as JSON, as in
// SweepSummary), the axes that vary, the (configuration, workload) pairs a
// workload's `filesystems` left out, and the placement warnings.
struct SweepSubmitReply {
    SweepSummary sweep;
    Json dropped;
    std::vector<std::string> varying_axes;
    std::optional<std::int64_t> skipped_by_filesystems;
    std::vector<std::string> warnings;

    static Result<SweepSubmitReply> from_json(const Json& json, std::string_view path = "");
    bool operator==(const SweepSubmitReply&) const = default;
};
Json to_json(const SweepSubmitReply& reply);

// GET /v1/sweeps/ID: the sweep (with its round decisions) and a page of its
// runs, as GET /v1/sweeps/ID/runs answers it.
struct SweepShowReply {
    SweepSummary sweep;
    RunsPage page;

    static Result<SweepShowReply> from_json(const Json& json, std::string_view path = "");
    bool operator==(const SweepShowReply&) const = default;
};
Json to_json(const SweepShowReply& reply);

// POST /v1/sweeps/ID/cancel: the sweep as it is after the cancel.
struct CancelReply {
    SweepSummary sweep;

    static Result<CancelReply> from_json(const Json& json, std::string_view path = "");
    bool operator==(const CancelReply&) const = default;
};
Json to_json(const CancelReply& reply);

}  // namespace ds::api
