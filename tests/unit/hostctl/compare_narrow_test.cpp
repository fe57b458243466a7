// The narrow compare table (issue 10): one row per configuration, only the
// varying settings, mean ± CI, ratio to the baseline with its CI, verdict,
// risk flag; best first; within 120 columns for a 12-configuration sweep.
#include <catch2/catch.hpp>
#include <sstream>
#include <tuple>

#include "hostctl/compare_format.h"
#include "hostctl/format.h"
#include "unit/api_messages.h"

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
    const std::string table = ds::hostctl::format_compare_table(
        ds::api::test::decoded<ds::api::CompareReply>(twelve_configurations()));
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
    const std::string table = ds::hostctl::format_compare_table(
        ds::api::test::decoded<ds::api::CompareReply>(seed_atis_shape()));
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
    const std::string table =
        ds::hostctl::format_compare_table(ds::api::test::decoded<ds::api::CompareReply>(compare));
    INFO(table);
    CHECK_THAT(table, Catch::Contains("shown apart: they are not pooled, and each is compared "
                                      "with the baseline of its own partition"));
    CHECK_THAT(table, Catch::Contains("\npartition 1 of 2: kvm, QEMU 7.2.0\n"));
    CHECK_THAT(table, Catch::Contains("\npartition 2 of 2: tcg, QEMU 7.2.0\n"));
    const std::size_t second = table.find("partition 2 of 2");
    CHECK(table.find("btrfs+single:nodatacow", second) != std::string::npos);
    CHECK(table.find("no baseline", second) != std::string::npos);
}

// A row's "durability" as compare_sweep answers it.
Json measured(int states, int with_losses, int max_lost, int fsck_failures = 0) {
    const bool safe = with_losses == 0 && fsck_failures == 0;
    return {{"verdict", "(the daemon's)"},
            {"safe", safe},
            {"runs", 2},
            {"unreadable_runs", 0},
            {"crash_states", states},
            {"mount_failures", 0},
            {"fsck_failures", fsck_failures},
            {"recovery_failures", 0},
            {"states_with_losses", with_losses},
            {"max_lost", max_lost},
            {"mean_lost", with_losses > 0 ? 1.5 : 0.0}};
}

const Json kNotMeasured = {
    {"verdict", "not measured"}, {"safe", false}, {"runs", 0}, {"unreadable_runs", 0}};

TEST_CASE("narrow compare table: a durability column next to the verdict when measured",
          "[hostctl][format][compare][durability]") {
    Json compare = twelve_configurations();
    for (Json& row : compare["rows"]) row["durability"] = kNotMeasured;
    compare["rows"][0]["durability"] = measured(50, 0, 0);
    compare["rows"][11]["durability"] = measured(50, 7, 12, 1);
    compare["rows"][6]["durability"] = {{"verdict", "1 run's durability record unreadable"},
                                        {"safe", false},
                                        {"runs", 0},
                                        {"unreadable_runs", 1}};
    const std::string table =
        ds::hostctl::format_compare_table(ds::api::test::decoded<ds::api::CompareReply>(compare));
    INFO(table);
    const std::vector<std::string> lines = lines_of(table);
    REQUIRE(lines.size() > 5);
    // n is as wide as "5 (1 failed)".
    CHECK(lines[3] ==
          "cache   filesystem                     read_iops        ratio [95% CI]  "
          "verdict                    durability                          n  !");
    CHECK(lines[4] ==
          "unsafe  btrfs+single:nodatacow         2507 ± 31  2.507 [2.432, 2.582]  "
          "faster                     7/50 lost (≤12), 1 fsck             5  !");
    CHECK_THAT(table, Catch::Contains("baseline                   0/50 lost "));
    CHECK_THAT(table, Catch::Contains("faster                     1 unreadable "));
    CHECK_THAT(table, Catch::Contains("faster                     not measured "));
    CHECK_THAT(table, Catch::Contains("\ndurability = crash states that lost acknowledged commits "
                                      "/ crash states tried"));

    // Measured nowhere (or an older daemon without the field): no column, no legend.
    for (Json& row : compare["rows"]) row["durability"] = kNotMeasured;
    const std::string unmeasured =
        ds::hostctl::format_compare_table(ds::api::test::decoded<ds::api::CompareReply>(compare));
    CHECK_THAT(unmeasured, !Catch::Contains("durability"));
    CHECK(unmeasured ==
          ds::hostctl::format_compare_table(
              ds::api::test::decoded<ds::api::CompareReply>(twelve_configurations())));
}

TEST_CASE("the durability cell says what the row's durability says",
          "[hostctl][format][compare][durability]") {
    using ds::durability_cell_text;
    CHECK(durability_cell_text(Json()) == "not measured");
    CHECK(durability_cell_text(kNotMeasured) == "not measured");
    CHECK(durability_cell_text(measured(50, 0, 0)) == "0/50 lost");
    CHECK(durability_cell_text(measured(50, 7, 12)) == "7/50 lost (≤12)");
    Json failures = measured(40, 0, 0);
    failures["mount_failures"] = 2;
    failures["fsck_failures"] = 3;
    failures["recovery_failures"] = 1;
    failures["unreadable_runs"] = 1;
    CHECK(durability_cell_text(failures) ==
          "0/40 lost, 2 no mount, 3 fsck, 1 no recovery, 1 unreadable");
    CHECK(durability_cell_text(measured(0, 0, 0)) == "no crash state");
    // unsafe and writeback: the host's writeback first, the worst case beside.
    Json unsafe = measured(16, 13, 300);
    unsafe["mount_failures"] = 7;
    unsafe["host_writeback"] = {
        {"window_s", 35.0}, {"crash_states", 16}, {"states_with_losses", 0}, {"max_lost", 0}};
    CHECK(durability_cell_text(unsafe) ==
          "lost 0/16 (host writeback 35 s) · worst 13/16 (≤300), 7 no mount");
    unsafe["host_writeback"]["states_with_losses"] = 2;
    unsafe["host_writeback"]["max_lost"] = 40;
    unsafe["host_writeback"]["window_s"] = 0.5;
    CHECK(durability_cell_text(unsafe) ==
          "lost 2/16 (host writeback 0.5 s, ≤40) · worst 13/16 (≤300), 7 no mount");
    unsafe["host_writeback"]["window_s"] = nullptr;
    CHECK_THAT(durability_cell_text(unsafe), Catch::StartsWith("lost 2/16 (host writeback windows "
                                                               "differ, ≤40) · worst 13/16"));
    // Mistyped fields read as absent, never throw.
    CHECK(durability_cell_text(Json{{"runs", "two"}}) == "not measured");
    CHECK(durability_cell_text(Json::array({1})) == "not measured");
    CHECK(ds::durability_safe(measured(50, 0, 0)));
    CHECK_FALSE(ds::durability_safe(measured(50, 0, 0, 1)));
    CHECK_FALSE(ds::durability_safe(Json{{"safe", "yes"}}));
}

TEST_CASE("the wide compare table and the CSV carry durability too",
          "[hostctl][format][compare][durability]") {
    Json compare = twelve_configurations();
    compare["metrics"] = {"read_iops"};
    compare["rows"][11]["durability"] = measured(50, 7, 12);
    const std::string wide =
        ds::hostctl::format_compare_wide(ds::api::test::decoded<ds::api::CompareReply>(compare));
    INFO(wide);
    CHECK_THAT(lines_of(wide).at(1), Catch::Contains("  durability  "));
    CHECK_THAT(wide, Catch::Contains("  7/50 lost (≤12)  "));
    CHECK_THAT(wide, Catch::Contains("  not measured     "));
    CHECK_THAT(wide, Catch::Contains("\ndurability = "));
    const std::string csv =
        ds::hostctl::format_compare_csv(ds::api::test::decoded<ds::api::CompareReply>(compare));
    CHECK_THAT(csv, Catch::Contains(",cache=unsafe,(the daemon's),false,50,7,12,1.5,0,0,0\n"));
}

TEST_CASE("compare tables list the levels their runs did not check, per configuration",
          "[hostctl][format][compare][not_checked]") {
    Json compare = twelve_configurations();
    const std::string plain =
        ds::hostctl::format_compare_table(ds::api::test::decoded<ds::api::CompareReply>(compare));
    CHECK_THAT(plain, !Catch::Contains("not checked"));
    for (Json& row : compare["rows"]) row["not_checked"] = Json::array();
    CHECK(ds::hostctl::format_compare_table(
              ds::api::test::decoded<ds::api::CompareReply>(compare)) == plain);

    compare["rows"][0]["not_checked"] = {{{"level", "QEMU (info block)"},
                                          {"reason", "the monitor answered 403"},
                                          {"forbidden", true},
                                          {"fails_run", false},
                                          {"runs", 5}}};
    compare["rows"][3]["not_checked"] = {{{"level", "QEMU (info block)"},
                                          {"setting", "iops_limit"},
                                          {"reason", "in a throttle group"},
                                          {"forbidden", false},
                                          {"fails_run", false},
                                          {"runs", 1}}};
    // Each row named by its varying settings, in row order.
    const auto label = [&](int row) {
        const Json& settings = compare["rows"][row]["settings"];
        return "cache=" + ds::setting_text(settings, "cache") +
               " filesystem=" + ds::setting_text(settings, "filesystem");
    };
    const std::string expected =
        "not checked in these runs' settings:\n  " + label(0) +
        ": QEMU (info block): not checked: the monitor answered 403 (not allowed by the host) "
        "(5 runs)\n  " +
        label(3) + ": QEMU (info block), iops_limit: not checked: in a throttle group (1 run)\n";
    CHECK(label(0) == "cache=none filesystem=ext4");
    const std::string narrow =
        ds::hostctl::format_compare_table(ds::api::test::decoded<ds::api::CompareReply>(compare));
    INFO(narrow);
    CHECK_THAT(narrow, Catch::Contains("\n" + expected + "(--all"));
    compare["metrics"] = {"read_iops"};
    CHECK_THAT(
        ds::hostctl::format_compare_wide(ds::api::test::decoded<ds::api::CompareReply>(compare)),
        Catch::EndsWith(expected));
}

}  // namespace
