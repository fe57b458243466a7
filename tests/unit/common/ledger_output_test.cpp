// The ledger kind's output as the daemon reads it from an untrusted guest.
#include "common/ledger_output.h"

#include <catch2/catch.hpp>

#include "common/workload_kind.h"

namespace ds {
namespace {

Json good_output() {
    return Json{{"variant", "file"},
                {"acknowledged", 500},
                {"wall_s", 2.5},
                {"commit_latency_us", {{"p50", 4000.0}, {"p99", 9000.0}, {"max", 15000.0}}},
                {"per_second", {200, 200, 100}}};
}

TEST_CASE("ledger output: commits per second, latency in ms, the per-second series") {
    auto metrics = ledger_output_metrics("ledger", good_output());
    REQUIRE(metrics.ok());
    CHECK(metrics->at("commits_per_s") == Approx(200.0));
    CHECK(metrics->at("acknowledged") == 500);
    CHECK(metrics->at("commit_p50_ms") == Approx(4.0));
    CHECK(metrics->at("commit_p99_ms") == Approx(9.0));
    CHECK(metrics->at("commit_max_ms") == Approx(15.0));
    auto series = ledger_output_series(good_output());
    REQUIRE(series.ok());
    CHECK(series->at("commits") == std::vector<double>{200, 200, 100});

    const WorkloadKind* kind = find_workload_kind("ledger");
    REQUIRE(kind != nullptr);
    CHECK(kind->acknowledges);
    CHECK(kind->primary_metric.name == "commits_per_s");
    CHECK_FALSE(kind->primary_metric.lower_is_better);
}

TEST_CASE("workload kinds: acknowledging and server settings are the descriptors' own") {
    CHECK(durability_ledger_kind().name == "ledger");
    CHECK(kind_acknowledges("ledger"));
    CHECK_FALSE(kind_acknowledges("sysbench-oltp"));
    CHECK_FALSE(kind_acknowledges("no-such-kind"));

    CHECK(is_server_settings_format("mycnf"));
    CHECK_FALSE(is_server_settings_format("qm"));
    CHECK_FALSE(is_server_settings_format(""));
    const Json database = {{"variant", "database"}};
    for (std::string_view kind : {"mariadb-atis", "sysbench-oltp", "ledger"})
        CHECK(kind_applies_server_settings(kind, database, "mycnf"));
    CHECK(kind_applies_server_settings("pgbench", Json::object(), "pgconf"));
    CHECK(kind_applies_server_settings("ledger", {{"variant", "postgresql"}}, "pgconf"));
    CHECK_FALSE(kind_applies_server_settings("ledger", Json::object(), "mycnf"));
    for (std::string_view kind : {"fio", "io", "no-such-kind"})
        CHECK_FALSE(kind_applies_server_settings(kind, database, "mycnf"));
    CHECK_FALSE(kind_applies_server_settings("fio", Json::object(), ""));
}

TEST_CASE("ledger output: nothing acknowledged has no rate, not a division by zero") {
    Json output = good_output();
    output["acknowledged"] = 0;
    output["wall_s"] = 0;
    auto metrics = ledger_output_metrics("ledger", output);
    REQUIRE(metrics.ok());
    CHECK(metrics->at("acknowledged") == 0);
    CHECK(metrics->count("commits_per_s") == 0);
}

TEST_CASE("ledger output: a lying or broken output is refused, naming the field") {
    const auto refused = [](Json output) {
        auto metrics = ledger_output_metrics("ledger", output);
        REQUIRE_FALSE(metrics.ok());
        CHECK(metrics.error().code == errc::kInvalidArgument);
        return metrics.error().message;
    };
    Json output = good_output();
    output["acknowledged"] = -1;
    CHECK(refused(output) == "ledger output: acknowledged is not an integer in 0..1000000000");
    output = good_output();
    output["acknowledged"] = 2.5;
    CHECK(refused(output) == "ledger output: acknowledged is not an integer in 0..1000000000");
    output = good_output();
    output.erase("wall_s");
    CHECK(refused(output) == "ledger output: wall_s is missing");
    output = good_output();
    output["wall_s"] = 0;
    CHECK(refused(output) == "ledger output: wall_s is 0 although records were acknowledged");
    output = good_output();
    output["commit_latency_us"]["p99"] = "fast";
    CHECK(refused(output).find("commit_latency_us.p99 is not a number") != std::string::npos);
    CHECK(refused(Json::array()) == "ledger output: not an object");
    output = good_output();
    output["per_second"] = {1, -1};
    CHECK(ledger_output_series(output).error().message ==
          "ledger output.per_second[1] is not a non-negative number");
}

}  // namespace
}  // namespace ds
