// applied_settings.durability as a durability run stores it (docs/schema.md),
// for the tests of what people see of it: compare, the report, apply.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "daemon/store/store.h"

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

// How a planned run ends.
struct StoredOutcome {
    RunStatus status = RunStatus::kSucceeded;
    std::map<std::string, double> metrics;
    Json durability;  // null: not a durability run
};

// Stores a sweep of `plan`'s runs (by sequence) through the Store API, each
// marked running under TCG and finished as its outcome says; returns its id.
inline std::int64_t store_durability_sweep(
    Store& store, const std::vector<std::pair<RunRecord, StoredOutcome>>& plan,
    const Json& varying_axes) {
    SweepRecord sweep;
    sweep.name = "durability";
    sweep.spec_toml = "name = \"durability\"";
    sweep.spec_source = "api";
    sweep.created_at = "2026-12-01T10:00:00Z";
    sweep.varying_axes = varying_axes;
    std::vector<RunRecord> runs;
    for (const auto& [run, outcome] : plan) runs.push_back(run);
    const auto id = store.create_sweep(sweep, runs);
    if (!id.ok()) throw std::runtime_error(id.error().message);
    auto stored = store.list_runs(id.value(), RawOutput::kOmit);
    if (!stored.ok()) throw std::runtime_error(stored.error().message);
    for (std::size_t i = 0; i < plan.size(); ++i) {
        RunRecord run = stored.value().at(i);
        if (!store.mark_run_running(run.id, "vm", "vol", "log", "tcg", "t").ok())
            throw std::runtime_error("cannot mark run running");
        const StoredOutcome& outcome = plan[i].second;
        run.status = outcome.status;
        if (run.status != RunStatus::kSucceeded) run.failure_reason = "checker guest went silent";
        run.metrics = outcome.metrics;
        if (!outcome.durability.is_null()) run.applied_settings["durability"] = outcome.durability;
        if (const auto finished = store.finish_run(run); !finished.ok())
            throw std::runtime_error(finished.error().message);
    }
    return id.value();
}

}  // namespace ds::test
