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
