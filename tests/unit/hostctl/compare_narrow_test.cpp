// The narrow compare table (issue 10): one row per configuration, only the
// varying settings, mean ± CI, ratio to the baseline with its CI, verdict,
// risk flag; best first; within 120 columns for a 12-configuration sweep.
#include <catch2/catch.hpp>
#include <sstream>

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
