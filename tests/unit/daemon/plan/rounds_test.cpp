// Adaptive repetitions (issue 10): the decision after a round, the round
// added to the store, and the scheduler running added rounds to the end.
#include "daemon/plan/rounds.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include "daemon/api/api.h"
#include "daemon/schedule/adaptive_rounds.h"
#include "daemon/schedule/scheduler.h"
#include "support/fakes/daemon_fakes.h"
#include "support/temp_dir.h"

namespace ds {
namespace {

using ds::test::TempDir;

constexpr const char* kAdaptiveSpec = R"(name = "adaptive"
repetitions = { min = 2, max = 4, ci = "5%" }
[matrix]
cache = ["unsafe", "none"]
[[workload]]
kind = "fio"
name = "randread"
rw = "randread"
)";

SweepSpec adaptive_spec() {
    auto spec = parse_sweep_spec(kAdaptiveSpec, "adaptive.toml");
    REQUIRE(spec.ok());
    return spec.value();
}

std::int64_t create_adaptive_sweep(Store& store) {
    auto submission = plan_submission(kAdaptiveSpec, "adaptive.toml", SweepTimeouts{});
    REQUIRE(submission.ok());
    auto id = store.create_sweep(submission->sweep, submission->runs);
    REQUIRE(id.ok());
    return id.value();
}

// read_iops of a run: the "unsafe" configuration is steady, "none" swings
// by ±40% from round to round unless `steady`.
double read_iops_of(const RunRecord& run, bool steady) {
    const bool unsafe = run.config.cache == CacheMode::kUnsafe;
    if (unsafe || steady) return 1000.0 + run.repetition % 2;
    return run.repetition % 2 == 0 ? 600.0 : 1400.0;
}

// Runs every pending run of the sweep as the executor would record it.
void run_pending(Store& store, std::int64_t sweep_id, bool steady,
                 RunStatus status = RunStatus::kSucceeded) {
    auto runs = store.list_runs(sweep_id, RawOutput::kOmit);
    REQUIRE(runs.ok());
    for (RunRecord run : runs.value()) {
        if (run.status != RunStatus::kPending) continue;
        REQUIRE(store.mark_run_running(run.id, "vm", "vol", "", "tcg", "t").ok());
        run.status = status;
        if (status == RunStatus::kSucceeded)
            run.metrics = {{"read_iops", read_iops_of(run, steady)}};
        if (status == RunStatus::kFailed) run.failure_reason = "fake failure";
        run.finished_at = "t";
        REQUIRE(store.finish_run(run).ok());
    }
}

Json decisions_of(Store& store, std::int64_t sweep_id) {
    auto sweep = store.get_sweep(sweep_id);
    REQUIRE(sweep.ok());
    return sweep->round_decisions;
}

}  // namespace

TEST_CASE("decide_round: max, a failed round, a missing interval, the target", "[rounds]") {
    const SweepSpec spec = adaptive_spec();
    const std::vector<RowPrecision> wide = {{"a", 0.01}, {"b", 0.08}};
    const std::vector<RowPrecision> tight = {{"a", 0.01}, {"b", 0.049}};

    Json decision = decide_round(spec, 4, false, wide);
    CHECK(decision["decision"] == "stop");
    CHECK(decision["after_round"] == 4);
    CHECK(decision["reason"] == "reached max = 4 rounds");

    decision = decide_round(spec, 2, true, wide);
    CHECK(decision["decision"] == "stop");
    CHECK_THAT(decision["reason"].get<std::string>(), Catch::Contains("round 2 had failed runs"));

    decision = decide_round(spec, 2, false, wide);
    CHECK(decision["decision"] == "add_round");
    CHECK(decision["widest"]["row"] == "b");
    CHECK(decision["widest"]["half_width"] == Approx(0.08));
    CHECK_THAT(decision["reason"].get<std::string>(),
               Catch::Contains("±8.0% of the mean, above the target ±5.0%"));

    decision = decide_round(spec, 2, false, {{"a", 0.01}, {"b", std::nullopt}});
    CHECK(decision["decision"] == "add_round");
    CHECK(decision["widest"]["row"] == "b");
    CHECK(decision["widest"]["half_width"].is_null());

    decision = decide_round(spec, 3, false, tight);
    CHECK(decision["decision"] == "stop");
    CHECK(decision["reason"] == "every configuration within ±5.0% (widest ±4.9%, b)");
}

TEST_CASE("settle_round: a noisy configuration adds whole rounds up to max", "[rounds]") {
    TempDir dir;
    auto store = testing::open_store(dir.file("results.db"));
    const std::int64_t sweep_id = create_adaptive_sweep(*store);
    run_pending(*store, sweep_id, false);

    auto outcome = settle_round(*store, sweep_id);
    REQUIRE(outcome.ok());
    CHECK(outcome->decision["decision"] == "add_round");
    CHECK(outcome->decision["after_round"] == 2);
    REQUIRE(outcome->added_runs.size() == 2);  // one per configuration: a whole round
    for (const RunRecord& run : outcome->added_runs) {
        CHECK(run.repetition == 2);
        CHECK(run.status == RunStatus::kPending);
        CHECK(run.sequence >= 4);  // after the planned runs
    }
    CHECK(store->get_sweep(sweep_id)->total_runs == 6);
    // Nothing is decided while the round's runs are pending.
    auto early = settle_round(*store, sweep_id);
    REQUIRE(early.ok());
    CHECK(early->decision.is_null());
    CHECK(early->added_runs.empty());

    run_pending(*store, sweep_id, false);
    REQUIRE(settle_round(*store, sweep_id)->decision["decision"] == "add_round");
    run_pending(*store, sweep_id, false);
    auto last = settle_round(*store, sweep_id);
    REQUIRE(last.ok());
    CHECK(last->decision["decision"] == "stop");
    CHECK(last->decision["reason"] == "reached max = 4 rounds");
    CHECK(last->added_runs.empty());
    CHECK(store->get_sweep(sweep_id)->total_runs == 8);
    CHECK(decisions_of(*store, sweep_id).size() == 3);
    // Deciding again (a restarted daemon) records nothing twice.
    CHECK(settle_round(*store, sweep_id)->decision.is_null());
    CHECK(decisions_of(*store, sweep_id).size() == 3);
}

TEST_CASE("settle_round: steady configurations stop at min, a failed round stops", "[rounds]") {
    TempDir dir;
    auto store = testing::open_store(dir.file("results.db"));
    const std::int64_t steady = create_adaptive_sweep(*store);
    run_pending(*store, steady, true);
    auto outcome = settle_round(*store, steady);
    REQUIRE(outcome.ok());
    CHECK(outcome->decision["decision"] == "stop");
    CHECK_THAT(outcome->decision["reason"].get<std::string>(),
               Catch::StartsWith("every configuration within ±5.0%"));
    CHECK(store->get_sweep(steady)->total_runs == 4);

    const std::int64_t failing = create_adaptive_sweep(*store);
    run_pending(*store, failing, false, RunStatus::kFailed);
    outcome = settle_round(*store, failing);
    REQUIRE(outcome.ok());
    CHECK(outcome->decision["decision"] == "stop");
    CHECK_THAT(outcome->decision["reason"].get<std::string>(), Catch::Contains("failed runs"));
}

TEST_CASE("settle_round: a sweep with a fixed number of repetitions records nothing", "[rounds]") {
    TempDir dir;
    auto store = testing::open_store(dir.file("results.db"));
    const std::string fixed = R"(name = "fixed"
repetitions = 2
[[workload]]
kind = "fio"
name = "r"
)";
    auto submission = plan_submission(fixed, "fixed.toml", SweepTimeouts{});
    REQUIRE(submission.ok());
    const std::int64_t id = store->create_sweep(submission->sweep, submission->runs).value();
    run_pending(*store, id, false);
    auto outcome = settle_round(*store, id);
    REQUIRE(outcome.ok());
    CHECK(outcome->decision.is_null());
    CHECK(decisions_of(*store, id).empty());
}

TEST_CASE("scheduler: an adaptive sweep runs its added rounds and then finishes", "[rounds]") {
    TempDir dir;
    auto store = testing::open_store(dir.file("results.db"));
    EventBus events;
    const std::int64_t sweep_id = create_adaptive_sweep(*store);
    testing::EventLog log(events, sweep_id);
    Scheduler scheduler(
        *store, events,
        [&store](const RunRecord& run, const SweepTimeouts&, const std::atomic<bool>&) {
            RunRecord finished = run;
            (void)store->mark_run_running(run.id, "vm", "vol", "", "tcg", "t");
            finished.status = RunStatus::kSucceeded;
            finished.metrics = {{"read_iops", read_iops_of(run, false)}};
            finished.finished_at = "t";
            (void)store->finish_run(finished);
            return finished;
        },
        2);
    scheduler.start();
    REQUIRE(scheduler.submit(sweep_id, SweepTimeouts{}).ok());
    REQUIRE(log.wait_for("sweep_finished", std::chrono::seconds(10)));

    auto sweep = store->get_sweep(sweep_id);
    REQUIRE(sweep.ok());
    CHECK(sweep->status == SweepStatus::kSucceeded);
    CHECK(sweep->total_runs == 8);
    CHECK(store->run_counts(sweep_id)->at("succeeded") == 8);
    REQUIRE(sweep->round_decisions.size() == 3);
    CHECK(sweep->round_decisions[0]["decision"] == "add_round");
    CHECK(sweep->round_decisions[2]["decision"] == "stop");
    const auto types = log.types();
    CHECK(std::count(types.begin(), types.end(), "round_decision") == 3);
}

}  // namespace ds
