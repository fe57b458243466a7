#include "common/pgbench_output.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "common/workload_kind.h"
#include "support/test_data.h"

namespace ds {
namespace {

// Real outputs recorded on the development host (tests/data/pgbench/README.md).
std::string recorded(const std::string& name) {
    std::string text = test::test_data_text(std::filesystem::path("pgbench") / name);
    REQUIRE_FALSE(text.empty());
    return text;
}

Json recorded_output() {
    return Json{{"stdout", recorded("run-tpcb-15.18.out")},
                {"progress", recorded("run-tpcb-15.18.progress")},
                {"latency_us",
                 {{"count", 8270}, {"p50", 1400}, {"p95", 4000.5}, {"p99", 9000}, {"max", 23058}}}};
}

}  // namespace

TEST_CASE("pgbench: the recorded summary becomes tps, latency and counts") {
    const auto metrics = pgbench_output_metrics("pgbench", recorded_output());
    REQUIRE(metrics.ok());
    CHECK(metrics->at("tps") == Approx(2072.128617));
    CHECK(metrics->at("latency_avg_ms") == Approx(1.848));
    CHECK(metrics->at("latency_stddev_ms") == Approx(2.388));
    CHECK(metrics->at("transactions") == 8270);
    CHECK(metrics->at("failed") == 0);
    CHECK(metrics->at("latency_p50_ms") == Approx(1.4));
    CHECK(metrics->at("latency_p95_ms") == Approx(4.0005));
    CHECK(metrics->at("latency_p99_ms") == Approx(9.0));
    CHECK(metrics->at("latency_max_ms") == Approx(23.058));
}

TEST_CASE("pgbench: the progress lines become per-second tps and latency") {
    const auto series = pgbench_output_series(recorded_output());
    REQUIRE(series.ok());
    CHECK(series->at("tps") == std::vector<double>{1667.6, 2366.4, 2116.0, 2117.5});
    CHECK(series->at("latency_ms") == std::vector<double>{2.151, 1.617, 1.850, 1.820});
}

TEST_CASE("pgbench: the guest's output is checked before it is used") {
    SECTION("no tps line") {
        const auto metrics = pgbench_output_metrics("pgbench", Json{{"stdout", "pgbench (15)\n"}});
        REQUIRE_FALSE(metrics.ok());
        CHECK(metrics.error().message.find("no \"tps = \" line") != std::string::npos);
    }
    SECTION("stdout not a string") {
        CHECK_FALSE(pgbench_output_metrics("pgbench", Json{{"stdout", 7}}).ok());
    }
    SECTION("percentiles out of order or not numbers") {
        Json output = recorded_output();
        output["latency_us"]["p99"] = 10;  // below p95
        const auto metrics = pgbench_output_metrics("pgbench", output);
        REQUIRE_FALSE(metrics.ok());
        CHECK(metrics.error().message.find("latency_us.p99") != std::string::npos);
        output["latency_us"]["p99"] = "fast";
        CHECK_FALSE(pgbench_output_metrics("pgbench", output).ok());
        output["latency_us"] = {{"count", -1}};
        CHECK_FALSE(pgbench_output_metrics("pgbench", output).ok());
    }
    SECTION("no logged transactions: no percentiles, still the summary") {
        Json output = recorded_output();
        output["latency_us"] = {{"count", 0}};
        const auto metrics = pgbench_output_metrics("pgbench", output);
        REQUIRE(metrics.ok());
        CHECK(metrics->count("latency_p99_ms") == 0);
    }
    SECTION("negative or garbled progress values are not samples") {
        const auto series = pgbench_output_series(
            Json{{"progress", "progress: 1.0 s, -5 tps, lat 1 ms\nprogress: x\n"}});
        REQUIRE(series.ok());
        CHECK(series->empty());
    }
}

TEST_CASE("pgbench: its descriptor names the database image and its parsers") {
    const WorkloadKind* kind = find_workload_kind("pgbench");
    REQUIRE(kind != nullptr);
    CHECK(kind->image_variant == "mariadb");
    CHECK(kind->primary_metric.name == "tps");
    CHECK_FALSE(kind->primary_metric.lower_is_better);
    const auto metrics = metrics_from_workload_output("pgbench", recorded_output());
    REQUIRE(metrics.ok());
    CHECK(metrics->at("tps") == Approx(2072.128617));
}

}  // namespace ds
