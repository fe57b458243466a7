// GET /v1/configurations/ID/results and /apply as typed messages
// (common/api/configurations.h): each encodes and decodes to itself, reads
// an older daemon's shape, and names the path of a mistyped field.
#include <catch2/catch.hpp>

#include "common/api/configurations.h"
#include "unit/api_messages.h"

namespace ds::api {

using test::decode_error;
using test::decoded;
using test::round_trip;

namespace {

// A configuration's results as daemon/compare/compare.cpp answers them.
const Json kResults = Json::parse(R"({
    "config_id": "cd34", "settings": {"cache": "none"}, "durability_risks": [],
    "sweeps_pooled": false,
    "partitions": [{"accel": "kvm", "host": "", "qemu": "9.2.0", "libvirt": "10.0.0",
                    "kernel": "6.1.0"}],
    "metrics": ["read_iops"],
    "rows": [{"workload": "randread", "workload_params": {"kind": "fio", "rw": "randread"},
              "sweep_ids": [4, 7], "partition": 0, "runs": {"succeeded": 3},
              "metrics": {"read_iops": {"n": 3, "mean": 1200.0}}},
             {"workload": "randread", "workload_params": {"kind": "fio"}, "sweep_ids": [9],
              "partition": null, "runs": {"pending": 1}, "metrics": {}}]})");

// An apply answer of a server settings format.
const Json kApply = Json::parse(R"({
    "config_id": "cd34", "format": "mycnf", "settings": {"cache": "none"},
    "durability_risks": ["innodb_flush_log_at_trx_commit=2"], "notes": ["restart mysqld"],
    "body": "innodb_flush_log_at_trx_commit=2\n",
    "snippet": "# cd34\n[mysqld]\ninnodb_flush_log_at_trx_commit=2\n",
    "measured_durability": {"runs": 2, "covers": []}, "workload": "atis"})");

}  // namespace

TEST_CASE("a configuration's results and apply replies round-trip", "[api][configurations]") {
    const auto results = decoded<ConfigResultsReply>(kResults);
    CHECK(results.rows.at(0).sweep_ids == std::vector<std::int64_t>{4, 7});
    CHECK_FALSE(results.rows.at(1).partition);
    CHECK(to_json(results) == kResults);
    CHECK(round_trip(results) == results);

    // Settings that no longer parse: no risks (null), and why.
    Json broken = kResults;
    broken["durability_risks"] = nullptr;
    broken["settings_error"] = "unknown axis 'old'";
    CHECK(to_json(decoded<ConfigResultsReply>(broken)) == broken);

    const auto applied = decoded<ApplyReply>(kApply);
    CHECK(applied.workload == "atis");
    CHECK(to_json(applied) == kApply);
    Json disk_only = kApply;
    disk_only.erase("workload");
    CHECK(to_json(decoded<ApplyReply>(disk_only)) == disk_only);
    CHECK(round_trip(applied) == applied);
}

TEST_CASE("an older daemon's configuration replies read, absent fields as absent",
          "[api][configurations]") {
    const auto results = decoded<ConfigResultsReply>(Json::parse(R"({"config_id": "cd34",
        "rows": [{"workload": "w"}]})"));
    CHECK_FALSE(results.sweeps_pooled);
    CHECK(results.rows.at(0).sweep_ids.empty());
    const auto applied = decoded<ApplyReply>(Json::object());
    CHECK_FALSE(applied.snippet);
    CHECK(applied.notes.empty());
}

TEST_CASE("a mistyped configuration field names its path", "[api][configurations]") {
    CHECK(decode_error<ConfigResultsReply>(Json::parse(R"({"rows": [{"sweep_ids": [4, "7"]}]})")) ==
          "rows[0].sweep_ids[1]: expected an integer, got string");
    CHECK(decode_error<ConfigResultsReply>(Json::parse(R"({"sweeps_pooled": "no"})")) ==
          "sweeps_pooled: expected a boolean, got string");
    CHECK(decode_error<ApplyReply>(Json::parse(R"({"snippet": ["a"]})")) ==
          "snippet: expected a string, got array");
}

}  // namespace ds::api
