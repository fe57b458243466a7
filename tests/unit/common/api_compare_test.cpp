// GET /v1/sweeps/ID/compare as a typed message (common/api/compare.h): it
// encodes and decodes to itself, reads an older daemon's shape, and names
// the path of a mistyped field.
#include <catch2/catch.hpp>

#include "common/api/compare.h"
#include "unit/api_messages.h"

namespace ds::api {

using test::decode_error;
using test::decoded;
using test::round_trip;

namespace {

// A comparison as daemon/compare/compare.cpp answers it: a baseline row, a
// compared row with a host baseline, and a host baseline row.
const Json kCompare = Json::parse(R"json({
    "sweep_id": 7, "varying_axes": ["cache"], "metrics": ["read_iops"],
    "partitions": [{"accel": "kvm", "host": "pve1", "qemu": "9.2.0", "libvirt": "",
                    "kernel": "6.1.0", "proxmox": ""}],
    "baseline": {"config_id": "a1", "chosen_by": "spec", "tuning": "default"},
    "practical_difference": 0.02, "min_runs_for_verdict": 3, "significance_level": 0.05,
    "comparisons": 1,
    "rows": [
      {"config_id": "a1", "workload": "randread", "settings": {"cache": "none"},
       "partition": 0, "runs": {"succeeded": 3}, "workload_kind": "fio",
       "metrics": {"read_iops": {"n": 3, "mean": 1200.5, "stddev": 10.0, "median": null}},
       "server_variables": {}, "filesystem": "ext4", "options": "defaults",
       "primary_metric": {"name": "read_iops", "lower_is_better": false},
       "durability_risks": [], "host_baseline": false, "is_baseline": true,
       "durability": {"verdict": "not measured", "runs": 0}, "not_checked": []},
      {"config_id": "b2", "workload": "randread", "settings": {"cache": "unsafe"},
       "partition": 0, "runs": {"succeeded": 2, "failed": 1}, "workload_kind": "fio",
       "metrics": {"read_iops": {"n": 2, "mean": 1500.0, "stddev": null}},
       "server_variables": {}, "filesystem": "ext4", "options": "defaults",
       "primary_metric": {"name": "read_iops", "lower_is_better": false},
       "durability_risks": ["cache=unsafe"], "host_baseline": false, "is_baseline": false,
       "vs_host": {"baseline_row": 2, "ratios": {"read_iops": 0.5}},
       "vs_baseline": {"baseline_row": 0, "ratio": 1.25, "verdict": "faster"},
       "durability": {"verdict": "not measured", "runs": 0},
       "not_checked": [{"level": "qemu", "reason": "forbidden", "runs": 2}]},
      {"config_id": "h1", "workload": "randread", "settings": {"hypervisor": "host"},
       "partition": null, "runs": {"pending": 1}, "workload_kind": "fio", "metrics": {},
       "server_variables": {}, "filesystem": "none (host, raw volume)", "options": "defaults",
       "primary_metric": {"name": "read_iops", "lower_is_better": false},
       "durability_risks": null, "settings_error": "unknown axis 'old'",
       "host_baseline": true, "is_baseline": false,
       "durability": {"verdict": "not measured", "runs": 0}, "not_checked": []}],
    "workload_kinds": ["fio"],
    "primary_metric": {"name": "read_iops", "lower_is_better": false},
    "ranking": [{"row": 1, "verdict": "faster"}, {"row": 0, "verdict": "baseline"}],
    "golden_datasets": {"runs": 4, "golden_volumes": 1, "avoided_s": 40.25,
                        "preparation_s": 31.0, "clone_s": 0.5, "saved_s": 8.75}})json");

}  // namespace

TEST_CASE("a comparison round-trips", "[api][compare]") {
    const auto compare = decoded<CompareReply>(kCompare);
    REQUIRE(compare.rows.size() == 3);
    CHECK(compare.rows[0].is_baseline == true);
    CHECK(compare.rows[1].vs_baseline->at("verdict") == "faster");
    CHECK_FALSE(compare.rows[2].partition);
    CHECK(compare.rows[2].settings_error == "unknown axis 'old'");
    CHECK(compare.baseline->chosen_by == "spec");
    CHECK(compare.golden_datasets->golden_volumes == 1);
    CHECK(to_json(compare) == kCompare);
    CHECK(round_trip(compare) == compare);

    // No golden dataset, and rows of different metrics: both null.
    Json plain = kCompare;
    plain["golden_datasets"] = nullptr;
    plain["primary_metric"] = nullptr;
    CHECK(to_json(decoded<CompareReply>(plain)) == plain);
}

TEST_CASE("an older daemon's comparison reads, absent fields as absent", "[api][compare]") {
    const auto compare = decoded<CompareReply>(Json::parse(R"({"sweep_id": 3,
        "rows": [{"config_id": "a1"}]})"));
    CHECK(compare.metrics.empty());
    CHECK_FALSE(compare.practical_difference);
    CHECK_FALSE(compare.golden_datasets);
    CHECK(compare.rows.at(0).durability_risks.empty());
    CHECK_FALSE(compare.rows.at(0).vs_baseline);
    CHECK_FALSE(compare.rows.at(0).is_baseline);
    CHECK(decoded<CompareReply>(Json::object()).rows.empty());
}

TEST_CASE("a mistyped comparison field names its path", "[api][compare]") {
    CHECK(decode_error<CompareReply>(Json::parse(R"({"rows": [{}, {"partition": "0"}]})")) ==
          "rows[1].partition: expected an integer, got string");
    CHECK(decode_error<CompareReply>(
              Json::parse(R"({"rows": [{"primary_metric": {"lower_is_better": 1}}]})")) ==
          "rows[0].primary_metric.lower_is_better: expected a boolean, got number");
    CHECK(decode_error<CompareReply>(Json::parse(R"({"golden_datasets": {"saved_s": "8"}})")) ==
          "golden_datasets.saved_s: expected a number, got string");
    CHECK(decode_error<CompareReply>(Json::parse(R"({"varying_axes": "cache"})")) ==
          "varying_axes: expected an array, got string");
}

}  // namespace ds::api
