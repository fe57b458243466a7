// GET /v1/sweeps/ID/events' lines as a typed message (common/api/events.h):
// each type's event encodes and decodes to itself, absent fields stay
// absent, and a mistyped field names its path.
#include <catch2/catch.hpp>

#include "common/api/events.h"
#include "unit/api_messages.h"

namespace ds::api {

using test::decode_error;
using test::decoded;
using test::round_trip;

TEST_CASE("each type of event round-trips", "[api][events]") {
    for (const char* line : {
             R"({"type": "snapshot", "sweep_id": 4, "status": "running", "total_runs": 3,
                 "time": "2026-12-05T04:00:00Z", "eta_s": 12.5,
                 "counts": {"pending": 2, "running": 1, "succeeded": 0, "failed": 0,
                            "timed_out": 0, "cancelled": 0}})",
             R"({"type": "run_started", "run_id": 7, "config_id": "cd34",
                 "config_label": "ext4 cache=none", "workload": "randrw", "repetition": 0,
                 "sweep_id": 4, "time": "2026-12-05T04:00:01Z", "total_runs": 3})",
             R"({"type": "run_progress", "run_id": 7, "phase": "durability", "message": "state 3",
                 "elapsed_s": 4.5, "fraction": 0.25, "sweep_id": 4, "total_runs": 3})",
             R"({"type": "run_finished", "run_id": 7, "status": "failed", "message": "",
                 "total_s": 61.0, "sweep_id": 4, "total_runs": 3})",
             R"({"type": "round_decision", "total_runs": 6,
                 "decision": {"after_round": 1, "decision": "add_round", "reason": "wide"}})",
             R"({"type": "keepalive"})",
         }) {
        const Json json = Json::parse(line);
        const auto event = decoded<SweepEvent>(json);
        CHECK(to_json(event) == json);
        CHECK(round_trip(event) == event);
    }
    const auto finished = decoded<SweepEvent>(Json::parse(R"({"type": "run_finished",
        "status": "succeeded", "total_s": 3})"));
    CHECK(finished.total_s == 3.0);
    CHECK_FALSE(finished.run_id);
}

TEST_CASE("an event's absent fields stay absent", "[api][events]") {
    const auto event = decoded<SweepEvent>(Json::parse(R"({"type": "progress"})"));
    CHECK_FALSE(event.counts);
    CHECK_FALSE(event.eta_s);
    CHECK(to_json(event) == Json{{"type", "progress"}});
    CHECK(to_json(decoded<SweepEvent>(Json::object())) == Json::object());
}

TEST_CASE("a mistyped event field names its path", "[api][events]") {
    CHECK(decode_error<SweepEvent>(Json::parse(R"({"run_id": "7"})")) ==
          "run_id: expected an integer, got string");
    CHECK(decode_error<SweepEvent>(Json::parse(R"({"counts": {"failed": 1.5}})")) ==
          "counts.failed: expected an integer, got number");
    CHECK(decode_error<SweepEvent>(Json::parse(R"({"fraction": "half"})")) ==
          "fraction: expected a number, got string");
}

}  // namespace ds::api
