// The sweeps' and runs' replies as typed messages (common/api/sweeps.h,
// runs.h): each encodes and decodes to itself, reads the daemon's shape and
// an older daemon's, and names the path of a mistyped field.
#include <catch2/catch.hpp>

#include "common/api/runs.h"
#include "common/api/sweeps.h"
#include "unit/api_messages.h"

namespace ds::api {

using test::decode_error;
using test::decoded;
using test::round_trip;

namespace {

// A sweep as GET /v1/sweeps/ID answers it (the store's record, counts, ETA
// and round decisions).
const Json kSweep = Json::parse(R"({
    "id": 12, "name": "seed-fio-rbd", "status": "running",
    "created_at": "2026-11-29T21:10:05Z", "started_at": "2026-11-29T21:10:06Z",
    "finished_at": null, "total_runs": 4, "spec_source": "seed.toml",
    "spec_toml": "name = \"seed-fio-rbd\"\n",
    "dropped": [{"settings": {"bus": "virtio-blk"}, "reason": "no ssd"}],
    "varying_axes": ["filesystem"],
    "counts": {"pending": 1, "running": 1, "succeeded": 1, "failed": 1, "timed_out": 0,
               "cancelled": 0},
    "eta_s": 125.5,
    "round_decisions": [{"after_round": 2, "decision": "stop", "reason": "narrow enough",
                         "widest": null}]})");

// A run of a runs page (no raw output).
const Json kRun = Json::parse(R"({
    "id": 41, "sweep_id": 12, "sequence": 1, "repetition": 0, "attempt": 1,
    "superseded_by": null, "config_id": "cd34",
    "config": {"filesystem": {"type": "btrfs"}, "cache": "unsafe"},
    "workload_name": "randrw", "workload": {"kind": "fio", "name": "randrw"},
    "status": "failed", "failure_reason": "agent: mkfs.btrfs exited 1", "accel": "tcg",
    "vm_name": "ds-41", "volume_name": "ds-41-data", "console_log": "/var/lib/ds/41.log",
    "started_at": "2026-11-29T21:10:06Z", "finished_at": "2026-11-29T21:11:06Z",
    "timings": {"boot_s": 4.2}, "versions": {"qemu": "9.2.0"},
    "applied_settings": {"verified": true}, "metrics": {}})");

}  // namespace

TEST_CASE("sweep replies read the daemon's shape and round-trip", "[api][sweeps]") {
    const auto shown = decoded<SweepShowReply>(
        {{"sweep", kSweep}, {"runs", Json::array({kRun})}, {"next_after", 1}});
    CHECK(shown.sweep.eta_s == 125.5);
    CHECK(shown.page.runs.at(0).failure_reason == "agent: mkfs.btrfs exited 1");
    CHECK(to_json(shown) ==
          Json{{"sweep", kSweep}, {"runs", Json::array({kRun})}, {"next_after", 1}});
    CHECK(round_trip(shown) == shown);

    Json listed = kSweep;
    listed.erase("round_decisions");
    const auto list = decoded<SweepListReply>({{"sweeps", {listed, listed}}});
    CHECK(to_json(list) == Json{{"sweeps", {listed, listed}}});
    CHECK(round_trip(list) == list);

    const Json submit = {{"sweep", listed},
                         {"dropped", kSweep["dropped"]},
                         {"varying_axes", {"filesystem"}},
                         {"skipped_by_filesystems", 0},
                         {"warnings", {"rounds may spread"}}};
    const auto submitted = decoded<SweepSubmitReply>(submit);
    CHECK(to_json(submitted) == submit);
    CHECK(round_trip(submitted) == submitted);
}

TEST_CASE("an older daemon's sweep and run read, absent fields as absent", "[api][sweeps]") {
    // No counts, no created_at; a run's settings under "settings", its
    // workload by name.
    const auto shown = decoded<SweepShowReply>(Json::parse(R"({
        "sweep": {"id": 4, "status": "queued"},
        "runs": [{"id": 42, "workload": "randrw", "settings": {"cache": "none"}}]})"));
    CHECK_FALSE(shown.sweep.counts);
    CHECK_FALSE(shown.sweep.created_at);
    CHECK(shown.page.runs.at(0).config == Json{{"cache", "none"}});
    CHECK(shown.page.runs.at(0).workload == "randrw");
    CHECK_FALSE(shown.page.next_after);
}

TEST_CASE("a mistyped sweep or run field names its path", "[api][sweeps]") {
    Json list = {{"sweeps", {kSweep, kSweep, kSweep}}};
    list["sweeps"][2]["status"] = 3;
    CHECK(decode_error<SweepListReply>(list) == "sweeps[2].status: expected a string, got number");
    CHECK(decode_error<SweepShowReply>({{"runs", {kRun, {{"attempt", "2"}}}}}) ==
          "runs[1].attempt: expected an integer, got string");
    CHECK(decode_error<SweepSubmitReply>({{"warnings", "one"}}) ==
          "warnings: expected an array, got string");
    CHECK(decode_error<RunShowReply>({{"run", {{"raw_output", 5}}}}) ==
          "run.raw_output: expected a string, got number");
}

TEST_CASE("a run reply round-trips with its raw output", "[api][runs]") {
    Json run = kRun;
    run["raw_output"] = "{\"fio version\": \"fio-3.33\"}";
    const auto shown = decoded<RunShowReply>({{"run", run}});
    CHECK(to_json(shown) == Json{{"run", run}});
    CHECK(round_trip(shown) == shown);
}

TEST_CASE("a runs page request is its query, both ways", "[api][runs]") {
    CHECK(RunsPageRequest{}.query().empty());
    CHECK(RunsPageRequest{.after = 7, .limit = 50}.query() == "?limit=50&after=7");
    CHECK(RunsPageRequest{.after = 7, .limit = std::nullopt}.query() == "?after=7");

    const std::map<std::string, std::string> sent = {{"after", "7"}};
    auto lookup = [&sent](const char* name) -> Result<const std::string*> {
        auto found = sent.find(name);
        return found == sent.end() ? nullptr : &found->second;
    };
    const auto read = RunsPageRequest::from_query(lookup);
    REQUIRE(read.ok());
    CHECK(read->after == 7);
    CHECK_FALSE(read->limit);

    const std::map<std::string, std::string> negative = {{"limit", "-1"}};
    auto refused = RunsPageRequest::from_query([&negative](const char* name) {
        auto found = negative.find(name);
        return Result<const std::string*>(found == negative.end() ? nullptr : &found->second);
    });
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message ==
          "query parameter 'limit' must be a non-negative integer, not '-1'");
}

}  // namespace ds::api
