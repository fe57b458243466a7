// The report's SVG writer and charts: escaping, well-formed XML whatever the
// text, and charts whose shapes say what the numbers say.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "daemon/report/charts.h"
#include "daemon/report/svg.h"
#include "support/xml_check.h"

namespace ds::report {
namespace {

using test::xml_elements;
using test::xml_problem;

double attribute(const test::XmlAttributes& element, const std::string& name) {
    return std::stod(element.at(name));
}

// The red, green and blue of "#rrggbb".
std::array<int, 3> channels(const std::string& colour) {
    REQUIRE(colour.size() == 7);
    return {std::stoi(colour.substr(1, 2), nullptr, 16),
            std::stoi(colour.substr(3, 2), nullptr, 16),
            std::stoi(colour.substr(5, 2), nullptr, 16)};
}

TEST_CASE("the SVG writer escapes markup in text and in attributes", "[report][svg]") {
    svg::Element element("text");
    element.set("data-label", "a<b & \"c\" 'd'>").text("x < y & \"z\" 'w' > v");
    const std::string xml = element.str();
    CHECK(xml ==
          "<text data-label=\"a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;\">x &lt; y &amp; "
          "\"z\" 'w' &gt; v</text>");
    CHECK(xml_problem(xml) == "");
    const auto parsed = xml_elements(xml, "text");
    REQUIRE(parsed.size() == 1);
    CHECK(parsed[0].at("data-label") == "a<b & \"c\" 'd'>");
}

TEST_CASE("the SVG writer keeps the XML well-formed whatever bytes it is given", "[report][svg]") {
    const std::string hostile = std::string("ctl\x01\x1b[31m bad\xff\xfe utf8 \xc3(") +
                                "\xed\xa0\x80 surrogate ]]> <!-- end";
    svg::Element element("g");
    element.set("title", hostile).text(hostile);
    element.add(svg::Element("line").set("stroke", "#000"));
    const std::string xml = element.str();
    CHECK(xml_problem(xml) == "");
    CHECK(xml.find('\x01') == std::string::npos);
    CHECK(xml.find("\xEF\xBF\xBD") != std::string::npos);  // the broken bytes became U+FFFD
    CHECK(xml.find("<line stroke=\"#000\"/>") != std::string::npos);
    // Line breaks in an attribute survive a parser's normalisation.
    CHECK(svg::escape_attribute("a\nb\tc\rd") == "a&#10;b&#9;c&#13;d");
}

TEST_CASE("numbers are written compactly", "[report][svg]") {
    CHECK(svg::number(3.0) == "3");
    CHECK(svg::number(12.3456) == "12.35");
    CHECK(svg::number(0.5) == "0.5");
    CHECK(svg::number(-0.001) == "0");
    CHECK(svg::number(std::nan("")) == "0");
    CHECK(svg::tick_label(0) == "0");
    CHECK(svg::tick_label(850) == "850");
    CHECK(svg::tick_label(12000) == "12k");
    CHECK(svg::tick_label(2500000) == "2.5M");
}

TEST_CASE("axis ticks are round and cover the data", "[report][svg]") {
    const svg::Ticks ticks = svg::nice_ticks(0, 873, 5);
    CHECK(ticks.values == std::vector<double>{0, 200, 400, 600, 800, 1000});
    CHECK(svg::nice_ticks(0.12, 0.91, 5).step == Approx(0.2));
    CHECK(svg::nice_ticks(5, 5).values.front() == 0);  // a single value still gets an axis
    CHECK(svg::decade_ticks(3, 4500).values == std::vector<double>{1, 10, 100, 1000, 10000});
    const svg::Scale log_scale(1, 1000, 0, 300, true);
    CHECK(log_scale(10) == Approx(100));
    CHECK(log_scale(5000) == Approx(300));  // clamped into the plot
}

BarChart three_bars() {
    BarChart chart;
    chart.title = "read_iops";
    chart.axis_label = "read_iops (higher is better)";
    chart.bars = {{"ext4", 100, 90, 110, "#111111", "100 ± 10", ""},
                  {"btrfs", 250, 200, 300, "#222222", "250 ± 50", ""},
                  {"nocow", 50, kNoValue, kNoValue, "#333333", "50", ""}};
    chart.reference = 1;
    chart.reference_label = "baseline";
    return chart;
}

TEST_CASE("bars are proportional to their values and whiskers span the interval",
          "[report][svg][charts]") {
    const std::string xml = bar_chart(three_bars()).str();
    REQUIRE(xml_problem(xml) == "");
    const auto bars = xml_elements(xml, "rect", "bar");
    REQUIRE(bars.size() == 3);
    const double per_unit = attribute(bars[0], "width") / 100;
    CHECK(per_unit > 0);
    CHECK(attribute(bars[1], "width") == Approx(250 * per_unit).margin(0.02));
    CHECK(attribute(bars[2], "width") == Approx(50 * per_unit).margin(0.02));
    const double zero = attribute(bars[0], "x");
    CHECK(attribute(bars[1], "x") == Approx(zero));

    const auto whiskers = xml_elements(xml, "line", "whisker");
    REQUIRE(whiskers.size() == 2);  // the third bar has no interval
    CHECK(attribute(whiskers[0], "x1") == Approx(zero + 90 * per_unit).margin(0.02));
    CHECK(attribute(whiskers[0], "x2") == Approx(zero + 110 * per_unit).margin(0.02));
    CHECK(attribute(whiskers[1], "x1") == Approx(zero + 200 * per_unit).margin(0.02));
    CHECK(attribute(whiskers[1], "x2") == Approx(zero + 300 * per_unit).margin(0.02));

    const auto reference = xml_elements(xml, "line", "reference");
    REQUIRE(reference.size() == 1);
    CHECK(attribute(reference[0], "x1") == Approx(zero + 1 * per_unit).margin(0.02));
    CHECK(xml.find("font-family=\"sans-serif\"") != std::string::npos);
}

TEST_CASE("a chart is the same bytes every time", "[report][svg][charts]") {
    CHECK(bar_chart(three_bars()).str() == bar_chart(three_bars()).str());
}

TEST_CASE("a bar without a value says why instead of drawing", "[report][svg][charts]") {
    BarChart chart = three_bars();
    chart.bars[1].value = kNoValue;
    chart.bars[1].value_text = "no succeeded run";
    const std::string xml = bar_chart(chart).str();
    CHECK(xml_elements(xml, "rect", "bar").size() == 2);
    CHECK(xml.find("no succeeded run") != std::string::npos);
}

TEST_CASE("grouped bars on a log scale measure decades", "[report][svg][charts]") {
    GroupedBarChart chart;
    chart.title = "latency";
    chart.series = {"p50", "p99", "p99.9"};
    chart.groups = {{"ext4", {10, 100, 1000}, {}, {}}, {"btrfs", {20, kNoValue, 2000}, {}, {}}};
    chart.log_scale = true;
    const std::string xml = grouped_bar_chart(chart).str();
    REQUIRE(xml_problem(xml) == "");
    const auto bars = xml_elements(xml, "rect", "bar");
    REQUIRE(bars.size() == 5);  // the missing p99 draws nothing
    // Decades 10..10000: 10 sits on the axis, 100 one decade out, 1000 two.
    CHECK(attribute(bars[0], "width") == Approx(0).margin(0.02));
    CHECK(attribute(bars[2], "width") == Approx(2 * attribute(bars[1], "width")).margin(0.05));
    // A legend entry per series.
    for (const char* name : {"p50", "p99", "p99.9"})
        CHECK(xml.find(std::string(">") + name + "<") != std::string::npos);
}

TEST_CASE("a line chart draws each series and says which have no samples",
          "[report][svg][charts]") {
    LineChart chart;
    chart.title = "read_iops per second";
    chart.y_label = "read_iops";
    chart.x_label = "second";
    std::vector<double> long_series(5000);
    for (std::size_t i = 0; i < long_series.size(); ++i) long_series[i] = 100 + i % 7;
    chart.series = {{"ext4", {100, 120, 110}, ""},
                    {"btrfs", long_series, ""},
                    {"nocow", {}, "no per-second samples"}};
    const std::string xml = line_chart(chart).str();
    REQUIRE(xml_problem(xml) == "");
    const auto lines = xml_elements(xml, "polyline", "series");
    REQUIRE(lines.size() == 2);
    CHECK(std::count(lines[0].at("points").begin(), lines[0].at("points").end(), ',') == 3);
    // 5000 seconds are drawn through at most one point per pixel column.
    CHECK(std::count(lines[1].at("points").begin(), lines[1].at("points").end(), ',') <= 960);
    CHECK(xml.find("nocow (no per-second samples)") != std::string::npos);

    chart.series = {{"nocow", {}, "no per-second samples"}};
    const std::string empty = line_chart(chart).str();
    CHECK(xml_problem(empty) == "");
    CHECK(xml_elements(empty, "polyline").empty());
    CHECK(empty.find(">no per-second samples<") != std::string::npos);
}

TEST_CASE("the heat map colours better blue and worse red", "[report][svg][charts]") {
    HeatMap map;
    map.title = "against the baseline";
    map.row_labels = {"btrfs"};
    map.column_labels = {"read_iops", "read_clat_p99_us", "write_iops"};
    map.cells = {{{1, "2.00×", false, ""}, {-1, "0.50×", false, ""}, {kNoValue, "", false, ""}}};
    map.legend_marks = {{-1, "2× worse"}, {0, "same"}, {1, "2× better"}};
    const std::string xml = heat_map(map).str();
    REQUIRE(xml_problem(xml) == "");
    const auto cells = xml_elements(xml, "rect", "cell");
    REQUIRE(cells.size() == 3);
    const auto better = channels(cells[0].at("fill"));
    const auto worse = channels(cells[1].at("fill"));
    const auto missing = channels(cells[2].at("fill"));
    CHECK(better[2] > better[0] + 100);  // blue
    CHECK(worse[0] > worse[2] + 100);    // red
    CHECK(missing[0] == missing[2]);     // grey
    // The scale runs from red through grey to blue.
    CHECK(channels(svg::diverging_colour(0))[0] == channels(svg::diverging_colour(0))[2]);
    CHECK(channels(svg::diverging_colour(0.5))[2] > channels(svg::diverging_colour(0.5))[0]);
    CHECK(svg::diverging_colour(7) == svg::diverging_colour(1));  // clamped
}

}  // namespace
}  // namespace ds::report
