// Skimming a run's raw output for the members the report needs: the same
// values as parsing it whole, whatever the text around them holds.
#include <catch2/catch.hpp>

#include "common/workload_output.h"
#include "daemon/report/json_skim.h"
#include "support/report_fixture.h"

namespace ds::report {
namespace {

const std::vector<JsonPath> kSeriesPaths = {{"jobs", "*", "read", "iops_per_second"},
                                            {"jobs", "*", "write", "iops_per_second"},
                                            {"jobs", "*", "read", "bw_bytes_per_second"},
                                            {"jobs", "*", "write", "bw_bytes_per_second"}};

TEST_CASE("skimming keeps exactly the members asked for, in place", "[report][skim]") {
    const std::string text = R"({"fio version": "fio-3.33", "jobs": [
        {"jobname": "a \"quoted\" [name] {x}", "read": {"iops": 5, "iops_per_second": [1, 2, 3],
         "clat_ns": {"bins": {"1000": 4, "2000": 5}}}, "write": {"iops_per_second": []}},
        {"jobname": "b\\", "read": {"iops_per_second": [4.5]}},
        7],
      "disk_util": [{"name": "sdb"}]})";
    const auto skimmed = skim_json(text, kSeriesPaths);
    REQUIRE(skimmed.has_value());
    CHECK(*skimmed == Json::parse(R"({"jobs": [
        {"read": {"iops_per_second": [1, 2, 3]}, "write": {"iops_per_second": []}},
        {"read": {"iops_per_second": [4.5]}},
        {}]})"));
    CHECK(skim_json(text, {{"fio version"}}) == Json{{"fio version", "fio-3.33"}});
    CHECK(skim_json(text, {{"nothing"}}) == Json::object());
}

TEST_CASE("the series of a skimmed output are those of the whole output", "[report][skim]") {
    const Json output = test::fixture_fio_output(1.3, 10, 7);
    const auto skimmed = skim_json(output.dump(), kSeriesPaths);
    REQUIRE(skimmed.has_value());
    const auto whole = per_second_series("fio", output);
    const auto from_skim = per_second_series("fio", *skimmed);
    REQUIRE(whole.ok());
    REQUIRE(from_skim.ok());
    CHECK(whole->at("read_iops").size() == 10);
    CHECK(from_skim.value() == whole.value());
    // Pretty-printed, as fio writes it.
    CHECK(skim_json(output.dump(2), kSeriesPaths) == skimmed);
}

TEST_CASE("skimming refuses text that is not JSON where it reads it", "[report][skim]") {
    for (const char* text :
         {"", "[1, 2]", "{\"jobs\": [", "{\"jobs\": [{\"read\": {\"iops_per_second\": [1,}}]}",
          "{\"a\": \"unterminated}", "{\"jobs\": []} trailing", "{\"a\" 1}"}) {
        INFO(text);
        CHECK_FALSE(skim_json(text, kSeriesPaths).has_value());
    }
}

}  // namespace
}  // namespace ds::report
