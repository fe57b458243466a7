// What a configuration's durability runs add up to: sums, the weighted mean,
// the verdict, "safe" only when nothing was lost or broken, and stored
// records from other versions read without ever throwing.
#include "daemon/compare/durability_results.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "support/durability_records.h"

namespace ds {
namespace {

using test::crash_state;
using test::durability_record;
using test::durability_summary;

RunRecord durability_run(Json durability, double commits_per_s = 100,
                         const std::string& workload = "ledger") {
    RunRecord run;
    run.status = RunStatus::kSucceeded;
    run.workload_name = workload;
    run.workload = Workload{workload, "ledger", {{"variant", "file"}}};
    run.metrics = {{"commits_per_s", commits_per_s}, {"acknowledged", 500}};
    run.applied_settings = Json{{"guest", Json::object()}};
    if (!durability.is_discarded()) run.applied_settings["durability"] = std::move(durability);
    return run;
}

TEST_CASE("durability results: runs that kept everything are safe, summed over runs",
          "[compare][durability]") {
    DurabilityResult result;
    result.add(durability_run(durability_record(durability_summary(50, 0, 0, 0)), 100));
    result.add(durability_run(durability_record(durability_summary(30, 0, 0, 0)), 140));
    CHECK(result.measured());
    CHECK(result.safe());
    CHECK(result.runs() == 2);
    CHECK(result.summary().crash_states == 80);
    CHECK(result.verdict() == "kept every acknowledged commit in 80 crash states");
    CHECK(result.commits_per_s() == Approx(120));
    const Json json = result.to_json();
    CHECK(json["safe"] == true);
    CHECK(json["crash_states"] == 80);
    CHECK(json["images_s"] == 3.0);
    CHECK(json["check_s"] == 80.0);
    CHECK(json["models"] == Json::array({"flush-barriers"}));
    CHECK(json["measured_by"] == Json::array({"ledger"}));
}

TEST_CASE("durability results: the host's writeback is summed beside the worst case",
          "[compare][durability]") {
    // unsafe: 13 of 16 worst-case states lost commits, none under the
    // host's writeback of 35 s.
    Json unsafe = durability_record(durability_summary(16, 13, 300, 120), "host-power-cut");
    unsafe["host_writeback"] = {{"window_s", 35.0},
                                {"summary", durability_summary(16, 0, 0, 0)},
                                {"states", Json::array()}};
    DurabilityResult result;
    result.add(durability_run(unsafe));
    CHECK(result.host_writeback_measured());
    CHECK(result.host_writeback_summary().states_with_losses == 0);
    CHECK_FALSE(result.safe());  // the worst case decides
    Json json = result.to_json();
    CHECK(json["states_with_losses"] == 13);
    CHECK(json["host_writeback"]["states_with_losses"] == 0);
    CHECK(json["host_writeback"]["crash_states"] == 16);
    CHECK(json["host_writeback"]["window_s"] == 35.0);
    CHECK(json["host_writeback"]["runs"] == 1);

    // A run whose window could not be read counts its worst case there; a
    // second window makes the window ambiguous.
    Json unread = durability_record(durability_summary(8, 2, 5, 1), "host-power-cut");
    unread["host_writeback"] = {{"not_measured", "cannot read /proc/sys/vm/..."}};
    Json other_window = unsafe;
    other_window["host_writeback"]["window_s"] = 6.0;
    result.add(durability_run(unread));
    result.add(durability_run(other_window));
    CHECK(result.host_writeback_summary().crash_states == 40);
    CHECK(result.host_writeback_summary().states_with_losses == 2);
    json = result.to_json();
    CHECK(json["host_writeback"]["runs"] == 2);
    CHECK(json["host_writeback"]["window_s"].is_null());

    // Modes whose models agree have no host-writeback figure at all.
    DurabilityResult none;
    none.add(durability_run(durability_record(durability_summary(50, 0, 0, 0))));
    CHECK_FALSE(none.host_writeback_measured());
    CHECK_FALSE(none.to_json().contains("host_writeback"));
    // Merged results keep both sums.
    none.merge(result);
    CHECK(none.host_writeback_summary().crash_states == 90);
    CHECK(none.summary().crash_states == 90);
}

TEST_CASE("durability results: one bad crash state among many makes a configuration unsafe",
          "[compare][durability]") {
    DurabilityResult result;
    result.add(durability_run(durability_record(durability_summary(50, 0, 0, 0))));
    // One of 10 states lost 3 commits: that run's mean is 0.3.
    result.add(durability_run(durability_record(durability_summary(10, 1, 3, 0.3))));
    CHECK_FALSE(result.safe());
    CHECK(result.summary().states_with_losses == 1);
    CHECK(result.summary().max_lost == 3);
    // Weighted by states: 3 commits over 60 states, not the runs' mean of means (0.15).
    CHECK(result.summary().mean_lost == Approx(0.05));
    CHECK(result.verdict() == "lost acknowledged commits in 1 of 60 crash states (up to 3)");
    CHECK(result.to_json()["safe"] == false);
}

TEST_CASE("durability results: a failed fsck, mount or recovery is never safe",
          "[compare][durability]") {
    DurabilityResult result;
    result.add(
        durability_run(durability_record(durability_summary(50, 0, 0, 0, /*fsck_failures=*/1))));
    CHECK_FALSE(result.safe());
    CHECK(result.verdict() == "kept every acknowledged commit in 50 crash states; 1 failed fsck");

    // The same from the states alone (no summary): a state that did not mount.
    Json durability = durability_record(Json());
    durability.erase("summary");
    durability["states"] = Json::array({crash_state(0), crash_state(0, false, false, false)});
    DurabilityResult from_states;
    from_states.add(durability_run(durability));
    CHECK_FALSE(from_states.safe());
    CHECK(from_states.summary().crash_states == 2);
    CHECK(from_states.summary().mount_failures == 1);
}

// Issue 34: states repaired before counting. Summed over runs, read from the
// summary or from the states, and never safe when anything was lost before
// or after the repair.
TEST_CASE("durability results: repaired states are summed, and never make a state safe",
          "[compare][durability]") {
    Json repaired = durability_summary(8, 8, 300, 178.25);
    repaired["mount_failures"] = 7;
    repaired["states_repaired"] = 7;
    repaired["mounted_after_repair"] = 6;
    repaired["states_with_losses_after_repair"] = 2;
    repaired["max_lost_after_repair"] = 300;
    repaired["mean_lost_after_repair"] = 58.0;
    DurabilityResult result;
    result.add(durability_run(durability_record(repaired)));
    // An older run, stored before repairs: after repair as before it.
    result.add(durability_run(durability_record(durability_summary(2, 1, 4, 2.0))));
    CHECK_FALSE(result.safe());
    const DurabilitySummary& sum = result.summary();
    CHECK(sum.states_repaired == 7);
    CHECK(sum.mounted_after_repair == 6);
    CHECK(sum.states_with_losses_after_repair == 3);
    CHECK(sum.max_lost_after_repair == 300);
    CHECK(sum.mean_lost_after_repair == Approx((58.0 * 8 + 2.0 * 2) / 10));
    CHECK(result.to_json()["mounted_after_repair"] == 6);
    CHECK(result.verdict() ==
          "lost acknowledged commits in 9 of 10 crash states (up to 300); 7 did not mount, 6 "
          "mounted after repair, lost after repair in 3 (up to 300)");

    // Counts that contradict each other are not believed.
    Json lying = repaired;
    lying["states_repaired"] = 8;  // more than did not mount
    DurabilityResult unreadable;
    unreadable.add(durability_run(durability_record(lying)));
    CHECK(unreadable.unreadable_runs() == 1);

    // From the states alone: one did not mount, e2fsck made it mount, and
    // it lost nothing after repair; still not safe.
    Json durability = durability_record(Json());
    durability.erase("summary");
    Json state = crash_state(20, false, false, true);
    state["lost_after_repair"] = 0;
    state["repair"] = {{"commands", "e2fsck -f -y /dev/sdb"}, {"mounted", true}};
    durability["states"] = Json::array({crash_state(0), state});
    DurabilityResult from_states;
    from_states.add(durability_run(durability));
    CHECK_FALSE(from_states.safe());
    CHECK(from_states.summary().states_repaired == 1);
    CHECK(from_states.summary().mounted_after_repair == 1);
    CHECK(from_states.summary().states_with_losses_after_repair == 0);
}

TEST_CASE("durability results: no durability run is not measured, and not safe",
          "[compare][durability]") {
    DurabilityResult result;
    result.add(durability_run(Json(Json::value_t::discarded)));  // no applied_settings.durability
    result.add(durability_run(Json(nullptr)));                   // null: not there either
    CHECK_FALSE(result.measured());
    CHECK_FALSE(result.safe());
    CHECK(result.verdict() == "not measured");
    CHECK(result.to_json() ==
          Json{{"verdict", "not measured"}, {"safe", false}, {"runs", 0}, {"unreadable_runs", 0}});

    // Failed and superseded attempts do not count, whatever they stored.
    RunRecord failed = durability_run(durability_record(durability_summary(50, 0, 0, 0)));
    failed.status = RunStatus::kFailed;
    RunRecord superseded = durability_run(durability_record(durability_summary(50, 0, 0, 0)));
    superseded.superseded_by = 7;
    result.add(failed);
    result.add(superseded);
    CHECK_FALSE(result.measured());

    // Zero crash states tried: measured, but nothing shows it safe.
    DurabilityResult empty;
    empty.add(durability_run(durability_record(durability_summary(0, 0, 0, 0))));
    CHECK(empty.measured());
    CHECK_FALSE(empty.safe());
    CHECK(empty.verdict() == "no crash state tried");
}

TEST_CASE("durability results: malformed stored records are unreadable, never safe",
          "[compare][durability]") {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    Json mistyped = durability_summary(50, 0, 0, 0);
    mistyped["states_with_losses"] = "0";
    Json too_many = durability_summary(50, 0, 0, 0);
    too_many["fsck_failures"] = 51;                         // more failures than states
    Json contradicting = durability_summary(50, 0, 12, 0);  // no state lost, yet up to 12 lost
    Json negative = durability_summary(50, 0, 0, -1);
    Json missing = durability_summary(50, 0, 0, 0);
    missing.erase("recovery_failures");
    Json huge = durability_summary(50, 0, 0, 0);
    huge["crash_states"] = std::numeric_limits<unsigned long long>::max();
    const Json records[] = {Json("durability"),
                            Json::array({1, 2}),
                            Json::object(),
                            durability_record(mistyped),
                            durability_record(too_many),
                            durability_record(contradicting),
                            durability_record(negative),
                            durability_record(missing),
                            durability_record(huge),
                            durability_record(Json{{"crash_states", nan}})};
    for (const Json& record : records) {
        INFO(record.dump());
        Json with_bad_states = record;
        if (with_bad_states.is_object())
            with_bad_states["states"] = Json::array({crash_state(0), Json{{"lost", "many"}}});
        for (const Json& stored : {record, with_bad_states}) {
            DurabilityResult result;
            result.add(durability_run(durability_record(durability_summary(50, 0, 0, 0))));
            result.add(durability_run(stored));
            CHECK(result.measured());
            CHECK_FALSE(result.safe());
            CHECK(result.unreadable_runs() == 1);
            CHECK(result.summary().crash_states == 50);  // the readable run still counts
            CHECK(result.verdict() ==
                  "kept every acknowledged commit in 50 crash states; 1 run's durability record "
                  "unreadable");
        }
    }
    // A summary that does not read, with states that do: the states count.
    Json durability = durability_record(mistyped);
    durability["states"] = Json::array({crash_state(0), crash_state(4)});
    DurabilityResult result;
    result.add(durability_run(durability));
    CHECK(result.unreadable_runs() == 0);
    CHECK(result.verdict() == "lost acknowledged commits in 1 of 2 crash states (up to 4)");
}

TEST_CASE("durability results: merging keeps the mean weighted by crash states",
          "[compare][durability]") {
    DurabilityResult a, b;
    a.add(durability_run(durability_record(durability_summary(10, 2, 5, 1.0)), 100, "ledger-a"));
    b.add(durability_run(durability_record(durability_summary(30, 0, 0, 0), "host-power-cut"), 300,
                         "ledger-b"));
    a.merge(b);
    CHECK(a.summary().crash_states == 40);
    CHECK(a.summary().mean_lost == Approx(10.0 / 40));
    CHECK(a.commits_per_s() == Approx(200));
    CHECK(a.workloads() == std::vector<std::string>{"ledger-a", "ledger-b"});
    CHECK(a.models() == std::vector<std::string>{"flush-barriers", "host-power-cut"});
}

TEST_CASE("durability results: which risk labels a measurement speaks for",
          "[compare][durability]") {
    DurabilityResult barriers;
    Json durability = durability_record(durability_summary(50, 0, 0, 0));
    durability["volatile_cache"] = false;
    barriers.add(durability_run(durability));
    CHECK_FALSE(measurement_covers(barriers, "cache=unsafe"));
    CHECK_FALSE(measurement_covers(barriers, "nobarrier"));
    CHECK(measurement_covers(barriers, "data=writeback"));
    CHECK(measurement_covers(barriers, "no journal (mkfs -O ^has_journal)"));
    CHECK_FALSE(measurement_covers(barriers, "innodb_flush_log_at_trx_commit=2"));
    CHECK_FALSE(measurement_covers(barriers, "something new"));

    DurabilityResult power_cut;
    RunRecord database =
        durability_run(durability_record(durability_summary(50, 3, 9, 1), "host-power-cut"));
    database.workload.params = {{"variant", "database"}};
    power_cut.add(database);
    CHECK(measurement_covers(power_cut, "cache=unsafe"));
    CHECK(measurement_covers(power_cut, "barrier=0"));
    CHECK(measurement_covers(power_cut, "innodb_flush_log_at_trx_commit=2"));

    CHECK_FALSE(measurement_covers(DurabilityResult(), "data=writeback"));
}

TEST_CASE("the Pareto front keeps what nothing else is faster and as safe as",
          "[compare][durability]") {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    // (commits/s, mean lost)
    const std::vector<std::pair<double, double>> points = {
        {100, 0},    // 0: safest: on the front
        {80, 0},     // 1: slower and no safer than 0
        {300, 2},    // 2: faster than 0, loses less than 3: on the front
        {250, 5},    // 3: slower than 2 and loses more
        {400, 9},    // 4: fastest: on the front
        {300, 2},    // 5: the same as 2: on the front with it
        {100, 0.5},  // 6: as fast as 0, loses more
        {nan, 0},    // 7: no speed: nowhere
        {500, nan},  // 8: no loss figure: nowhere, and dominates nothing
    };
    CHECK(pareto_front(points) ==
          std::vector<bool>{true, false, true, false, true, true, false, false, false});
    CHECK(pareto_front({}).empty());
}

}  // namespace
}  // namespace ds
