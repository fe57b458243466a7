// applied_settings.durability as a durability run stores it (docs/schema.md),
// for the tests of what people see of it: compare, the report, apply.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

namespace ds::test {

using Json = nlohmann::json;

// The "summary" of a run's crash states (DurabilitySummary::to_json).
inline Json durability_summary(int states, int with_losses, long long max_lost, double mean_lost,
                               int fsck_failures = 0) {
    return Json{{"crash_states", states},
                {"mount_failures", 0},
                {"fsck_failures", fsck_failures},
                {"recovery_failures", 0},
                {"states_with_losses", with_losses},
                {"max_lost", max_lost},
                {"mean_lost", mean_lost},
                {"verdict", "(the producer's)"}};
}

// A whole record around `summary`.
inline Json durability_record(Json summary, const std::string& model = "flush-barriers",
                              bool volatile_cache = true) {
    return Json{{"crash_points", 50},
                {"volatile_cache", volatile_cache},
                {"model", model},
                {"seed", 123},
                {"log", {{"entries", 900}, {"flushes", 300}, {"bytes", 1 << 20}}},
                {"summary", std::move(summary)},
                {"states", Json::array()},
                {"images_s", 1.5},
                {"check_s", 40.0}};
}

// One crash state of a record's "states".
inline Json crash_state(long long lost, bool mounted = true, bool fsck_clean = true,
                        bool recovered = true) {
    return Json{{"flush_entry", 3},       {"log_offset", 4096}, {"acknowledged", 20},
                {"lost", lost},           {"mounted", mounted}, {"fsck_clean", fsck_clean},
                {"recovered", recovered}, {"torn", 0},          {"problem", ""}};
}

}  // namespace ds::test
