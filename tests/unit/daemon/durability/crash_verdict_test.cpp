// What a crash state lost, from the checker's (untrusted) report and the
// acks the host noted during the run.
#include "daemon/durability/crash_verdict.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

std::vector<AckEntry> acks_at(std::vector<std::uint64_t> log_bytes) {
    std::vector<AckEntry> acks;
    for (std::size_t i = 0; i < log_bytes.size(); ++i) {
        acks.push_back({static_cast<long long>(i) + 1, log_bytes[i]});
    }
    return acks;
}

TEST_CASE("crash verdict: acknowledged before a crash point is by the log's size at the ack") {
    const auto acks = acks_at({4096, 8192, 8192, 20480});
    CHECK(acknowledged_before(acks, 0) == 0);
    CHECK(acknowledged_before(acks, 4096) == 1);
    CHECK(acknowledged_before(acks, 10000) == 3);
    CHECK(acknowledged_before(acks, 1 << 20) == 4);
    std::vector<AckEntry> unsized = {{1, std::nullopt}};
    CHECK(acknowledged_before(unsized, 1 << 20) == 0);
}

TEST_CASE("crash verdict: lost records are the acknowledged ids the state lacks") {
    CHECK(lost_records(0, {}) == 0);
    CHECK(lost_records(10, {}) == 10);
    CHECK(lost_records(10, {{1, 10}}) == 0);
    CHECK(lost_records(10, {{1, 12}}) == 0);  // later, unacknowledged records do not help
    CHECK(lost_records(10, {{1, 4}, {6, 8}}) == 3);
    CHECK(lost_records(10, {{11, 20}}) == 10);
}

TEST_CASE("crash verdict: a checker's report, mounted or not, file or database") {
    auto file =
        parse_crash_check(Json{{"fsck_before", {{"clean", false}}},
                               {"mounted", true},
                               {"ledger", {{"present", {{1, 250}, {252, 260}}}, {"torn", 1}}},
                               {"fsck_after", {{"exit_code", 0}, {"clean", true}}}});
    REQUIRE(file.ok());
    CHECK(file->mounted);
    CHECK(file->fsck_clean);
    CHECK(file->recovered);
    CHECK(file->present == IdRanges{{1, 250}, {252, 260}});
    CHECK(file->torn == 1);

    auto unmounted = parse_crash_check(Json{
        {"mounted", false}, {"mount_error", "bad superblock"}, {"fsck_after", {{"clean", false}}}});
    REQUIRE(unmounted.ok());
    CHECK_FALSE(unmounted->mounted);
    CHECK(unmounted->problem == "bad superblock");

    auto database = parse_crash_check(
        Json{{"mounted", true},
             {"ledger", {{"recovered", false}, {"recovery_error", "InnoDB: corrupt page"}}},
             {"fsck_after", {{"clean", true}}}});
    REQUIRE(database.ok());
    CHECK_FALSE(database->recovered);
    CHECK(database->problem == "InnoDB: corrupt page");
}

TEST_CASE("crash verdict: a lying report is refused, naming the field") {
    const auto refused = [](const Json& ranges) {
        auto check = parse_crash_check(Json{{"mounted", true}, {"ledger", {{"present", ranges}}}});
        REQUIRE_FALSE(check.ok());
        CHECK(check.error().code == errc::kProtocol);
        return check.error().message;
    };
    CHECK(refused(Json{{5, 3}}) ==
          "crash check report: ledger.present[0] is not 1 <= first <= last");
    CHECK(refused(Json{{0, 3}}) ==
          "crash check report: ledger.present[0] is not 1 <= first <= last");
    CHECK(refused(Json{{1, 5}, {4, 9}}) ==
          "crash check report: ledger.present[1] does not come after the range before it");
    CHECK(refused(Json{{1, 5}, {6, 9}}) ==
          "crash check report: ledger.present[1] does not come after the range before it");
    CHECK(refused(Json{{1, "9"}}) ==
          "crash check report: ledger.present[0] is not a pair of integers");
    CHECK(refused(Json("all")) == "crash check report: ledger.present is not an array");
    CHECK(parse_crash_check(Json{{"mounted", true}}).error().message ==
          "crash check report: mounted, but no ledger section");
}

TEST_CASE("crash verdict: one checker guest's reports, in the order of its disks") {
    const Json clean = {{"mounted", true},
                        {"ledger", {{"present", {{1, 40}}}, {"torn", 0}}},
                        {"fsck_after", {{"clean", true}}}};
    const Json unmounted = {{"mounted", false}, {"mount_error", "not checked: no disk"}};
    const Json gap = {{"mounted", true},
                      {"ledger", {{"present", {{1, 10}, {16, 30}}}, {"torn", 2}}},
                      {"fsck_after", {{"clean", false}}}};
    auto checks = parse_crash_checks(Json{{"states", {clean, unmounted, gap}}}, 3);
    REQUIRE(checks.ok());
    REQUIRE(checks->size() == 3);
    CHECK((*checks)[0].present == IdRanges{{1, 40}});
    CHECK((*checks)[0].fsck_clean);
    CHECK_FALSE((*checks)[1].mounted);
    CHECK((*checks)[1].problem == "not checked: no disk");
    CHECK((*checks)[2].present == IdRanges{{1, 10}, {16, 30}});
    CHECK((*checks)[2].torn == 2);
    CHECK_FALSE((*checks)[2].fsck_clean);

    auto none = parse_crash_checks(Json{{"states", Json::array()}}, 0);
    REQUIRE(none.ok());
    CHECK(none->empty());
}

TEST_CASE("crash verdict: a checker guest's output that lies is refused, naming the state") {
    const Json clean = {{"mounted", true}, {"ledger", {{"present", {{1, 4}}}}}};
    const auto refused = [](const Json& output, std::size_t expected) {
        auto checks = parse_crash_checks(output, expected);
        REQUIRE_FALSE(checks.ok());
        CHECK(checks.error().code == errc::kProtocol);
        return checks.error().message;
    };
    CHECK(refused(Json::array({clean}), 1) == "crash check report: output is not an object");
    CHECK(refused(Json{{"state", {clean}}}, 1) == "crash check report: output has no states array");
    CHECK(refused(Json{{"states", clean}}, 1) == "crash check report: output has no states array");
    // Fewer or more reports than disks: which belongs to which is unknown.
    CHECK(refused(Json{{"states", {clean, clean}}}, 3) ==
          "crash check report: states has 2 reports, expected 3");
    CHECK(refused(Json{{"states", {clean, clean}}}, 1) ==
          "crash check report: states has 2 reports, expected 1");
    CHECK(refused(Json{{"states", {clean, "mounted"}}}, 2) ==
          "crash check report: states[1]: not an object");
    CHECK(
        refused(Json{{"states", {clean, {{"mounted", true}, {"ledger", {{"present", {{3, 2}}}}}}}}},
                2) == "crash check report: states[1]: ledger.present[0] is not 1 <= first <= last");
    CHECK(refused(Json{{"states", {{{"mounted", true}}, clean}}}, 2) ==
          "crash check report: states[0]: mounted, but no ledger section");
}

TEST_CASE("crash verdict: a configuration's summary and its words") {
    CrashStateResult kept;
    kept.acknowledged = 10;
    kept.check.mounted = kept.check.fsck_clean = kept.check.recovered = true;
    DurabilitySummary all_kept = summarize({kept, kept, kept});
    CHECK(all_kept.verdict() == "kept every acknowledged commit in 3 crash states");
    CHECK(all_kept.max_lost == 0);

    CrashStateResult lossy = kept;
    lossy.lost = 4;
    CrashStateResult broken;
    broken.lost = 10;
    DurabilitySummary mixed = summarize({kept, lossy, broken});
    CHECK(mixed.states_with_losses == 2);
    CHECK(mixed.max_lost == 10);
    CHECK(mixed.mean_lost == Approx(14.0 / 3));
    CHECK(mixed.verdict() ==
          "lost acknowledged commits in 2 of 3 crash states (up to 10); 1 did not mount, 1 "
          "failed fsck");
    CHECK(mixed.to_json()["verdict"] == mixed.verdict());
}

// Measured: the edge state before a file ledger's first ack had no
// ledger.dat yet ("no ledger file"), which is no failure; after an ack it is.
TEST_CASE("crash verdict: a ledger not there before its first ack is no failed recovery") {
    CrashStateResult before_first_ack;
    before_first_ack.check.mounted = before_first_ack.check.fsck_clean = true;
    before_first_ack.check.problem = "no ledger file /mnt/disksweep/disksweep-data/ledger.dat";
    CrashStateResult after = before_first_ack;
    after.acknowledged = 3;
    after.lost = 3;
    CHECK(summarize({before_first_ack}).recovery_failures == 0);
    CHECK(summarize({before_first_ack}).verdict() ==
          "kept every acknowledged commit in 1 crash states");
    CHECK(summarize({before_first_ack, after}).recovery_failures == 1);
    // A file system that fails still counts, acknowledged or not.
    CrashStateResult unmountable;
    CHECK(summarize({unmountable}).mount_failures == 1);
    CHECK(summarize({unmountable}).fsck_failures == 1);
}

}  // namespace
}  // namespace ds

namespace ds {
namespace {

// A report whose first mount failed and whose repair ran `steps`.
Json repaired_report(Json steps, bool mounted_after, Json ledger = nullptr) {
    Json report = {
        {"mounted", false},
        {"mount_error", "mount /dev/sdb: Structure needs cleaning"},
        {"repair",
         {{"steps", std::move(steps)}, {"log_zeroed", false}, {"mounted", mounted_after}}},
        {"fsck_after", {{"exit_code", 0}, {"clean", true}}}};
    if (!mounted_after) report["repair"]["problem"] = "mount /dev/sdb: Invalid argument";
    if (!ledger.is_null()) report["ledger"] = std::move(ledger);
    return report;
}

TEST_CASE("crash verdict: a state repaired before counting keeps that its first mount failed") {
    const Json e2fsck = {{{"command", "e2fsck -f -y /dev/sdb"}, {"exit_code", 1}}};
    auto repaired = parse_crash_check(
        repaired_report(e2fsck, true, {{"present", {{1, 90}, {95, 100}}}, {"torn", 2}}));
    REQUIRE(repaired.ok());
    CHECK_FALSE(repaired->mounted);
    CHECK(repaired->present.empty());  // what the crash itself left: nothing readable
    CHECK(repaired->problem == "mount /dev/sdb: Structure needs cleaning");
    // The fsck after a repair judges the repair's work, not the crash's.
    CHECK_FALSE(repaired->fsck_clean);
    const RepairOutcome& repair = repaired->repair;
    CHECK(repair.tried);
    CHECK(repair.commands == "e2fsck -f -y /dev/sdb");
    CHECK(repair.exit_code == 1);
    CHECK(repair.mounted);
    CHECK(repair.recovered);
    CHECK(repair.present == IdRanges{{1, 90}, {95, 100}});
    CHECK(repair.torn == 2);

    // xfs: the dirty log zeroed, and still no mount.
    Json xfs = repaired_report({{{"command", "xfs_repair /dev/sdb"}, {"exit_code", 2}},
                                {{"command", "xfs_repair -L /dev/sdb"}, {"exit_code", 0}}},
                               false);
    xfs["repair"]["log_zeroed"] = true;
    auto unrepaired = parse_crash_check(xfs);
    REQUIRE(unrepaired.ok());
    CHECK(unrepaired->repair.commands == "xfs_repair /dev/sdb; xfs_repair -L /dev/sdb");
    CHECK(unrepaired->repair.exit_code == 0);
    CHECK(unrepaired->repair.log_zeroed);
    CHECK_FALSE(unrepaired->repair.mounted);
    CHECK(unrepaired->repair.problem == "mount /dev/sdb: Invalid argument");

    // A tool that did not run to its end has an error instead of a code.
    auto missing = parse_crash_check(repaired_report(
        {{{"command", "e2fsck -f -y /dev/sdb"}, {"error", "cannot run e2fsck"}}}, false));
    REQUIRE(missing.ok());
    CHECK(missing->repair.exit_code == -1);

    // The database variant after repair: MariaDB did not come up.
    auto database = parse_crash_check(repaired_report(
        e2fsck, true, {{"recovered", false}, {"recovery_error", "InnoDB: corrupt page"}}));
    REQUIRE(database.ok());
    CHECK(database->repair.mounted);
    CHECK_FALSE(database->repair.recovered);
    CHECK(database->repair.problem == "InnoDB: corrupt page");

    // An older agent's report: no repair, the fsck as it said.
    auto old = parse_crash_check(Json{
        {"mounted", false}, {"mount_error", "bad superblock"}, {"fsck_after", {{"clean", true}}}});
    REQUIRE(old.ok());
    CHECK_FALSE(old->repair.tried);
    CHECK(old->fsck_clean);
}

TEST_CASE("crash verdict: a repair that lies is refused, naming the field") {
    const auto refused = [](const Json& report) {
        auto check = parse_crash_check(report);
        REQUIRE_FALSE(check.ok());
        CHECK(check.error().code == errc::kProtocol);
        return check.error().message;
    };
    const Json step = {{"command", "e2fsck -f -y /dev/sdb"}, {"exit_code", 1}};
    Json report = repaired_report(Json::array({step}), true, {{"present", {{1, 3}}}});
    Json not_object = report;
    not_object["repair"] = "e2fsck";
    CHECK(refused(not_object) == "crash check report: repair is not an object");
    Json too_many = report;
    too_many["repair"]["steps"] = Json::array();
    for (std::size_t i = 0; i <= kMaxCheckRepairSteps; ++i)
        too_many["repair"]["steps"].push_back(step);
    CHECK(refused(too_many) ==
          "crash check report: repair.steps is not an array of at most 8 steps");
    Json no_steps = report;
    no_steps["repair"].erase("steps");
    CHECK(refused(no_steps) ==
          "crash check report: repair.steps is not an array of at most 8 steps");
    Json bad_code = report;
    bad_code["repair"]["steps"][0]["exit_code"] = 256;
    CHECK(refused(bad_code) ==
          "crash check report: repair.steps[0].exit_code is not an integer in [-1, 255]");
    bad_code["repair"]["steps"][0]["exit_code"] = "1";
    CHECK(refused(bad_code) ==
          "crash check report: repair.steps[0].exit_code is not an integer in [-1, 255]");
    Json no_code = report;
    no_code["repair"]["steps"][0].erase("exit_code");
    CHECK(refused(no_code) ==
          "crash check report: repair.steps[0] has neither exit_code nor error");
    Json bad_command = report;
    bad_command["repair"]["steps"][0]["command"] = Json::array({"e2fsck"});
    CHECK(refused(bad_command) == "crash check report: repair.steps[0].command is not a string");
    Json no_mounted = report;
    no_mounted["repair"].erase("mounted");
    CHECK(refused(no_mounted) == "crash check report: repair.mounted is not a boolean");
    Json no_ledger = report;
    no_ledger.erase("ledger");
    CHECK(refused(no_ledger) == "crash check report: mounted after repair, but no ledger section");
    Json bad_ranges = report;
    bad_ranges["ledger"]["present"] = Json{{4, 2}};
    CHECK(refused(bad_ranges) == "crash check report: ledger.present[0] is not 1 <= first <= last");
    // Inside a checker guest's output, the state is named too.
    auto checks = parse_crash_checks(Json{{"states", {report, not_object}}}, 2);
    REQUIRE_FALSE(checks.ok());
    CHECK(checks.error().message == "crash check report: states[1]: repair is not an object");
}

TEST_CASE("crash verdict: lost is what the crash left, lost after repair what a user keeps") {
    CrashCheck mounted;
    mounted.mounted = mounted.recovered = true;
    mounted.present = {{1, 6}};
    const CrashStateResult as_left = crash_state_result(4096, 10, mounted);
    CHECK(as_left.log_offset == 4096);
    CHECK(as_left.acknowledged == 10);
    CHECK(as_left.lost == 4);
    CHECK(as_left.lost_after_repair == 4);

    CrashCheck unmounted;  // an older agent's: no repair tried
    CHECK(crash_state_result(0, 10, unmounted).lost_after_repair == 10);

    CrashCheck repaired;
    repaired.repair.tried = repaired.repair.mounted = repaired.repair.recovered = true;
    repaired.repair.present = {{1, 8}, {12, 20}};
    const CrashStateResult after = crash_state_result(0, 10, repaired);
    CHECK(after.lost == 10);
    CHECK(after.lost_after_repair == 2);

    CrashCheck not_recovered = repaired;  // mounted after repair, MariaDB did not come up
    not_recovered.repair.recovered = false;
    CHECK(crash_state_result(0, 10, not_recovered).lost_after_repair == 10);
    CrashCheck still_unmountable = repaired;
    still_unmountable.repair.mounted = false;
    CHECK(crash_state_result(0, 10, still_unmountable).lost_after_repair == 10);
}

TEST_CASE("crash verdict: the summary says what repairs gave back") {
    // The sweep: 300 records, 7 of 8 states did not mount; 6 of
    // those mounted after e2fsck -y and kept everything, one stayed broken;
    // the one that mounted lost 164.
    CrashCheck mounted;
    mounted.mounted = mounted.recovered = true;
    mounted.present = {{1, 136}};
    CrashCheck repaired;
    repaired.repair.tried = repaired.repair.mounted = repaired.repair.recovered = true;
    repaired.repair.present = {{1, 300}};
    CrashCheck broken;
    broken.repair.tried = true;
    std::vector<CrashStateResult> states = {crash_state_result(0, 300, mounted),
                                            crash_state_result(0, 300, broken)};
    for (int i = 0; i < 6; ++i) states.push_back(crash_state_result(0, 300, repaired));
    const DurabilitySummary summary = summarize(states);
    CHECK(summary.states_with_losses == 8);
    CHECK(summary.mount_failures == 7);
    CHECK(summary.states_repaired == 7);
    CHECK(summary.mounted_after_repair == 6);
    CHECK(summary.states_with_losses_after_repair == 2);
    CHECK(summary.max_lost_after_repair == 300);
    CHECK(summary.mean_lost_after_repair == Approx(464.0 / 8));
    CHECK(summary.verdict() ==
          "lost acknowledged commits in 8 of 8 crash states (up to 300); 7 did not mount, 6 "
          "mounted after repair, lost after repair in 2 (up to 300), 8 failed fsck");
    const Json json = summary.to_json();
    CHECK(json["states_repaired"] == 7);
    CHECK(json["mounted_after_repair"] == 6);
    CHECK(json["states_with_losses_after_repair"] == 2);
    CHECK(json["max_lost_after_repair"] == 300);
    CHECK(json["mean_lost_after_repair"].get<double>() == Approx(58.0));
    CHECK(json["mount_failures"] == 7);  // today's keys stay
    CHECK(json["verdict"] == summary.verdict());

    // Every repaired state kept everything.
    const DurabilitySummary all_back = summarize({crash_state_result(0, 300, repaired)});
    CHECK(all_back.verdict() ==
          "lost acknowledged commits in 1 of 1 crash states (up to 300); 1 did not mount, 1 "
          "mounted after repair, none lost after repair, 1 failed fsck");
}

}  // namespace
}  // namespace ds
