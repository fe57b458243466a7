// The report's speed-vs-safety part: the trade-off chart's shapes and its
// Pareto front, and the "Speed and safety" section and durability column
// of a sweep whose durability runs are stored through the Store API.
#include <catch2/catch.hpp>
#include <regex>
#include <set>
#include <string>

#include "daemon/report/charts.h"
#include "daemon/report/html_report.h"
#include "support/disk_settings.h"
#include "support/durability_records.h"
#include "support/fakes/daemon_fakes.h"
#include "support/report_fixture.h"
#include "support/temp_dir.h"
#include "support/xml_check.h"

namespace ds::report {
namespace {

using test::durability_record;
using test::durability_summary;

// The labels of the points drawn with class `css_class` ("point" or "point
// front"): each point's group starts with its tooltip, "LABEL: ...".
std::set<std::string> point_labels(const std::string& svg, const std::string& css_class) {
    std::set<std::string> labels;
    const std::regex point(
        "<g><title>([^<:]*)(?::[^<]*)?</title>(?:<line [^>]*/>)*<circle class=\"([a-z ]+)\"");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), point);
         it != std::sregex_iterator(); ++it)
        if ((*it)[2] == css_class) labels.insert((*it)[1]);
    return labels;
}

TEST_CASE("the trade-off chart draws each point, its worst loss and the front",
          "[report][svg][charts][durability]") {
    TradeOffChart chart;
    chart.title = "ledger: speed against acknowledged commits lost";
    chart.points = {{"safe", 100, 0, 0, true, "#2e7d32", ""},
                    {"fast", 400, 2, 10, true, "#c62828", ""},
                    {"slow", 50, 3, 5, false, "#c62828", ""},
                    {"no speed", kNoValue, 0, 0, false, "#c62828", ""}};
    const std::string svg = trade_off_chart(chart).str();
    INFO(svg);
    CHECK(test::xml_problem(svg) == "");
    CHECK(test::xml_elements(svg, "circle", "point front").size() == 2);
    CHECK(test::xml_elements(svg, "circle", "point").size() == 1);  // "no speed" is not drawn
    CHECK(point_labels(svg, "point front") == std::set<std::string>{"safe", "fast"});
    // Both axes from 0: the safe point sits on the x axis, the faster one to its right.
    auto front = test::xml_elements(svg, "circle", "point front");
    const double safe_x = std::stod(front[0]["cx"]), fast_x = std::stod(front[1]["cx"]);
    CHECK(fast_x > safe_x);
    CHECK(std::stod(front[0]["cy"]) > std::stod(front[1]["cy"]));
    // A worst-loss line for each point whose worst is above its mean.
    auto max_lines = test::xml_elements(svg, "line", "max");
    REQUIRE(max_lines.size() == 2);
    CHECK(std::stod(max_lines[0]["y2"]) < std::stod(max_lines[0]["y1"]));
    // The front joined from slowest to fastest.
    auto line = test::xml_elements(svg, "polyline", "front");
    REQUIRE(line.size() == 1);
    CHECK(line[0]["points"] ==
          front[0]["cx"] + "," + front[0]["cy"] + " " + front[1]["cx"] + "," + front[1]["cy"]);
    CHECK(svg == trade_off_chart(chart).str());
}

TEST_CASE("the trade-off chart spreads speeds decades apart on a log axis",
          "[report][svg][charts][durability]") {
    TradeOffChart chart;
    chart.points = {{"fsync 30", 30, 0, 0, false, "#2e7d32", ""},
                    {"fsync 40", 40, 0, 0, true, "#2e7d32", ""},
                    {"unsafe", 1000, 1, 3, true, "#c62828", ""}};
    const std::string svg = trade_off_chart(chart).str();
    auto points = test::xml_elements(svg, "circle");
    REQUIRE(points.size() == 3);
    // On a linear axis from 0 the two would be 8 px apart; on decades 40.
    CHECK(std::stod(points[1]["cx"]) - std::stod(points[0]["cx"]) > 40);
    // Speeds within a factor of 10: linear from 0.
    chart.points[2].speed = 200;
    auto linear = test::xml_elements(trade_off_chart(chart).str(), "circle");
    CHECK(std::stod(linear[1]["cx"]) - std::stod(linear[0]["cx"]) < 42);  // 38.5; decades: 48
}

// Four configurations with a ledger: none·ext4 (slow, safe) and unsafe·ext4
// (fast, loses) are on the front; none·btrfs is slower than none·ext4 and
// no safer, unsafe·btrfs slower than unsafe·ext4 and loses more.
// With `host_writeback`, the unsafe runs also measured the host's writeback
// (35 s): no loss on ext4, 2 states on btrfs.
std::string render_durability_sweep(Store& store, bool host_writeback = false) {
    const Workload ledger{"ledger", "ledger", Json{{"variant", "file"}}, {}, 0};
    const Workload fio{"randrw", "fio", Json{{"rw", "randrw"}}, {}, 0};
    const auto outcome = [host_writeback](double commits_per_s, Json summary,
                                          const std::string& model) {
        Json record = durability_record(summary, model);
        if (host_writeback && model == "host-power-cut") {
            const bool lossy = summary["states_with_losses"].get<int>() > 5;
            record["host_writeback"] = {{"window_s", 35.0},
                                        {"summary", lossy ? durability_summary(50, 2, 3, 0.1)
                                                          : durability_summary(50, 0, 0, 0)},
                                        {"states", Json::array()}};
        }
        return test::StoredOutcome{RunStatus::kSucceeded,
                                   {{"commits_per_s", commits_per_s}, {"acknowledged", 500}},
                                   std::move(record)};
    };
    using testing::planned_run;
    const std::int64_t id = test::store_durability_sweep(
        store,
        {{planned_run(test::cache_and_filesystem(CacheMode::kNone, "ext4"), ledger, 0, 0),
          outcome(40, durability_summary(50, 0, 0, 0), "flush-barriers")},
         {planned_run(test::cache_and_filesystem(CacheMode::kUnsafe, "ext4"), ledger, 1, 0),
          outcome(1000, durability_summary(50, 5, 4, 0.5), "host-power-cut")},
         {planned_run(test::cache_and_filesystem(CacheMode::kNone, "btrfs"), ledger, 2, 0),
          outcome(30, durability_summary(50, 0, 0, 0, /*fsck_failures=*/2), "flush-barriers")},
         {planned_run(test::cache_and_filesystem(CacheMode::kUnsafe, "btrfs"), ledger, 3, 0),
          outcome(900, durability_summary(50, 20, 9, 2), "host-power-cut")},
         {planned_run(test::cache_and_filesystem(CacheMode::kNone, "ext4"), fio, 4, 0),
          test::StoredOutcome{RunStatus::kSucceeded, {{"read_iops", 300}}, Json()}}},
        Json::array({"cache", "filesystem"}));
    auto page = render_sweep_report(store, id);
    INFO((page.ok() ? "" : page.error().message));
    REQUIRE(page.ok());
    return page.value();
}

std::string section(const std::string& html, const std::string& id) {
    const std::size_t start = html.find("<section id=\"" + id + "\"");
    if (start == std::string::npos) return "";
    return html.substr(start, html.find("</section>", start) - start);
}

TEST_CASE("the report shows speed and safety, with the Pareto front marked",
          "[report][html][durability]") {
    test::TempDir dir;
    auto store = testing::open_store(dir.file("results.db"));
    const std::string html = render_durability_sweep(*store);
    const std::string durability = section(html, "durability");
    REQUIRE_FALSE(durability.empty());
    CHECK(html.find("<section id=\"durability\"") > html.find("<section id=\"primary\""));
    CHECK(html.find("<section id=\"durability\"") < html.find("<section id=\"latency\""));
    CHECK_THAT(durability,
               Catch::Contains("lost acknowledged commits in 5 of 50 crash states (up to 4)"));
    CHECK_THAT(durability,
               Catch::Contains("kept every acknowledged commit in 50 crash states; 2 failed fsck"));
    const auto charts = test::svg_fragments(durability);
    REQUIRE(charts.size() == 1);  // one ledger workload, one partition
    CHECK(test::xml_problem(charts[0]) == "");
    CHECK(point_labels(charts[0], "point front") ==
          std::set<std::string>{"none · ext4 · ledger", "unsafe · ext4 · ledger"});
    CHECK(point_labels(charts[0], "point") ==
          std::set<std::string>{"none · btrfs · ledger", "unsafe · btrfs · ledger"});
    // The fio row borrows the ledger's measurement of its configuration.
    const std::string verdicts = section(html, "verdicts");
    CHECK_THAT(verdicts, Catch::Contains("<th>durability</th>"));
    CHECK_THAT(verdicts,
               Catch::Contains("<td class=\"risk\" title=\"lost acknowledged commits in 5 of 50 "
                               "crash states (up to 4)\">5/50 lost (≤4)</td>"));
    CHECK_THAT(verdicts, Catch::Contains("<td class=\"risk\" title=\"kept every acknowledged "
                                         "commit in 50 crash states; 2 failed fsck\">0/50 lost, "
                                         "2 fsck</td>"));
    std::size_t safe_cells = 0;
    for (std::size_t at = 0;
         (at = verdicts.find("<td title=\"kept every acknowledged commit in 50 crash "
                             "states\">0/50 lost</td>",
                             at)) != std::string::npos;
         ++at)
        ++safe_cells;
    CHECK(safe_cells == 2);  // none · ext4's ledger row and its fio row
}

TEST_CASE("the report's speed and safety chart switches between host writeback and worst case",
          "[report][html][durability]") {
    test::TempDir dir;
    auto store = testing::open_store(dir.file("results.db"));
    const std::string durability = section(render_durability_sweep(*store, true), "durability");
    REQUIRE_FALSE(durability.empty());
    CHECK_THAT(durability, Catch::Contains("<td>0/50 lost (35 s)</td>"));
    CHECK_THAT(durability, Catch::Contains("<td>2/50 lost (35 s)</td>"));
    CHECK_THAT(durability, Catch::Contains("class=\"model-switch\""));
    CHECK_THAT(durability, Catch::Contains("class=\"show-writeback\" checked=\"checked\""));
    const auto charts = test::svg_fragments(durability);
    REQUIRE(charts.size() == 2);  // the same group, once per model
    CHECK_THAT(charts[0], Catch::Contains("(host writeback)"));
    // Under the host's writeback unsafe ext4 keeps everything: it is green
    // there and red in the worst case.
    CHECK(point_labels(charts[0], "point front").count("unsafe · ext4 · ledger") == 1);
    CHECK(charts[0].find("#2e7d32") != std::string::npos);
    CHECK(durability.find("model-writeback") < durability.find("model-worst\""));
}

TEST_CASE("a report without durability runs has no durability section or column",
          "[report][html][durability]") {
    test::TempDir dir;
    auto store = testing::open_store(dir.file("results.db"));
    const std::int64_t id = test::store_report_fixture(*store);
    const std::string html = render_sweep_report(*store, id).value();
    CHECK(html.find("<section id=\"durability\"") == std::string::npos);
    CHECK(html.find("<th>durability</th>") == std::string::npos);
}

}  // namespace
}  // namespace ds::report
