#include "common/status.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace ds;

TEST_CASE("status: every spelling parses back to its value", "[status]") {
    for (RunStatus status : all_run_status_values())
        CHECK(parse_run_status(to_string(status)) == status);
    for (SweepStatus status : all_sweep_status_values())
        CHECK(parse_sweep_status(to_string(status)) == status);
    CHECK(all_run_status_names().size() == all_run_status_values().size());
    CHECK(all_run_status_names()[4] == "timed_out");
}

TEST_CASE("status: unknown or differently spelled text is no status", "[status]") {
    CHECK_FALSE(parse_run_status("").has_value());
    CHECK_FALSE(parse_run_status("Succeeded").has_value());
    CHECK_FALSE(parse_run_status("queued").has_value());  // a sweep's, not a run's
    CHECK_FALSE(parse_sweep_status("timed_out").has_value());
}

TEST_CASE("status: final states", "[status]") {
    CHECK_FALSE(is_final(RunStatus::kPending));
    CHECK_FALSE(is_final(RunStatus::kRunning));
    CHECK(is_final(RunStatus::kSucceeded));
    CHECK(is_final(RunStatus::kFailed));
    CHECK(is_final(RunStatus::kTimedOut));
    CHECK(is_final(RunStatus::kCancelled));
    CHECK_FALSE(is_final(SweepStatus::kQueued));
    CHECK_FALSE(is_final(SweepStatus::kRunning));
    CHECK(is_final(SweepStatus::kSucceeded));
    CHECK(is_final(SweepStatus::kFailed));
    CHECK(is_final(SweepStatus::kCancelled));
}

TEST_CASE("status: JSON holds the spelling, not the enum's number", "[status]") {
    nlohmann::json event = {{"status", RunStatus::kTimedOut}, {"sweep", SweepStatus::kQueued}};
    CHECK(event.dump() == R"({"status":"timed_out","sweep":"queued"})");
}
