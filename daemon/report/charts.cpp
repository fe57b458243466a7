#include "daemon/report/charts.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace ds::report {
namespace {

using svg::Element;

constexpr double kFont = 12;
constexpr double kSmallFont = 10;
constexpr double kTitleY = 20;
constexpr double kPlotTop = 40;
constexpr const char* kGridColour = "#dddddd";
constexpr const char* kAxisColour = "#555555";
constexpr const char* kMutedText = "#666666";
constexpr const char* kWhiskerColour = "#222222";

bool present(double value) {
    return std::isfinite(value);
}

Element title_text(std::string_view title) {
    Element element = svg::text(8, kTitleY, title);
    element.set("font-size", 14).set("font-weight", "bold");
    return element;
}

Element small_text(double x, double y, std::string_view content, std::string_view anchor,
                   std::string_view colour = kMutedText) {
    Element element = svg::text(x, y, content, anchor);
    element.set("font-size", kSmallFont).set("fill", colour);
    return element;
}

// Room for the labels left of a plot: the widest label, within bounds.
double label_column_width(const std::vector<std::string>& labels) {
    double widest = 0;
    for (const auto& label : labels) widest = std::max(widest, svg::text_width(label, kFont));
    return std::clamp(widest + 16, 80.0, kChartWidth * 0.38);
}

// A horizontal value axis: a grid line per tick from `top` to `bottom`, the
// tick labels under it and the axis label under those.
void draw_value_axis(Element& chart, const svg::Scale& scale, const std::vector<double>& ticks,
                     double top, double bottom, std::string_view label) {
    Element axis("g");
    axis.set("class", "axis");
    for (double tick : ticks) {
        const double x = scale(tick);
        axis.add(svg::line(x, top, x, bottom, kGridColour));
        axis.add(small_text(x, bottom + 13, svg::tick_label(tick), "middle", kAxisColour));
    }
    axis.add(svg::line(scale(ticks.front()), bottom, scale(ticks.back()), bottom, kAxisColour));
    const double middle = (scale(ticks.front()) + scale(ticks.back())) / 2;
    axis.add(small_text(middle, bottom + 28, label, "middle"));
    chart.add(std::move(axis));
}

// A confidence interval at height y: the line and its two end caps.
Element whisker(double x_low, double x_high, double y, double cap) {
    Element group("g");
    group.add(svg::line(x_low, y, x_high, y, kWhiskerColour, 1.5).set("class", "whisker"));
    group.add(svg::line(x_low, y - cap, x_low, y + cap, kWhiskerColour, 1.5));
    group.add(svg::line(x_high, y - cap, x_high, y + cap, kWhiskerColour, 1.5));
    return group;
}

// A row of colour swatches with their meanings, from x = left at height y.
Element swatch_legend(const std::vector<std::pair<std::string, std::string>>& entries, double left,
                      double y) {
    Element legend("g");
    legend.set("class", "legend");
    double x = left;
    for (const auto& [colour, meaning] : entries) {
        legend.add(svg::rect(x, y - 9, 10, 10, colour));
        legend.add(small_text(x + 14, y, meaning, "start", "#333333"));
        x += 14 + svg::text_width(meaning, kSmallFont) + 16;
    }
    return legend;
}

// The bar of `value` from the scale's zero (or its low end on a log scale),
// as a rect of class "bar".
Element value_bar(const svg::Scale& scale, double origin, double value, double y, double height,
                  std::string_view colour) {
    const double x0 = scale(origin);
    const double x1 = scale(value);
    Element bar = svg::rect(std::min(x0, x1), y, std::fabs(x1 - x0), height, colour);
    bar.set("class", "bar");
    return bar;
}

// The largest of the values, interval ends and extra value that are finite.
double largest(const std::vector<double>& values, double extra = kNoValue) {
    double high = present(extra) ? extra : 0;
    for (double value : values)
        if (present(value)) high = std::max(high, value);
    return high;
}

double smallest(const std::vector<double>& values) {
    double low = 0;
    for (double value : values)
        if (present(value)) low = std::min(low, value);
    return low;
}

// ---------------------------------------------------------------------------
// Bar chart

constexpr double kBarRow = 26;
constexpr double kBarHeight = 16;

Element bar_row(const Bar& bar, const svg::Scale& scale, double label_width, double y) {
    Element row("g");
    const double centre = y + kBarRow / 2;
    row.add(svg::tooltip(bar.tooltip.empty() ? bar.label : bar.tooltip));
    row.add(svg::text(label_width - 8, centre + 4,
                      svg::fit_text(bar.label, label_width - 12, kFont), "end"));
    if (!present(bar.value)) {
        row.add(small_text(scale(0) + 4, centre + 4,
                           bar.value_text.empty() ? "no value" : bar.value_text, "start"));
        return row;
    }
    row.add(value_bar(scale, 0, bar.value, centre - kBarHeight / 2, kBarHeight, bar.colour));
    double text_x = std::max(scale(bar.value), scale(0));
    if (present(bar.low) && present(bar.high)) {
        row.add(whisker(scale(bar.low), scale(bar.high), centre, 4));
        text_x = std::max(text_x, scale(bar.high));
    }
    if (!bar.value_text.empty())
        row.add(small_text(text_x + 6, centre + 4, bar.value_text, "start", "#222222"));
    return row;
}

}  // namespace

Element bar_chart(const BarChart& chart) {
    std::vector<std::string> labels;
    std::vector<double> extents;
    double widest_value_text = 0;
    for (const Bar& bar : chart.bars) {
        labels.push_back(bar.label);
        extents.insert(extents.end(), {bar.value, bar.low, bar.high});
        widest_value_text =
            std::max(widest_value_text, svg::text_width(bar.value_text, kSmallFont));
    }
    const double label_width = label_column_width(labels);
    const double right = kChartWidth - std::clamp(widest_value_text + 16, 24.0, 240.0);
    const svg::Ticks ticks =
        svg::nice_ticks(smallest(extents), largest(extents, chart.reference), 6);
    const svg::Scale scale(ticks.values.front(), ticks.values.back(), label_width, right);

    const double plot_bottom = kPlotTop + kBarRow * static_cast<double>(chart.bars.size()) + 4;
    const double legend_y = plot_bottom + 50;
    const double height = legend_y + (chart.legend.empty() ? 0 : 20);
    Element svg = svg::document(kChartWidth, height, chart.title);
    svg.add(title_text(chart.title));
    draw_value_axis(svg, scale, ticks.values, kPlotTop - 4, plot_bottom, chart.axis_label);
    for (std::size_t i = 0; i < chart.bars.size(); ++i)
        svg.add(bar_row(chart.bars[i], scale, label_width,
                        kPlotTop + kBarRow * static_cast<double>(i)));
    if (present(chart.reference)) {
        const double x = scale(chart.reference);
        svg.add(svg::line(x, kPlotTop - 8, x, plot_bottom, "#333333", 1.5)
                    .set("class", "reference")
                    .set("stroke-dasharray", "5 3"));
        svg.add(small_text(x + 4, kPlotTop - 10, chart.reference_label, "start", "#333333"));
    }
    if (!chart.legend.empty()) svg.add(swatch_legend(chart.legend, label_width, legend_y));
    return svg;
}

// ---------------------------------------------------------------------------
// Grouped bar chart

namespace {

constexpr double kGroupBar = 9;
constexpr double kGroupGap = 12;

// The value axis of a grouped chart: decades on a log scale (from the
// smallest positive value), else nice ticks from zero.
svg::Ticks grouped_ticks(const GroupedBarChart& chart) {
    std::vector<double> values;
    for (const BarGroup& group : chart.groups) {
        values.insert(values.end(), group.values.begin(), group.values.end());
        values.insert(values.end(), group.highs.begin(), group.highs.end());
    }
    if (!chart.log_scale) return svg::nice_ticks(smallest(values), largest(values), 6);
    double low = kNoValue, high = kNoValue;
    for (double value : values) {
        if (!present(value) || value <= 0) continue;
        low = present(low) ? std::min(low, value) : value;
        high = present(high) ? std::max(high, value) : value;
    }
    return svg::decade_ticks(low, high);
}

double group_height(std::size_t series) {
    return static_cast<double>(series) * (kGroupBar + 2) + kGroupGap;
}

double at(const std::vector<double>& values, std::size_t index) {
    return index < values.size() ? values[index] : kNoValue;
}

Element bar_group(const GroupedBarChart& chart, const BarGroup& group, const svg::Scale& scale,
                  double label_width, double y) {
    Element element("g");
    element.add(svg::tooltip(group.label));
    const double height = group_height(chart.series.size()) - kGroupGap;
    element.add(svg::text(label_width - 8, y + height / 2 + 4,
                          svg::fit_text(group.label, label_width - 12, kFont), "end"));
    const double origin = scale.domain_low();
    for (std::size_t s = 0; s < chart.series.size(); ++s) {
        const double value = at(group.values, s);
        const double bar_y = y + static_cast<double>(s) * (kGroupBar + 2);
        if (!present(value) || (chart.log_scale && value <= 0)) continue;
        Element bar = value_bar(scale, origin, value, bar_y, kGroupBar, svg::series_colour(s));
        bar.add(svg::tooltip(chart.series[s] + ": " + svg::tick_label(value)));
        element.add(std::move(bar));
        double text_x = scale(value);
        const double low = at(group.lows, s), high = at(group.highs, s);
        if (present(low) && present(high) && (!chart.log_scale || low > 0)) {
            element.add(whisker(scale(low), scale(high), bar_y + kGroupBar / 2, 3));
            text_x = std::max(text_x, scale(high));
        }
        element.add(small_text(text_x + 4, bar_y + kGroupBar - 1, svg::tick_label(value), "start",
                               "#222222"));
    }
    return element;
}

}  // namespace

Element grouped_bar_chart(const GroupedBarChart& chart) {
    std::vector<std::string> labels;
    for (const BarGroup& group : chart.groups) labels.push_back(group.label);
    const double label_width = label_column_width(labels);
    const svg::Ticks ticks = grouped_ticks(chart);
    const svg::Scale scale(ticks.values.front(), ticks.values.back(), label_width, kChartWidth - 60,
                           chart.log_scale);
    const double legend_y = kPlotTop - 4;
    const double top = kPlotTop + 12;
    const double plot_bottom =
        top + group_height(chart.series.size()) * static_cast<double>(chart.groups.size());
    Element svg = svg::document(kChartWidth, plot_bottom + 44, chart.title);
    svg.add(title_text(chart.title));
    std::vector<std::pair<std::string, std::string>> legend;
    for (std::size_t s = 0; s < chart.series.size(); ++s)
        legend.emplace_back(svg::series_colour(s), chart.series[s]);
    svg.add(swatch_legend(legend, label_width, legend_y));
    draw_value_axis(svg, scale, ticks.values, top - 4, plot_bottom, chart.axis_label);
    for (std::size_t g = 0; g < chart.groups.size(); ++g) {
        const double y = top + group_height(chart.series.size()) * static_cast<double>(g);
        svg.add(bar_group(chart, chart.groups[g], scale, label_width, y));
    }
    return svg;
}

// ---------------------------------------------------------------------------
// Line chart

namespace {

constexpr double kLinePlotHeight = 220;
constexpr double kLineLeft = 64;
constexpr double kLineRight = kChartWidth - 24;
constexpr double kLegendRow = 18;

// At most `columns` points: the means of equal runs of `values`, each at the
// x of its run's middle.
std::vector<std::pair<double, double>> plotted_points(const std::vector<double>& values,
                                                      double x_step, std::size_t columns) {
    std::vector<std::pair<double, double>> points;
    const std::size_t per_point = std::max<std::size_t>(1, (values.size() + columns - 1) / columns);
    for (std::size_t start = 0; start < values.size(); start += per_point) {
        const std::size_t end = std::min(values.size(), start + per_point);
        double sum = 0;
        for (std::size_t i = start; i < end; ++i) sum += values[i];
        const double middle = static_cast<double>(start + end - 1) / 2;
        points.emplace_back(middle * x_step, sum / static_cast<double>(end - start));
    }
    return points;
}

// The legend entries laid out in rows across the chart: (x, row) each.
std::vector<std::pair<double, int>> legend_layout(const std::vector<std::string>& entries) {
    std::vector<std::pair<double, int>> places;
    double x = kLineLeft;
    int row = 0;
    for (const auto& entry : entries) {
        const double width = 30 + svg::text_width(entry, kSmallFont) + 18;
        if (x + width > kChartWidth && x > kLineLeft) {
            x = kLineLeft;
            ++row;
        }
        places.emplace_back(x, row);
        x += width;
    }
    return places;
}

std::string legend_entry(const LineSeries& series) {
    return series.note.empty() ? series.name : series.name + " (" + series.note + ")";
}

Element series_line(const LineSeries& series, std::size_t index, const svg::Scale& x_scale,
                    const svg::Scale& y_scale, double x_step) {
    const auto columns = static_cast<std::size_t>(kLineRight - kLineLeft);
    std::string points;
    for (const auto& [x, y] : plotted_points(series.values, x_step, columns)) {
        if (!points.empty()) points += ' ';
        points += svg::number(x_scale(x)) + "," + svg::number(y_scale(y));
    }
    Element line("polyline");
    line.set("class", "series").set("points", points).set("fill", "none");
    line.set("stroke", svg::series_colour(index)).set("stroke-width", 1.8);
    if (const std::string dash = svg::series_dash(index); !dash.empty())
        line.set("stroke-dasharray", dash);
    line.add(svg::tooltip(series.name));
    return line;
}

void draw_y_axis(Element& chart, const svg::Scale& scale, const std::vector<double>& ticks,
                 std::string_view label) {
    Element axis("g");
    axis.set("class", "axis");
    for (double tick : ticks) {
        const double y = scale(tick);
        axis.add(svg::line(kLineLeft, y, kLineRight, y, kGridColour));
        axis.add(small_text(kLineLeft - 6, y + 3, svg::tick_label(tick), "end", kAxisColour));
    }
    const double middle = (scale(ticks.front()) + scale(ticks.back())) / 2;
    Element name = small_text(14, middle, label, "middle");
    name.set("transform", "rotate(-90 14 " + svg::number(middle) + ")");
    axis.add(std::move(name));
    chart.add(std::move(axis));
}

Element line_legend(const std::vector<LineSeries>& series, double top) {
    std::vector<std::string> entries;
    for (const LineSeries& one : series) entries.push_back(legend_entry(one));
    const auto places = legend_layout(entries);
    Element legend("g");
    legend.set("class", "legend");
    for (std::size_t i = 0; i < series.size(); ++i) {
        const double y = top + kLegendRow * places[i].second;
        const double x = places[i].first;
        const bool drawn = !series[i].values.empty();
        Element swatch = svg::line(x, y - 4, x + 24, y - 4,
                                   drawn ? svg::series_colour(i) : "#bbbbbb", drawn ? 2.5 : 1);
        if (const std::string dash = svg::series_dash(i); drawn && !dash.empty())
            swatch.set("stroke-dasharray", dash);
        legend.add(std::move(swatch));
        legend.add(small_text(x + 30, y, entries[i], "start", drawn ? "#333333" : kMutedText));
    }
    return legend;
}

}  // namespace

Element line_chart(const LineChart& chart) {
    std::size_t longest = 0;
    std::vector<double> all_values;
    for (const LineSeries& series : chart.series) {
        longest = std::max(longest, series.values.size());
        all_values.insert(all_values.end(), series.values.begin(), series.values.end());
    }
    const double top = kPlotTop;
    const double bottom = top + kLinePlotHeight;
    const double x_end = longest > 1 ? static_cast<double>(longest - 1) * chart.x_step : 1;
    const svg::Ticks x_ticks = svg::nice_ticks(0, x_end, 8);
    const svg::Ticks y_ticks = svg::nice_ticks(0, largest(all_values), 5);
    const svg::Scale x_scale(x_ticks.values.front(), x_ticks.values.back(), kLineLeft, kLineRight);
    const svg::Scale y_scale(y_ticks.values.front(), y_ticks.values.back(), bottom, top);

    std::vector<std::string> entries;
    for (const LineSeries& series : chart.series) entries.push_back(legend_entry(series));
    const auto places = legend_layout(entries);
    const int legend_rows = places.empty() ? 0 : places.back().second + 1;
    const double legend_top = bottom + 52;
    Element svg = svg::document(kChartWidth, legend_top + kLegendRow * legend_rows, chart.title);
    svg.add(title_text(chart.title));
    draw_y_axis(svg, y_scale, y_ticks.values, chart.y_label);
    draw_value_axis(svg, x_scale, x_ticks.values, top, bottom, chart.x_label);
    if (longest == 0) {
        svg.add(small_text((kLineLeft + kLineRight) / 2, (top + bottom) / 2,
                           "no per-second samples", "middle"));
    }
    for (std::size_t i = 0; i < chart.series.size(); ++i) {
        const LineSeries& series = chart.series[i];
        if (series.values.empty()) continue;
        if (series.values.size() == 1) {
            Element dot("circle");
            dot.set("cx", x_scale(0)).set("cy", y_scale(series.values.front())).set("r", 3);
            dot.set("fill", svg::series_colour(i)).set("class", "series");
            svg.add(std::move(dot));
            continue;
        }
        svg.add(series_line(series, i, x_scale, y_scale, chart.x_step));
    }
    svg.add(line_legend(chart.series, legend_top));
    return svg;
}

// ---------------------------------------------------------------------------
// Heat map

namespace {

constexpr double kCellWidth = 60;
constexpr double kCellHeight = 24;
constexpr double kColumnLabelAngle = 35;  // degrees above the horizontal
constexpr double kMaxColumnLabel = 190;   // pixels along the slanted label
constexpr const char* kNoScoreFill = "#e4e4e4";

double column_label_height(const std::vector<std::string>& labels) {
    double widest = 0;
    for (const auto& label : labels)
        widest = std::max(widest, std::min(kMaxColumnLabel, svg::text_width(label, kSmallFont)));
    return widest * std::sin(kColumnLabelAngle * std::numbers::pi / 180) + 16;
}

Element heat_cell(const HeatCell& cell, double x, double y) {
    Element group("g");
    const bool scored = present(cell.score);
    const std::string fill = scored ? svg::diverging_colour(cell.score) : kNoScoreFill;
    Element box = svg::rect(x, y, kCellWidth - 2, kCellHeight - 2, fill);
    box.set("class", "cell");
    if (cell.faint) box.set("fill-opacity", 0.45);
    group.add(std::move(box));
    if (!cell.tooltip.empty()) group.add(svg::tooltip(cell.tooltip));
    const std::string ink = cell.faint || !scored ? "#1a1a1a" : svg::text_colour_on(fill);
    Element label = svg::text(x + (kCellWidth - 2) / 2, y + kCellHeight / 2 + 3,
                              cell.text.empty() ? "–" : cell.text, "middle");
    label.set("font-size", kSmallFont + 1).set("fill", ink);
    group.add(std::move(label));
    return group;
}

Element colour_ramp(const std::vector<std::pair<double, std::string>>& marks, double left,
                    double y) {
    constexpr int kSteps = 24;
    constexpr double kRampWidth = 288;
    Element legend("g");
    legend.set("class", "legend");
    const double step = kRampWidth / kSteps;
    for (int i = 0; i < kSteps; ++i) {
        const double score = -1 + (i + 0.5) * 2.0 / kSteps;
        legend.add(svg::rect(left + i * step, y, step + 0.5, 10, svg::diverging_colour(score)));
    }
    for (const auto& [score, label] : marks) {
        const double x = left + (std::clamp(score, -1.0, 1.0) + 1) / 2 * kRampWidth;
        legend.add(svg::line(x, y + 10, x, y + 14, kAxisColour));
        legend.add(small_text(x, y + 25, label, "middle", "#333333"));
    }
    return legend;
}

}  // namespace

Element heat_map(const HeatMap& map) {
    const double label_width = label_column_width(map.row_labels);
    const double top = kPlotTop + column_label_height(map.column_labels);
    const double columns = static_cast<double>(map.column_labels.size());
    const double rows = static_cast<double>(map.row_labels.size());
    const double width = std::max(kChartWidth, label_width + columns * kCellWidth + 24);
    const double legend_y = top + rows * kCellHeight + 14;
    Element svg = svg::document(width, legend_y + 34, map.title);
    svg.add(title_text(map.title));
    for (std::size_t c = 0; c < map.column_labels.size(); ++c) {
        const double x = label_width + (static_cast<double>(c) + 0.5) * kCellWidth;
        const double y = top - 6;
        Element label =
            svg::text(x, y, svg::fit_text(map.column_labels[c], kMaxColumnLabel, kSmallFont));
        label.set("font-size", kSmallFont)
            .set("transform", "rotate(-" + svg::number(kColumnLabelAngle) + " " + svg::number(x) +
                                  " " + svg::number(y) + ")");
        label.add(svg::tooltip(map.column_labels[c]));
        svg.add(std::move(label));
    }
    for (std::size_t r = 0; r < map.row_labels.size(); ++r) {
        const double y = top + static_cast<double>(r) * kCellHeight;
        Element row("g");
        row.add(svg::text(label_width - 8, y + kCellHeight / 2 + 3,
                          svg::fit_text(map.row_labels[r], label_width - 12, kFont), "end")
                    .add(svg::tooltip(map.row_labels[r])));
        for (std::size_t c = 0; c < map.column_labels.size(); ++c) {
            const HeatCell cell =
                r < map.cells.size() && c < map.cells[r].size() ? map.cells[r][c] : HeatCell{};
            row.add(heat_cell(cell, label_width + static_cast<double>(c) * kCellWidth, y));
        }
        svg.add(std::move(row));
    }
    svg.add(colour_ramp(map.legend_marks, label_width, legend_y));
    return svg;
}

// ---------------------------------------------------------------------------
// Trade-off chart

namespace {

constexpr double kTradeOffPlotHeight = 280;
constexpr double kPointRadius = 5;
constexpr double kPointLabelWidth = 170;
constexpr const char* kFrontColour = "#333333";

bool drawn(const TradeOffPoint& point) {
    return present(point.speed) && present(point.loss);
}

// Where a point's label goes: right of the point and above it, unless an
// earlier label is there; then below, then left above, then left below.
struct LabelBox {
    double left, top, right, bottom;
    bool overlaps(const LabelBox& other) const {
        return left < other.right && other.left < right && top < other.bottom && other.top < bottom;
    }
};

Element point_label(const std::string& label, double x, double y, std::vector<LabelBox>& placed) {
    const std::string text = svg::fit_text(label, kPointLabelWidth, kSmallFont);
    const double width = svg::text_width(text, kSmallFont);
    const double gap = kPointRadius + 3;
    struct Place {
        double x, baseline;
        bool left;
    };
    const Place places[] = {{x + gap, y - gap, false},
                            {x + gap, y + gap + kSmallFont, false},
                            {x - gap, y - gap, true},
                            {x - gap, y + gap + kSmallFont, true}};
    const Place* chosen = &places[0];
    for (const Place& place : places) {
        const double left = place.left ? place.x - width : place.x;
        const LabelBox box{left, place.baseline - kSmallFont, left + width, place.baseline + 2};
        if (std::none_of(placed.begin(), placed.end(),
                         [&](const LabelBox& other) { return box.overlaps(other); })) {
            chosen = &place;
            break;
        }
    }
    const double left = chosen->left ? chosen->x - width : chosen->x;
    placed.push_back({left, chosen->baseline - kSmallFont, left + width, chosen->baseline + 2});
    return small_text(chosen->x, chosen->baseline, text, chosen->left ? "end" : "start", "#222222");
}

Element trade_off_point(const TradeOffPoint& point, const svg::Scale& x_scale,
                        const svg::Scale& y_scale, std::vector<LabelBox>& labels) {
    Element group("g");
    group.add(svg::tooltip(point.tooltip.empty() ? point.label : point.tooltip));
    const double x = x_scale(point.speed);
    const double y = y_scale(point.loss);
    if (present(point.loss_max) && point.loss_max > point.loss) {
        const double top = y_scale(point.loss_max);
        group.add(svg::line(x, y, x, top, point.colour, 1.5).set("class", "max"));
        group.add(svg::line(x - 4, top, x + 4, top, point.colour, 1.5));
    }
    Element dot("circle");
    dot.set("class", point.on_front ? "point front" : "point");
    dot.set("cx", x).set("cy", y).set("r", kPointRadius);
    dot.set("fill", point.on_front ? point.colour : "#ffffff");
    dot.set("stroke", point.colour).set("stroke-width", 2);
    group.add(std::move(dot));
    group.add(point_label(point.label, x, y, labels));
    return group;
}

// The front's points joined in order of speed.
Element front_line(const std::vector<TradeOffPoint>& points, const svg::Scale& x_scale,
                   const svg::Scale& y_scale) {
    std::vector<const TradeOffPoint*> front;
    for (const TradeOffPoint& point : points)
        if (point.on_front && drawn(point)) front.push_back(&point);
    std::stable_sort(front.begin(), front.end(),
                     [](const TradeOffPoint* a, const TradeOffPoint* b) {
                         return a->speed < b->speed || (a->speed == b->speed && a->loss < b->loss);
                     });
    std::string coordinates;
    for (const TradeOffPoint* point : front) {
        if (!coordinates.empty()) coordinates += ' ';
        coordinates += svg::number(x_scale(point->speed)) + "," + svg::number(y_scale(point->loss));
    }
    Element line("polyline");
    line.set("class", "front").set("points", coordinates).set("fill", "none");
    line.set("stroke", kFrontColour).set("stroke-width", 1.5).set("stroke-dasharray", "6 3");
    line.add(svg::tooltip("Pareto front: no other configuration is as fast and loses no more"));
    return line;
}

}  // namespace

Element trade_off_chart(const TradeOffChart& chart) {
    std::vector<double> speeds, losses;
    for (const TradeOffPoint& point : chart.points) {
        if (!drawn(point)) continue;
        speeds.push_back(point.speed);
        losses.insert(losses.end(), {point.loss, point.loss_max});
    }
    const double top = kPlotTop;
    const double bottom = top + kTradeOffPlotHeight;
    // Room on the right for the fastest point's label.
    const double right = kLineRight - kPointLabelWidth * 0.6;
    // Safe and unsafe settings can be decades apart in speed (an fsync per
    // commit against none): then a log axis keeps the slow ones apart.
    const bool log_speed = !speeds.empty() && *std::min_element(speeds.begin(), speeds.end()) > 0 &&
                           largest(speeds) >= 10 * *std::min_element(speeds.begin(), speeds.end());
    const svg::Ticks x_ticks =
        log_speed
            ? svg::decade_ticks(*std::min_element(speeds.begin(), speeds.end()), largest(speeds))
            : svg::nice_ticks(0, largest(speeds), 8);
    const svg::Ticks y_ticks = svg::nice_ticks(0, largest(losses), 5);
    const svg::Scale x_scale(x_ticks.values.front(), x_ticks.values.back(), kLineLeft, right,
                             log_speed);
    const svg::Scale y_scale(y_ticks.values.front(), y_ticks.values.back(), bottom, top);

    const double legend_y = bottom + 52;
    Element svg = svg::document(kChartWidth, legend_y + 50, chart.title);
    svg.add(title_text(chart.title));
    draw_y_axis(svg, y_scale, y_ticks.values, chart.y_label);
    draw_value_axis(svg, x_scale, x_ticks.values, top, bottom, chart.x_label);
    svg.add(front_line(chart.points, x_scale, y_scale));
    std::vector<LabelBox> labels;
    for (const TradeOffPoint& point : chart.points)
        if (drawn(point)) svg.add(trade_off_point(point, x_scale, y_scale, labels));
    if (!chart.legend.empty()) svg.add(swatch_legend(chart.legend, kLineLeft, legend_y));
    svg.add(small_text(kLineLeft, legend_y + 20,
                       "filled, joined by the dashed line: the Pareto front (no other "
                       "configuration is at least as fast and loses no more); hollow: one is",
                       "start", "#333333"));
    svg.add(small_text(kLineLeft, legend_y + 34,
                       "the line up from a point reaches its worst crash state", "start",
                       "#333333"));
    return svg;
}

}  // namespace ds::report
