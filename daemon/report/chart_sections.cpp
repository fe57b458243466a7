// The report's sections that are charts: the primary metric and its ratio to
// the baseline, latency percentiles, throughput over time, and the heat map
// of every metric against the baseline. Each turns the comparison's JSON
// into the plain data of daemon/report/charts.h.
#include <algorithm>
#include <cmath>
#include <optional>

#include "daemon/compare/compare.h"
#include "daemon/report/charts.h"
#include "daemon/report/report_view.h"

namespace ds::report {

using svg::Element;
using namespace json_read;

namespace {

const Json& summary_of(const Json& row, const std::string& metric) {
    return field(field(row, "metrics"), metric);
}

// The mean of a row's metric, kNoValue when it has none.
double mean_of(const Json& row, const std::string& metric) {
    const Json& summary = summary_of(row, metric);
    return integer_field(summary, "n", 0) > 0 ? number_field(summary, "mean").value_or(kNoValue)
                                              : kNoValue;
}

double number_or_none(const Json& object, std::string_view key) {
    return number_field(object, key).value_or(kNoValue);
}

// ---------------------------------------------------------------------------
// Primary metric and ratio

// Rows of one partition that share a key (the analysed metric: one bar
// chart; the workload: one throughput chart), in ranked order.
struct RowGroup {
    long partition = -1;
    std::string key;
    std::vector<std::size_t> rows;  // ranked
};

// Groups the ranked rows by (partition, key_of(row)); rows of no partition
// (nothing ran) are left out when `only_ran`.
template <typename KeyOf>
std::vector<RowGroup> group_rows(const ReportView& view, KeyOf key_of, bool only_ran) {
    std::vector<RowGroup> groups;
    for (std::size_t r : view.order) {
        const long partition = view.partition_of(r);
        if (only_ran && partition < 0) continue;
        const std::string key = key_of(r);
        auto group = std::find_if(groups.begin(), groups.end(), [&](const RowGroup& g) {
            return g.partition == partition && g.key == key;
        });
        if (group == groups.end()) group = groups.insert(groups.end(), {partition, key, {}});
        group->rows.push_back(r);
    }
    return groups;
}

// Rows judged by the same metric in the same partition: one chart each.
std::vector<RowGroup> metric_groups(const ReportView& view) {
    return group_rows(
        view, [&view](std::size_t r) { return view.analysed_metric(r); }, false);
}

std::string direction_text(const Json& row) {
    return field(field(row, "primary_metric"), "lower_is_better") == true ? "lower is better"
                                                                          : "higher is better";
}

Bar mean_bar(const ReportView& view, std::size_t r, const std::string& metric) {
    const Json& row = view.rows[r];
    const Json& summary = summary_of(row, metric);
    const std::string verdict = verdict_text(row);
    Bar bar;
    bar.label = view.labels[r];
    bar.value = mean_of(row, metric);
    bar.low = number_or_none(summary, "ci95_low");
    bar.high = number_or_none(summary, "ci95_high");
    bar.colour = verdict_style(verdict).colour;
    bar.value_text = std::isfinite(bar.value) ? mean_ci_text(summary) : "no succeeded run";
    bar.tooltip = bar.label + ": " + bar.value_text + " (" + verdict + ")";
    return bar;
}

Bar ratio_bar(const ReportView& view, std::size_t r) {
    const Json& row = view.rows[r];
    const Json& versus = field(row, "vs_baseline");
    const std::string verdict = verdict_text(row);
    Bar bar;
    bar.label = view.labels[r];
    bar.colour = verdict_style(verdict).colour;
    if (field(row, "is_baseline") == true) {
        bar.value = 1;
        bar.value_text = "1 (the baseline)";
    } else {
        bar.value = number_or_none(versus, "ratio");
        bar.low = number_or_none(versus, "ci95_low");
        bar.high = number_or_none(versus, "ci95_high");
        bar.value_text = std::isfinite(bar.value) ? ratio_text(versus) + "  " + verdict : verdict;
    }
    bar.tooltip = bar.label + ": " + bar.value_text;
    return bar;
}

// The verdict colours the bars of `rows` use, as a legend.
std::vector<std::pair<std::string, std::string>> verdict_legend(
    const ReportView& view, const std::vector<std::size_t>& rows) {
    std::vector<std::pair<std::string, std::string>> legend;
    for (std::size_t r : rows) {
        const VerdictStyle& style = verdict_style(verdict_text(view.rows[r]));
        const std::pair<std::string, std::string> entry{style.colour, style.verdict};
        if (std::find(legend.begin(), legend.end(), entry) == legend.end()) legend.push_back(entry);
    }
    return legend;
}

Element mean_chart(const ReportView& view, const RowGroup& group) {
    BarChart chart;
    chart.title = group.key + ": mean over the succeeded runs, with its 95% CI" +
                  view.partition_suffix(group.partition);
    chart.axis_label = group.key + " (" + direction_text(view.rows[group.rows.front()]) + ")";
    for (std::size_t r : group.rows) chart.bars.push_back(mean_bar(view, r, group.key));
    chart.legend = verdict_legend(view, group.rows);
    return bar_chart(chart);
}

Element ratio_chart(const ReportView& view, const RowGroup& group) {
    BarChart chart;
    chart.title = group.key + ": ratio to the baseline, with its 95% CI" +
                  view.partition_suffix(group.partition);
    chart.axis_label =
        "mean / the baseline's mean (" + direction_text(view.rows[group.rows.front()]) + ")";
    chart.reference = 1;
    chart.reference_label = "baseline";
    for (std::size_t r : group.rows) chart.bars.push_back(ratio_bar(view, r));
    chart.legend = verdict_legend(view, group.rows);
    return bar_chart(chart);
}

// ---------------------------------------------------------------------------
// Latency percentiles

struct Percentile {
    std::string metric;
    std::string label;
};

// The latency metrics plotted together: one chart per family that a
// partition's rows report, with the percentiles they have.
struct LatencyFamily {
    std::string title;
    std::string unit;
    std::vector<Percentile> percentiles;
};

const std::vector<LatencyFamily>& latency_families() {
    static const std::vector<LatencyFamily> kFamilies = {
        {"read completion latency",
         "µs",
         {{"read_clat_p50_us", "p50"},
          {"read_clat_p90_us", "p90"},
          {"read_clat_p99_us", "p99"},
          {"read_clat_p99_9_us", "p99.9"}}},
        {"write completion latency",
         "µs",
         {{"write_clat_p50_us", "p50"},
          {"write_clat_p90_us", "p90"},
          {"write_clat_p99_us", "p99"},
          {"write_clat_p99_9_us", "p99.9"}}},
        // Runs stored before pooled percentiles, with several fio jobs:
        // each job's percentile, the worst job's (common/fio_metrics.h).
        {"read completion latency, worst job",
         "µs",
         {{"read_clat_jobmax_p50_us", "p50"},
          {"read_clat_jobmax_p90_us", "p90"},
          {"read_clat_jobmax_p99_us", "p99"},
          {"read_clat_jobmax_p99_9_us", "p99.9"}}},
        {"write completion latency, worst job",
         "µs",
         {{"write_clat_jobmax_p50_us", "p50"},
          {"write_clat_jobmax_p90_us", "p90"},
          {"write_clat_jobmax_p99_us", "p99"},
          {"write_clat_jobmax_p99_9_us", "p99.9"}}},
        {"transaction latency",
         "ms",
         {{"latency_p50_ms", "p50"}, {"latency_p95_ms", "p95"}, {"latency_p99_ms", "p99"}}},
    };
    return kFamilies;
}

// The family's chart for `rows`, or nullopt when none of them has any of its
// percentiles.
std::optional<Element> latency_chart(const ReportView& view, const LatencyFamily& family,
                                     const std::vector<std::size_t>& rows, long partition) {
    std::vector<Percentile> present;
    for (const Percentile& percentile : family.percentiles)
        if (std::any_of(rows.begin(), rows.end(), [&](std::size_t r) {
                return std::isfinite(mean_of(view.rows[r], percentile.metric));
            }))
            present.push_back(percentile);
    if (present.empty()) return std::nullopt;
    GroupedBarChart chart;
    chart.title = family.title + " percentiles" + view.partition_suffix(partition);
    chart.axis_label = family.unit +
                       ", log scale: the mean over the runs of each run's percentile; "
                       "whiskers: its 95% CI";
    chart.log_scale = true;
    for (const Percentile& percentile : present) chart.series.push_back(percentile.label);
    for (std::size_t r : rows) {
        BarGroup group{view.labels[r], {}, {}, {}};
        for (const Percentile& percentile : present) {
            const Json& summary = summary_of(view.rows[r], percentile.metric);
            group.values.push_back(mean_of(view.rows[r], percentile.metric));
            group.lows.push_back(number_or_none(summary, "ci95_low"));
            group.highs.push_back(number_or_none(summary, "ci95_high"));
        }
        if (std::any_of(group.values.begin(), group.values.end(),
                        [](double v) { return std::isfinite(v); }))
            chart.groups.push_back(std::move(group));
    }
    return grouped_bar_chart(chart);
}

// ---------------------------------------------------------------------------
// Throughput over time

// The per-second series plotted, in this order: operations per second (the
// bandwidth series say the same for a fixed block size).
const std::vector<std::string>& plotted_series() {
    static const std::vector<std::string> kSeries = {"read_iops", "write_iops", "tps"};
    return kSeries;
}

// Rows of one workload in one partition: a throughput chart each.
std::vector<RowGroup> workload_groups(const ReportView& view) {
    return group_rows(
        view, [&view](std::size_t r) { return text_field(view.rows[r], "workload"); }, true);
}

const RowSeries& series_of(const ReportView& view, std::size_t r) {
    static const RowSeries kNone;
    return r < view.data.series.size() ? view.data.series[r] : kNone;
}

Element throughput_chart(const ReportView& view, const RowGroup& group, const std::string& name) {
    LineChart chart;
    chart.title = group.key + ": " + name +
                  " second by second, mean over each configuration's runs" +
                  view.partition_suffix(group.partition);
    chart.x_label = "second of the measurement";
    chart.y_label = name;
    for (std::size_t r : group.rows) {
        const RowSeries& series = series_of(view, r);
        const auto found = series.mean_per_second.find(name);
        LineSeries line{view.labels[r], {}, ""};
        if (found != series.mean_per_second.end() && !found->second.empty()) {
            line.values = found->second;
        } else {
            line.note =
                series.runs_with_samples > 0 ? "no " + name + " samples" : "no per-second samples";
        }
        chart.series.push_back(std::move(line));
    }
    return line_chart(chart);
}

// The plotted series any row of `group` has, in plotted_series() order.
std::vector<std::string> series_names(const ReportView& view, const RowGroup& group) {
    std::vector<std::string> names;
    for (const std::string& name : plotted_series())
        for (std::size_t r : group.rows)
            if (series_of(view, r).mean_per_second.count(name) &&
                std::find(names.begin(), names.end(), name) == names.end())
                names.push_back(name);
    return names;
}

// ---------------------------------------------------------------------------
// Heat map

// Whether two metric summaries' 95% intervals overlap (false when either has
// none: a single run, or no run).
bool intervals_overlap(const Json& a, const Json& b) {
    const auto a_low = number_field(a, "ci95_low"), a_high = number_field(a, "ci95_high");
    const auto b_low = number_field(b, "ci95_low"), b_high = number_field(b, "ci95_high");
    if (!a_low || !a_high || !b_low || !b_high) return false;
    return *a_low <= *b_high && *b_low <= *a_high;
}

struct HeatContext {
    const ReportView& view;
    double practical_difference;
};

HeatCell metric_cell(const HeatContext& context, const Json& row, const Json& baseline,
                     const std::string& metric) {
    const double mean = mean_of(row, metric);
    const double base = mean_of(baseline, metric);
    if (!std::isfinite(mean) || !std::isfinite(base) || base <= 0 || mean <= 0)
        return HeatCell{kNoValue, "", false, metric + ": nothing to compare"};
    const double ratio = mean / base;
    const bool lower_better =
        metric_lower_is_better(metric, {text_field(row, "workload_kind", "")});
    HeatCell cell;
    cell.score = std::log2(ratio) * (lower_better ? -1 : 1);
    cell.text = format_fixed(ratio, 2) + "×";
    cell.faint = std::fabs(ratio - 1) < context.practical_difference ||
                 intervals_overlap(summary_of(row, metric), summary_of(baseline, metric));
    cell.tooltip = metric + ": " + mean_ci_text(summary_of(row, metric)) +
                   " against the "
                   "baseline's " +
                   mean_ci_text(summary_of(baseline, metric)) +
                   (lower_better ? " (lower is better)" : " (higher is better)");
    return cell;
}

// The row a row is compared with: itself for the baseline, else its
// vs_baseline's; nullopt when it has none.
std::optional<std::size_t> baseline_of(const ReportView& view, std::size_t r) {
    const Json& row = view.rows[r];
    if (field(row, "is_baseline") == true) return r;
    const auto index = number_field(field(row, "vs_baseline"), "baseline_row");
    if (!index || *index < 0 || static_cast<std::size_t>(*index) >= view.rows.size())
        return std::nullopt;
    return static_cast<std::size_t>(*index);
}

// The metrics a ratio can be made of for some of `rows` (a mean above zero:
// a count that stayed 0, such as estimated_phases, has none).
std::vector<std::string> partition_metrics(const ReportView& view,
                                           const std::vector<std::size_t>& rows) {
    std::vector<std::string> metrics;
    for (const std::string& metric : string_list(field(view.compare, "metrics")))
        if (std::any_of(rows.begin(), rows.end(),
                        [&](std::size_t r) { return mean_of(view.rows[r], metric) > 0; }))
            metrics.push_back(metric);
    return metrics;
}

Element partition_heat_map(const HeatContext& context, long partition) {
    const ReportView& view = context.view;
    std::vector<std::size_t> rows;
    for (std::size_t r : view.rows_of(partition))
        if (field(view.rows[r], "host_baseline") != true) rows.push_back(r);
    HeatMap map;
    map.title = "Every metric against the baseline" + view.partition_suffix(partition);
    map.column_labels = partition_metrics(view, rows);
    map.legend_marks = {{-1, "2× worse"}, {0, "same as the baseline"}, {1, "2× better"}};
    for (std::size_t r : rows) {
        map.row_labels.push_back(view.labels[r]);
        const std::optional<std::size_t> baseline = baseline_of(view, r);
        std::vector<HeatCell> cells;
        for (const std::string& metric : map.column_labels)
            cells.push_back(baseline
                                ? metric_cell(context, view.rows[r], view.rows[*baseline], metric)
                                : HeatCell{kNoValue, "", false, "no baseline to compare with"});
        map.cells.push_back(std::move(cells));
    }
    return heat_map(map);
}

}  // namespace

Element primary_metric_section(const ReportView& view) {
    Element section = html_section("primary", "Primary metric and ratio to the baseline");
    const std::vector<RowGroup> groups = metric_groups(view);
    if (view.rows.empty()) {
        section.add(html_paragraph("No results yet."));
        return section;
    }
    section.add(html_paragraph(
        "Bars: the mean; whiskers: its 95% confidence interval (none with a single run). The "
        "ratio is estimated run by run against the baseline of the same workload (paired by "
        "round when both ran in the same rounds); a whisker that crosses the baseline line is "
        "no evidence of a difference. Colour: the verdict.",
        "note"));
    for (const RowGroup& group : groups) {
        section.add(chart_figure(mean_chart(view, group)));
        section.add(chart_figure(ratio_chart(view, group)));
    }
    return section;
}

Element latency_section(const ReportView& view) {
    Element section = html_section("latency", "Latency percentiles");
    bool drawn = false;
    for (long partition : view.partitions()) {
        const std::vector<std::size_t> rows = view.rows_of(partition);
        for (const LatencyFamily& family : latency_families()) {
            std::optional<Element> chart = latency_chart(view, family, rows, partition);
            if (!chart) continue;
            section.add(chart_figure(std::move(*chart)));
            drawn = true;
        }
    }
    if (!drawn) {
        section.add(html_paragraph(
            "No run of this sweep reported latency percentiles (test-ATIS reports elapsed times "
            "only)."));
    } else {
        section.add(html_paragraph(
            "Each run's percentile is of all its I/Os (\"worst job\": of its slowest job, for runs "
            "recorded before fio's histograms were kept); the bar is their mean over the "
            "configuration's succeeded runs. Log scale: tails are often ten or a hundred times the "
            "median.",
            "note"));
    }
    return section;
}

Element throughput_section(const ReportView& view) {
    Element section = html_section("throughput", "Throughput over time");
    const std::vector<RowGroup> groups = workload_groups(view);
    const bool any =
        std::any_of(view.data.series.begin(), view.data.series.end(),
                    [](const RowSeries& series) { return series.runs_with_samples > 0; });
    if (!any) {
        section.add(html_paragraph(
            "No per-second samples: no succeeded run of this sweep recorded its throughput second "
            "by second (test-ATIS reports none)."));
        return section;
    }
    section.add(html_paragraph(
        "Per configuration, the mean over its succeeded runs of each second's throughput, over "
        "the seconds every run has. A line that sags or climbs means the configuration's speed "
        "is not steady (caches filling, write-back, throttling).",
        "note"));
    for (const RowGroup& group : groups) {
        const std::vector<std::string> names = series_names(view, group);
        if (names.empty()) {
            section.add(html_paragraph(group.key + view.partition_suffix(group.partition) +
                                       ": no per-second samples."));
            continue;
        }
        for (const std::string& name : names)
            section.add(chart_figure(throughput_chart(view, group, name)));
    }
    return section;
}

Element heat_map_section(const ReportView& view) {
    Element section = html_section("heatmap", "Every metric against the baseline");
    if (view.rows.empty()) {
        section.add(html_paragraph("No results yet."));
        return section;
    }
    section.add(html_paragraph(
        "Each cell: the configuration's mean over the baseline's (same workload and partition). "
        "Blue is better and red worse, whichever way the metric counts (a shorter latency is "
        "better); full colour at twice as good or bad. Pale: the difference is under the "
        "practical threshold or the two 95% intervals overlap. Only the primary metric has a "
        "verdict (the table above).",
        "note"));
    const HeatContext context{view,
                              number_field(view.compare, "practical_difference").value_or(0.02)};
    for (long partition : view.partitions()) {
        if (partition < 0) continue;
        section.add(chart_figure(partition_heat_map(context, partition)));
    }
    return section;
}

}  // namespace ds::report
