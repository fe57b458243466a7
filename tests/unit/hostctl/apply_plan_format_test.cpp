// hostctl's printers of `results apply` and `sweep plan`: the daemon's JSON
// (docs/api.md) in, exact text out.
#include <catch2/catch.hpp>

#include "hostctl/results_format.h"
#include "hostctl/submission_format.h"
#include "unit/api_messages.h"

using ds::hostctl::Json;

namespace {

// A plan as daemon/plan/sweep_plan.cpp produces it: two configurations,
// one unsafe, two combinations dropped, one workload known from two past
// runs of one configuration, the other never run.
Json plan_reply() {
    return Json::parse(R"({
      "name": "seed", "repetitions": 3, "varying_axes": ["bus", "cache"],
      "configurations": [
        {"config_id": "0123456789abcdef",
         "settings": {"bus": "scsi-single", "cache": "none", "disk_size_bytes": 1073741824},
         "durability_risks": []},
        {"config_id": "fedcba9876543210",
         "settings": {"bus": "scsi-single", "cache": "unsafe", "disk_size_bytes": 1073741824},
         "durability_risks": ["cache=unsafe"]}],
      "workloads": [{"name": "randread", "kind": "fio"}, {"name": "atis", "kind": "mariadb-atis"}],
      "dropped": [
        {"settings": {"bus": "virtio-blk", "cache": "none", "ssd": true},
         "reason": "virtio-blk has no rotation rate"},
        {"settings": {"bus": "virtio-blk", "cache": "unsafe", "ssd": true},
         "reason": "virtio-blk has no rotation rate"}],
      "skipped_by_filesystems": 0, "total_runs": 12,
      "pairs": [
        {"config_id": "0123456789abcdef", "workload": "randread", "runs": 3, "estimate_s": 40,
         "basis": "configuration", "based_on_runs": 2},
        {"config_id": "0123456789abcdef", "workload": "atis", "runs": 3, "estimate_s": null,
         "basis": "unknown", "based_on_runs": 0},
        {"config_id": "fedcba9876543210", "workload": "randread", "runs": 3, "estimate_s": 40,
         "basis": "workload", "based_on_runs": 2},
        {"config_id": "fedcba9876543210", "workload": "atis", "runs": 3, "estimate_s": null,
         "basis": "unknown", "based_on_runs": 0}],
      "estimate": {"run_seconds": 240, "wall_seconds": 120, "max_parallel_runs": 2,
                   "runs_estimated": 6, "runs_unknown": 6, "based_on_runs": 2,
                   "complete": false},
      "refused": null})");
}

}  // namespace

TEST_CASE("sweep plan: configurations, dropped, runs and a partial estimate",
          "[hostctl][format][plan]") {
    CHECK(ds::hostctl::format_sweep_plan(
              ds::api::test::decoded<ds::api::SweepPlanReply>(plan_reply())) ==
          "sweep \"seed\" would run 12 runs: 2 configurations × 2 workloads × 3 repetitions\n"
          "varying: bus, cache\n"
          "\n"
          "config        bus          cache   !\n"
          "0123456789ab  scsi-single  none\n"
          "fedcba987654  scsi-single  unsafe  cache=unsafe\n"
          "\n"
          "dropped 2 combinations that cannot exist:\n"
          "  bus=virtio-blk cache=none: virtio-blk has no rotation rate\n"
          "  bus=virtio-blk cache=unsafe: virtio-blk has no rotation rate\n"
          "estimated duration: at least 2m00s (2 runs at a time)\n"
          "  from the median durations of 2 past runs: 3 planned runs by the same "
          "configuration and workload, 3 by the same workload on other configurations, 6 "
          "unknown (workload never run here)\n");
}

TEST_CASE("sweep plan: a complete estimate, none at all, and a refusal",
          "[hostctl][format][plan]") {
    Json complete = plan_reply();
    complete["pairs"] = Json::array({complete["pairs"][0]});
    complete["total_runs"] = 3;
    complete["estimate"] = {{"run_seconds", 120},  {"wall_seconds", 3725}, {"max_parallel_runs", 1},
                            {"runs_estimated", 3}, {"runs_unknown", 0},    {"based_on_runs", 2},
                            {"complete", true}};
    const std::string text =
        ds::hostctl::format_sweep_plan(ds::api::test::decoded<ds::api::SweepPlanReply>(complete));
    CHECK(text.find("estimated duration: 1h02m (1 run at a time)\n") != std::string::npos);
    CHECK(text.find("unknown") == std::string::npos);

    Json nothing = plan_reply();
    nothing["estimate"]["runs_unknown"] = 12;
    nothing["refused"] = "cannot run sweeps: no guest image";
    const std::string unknown =
        ds::hostctl::format_sweep_plan(ds::api::test::decoded<ds::api::SweepPlanReply>(nothing));
    CHECK(unknown.find("estimated duration: unknown (no run of its workloads has succeeded on "
                       "this daemon yet)\n") != std::string::npos);
    CHECK(unknown.find("this daemon would refuse it: cannot run sweeps: no guest image\n") !=
          std::string::npos);
}

TEST_CASE("sweep plan: adaptive repetitions show the most runs and the longest duration",
          "[hostctl][format][plan]") {
    Json adaptive = plan_reply();
    adaptive["ci_target"] = 0.03;
    adaptive["max_repetitions"] = 10;
    adaptive["max_total_runs"] = 40;
    adaptive["estimate"]["max_wall_seconds"] = 400;
    const std::string text =
        ds::hostctl::format_sweep_plan(ds::api::test::decoded<ds::api::SweepPlanReply>(adaptive));
    CHECK(text.find("adaptive: up to 40 runs (10 rounds) while a configuration's 95% CI is wider "
                    "than ±3% of its mean\n") != std::string::npos);
    CHECK(text.find("estimated duration: at least 2m00s, up to 6m40s with every adaptive round "
                    "(2 runs at a time)\n") != std::string::npos);
}

TEST_CASE("sweep plan: an older or broken answer prints what there is", "[hostctl][format][plan]") {
    const std::string text = ds::hostctl::format_sweep_plan(
        ds::api::test::decoded<ds::api::SweepPlanReply>(Json::object()));
    CHECK(text.rfind("sweep \"\" would run 0 runs", 0) == 0);
}

TEST_CASE("results apply: the snippet as the daemon wrote it", "[hostctl][format][apply]") {
    CHECK(ds::hostctl::format_apply(ds::api::test::decoded<ds::api::ApplyReply>(
              Json{{"snippet", "[mysqld]\ninnodb_doublewrite=OFF"}})) ==
          "[mysqld]\ninnodb_doublewrite=OFF\n");
    CHECK(ds::hostctl::format_apply(ds::api::test::decoded<ds::api::ApplyReply>(
              Json{{"snippet", "<disk/>\n"}})) == "<disk/>\n");
    CHECK(ds::hostctl::format_apply(ds::api::test::decoded<ds::api::ApplyReply>(Json::object()))
              .empty());
}
