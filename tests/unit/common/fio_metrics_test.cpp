// metrics_from_fio_json against real fio 3.33 output recorded on this host
// (tests/data/fio/*.json, see tests/data/fio/README.md for the commands). The
// expected numbers are copied by hand from those files (the pooled ones of
// the json+ file computed by hand from its bins, by fio's rule).
#include "common/fio_metrics.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

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
    CHECK(m.size() == 12);
    CHECK(m.at("read_iops") == Approx(12480.759620));
    CHECK(m.at("write_iops") == Approx(12471.264368));
    CHECK(m.at("read_bw_mib_s") == Approx(51121191 / kMiB));
    CHECK(m.at("write_bw_mib_s") == Approx(51082298 / kMiB));
    CHECK(m.at("read_clat_p50_us") == Approx(125.440));
    CHECK(m.at("read_clat_p90_us") == Approx(175.104));
    CHECK(m.at("read_clat_p99_us") == Approx(254.976));
    CHECK(m.at("read_clat_p99_9_us") == Approx(765.952));
    CHECK(m.at("write_clat_p50_us") == Approx(148.480));
    CHECK(m.at("write_clat_p90_us") == Approx(205.824));
    CHECK(m.at("write_clat_p99_us") == Approx(313.344));
    CHECK(m.at("write_clat_p99_9_us") == Approx(937.984));
}

TEST_CASE("fio metrics: two jobs without bins: the worst job's percentile, named as such",
          "[fio_metrics]") {
    // Plain json (runs stored before json+): no bins to pool.
    const auto raw = load_fio_output("randrw_4k_numjobs2.json");
    REQUIRE(raw["jobs"].size() == 2);
    REQUIRE_FALSE(raw["jobs"][0]["read"]["clat_ns"].contains("bins"));

    const auto metrics = ds::metrics_from_fio_json(raw);
    REQUIRE(metrics.ok());
    const auto& m = *metrics;
    CHECK(m.at("read_iops") == Approx(9516.741629 + 9511.744128));
    CHECK(m.at("write_iops") == Approx(9526.236882 + 9563.218391));
    CHECK(m.at("read_bw_mib_s") == Approx((38980573.0 + 38960103.0) / kMiB));
    CHECK(m.at("write_bw_mib_s") == Approx((39019466.0 + 39170942.0) / kMiB));
    // max over jobs: job 0 / job 1 values in ns
    CHECK(m.at("read_clat_jobmax_p50_us") == Approx(179.200));      // 179200 / 179200
    CHECK(m.at("read_clat_jobmax_p90_us") == Approx(232.448));      // 232448 / 232448
    CHECK(m.at("read_clat_jobmax_p99_us") == Approx(354.304));      // 337920 / 354304
    CHECK(m.at("read_clat_jobmax_p99_9_us") == Approx(2703.360));   // 1941504 / 2703360
    CHECK(m.at("write_clat_jobmax_p50_us") == Approx(195.584));     // 195584 / 193536
    CHECK(m.at("write_clat_jobmax_p90_us") == Approx(250.880));     // 250880 / 248832
    CHECK(m.at("write_clat_jobmax_p99_us") == Approx(419.840));     // 419840 / 382976
    CHECK(m.at("write_clat_jobmax_p99_9_us") == Approx(2834.432));  // 2834432 / 2572288
    // Never under the pooled names: the maximum is not a percentile of all I/Os.
    for (const auto& [name, value] : m) CHECK(name.find("clat_p") == std::string::npos);
    CHECK(m.size() == 4 + 8);
}

TEST_CASE("fio metrics: two jobs with json+ bins: percentiles of the pooled distribution",
          "[fio_metrics]") {
    const auto raw = load_fio_output("randrw_4k_numjobs2_jsonplus.json");
    REQUIRE(raw["jobs"].size() == 2);
    REQUIRE(raw["jobs"][1]["write"]["clat_ns"]["bins"].size() == 549);

    const auto metrics = ds::metrics_from_fio_json(raw);
    REQUIRE(metrics.ok());
    const auto& m = *metrics;
    CHECK(m.at("read_iops") == Approx(12692.861428 + 7573.685263));
    CHECK(m.at("write_bw_mib_s") == Approx((51758173.0 + 31269163.0) / kMiB));
    // Pooled (bins of both jobs merged) vs fio's per-job values, ns:
    //            pooled      job 0      job 1
    //   read p50    72192      64256      79360
    //        p90    99840      98816     101888
    //        p99  1003520     220160    3194880
    //      p99.9 22413312   21364736   23986176
    //  write p50   103936      93696     117248
    //        p90   150528     136192     171008
    //        p99  4014080    2768896    5931008
    //      p99.9 24248320   22675456   25296896
    CHECK(m.at("read_clat_p50_us") == Approx(72.192));
    CHECK(m.at("read_clat_p90_us") == Approx(99.840));
    CHECK(m.at("read_clat_p99_us") == Approx(1003.520));
    CHECK(m.at("read_clat_p99_9_us") == Approx(22413.312));
    CHECK(m.at("write_clat_p50_us") == Approx(103.936));
    CHECK(m.at("write_clat_p90_us") == Approx(150.528));
    CHECK(m.at("write_clat_p99_us") == Approx(4014.080));
    CHECK(m.at("write_clat_p99_9_us") == Approx(24248.320));
    CHECK(m.count("read_clat_jobmax_p99_us") == 0);
    CHECK(m.size() == 12);

    // The pooled percentile lies between the jobs' own, and here below the
    // worst job's (what the max rule would have reported) every time.
    for (const char* direction : {"read", "write"}) {
        for (const auto& [key, suffix] :
             std::vector<std::pair<std::string, std::string>>{{"50.000000", "p50"},
                                                              {"90.000000", "p90"},
                                                              {"99.000000", "p99"},
                                                              {"99.900000", "p99_9"}}) {
            INFO(direction << " " << key);
            const double job0 = raw["jobs"][0][direction]["clat_ns"]["percentile"][key];
            const double job1 = raw["jobs"][1][direction]["clat_ns"]["percentile"][key];
            const double pooled = m.at(std::string(direction) + "_clat_" + suffix + "_us") * 1000;
            CHECK(pooled >= std::min(job0, job1));
            CHECK(pooled < std::max(job0, job1));
        }
    }
}

TEST_CASE("fio metrics: one job's bins give exactly fio's own percentiles", "[fio_metrics]") {
    const auto raw = load_fio_output("randrw_4k_numjobs2_jsonplus.json");
    for (std::size_t job = 0; job < raw["jobs"].size(); ++job) {
        for (const char* direction : {"read", "write"}) {
            const ds::Json& clat = raw["jobs"][job][direction]["clat_ns"];
            ds::FioLatencyBins bins;
            for (const auto& [value, count] : clat["bins"].items()) {
                bins[std::stoull(value)] = count.get<std::uint64_t>();
            }
            // Every percentile of fio's default list, fio 1..99.99.
            REQUIRE(clat["percentile"].size() == 17);
            for (const auto& [key, fio_value] : clat["percentile"].items()) {
                INFO("job " << job << " " << direction << " " << key);
                CHECK(ds::fio_bins_percentile(bins, std::stod(key)) ==
                      fio_value.get<std::uint64_t>());
            }
            // And as metrics of that job alone (the pooled rule, one job).
            ds::Json alone = raw;
            alone["jobs"] = ds::Json::array({raw["jobs"][job]});
            const auto metrics = ds::metrics_from_fio_json(alone);
            REQUIRE(metrics.ok());
            CHECK(metrics->at(std::string(direction) + "_clat_p99_us") ==
                  Approx(clat["percentile"]["99.000000"].get<double>() / 1000));
        }
    }
}

TEST_CASE("fio metrics: fio's percentile rule on bins", "[fio_metrics]") {
    const ds::FioLatencyBins bins = {{100, 50}, {200, 40}, {300, 9}, {400, 1}};
    CHECK(ds::fio_bins_percentile(bins, 50) == 100u);  // 50 >= 50% of 100
    CHECK(ds::fio_bins_percentile(bins, 50.5) == 200u);
    CHECK(ds::fio_bins_percentile(bins, 90) == 200u);  // 90 >= 90
    CHECK(ds::fio_bins_percentile(bins, 99) == 300u);  // 99 >= 99
    CHECK(ds::fio_bins_percentile(bins, 99.9) == 400u);
    CHECK(ds::fio_bins_percentile(bins, 100) == 400u);
    CHECK_FALSE(ds::fio_bins_percentile(bins, 100.1).has_value());
    CHECK_FALSE(ds::fio_bins_percentile({}, 50).has_value());
    CHECK_FALSE(ds::fio_bins_percentile({{1, UINT64_MAX}, {2, 1}}, 50).has_value());
}

TEST_CASE("fio metrics: without bins in every job, the fallbacks apply", "[fio_metrics]") {
    auto raw = load_fio_output("randrw_4k_numjobs2_jsonplus.json");
    raw["jobs"][1]["read"]["clat_ns"].erase("bins");
    auto metrics = ds::metrics_from_fio_json(raw);
    REQUIRE(metrics.ok());
    // read: one job lacks bins, so the worst job's; write still pooled.
    CHECK(metrics->at("read_clat_jobmax_p99_us") == Approx(3194.880));
    CHECK(metrics->count("read_clat_p99_us") == 0);
    CHECK(metrics->at("write_clat_p99_us") == Approx(4014.080));
}

TEST_CASE("fio metrics: the native engine's merged section gives the pooled percentiles",
          "[fio_metrics]") {
    auto raw = load_fio_output("randrw_4k_numjobs2.json");
    ds::Json all_jobs = {{"read", raw["jobs"][0]["read"]}, {"write", raw["jobs"][0]["write"]}};
    all_jobs["read"]["clat_ns"]["percentile"]["99.000000"] = 345000;
    all_jobs["write"]["clat_ns"]["percentile"]["90.000000"] = 240000;
    raw["all jobs"] = all_jobs;
    auto metrics = ds::metrics_from_fio_json(raw);
    REQUIRE(metrics.ok());
    CHECK(metrics->at("read_clat_p99_us") == Approx(345.0));
    CHECK(metrics->at("write_clat_p90_us") == Approx(240.0));
    CHECK(metrics->count("read_clat_jobmax_p99_us") == 0);
    // Throughput is still the jobs' sum.
    CHECK(metrics->at("read_iops") == Approx(9516.741629 + 9511.744128));

    raw["all jobs"]["write"]["clat_ns"]["percentile"]["99.000000"] = "slow";
    metrics = ds::metrics_from_fio_json(raw);
    REQUIRE_FALSE(metrics.ok());
    CHECK_THAT(metrics.error().message,
               Catch::Contains("\"all jobs\".write.clat_ns.percentile[\"99.000000\"]"));
    raw["all jobs"] = ds::Json::array();
    metrics = ds::metrics_from_fio_json(raw);
    REQUIRE_FALSE(metrics.ok());
    CHECK_THAT(metrics.error().message,
               Catch::Contains("\"all jobs\" is a array, expected an object"));
}

TEST_CASE("fio metrics: malformed bins are refused, naming the bin", "[fio_metrics]") {
    const auto good = load_fio_output("randrw_4k_numjobs2_jsonplus.json");
    auto expect_error = [&](const std::function<void(ds::Json&)>& spoil,
                            const std::string& fragment) {
        ds::Json input = good;
        spoil(input["jobs"][1]["write"]["clat_ns"]);
        const auto metrics = ds::metrics_from_fio_json(input);
        REQUIRE_FALSE(metrics.ok());
        CHECK(metrics.error().code == ds::errc::kInvalidArgument);
        INFO(metrics.error().message);
        CHECK(metrics.error().message.find(fragment) != std::string::npos);
    };
    expect_error(
        [](ds::Json& clat) {
            clat["bins"] = ds::Json::array({1, 2});
        },
        "jobs[1].write.clat_ns.bins is a array, expected an object");
    expect_error([](ds::Json& clat) { clat["bins"]["fast"] = 3; },
                 "jobs[1].write.clat_ns.bins[\"fast\"] is not a bin value in ns");
    expect_error([](ds::Json& clat) { clat["bins"]["-5"] = 3; },
                 "jobs[1].write.clat_ns.bins[\"-5\"] is not a bin value in ns");
    expect_error([](ds::Json& clat) { clat["bins"]["1.5"] = 3; },
                 "jobs[1].write.clat_ns.bins[\"1.5\"] is not a bin value");
    expect_error([](ds::Json& clat) { clat["bins"]["99999999"] = -1; },
                 "jobs[1].write.clat_ns.bins[\"99999999\"] is -1, expected a count");
    expect_error([](ds::Json& clat) { clat["bins"]["99999999"] = 2.5; },
                 "jobs[1].write.clat_ns.bins[\"99999999\"] is 2.5, expected a count");
    expect_error([](ds::Json& clat) { clat["bins"]["99999999"] = "7"; },
                 "jobs[1].write.clat_ns.bins[\"99999999\"] is \"7\", expected a count");
    expect_error(
        [](ds::Json& clat) {
            for (int i = 0; i < 2000; ++i) clat["bins"][std::to_string(1000000000 + i)] = 1;
        },
        "jobs[1].write.clat_ns.bins has 2549 bins, more than fio's 1856");
    expect_error(
        [](ds::Json& clat) {
            clat["bins"]["0064"] = 1;
            clat["bins"]["64"] = 1;
        },
        "repeats bin value 64");
    expect_error([](ds::Json& clat) { clat["bins"]["99999999"] = UINT64_MAX; },
                 "jobs[1].write.clat_ns.bins has counts that sum beyond 2^64");
}

TEST_CASE("fio metrics: a write-only job has no read keys", "[fio_metrics]") {
    const auto raw = load_fio_output("randwrite_4k_numjobs1.json");
    REQUIRE(raw["jobs"][0]["read"]["io_bytes"] == 0);

    const auto metrics = ds::metrics_from_fio_json(raw);
    REQUIRE(metrics.ok());
    const auto& m = *metrics;
    for (const auto& [key, value] : m) CHECK(key.rfind("write_", 0) == 0);
    CHECK(m.size() == 6);
    CHECK(m.at("write_iops") == Approx(301962.018991));
    CHECK(m.at("write_bw_mib_s") == Approx(1236836429 / kMiB));
    CHECK(m.at("write_clat_p50_us") == Approx(1.992));
    CHECK(m.at("write_clat_p90_us") == Approx(2.800));
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
