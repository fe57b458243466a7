// The report's charts, drawn with daemon/report/svg.h. Each takes plain data
// (labels, values, intervals; NaN for a value that is not there) and returns
// one self-contained <svg> element: colours as presentation attributes, no
// ids, no stylesheet, so several charts can sit in one HTML page and each
// can be saved on its own. Same data, same bytes.
//
// Shapes the report's tests rely on: every bar is a <rect class="bar">
// whose width is proportional to its value (the axis starts at 0, or at the
// first decade on a log scale); every confidence interval is a <line
// class="whisker"> from its low to its high end; a reference value is a
// <line class="reference">; a time series is a <polyline class="series">;
// a heat-map cell is a <rect class="cell">; a point of a trade-off chart is a
// <circle class="point"> ("point front" on its Pareto front), the front a
// <polyline class="front">, a point's maximum a <line class="max">.
#pragma once

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "daemon/report/svg.h"

namespace ds::report {

inline constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

// Every chart's width in pixels: it fits a laptop screen next to nothing
// else, and scales down with the page (the report's CSS).
inline constexpr double kChartWidth = 960;

// A horizontal bar: `value` from zero, with its 95% interval [low, high] as
// a whisker when both are given.
struct Bar {
    std::string label;
    double value = kNoValue;
    double low = kNoValue;
    double high = kNoValue;
    std::string colour = "#4c72b0";
    // Printed after the bar (e.g. "3035 ± 55"), or in its place when there
    // is no value (e.g. "no succeeded run"; empty: "no value").
    std::string value_text;
    std::string tooltip;  // shown on hover; empty: the label
};

struct BarChart {
    std::string title;
    std::string axis_label;  // under the value axis, e.g. "read_iops (higher is better)"
    std::vector<Bar> bars;   // top to bottom
    // A vertical line at this value (e.g. 1 for ratios), with its label.
    double reference = kNoValue;
    std::string reference_label;
    // Colour legend under the axis: (colour, meaning) pairs.
    std::vector<std::pair<std::string, std::string>> legend;
};
svg::Element bar_chart(const BarChart& chart);

// Groups of bars, one bar per series in each group (e.g. per configuration
// its p50, p90, p99 and p99.9), the series told apart by colour.
struct BarGroup {
    std::string label;
    std::vector<double> values;  // one per series; kNoValue: not measured
    std::vector<double> lows;    // optional (empty, or one per series)
    std::vector<double> highs;
};

struct GroupedBarChart {
    std::string title;
    std::string axis_label;
    std::vector<std::string> series;  // names, in the order of each group's values
    std::vector<BarGroup> groups;
    // A log10 value axis (values must be > 0; others are left out), for
    // quantities that span decades such as tail latencies.
    bool log_scale = false;
};
svg::Element grouped_bar_chart(const GroupedBarChart& chart);

// Lines over time: series i's value j is at x = j * x_step.
struct LineSeries {
    std::string name;
    std::vector<double> values;
    // Said in the legend after the name, e.g. "no per-second samples" for a
    // series without values (which draws no line).
    std::string note;
};

struct LineChart {
    std::string title;
    std::string x_label;  // e.g. "second of the measurement"
    std::string y_label;  // e.g. "read_iops"
    double x_step = 1;
    std::vector<LineSeries> series;
};
// A series longer than the plot is wide in pixels is drawn through the means
// of equal runs of its values (one point per pixel column at most).
svg::Element line_chart(const LineChart& chart);

// A table of coloured cells: rows × columns, each cell's colour from its
// score on the diverging scale (svg::diverging_colour: -1 red .. +1 blue),
// its text written in it.
struct HeatCell {
    double score = kNoValue;  // kNoValue: grey, nothing to compare
    std::string text;
    bool faint = false;  // drawn pale (e.g. not distinguishable from the reference)
    std::string tooltip;
};

struct HeatMap {
    std::string title;
    std::vector<std::string> row_labels;
    std::vector<std::string> column_labels;
    std::vector<std::vector<HeatCell>> cells;  // [row][column]
    // The legend: a colour ramp from -1 to +1 with these (score, label) marks.
    std::vector<std::pair<double, std::string>> legend_marks;
};
svg::Element heat_map(const HeatMap& map);

// Speed against what it costs: one point per configuration at (speed,
// mean loss), a line up to its worst loss, and its Pareto front (points
// no other is at least as fast as while losing no more: ds::pareto_front)
// filled and joined by a line in order of speed; the others drawn hollow.
// The loss axis starts at 0; the speed axis too, unless the speeds span a
// factor of 10 or more: then it is logarithmic (decades). Labels are placed
// beside their points where no earlier label is.
struct TradeOffPoint {
    std::string label;
    double speed = kNoValue;     // x; a point without one is not drawn
    double loss = kNoValue;      // y (the mean); a point without one is not drawn
    double loss_max = kNoValue;  // the worst: a line from `loss` up to it
    bool on_front = false;
    std::string colour = "#4c72b0";
    std::string tooltip;  // shown on hover; empty: the label
};

struct TradeOffChart {
    std::string title;
    std::string x_label;  // e.g. "commits/s (faster to the right)"
    std::string y_label;  // e.g. "acknowledged commits lost"
    std::vector<TradeOffPoint> points;
    // Colour legend under the axis: (colour, meaning) pairs.
    std::vector<std::pair<std::string, std::string>> legend;
};
svg::Element trade_off_chart(const TradeOffChart& chart);

}  // namespace ds::report
