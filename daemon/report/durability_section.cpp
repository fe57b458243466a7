// The report's "Speed and safety" section (docs/durability.md, "What you
// see"): what the durability runs measured per configuration, as a table,
// and per ledger workload a chart of its speed against the acknowledged
// commits it lost, with the Pareto front. Where the host-writeback model was
// measured (cache unsafe, writeback), each chart comes twice, host
// writeback and worst case, and a switch without script shows one of them.
// Everything comes from the comparison's rows ("durability":
// ds::DurabilityResult::to_json).
#include <algorithm>
#include <cmath>

#include "common/compare_text.h"
#include "common/text.h"
#include "common/workload_kind.h"
#include "daemon/compare/durability_results.h"
#include "daemon/report/charts.h"
#include "daemon/report/report_view.h"

namespace ds::report {

using svg::Element;
using namespace json_read;

namespace {

constexpr const char* kSafeColour = "#2e7d32";
constexpr const char* kUnsafeColour = "#c62828";

const Json& durability_of(const ReportView& view, std::size_t r) {
    return field(view.rows[r], "durability");
}

// The ledger rows with durability runs of their own, ranked. (Rows of
// other kinds only repeat what a ledger row measured.)
std::vector<std::size_t> measured_ledger_rows(const ReportView& view) {
    std::vector<std::size_t> rows;
    for (std::size_t r : view.order) {
        const Json& durability = durability_of(view, r);
        if (kind_acknowledges(text_field(view.rows[r], "workload_kind", "")) &&
            (integer_field(durability, "runs") > 0 ||
             integer_field(durability, "unreadable_runs") > 0))
            rows.push_back(r);
    }
    return rows;
}

// The figure a chart shows: the host-writeback one when `host_writeback`
// and the row has it, else the worst case (the models agree without it).
const Json& figure_of(const Json& durability, bool host_writeback) {
    const Json& writeback = field(durability, "host_writeback");
    return host_writeback && writeback.is_object() ? writeback : durability;
}

// "0/16 lost (35 s)" for the table's host-writeback column, "-" without.
std::string host_writeback_cell(const Json& durability) {
    const Json& writeback = field(durability, "host_writeback");
    if (!writeback.is_object()) return "-";
    std::string text = text_field(writeback, "states_with_losses") + "/" +
                       text_field(writeback, "crash_states") + " lost";
    if (const auto window = number_field(writeback, "window_s"))
        text += " (" + seconds_text(*window) + ")";
    return text;
}

std::string number_text(const Json& durability, std::string_view key, int decimals) {
    const std::optional<double> value = number_field(durability, key);
    return value ? format_fixed(*value, decimals) : "-";
}

// The failures are in the verdict ("; 2 failed fsck"); the workload is in
// the label when the sweep has several.
Element measured_table(const ReportView& view, const std::vector<std::size_t>& rows) {
    std::vector<std::vector<std::string>> cells;
    for (std::size_t r : rows) {
        const Json& durability = durability_of(view, r);
        cells.push_back(
            {view.labels[r], number_text(durability, "commits_per_s", 1),
             text_field(durability, "crash_states"), text_field(durability, "states_with_losses"),
             text_field(durability, "max_lost"), number_text(durability, "mean_lost", 2),
             host_writeback_cell(durability), text_field(durability, "verdict")});
    }
    return html_element("div")
        .set("class", "wide")
        .add(html_table({"configuration", "commits/s", "crash states", "with losses", "max lost",
                         "mean lost", "host writeback", "verdict (worst case)"},
                        cells, {false, true, true, true, true, true, false}));
}

// The measured rows of one chart: one partition, one spec workload (a
// tuning's variants share their workload's chart, so the tunings are
// compared; different workloads count different commits).
struct ChartGroup {
    long partition = -1;
    std::string workload;  // the spec workload: variant_of, else the name
    std::vector<std::size_t> rows;
};

std::string spec_workload_of(const ReportView& view, std::size_t r) {
    const std::string name = text_field(view.rows[r], "workload", "");
    const auto found = view.data.workloads.find(name);
    const std::string family =
        found == view.data.workloads.end() ? "" : string_or_empty(found->second, "variant_of");
    return family.empty() ? name : family;
}

std::vector<ChartGroup> chart_groups(const ReportView& view, const std::vector<std::size_t>& rows) {
    std::vector<ChartGroup> groups;
    for (std::size_t r : rows) {
        const long partition = view.partition_of(r);
        const std::string workload = spec_workload_of(view, r);
        auto group = std::find_if(groups.begin(), groups.end(), [&](const ChartGroup& g) {
            return g.partition == partition && g.workload == workload;
        });
        if (group == groups.end()) group = groups.insert(groups.end(), {partition, workload, {}});
        group->rows.push_back(r);
    }
    return groups;
}

Element speed_safety_chart(const ReportView& view, const ChartGroup& group, bool host_writeback) {
    TradeOffChart chart;
    chart.title = group.workload + ": speed against acknowledged commits lost" +
                  (host_writeback ? " (host writeback)" : "") +
                  view.partition_suffix(group.partition);
    chart.x_label = "commits/s, mean over the durability runs (faster to the right)";
    // The y axis: acknowledged commits lost, mean over the crash states (the
    // line above a point: its worst state).
    chart.y_label = "commits lost per crash state";
    std::vector<std::pair<double, double>> speed_loss;
    for (std::size_t r : group.rows) {
        const Json& row = durability_of(view, r);
        const Json& durability = figure_of(row, host_writeback);
        TradeOffPoint point;
        point.label = view.labels[r];
        point.speed = number_field(row, "commits_per_s").value_or(kNoValue);
        point.loss = integer_field(row, "runs") > 0
                         ? number_field(durability, "mean_lost").value_or(kNoValue)
                         : kNoValue;
        point.loss_max = number_field(durability, "max_lost").value_or(kNoValue);
        point.colour = durability_safe(durability) ? kSafeColour : kUnsafeColour;
        point.tooltip = point.label + ": " + text_field(durability, "verdict");
        speed_loss.emplace_back(point.speed, point.loss);
        chart.points.push_back(std::move(point));
    }
    const std::vector<bool> front = pareto_front(speed_loss);
    for (std::size_t i = 0; i < chart.points.size(); ++i) chart.points[i].on_front = front[i];
    chart.legend = {{kSafeColour, "kept every acknowledged commit, every crash state recovered"},
                    {kUnsafeColour,
                     "lost commits, or a crash state failed to mount, fsck or "
                     "recover: not safe"}};
    return chart_figure(trade_off_chart(chart));
}

// One chart, or where a row has the host-writeback figure both, behind a
// switch: two radio buttons and CSS (html_report.cpp, .model-switch) show
// the chart of the checked one, the host writeback's first.
Element chart_or_switch(const ReportView& view, const ChartGroup& group, std::size_t number) {
    const bool two = std::any_of(group.rows.begin(), group.rows.end(), [&](std::size_t r) {
        return field(durability_of(view, r), "host_writeback").is_object();
    });
    if (!two) return speed_safety_chart(view, group, false);
    const std::string name = "durability-model-" + std::to_string(number);
    const auto radio = [&](const std::string& id, const char* css, bool checked) {
        Element input("input");
        input.set("type", "radio").set("name", name).set("id", id).set("class", css);
        if (checked) input.set("checked", "checked");
        return input;
    };
    const auto label = [](const std::string& id, const std::string& text) {
        return html_text("label", text).set("for", id);
    };
    Element box = html_element("div").set("class", "model-switch");
    box.add(radio(name + "-writeback", "show-writeback", true))
        .add(label(name + "-writeback", "host writeback"))
        .add(radio(name + "-worst", "show-worst", false))
        .add(label(name + "-worst", "worst case"));
    box.add(html_element("div")
                .set("class", "model-writeback")
                .add(speed_safety_chart(view, group, true)));
    box.add(html_element("div")
                .set("class", "model-worst")
                .add(speed_safety_chart(view, group, false)));
    return box;
}

}  // namespace

Element durability_section(const ReportView& view) {
    Element section = html_section("durability", "Speed and safety");
    section.add(html_paragraph(
        "Measured, not labelled: each durability run logged every write of its data disk, the "
        "log was cut at its flush points (simulated power cuts, under the crash model of the "
        "configuration's cache mode), and a checker guest booted each crash image and counted "
        "the acknowledged commits it had lost (docs/durability.md). A configuration that lost "
        "an acknowledged commit, or whose image did not mount, failed fsck or did not recover, "
        "in any crash state is not safe. Crash points are a sample: no loss seen is not a proof. "
        "Where the host's page cache holds the guest's writes (cache unsafe, writeback), two "
        "figures: the worst case (any write since the workload began may be lost) and the "
        "host's writeback (writes older than its writeback window survive); the switch above "
        "each chart shows one or the other.",
        "note"));
    const std::vector<std::size_t> rows = measured_ledger_rows(view);
    section.add(measured_table(view, rows));
    std::size_t number = 0;
    for (const ChartGroup& group : chart_groups(view, rows))
        section.add(chart_or_switch(view, group, number++));
    return section;
}

}  // namespace ds::report
