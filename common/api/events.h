// GET /v1/sweeps/ID/events (docs/api.md "Event stream"): one line of the
// stream, as the daemon writes it and hostctl's watch reads it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/api/json_codec.h"
#include "common/api/sweeps.h"

namespace ds::api {

// One event. Each type sends its own fields (docs/api.md), so each is
// encoded only when set: snapshot (sweep_id, status, total_runs, counts,
// eta_s), run_started (run_id, config_id, config_label, workload,
// repetition), run_progress (run_id, phase, message, elapsed_s, fraction),
// run_finished (run_id, status, message, total_s), progress (counts,
// eta_s), round_decision (decision, total_runs, counts), sweep_finished
// (status, counts) and keepalive. The event bus adds sweep_id and time to
// every event it carries, the stream total_runs. Every field has an
// initializer, so the daemon names only the ones it sets
// (SweepEvent{.type = ..., .run_id = ...}).
struct SweepEvent {
    std::optional<std::string> type{};
    std::optional<std::int64_t> sweep_id{};
    std::optional<std::string> time{};  // "2026-11-29T20:00:00Z"
    // The sweep's (snapshot, sweep_finished) or the run's (run_finished),
    // common/status.h's spelling.
    std::optional<std::string> status{};
    std::optional<std::int64_t> total_runs{};
    std::optional<RunCounts> counts{};
    std::optional<double> eta_s{};
    std::optional<std::int64_t> run_id{};
    std::optional<std::string> config_id{};
    std::optional<std::string> config_label{};
    std::optional<std::string> workload{};  // its name
    std::optional<std::int64_t> repetition{};
    std::optional<std::string> phase{};
    std::optional<std::string> message{};  // progress; run_finished: the failure reason
    std::optional<double> elapsed_s{};
    std::optional<double> fraction{};  // 0 to 1
    std::optional<double> total_s{};
    // The adaptive repetitions' decision ({after_round, decision, reason,
    // widest}), kept as JSON as SweepSummary's round_decisions are: hostctl
    // prints both with one printer.
    std::optional<Json> decision{};

    static Result<SweepEvent> from_json(const Json& json, std::string_view path = "");
    bool operator==(const SweepEvent&) const = default;
};
Json to_json(const SweepEvent& event);

}  // namespace ds::api
