// metrics_from_fio_json against real fio 3.33 output recorded on this host
// (tests/data/fio/*.json, see tests/data/fio/README.md for the commands). The
// expected numbers are copied by hand from those files.
#include "common/fio_metrics.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "support/test_data.h"

namespace {

ds::Json load_fio_output(const std::string& name) {
    const std::string text = ds::test::test_data_text(std::filesystem::path("fio") / name);
    REQUIRE_FALSE(text.empty());
    return ds::Json::parse(text);
}

constexpr double kMiB = 1024.0 * 1024.0;

}  // namespace

TEST_CASE("fio metrics: one randrw job", "[fio_metrics]") {
    const auto raw = load_fio_output("randrw_4k_numjobs1.json");
    // Cross-check that the file is what the expectations below were read from.
    REQUIRE(raw["jobs"].size() == 1);
    REQUIRE(raw["jobs"][0]["read"]["bw_bytes"] == 51121191);

    const auto metrics = ds::metrics_from_fio_json(raw);
    REQUIRE(metrics.ok());
    const auto& m = *metrics;
    CHECK(m.size() == 10);
    CHECK(m.at("read_iops") == Approx(12480.759620));
    CHECK(m.at("write_iops") == Approx(12471.264368));
    CHECK(m.at("read_bw_mib_s") == Approx(51121191 / kMiB));
    CHECK(m.at("write_bw_mib_s") == Approx(51082298 / kMiB));
    CHECK(m.at("read_clat_p50_us") == Approx(125.440));
    CHECK(m.at("read_clat_p99_us") == Approx(254.976));
    CHECK(m.at("read_clat_p99_9_us") == Approx(765.952));
    CHECK(m.at("write_clat_p50_us") == Approx(148.480));
    CHECK(m.at("write_clat_p99_us") == Approx(313.344));
    CHECK(m.at("write_clat_p99_9_us") == Approx(937.984));
}

TEST_CASE("fio metrics: two jobs sum throughput and take the worst percentile", "[fio_metrics]") {
    const auto raw = load_fio_output("randrw_4k_numjobs2.json");
    REQUIRE(raw["jobs"].size() == 2);

    const auto metrics = ds::metrics_from_fio_json(raw);
    REQUIRE(metrics.ok());
    const auto& m = *metrics;
    CHECK(m.at("read_iops") == Approx(9516.741629 + 9511.744128));
    CHECK(m.at("write_iops") == Approx(9526.236882 + 9563.218391));
    CHECK(m.at("read_bw_mib_s") == Approx((38980573.0 + 38960103.0) / kMiB));
    CHECK(m.at("write_bw_mib_s") == Approx((39019466.0 + 39170942.0) / kMiB));
    // max over jobs: job 0 / job 1 values in ns
    CHECK(m.at("read_clat_p50_us") == Approx(179.200));      // 179200 / 179200
    CHECK(m.at("read_clat_p99_us") == Approx(354.304));      // 337920 / 354304
    CHECK(m.at("read_clat_p99_9_us") == Approx(2703.360));   // 1941504 / 2703360
    CHECK(m.at("write_clat_p50_us") == Approx(195.584));     // 195584 / 193536
    CHECK(m.at("write_clat_p99_us") == Approx(419.840));     // 419840 / 382976
    CHECK(m.at("write_clat_p99_9_us") == Approx(2834.432));  // 2834432 / 2572288
}

TEST_CASE("fio metrics: a write-only job has no read keys", "[fio_metrics]") {
    const auto raw = load_fio_output("randwrite_4k_numjobs1.json");
    REQUIRE(raw["jobs"][0]["read"]["io_bytes"] == 0);

    const auto metrics = ds::metrics_from_fio_json(raw);
    REQUIRE(metrics.ok());
    const auto& m = *metrics;
    for (const auto& [key, value] : m) CHECK(key.rfind("write_", 0) == 0);
    CHECK(m.size() == 5);
    CHECK(m.at("write_iops") == Approx(301962.018991));
    CHECK(m.at("write_bw_mib_s") == Approx(1236836429 / kMiB));
    CHECK(m.at("write_clat_p50_us") == Approx(1.992));
    CHECK(m.at("write_clat_p99_us") == Approx(3.792));
    CHECK(m.at("write_clat_p99_9_us") == Approx(11.584));
}

TEST_CASE("fio metrics: percentiles fio did not report are omitted", "[fio_metrics]") {
    auto raw = load_fio_output("randrw_4k_numjobs1.json");
    raw["jobs"][0]["read"]["clat_ns"].erase("percentile");
    raw["jobs"][0]["write"]["clat_ns"]["percentile"].erase("99.900000");
    const auto metrics = ds::metrics_from_fio_json(raw);
    REQUIRE(metrics.ok());
    CHECK(metrics->count("read_iops") == 1);
    CHECK(metrics->count("read_clat_p50_us") == 0);
    CHECK(metrics->count("write_clat_p99_us") == 1);
    CHECK(metrics->count("write_clat_p99_9_us") == 0);
}

TEST_CASE("fio metrics: garbage is rejected with the offending path", "[fio_metrics]") {
    const auto good = load_fio_output("randrw_4k_numjobs2.json");
    auto expect_error = [](const ds::Json& input, const std::string& fragment) {
        const auto metrics = ds::metrics_from_fio_json(input);
        REQUIRE_FALSE(metrics.ok());
        CHECK(metrics.error().code == ds::errc::kInvalidArgument);
        INFO(metrics.error().message);
        CHECK(metrics.error().message.find(fragment) != std::string::npos);
    };

    expect_error(ds::Json::array(), "expected an object");
    expect_error(ds::Json("fio-3.33"), "expected an object");
    expect_error(ds::Json::object(), "\"jobs\" is missing");
    expect_error(ds::Json{{"jobs", "many"}}, "\"jobs\" is a string, expected an array");
    expect_error(ds::Json{{"jobs", ds::Json::array()}}, "\"jobs\" is empty");
    expect_error(ds::Json{{"jobs", {42}}}, "jobs[0] is a number, expected an object");

    auto no_write = good;
    no_write["jobs"][1].erase("write");
    expect_error(no_write, "jobs[1].write is missing");

    auto string_iops = good;
    string_iops["jobs"][1]["write"]["iops"] = "9000";
    expect_error(string_iops, "jobs[1].write.iops is a string, expected a number");

    auto negative_bw = good;
    negative_bw["jobs"][0]["read"]["bw_bytes"] = -5;
    expect_error(negative_bw, "jobs[0].read.bw_bytes is -5, expected >= 0");

    auto bad_percentile = good;
    bad_percentile["jobs"][0]["read"]["clat_ns"]["percentile"]["99.000000"] = "slow";
    expect_error(bad_percentile, "jobs[0].read.clat_ns.percentile[\"99.000000\"]");

    auto failed_job = good;
    failed_job["jobs"][1]["error"] = 28;
    expect_error(failed_job, "jobs[1] (job \"randrw4k\") failed with error 28");
}
