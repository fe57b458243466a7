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

}  // namespace
}  // namespace ds
