// The narrow compare table (issue 10): one row per configuration, only the
// varying settings, mean ± CI, ratio to the baseline with its CI, verdict,
// risk flag; best first; within 120 columns for a 12-configuration sweep.
#include <catch2/catch.hpp>
#include <sstream>
#include <tuple>

#include "hostctl/format.h"

namespace {

using ds::hostctl::Json;

// A sweep of 2 caches x 6 filesystems, as compare_sweep answers it.
Json twelve_configurations() {
    const std::vector<std::string> caches = {"none", "unsafe"};
    const std::vector<std::string> filesystems = {"ext4",         "ext4:barrier=0,data=writeback",
                                                  "btrfs",        "btrfs:nodatacow",
                                                  "btrfs+single", "btrfs+single:nodatacow"};
    Json rows = Json::array();
    Json ranking = Json::array();
    int index = 0;
    for (const auto& cache : caches) {
        for (const auto& filesystem : filesystems) {
            const double mean = 1000 + 137.0 * index;
            const bool baseline = index == 0;
            Json row = {
                {"config_id", "cfg" + std::to_string(index)},
                {"workload", "randrw"},
                {"settings", {{"cache", cache}, {"filesystem", filesystem}}},
                {"partition", 0},
                {"runs", {{"succeeded", 5}, {"failed", index == 3 ? 1 : 0}}},
                {"metrics",
                 {{"read_iops",
                   {{"n", 5},
                    {"mean", mean},
                    {"ci95_low", mean - 31.4},
                    {"ci95_high", mean + 31.4}}}}},
                {"primary_metric", {{"name", "read_iops"}, {"lower_is_better", false}}},
                {"is_baseline", baseline},
                {"host_baseline", false},
                {"durability_risks", cache == "unsafe" ? Json{"cache=unsafe"} : Json::array()}};
            if (!baseline) {
                const double ratio = mean / 1000;
                row["vs_baseline"] = {
                    {"ratio", ratio},
                    {"ci95_low", ratio * 0.97},
                    {"ci95_high", ratio * 1.03},
                    {"p_adjusted", 0.001},
                    {"verdict", index == 1 ? "no significant difference" : "faster"}};
            }
            rows.push_back(row);
            ++index;
        }
    }
    for (int r = 11; r >= 0; --r) ranking.push_back({{"row", r}});
    return {{"sweep_id", 9},
            {"varying_axes", {"cache", "filesystem"}},
            {"partitions", Json::array({{{"accel", "kvm"}, {"qemu", "7.2.0"}}})},
            {"baseline", {{"config_id", "cfg0"}, {"chosen_by", "spec"}}},
            {"practical_difference", 0.02},
            {"primary_metric", {{"name", "read_iops"}, {"lower_is_better", false}}},
            {"rows", rows},
            {"ranking", ranking}};
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream stream(text);
    for (std::string line; std::getline(stream, line);) lines.push_back(line);
    return lines;
}

TEST_CASE("narrow compare table: 12 configurations fit in 120 columns, best first",
          "[hostctl][format][compare]") {
    const std::string table = ds::hostctl::format_compare_table(twelve_configurations());
    INFO(table);
    for (const std::string& line : lines_of(table)) CHECK(ds::hostctl::display_width(line) <= 120);
    const std::vector<std::string> lines = lines_of(table);
    REQUIRE(lines.size() >= 16);
    CHECK(lines[0] ==
          "sweep 9: read_iops (higher is better), mean ± 95% CI half-width over n "
          "succeeded runs, best first");
    CHECK(lines[1] ==
          "ratio = mean / the baseline's (cache=none filesystem=ext4, chosen in the "
          "spec) with its 95% CI");
    CHECK(lines[2] == "verdict: Holm-adjusted p < 0.05; differences under 2% are never called");
    // The header, then the best row (cfg11: 1000 + 137 * 11 = 2507).
    CHECK(lines[3] ==
          "cache   filesystem                     read_iops        ratio [95% CI]  "
          "verdict                               n  !");
    CHECK(lines[4] ==
          "unsafe  btrfs+single:nodatacow         2507 ± 31  2.507 [2.432, 2.582]  "
          "faster                                5  !");
    // The baseline says so; a failed run shows next to n.
    CHECK_THAT(table, Catch::Contains(
                          "none    ext4                           1000 ± 31                     1  "
                          "baseline"));
    CHECK_THAT(table, Catch::Contains("5 (1 failed)"));
    CHECK_THAT(table, Catch::Contains("no significant difference"));
    CHECK_THAT(table, Catch::Contains("! cache=unsafe: can lose data on a power failure or crash"));
    // One partition: no partition line.
    CHECK_THAT(table, !Catch::Contains("partition"));
}

// seed-atis's shape: 5 filesystems with InnoDB's defaults, 2 of them with
// two tunings, n = 3 each, by total time.
Json seed_atis_shape() {
    const std::vector<std::tuple<std::string, std::string, std::string>> pairs = {
        {"ext4", "defaults", ""},
        {"btrfs", "defaults", ""},
        {"btrfs+nocow", "defaults", ""},
        {"btrfs:nobarrier", "defaults", ""},
        {"btrfs+nocow:nobarrier", "defaults", ""},
        {"ext4", "dw0-odsync", "innodb_doublewrite=0 innodb_flush_method=O_DSYNC"},
        {"btrfs", "dw0-odsync", "innodb_doublewrite=0 innodb_flush_method=O_DSYNC"},
        {"ext4", "dw0-nosync", "innodb_doublewrite=0 innodb_flush_method=nosync"},
        {"btrfs", "dw0-nosync", "innodb_doublewrite=0 innodb_flush_method=nosync"}};
    Json rows = Json::array();
    Json ranking = Json::array();
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        const auto& [filesystem, workload, options] = pairs[i];
        const double mean = 169.7 + 11.3 * static_cast<double>(i);
        Json row = {
            {"config_id", "cfg-" + filesystem},
            {"workload", workload},
            {"options", options.empty() ? Json() : Json(options)},
            {"settings", {{"filesystem", filesystem}}},
            {"partition", 0},
            {"runs", {{"succeeded", 3}}},
            {"metrics",
             {{"total_s",
               {{"n", 3}, {"mean", mean}, {"ci95_low", mean - 12.3}, {"ci95_high", mean + 12.3}}}}},
            {"primary_metric", {{"name", "total_s"}, {"lower_is_better", true}}},
            {"is_baseline", filesystem == "ext4"},
            {"host_baseline", false},
            {"durability_risks", Json::array({"cache=unsafe"})}};
        if (filesystem != "ext4")
            row["vs_baseline"] = {{"ratio", mean / 169.7},
                                  {"ci95_low", mean / 169.7 - 0.123},
                                  {"ci95_high", mean / 169.7 + 0.123},
                                  {"p_adjusted", 0.2},
                                  {"verdict", "no significant difference"}};
        rows.push_back(row);
        ranking.push_back({{"row", i}});
    }
    return {{"sweep_id", 3},
            {"varying_axes", {"filesystem"}},
            {"partitions", Json::array({{{"accel", "tcg"}}})},
            {"baseline", {{"config_id", "cfg-ext4"}, {"chosen_by", "first configuration"}}},
            {"practical_difference", 0.02},
            {"primary_metric", {{"name", "total_s"}, {"lower_is_better", true}}},
            {"rows", rows},
            {"ranking", ranking}};
}

TEST_CASE("narrow compare table: seed-atis fits in 120 columns, server variables as a legend",
          "[hostctl][format][compare]") {
    const std::string table = ds::hostctl::format_compare_table(seed_atis_shape());
    INFO(table);
    for (const std::string& line : lines_of(table)) CHECK(ds::hostctl::display_width(line) <= 120);
    const std::vector<std::string> lines = lines_of(table);
    REQUIRE(lines.size() > 4);
    CHECK_THAT(lines[3], Catch::StartsWith("filesystem             workload "));
    CHECK(lines[3].find("workload") < lines[3].find("total_s"));
    CHECK_THAT(lines[3], !Catch::Contains("options"));
    // Each tuning's variables once, under the table; InnoDB's defaults not at all.
    CHECK_THAT(table, Catch::Contains("\nworkload dw0-odsync: innodb_doublewrite=0 "
                                      "innodb_flush_method=O_DSYNC\nworkload dw0-nosync: "
                                      "innodb_doublewrite=0 innodb_flush_method=nosync\n"));
    CHECK_THAT(table, !Catch::Contains("workload defaults:"));
}

TEST_CASE("narrow compare table: partitions are shown apart and say so",
          "[hostctl][format][compare]") {
    Json compare = twelve_configurations();
    compare["partitions"].push_back({{"accel", "tcg"}, {"qemu", "7.2.0"}});
    compare["rows"][5]["partition"] = 1;
    compare["rows"][5]["vs_baseline"] = {{"verdict", "no baseline"}};
    const std::string table = ds::hostctl::format_compare_table(compare);
    INFO(table);
    CHECK_THAT(table, Catch::Contains("shown apart: they are not pooled, and each is compared "
                                      "with the baseline of its own partition"));
    CHECK_THAT(table, Catch::Contains("\npartition 1 of 2: kvm, QEMU 7.2.0\n"));
    CHECK_THAT(table, Catch::Contains("\npartition 2 of 2: tcg, QEMU 7.2.0\n"));
    const std::size_t second = table.find("partition 2 of 2");
    CHECK(table.find("btrfs+single:nodatacow", second) != std::string::npos);
    CHECK(table.find("no baseline", second) != std::string::npos);
}

}  // namespace
