#include "hostctl/compare_format.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <vector>

#include "common/compare_text.h"
#include "common/text.h"
#include "common/verification_text.h"
#include "common/workload_kind.h"

namespace ds::hostctl {
namespace {

struct CompareColumns {
    std::vector<std::string> axes;
    std::vector<std::string> metrics;
};

using api::CompareReply;
using api::CompareRow;

// The comparison as the texts hostctl shares with the daemon's HTML report
// read it (common/compare_text.h, common/verification_text.h): its JSON, as
// the report holds it, for the rules those texts define once.
Json shared_view(const CompareReply& compare) {
    return to_json(compare);
}

// The metric's name, `fallback` without one.
std::string metric_name(const std::optional<api::ComparedMetric>& metric,
                        const std::string& fallback) {
    return metric ? shown(metric->name, fallback) : fallback;
}

// A comparison's levels and settings not checked, under its table; "" when
// its runs checked everything. `compare` is shared_view's.
std::string not_checked_legend(const Json& compare) {
    std::string text;
    for (const std::string& line : compare_not_checked_lines(compare))
        text += "  " + single_line(line) + "\n";
    return text.empty() ? "" : "not checked in these runs' settings:\n" + text;
}

CompareColumns compare_columns(const CompareReply& compare) {
    CompareColumns columns;
    columns.axes = compare.varying_axes;
    columns.metrics = compare.metrics;
    if (columns.metrics.empty()) {
        // Derive from the rows when the daemon does not list them.
        std::set<std::string> seen;
        for (const CompareRow& row : compare.rows) {
            const Json& metrics = row.metrics;
            if (!metrics.is_object()) continue;
            for (const auto& item : metrics.items()) {
                if (seen.insert(item.key()).second) columns.metrics.push_back(item.key());
            }
        }
    }
    return columns;
}

std::string risks_of(const CompareRow& row) {
    return row.durability_risks.empty() ? "" : "unsafe: " + join(row.durability_risks, ", ");
}

// Whether any row has a durability risk: then the wide tables get a "!"
// column, and kRiskLegend under them.
bool any_risk_in(const std::vector<CompareRow>& rows) {
    bool any_risk = false;
    for (const auto& row : rows) any_risk = any_risk || !risks_of(row).empty();
    return any_risk;
}

constexpr std::string_view kRiskLegend =
    "! = settings that can lose data on a power failure or crash\n";

// The columns that name a row's configuration: the varying `axes`, or its
// id when nothing varies.
void add_configuration_columns(std::vector<Table::Column>& header,
                               const std::vector<std::string>& axes) {
    if (axes.empty()) header.push_back({"config"});
    for (const auto& axis : axes) header.push_back({axis});
}

// A row's cells under add_configuration_columns: its settings on the
// varying `axes` (a host baseline has no guest settings: only its storage is
// one, the rest is "-"), or its id's first 12 characters.
void add_configuration_cells(std::vector<std::string>& line, const CompareRow& row,
                             const std::vector<std::string>& axes) {
    const bool host = row.host_baseline == true;
    if (axes.empty()) line.push_back(shown(row.config_id).substr(0, 12));
    for (const auto& axis : axes) {
        const bool applies = !host || row.settings.contains(axis);
        line.push_back(applies ? setting_text(row.settings, axis) : "-");
    }
}

// The row's workload, a host baseline's said to be one.
std::string workload_cell(const CompareRow& row) {
    return shown(row.workload) + (row.host_baseline == true ? " (host, raw volume)" : "");
}

// The n column: the runs that succeeded, and a note of those that did not.
std::string runs_cell(const CompareRow& row) {
    return std::to_string(integer_field(row.runs, "succeeded")) + unsuccessful_note(row.runs);
}

// The ranked view of the kind every row is of (WorkloadKind::ranked_view);
// nullptr when the rows are of several kinds or their kind has none.
const RankedView* ranked_view_of(const CompareReply& compare) {
    const std::vector<std::string>& kinds = compare.workload_kinds;
    if (kinds.size() != 1) return nullptr;
    const WorkloadKind* kind = find_workload_kind(kinds.front());
    if (kind == nullptr || kind->ranked_view.columns.empty()) return nullptr;
    return &kind->ranked_view;
}

// A summary cell "mean ± sd" aligned on "±" within its column: the cells of
// one column are formatted first, then padded.
std::vector<std::string> aligned_cells(const std::vector<MeanSpread>& cells) {
    std::size_t mean_width = 0, spread_width = 0;
    for (const auto& cell : cells) {
        mean_width = std::max(mean_width, display_width(cell.mean));
        spread_width = std::max(spread_width, display_width(cell.spread));
    }
    std::vector<std::string> texts;
    for (const auto& cell : cells) {
        std::string text = pad_left(cell.mean, mean_width);
        if (spread_width > 0) {
            text += cell.spread.empty() ? std::string(3 + spread_width, ' ')
                                        : " ± " + pad_right(cell.spread, spread_width);
        }
        texts.push_back(std::move(text));
    }
    return texts;
}

MeanSpread summary_cell(const Json& summary) {
    auto mean = number_field(summary, "mean");
    if (!mean || integer_field(summary, "n", 1) <= 0) return {"-", ""};
    return format_mean_spread(*mean, number_field(summary, "stddev"));
}

// Each metric's column of "mean ± sd" cells for the rows at `order`, built
// before the table so that each column can be aligned on "±".
std::vector<std::vector<std::string>> aligned_metric_columns(
    const std::vector<CompareRow>& rows, const std::vector<std::size_t>& order,
    const std::vector<std::string_view>& metrics) {
    std::vector<std::vector<std::string>> columns;
    for (std::string_view metric : metrics) {
        std::vector<MeanSpread> cells;
        for (std::size_t r : order) cells.push_back(summary_cell(field(rows[r].metrics, metric)));
        columns.push_back(aligned_cells(cells));
    }
    return columns;
}

// Whether any row, of any partition, has a host baseline to compare with.
bool any_host_overhead(const CompareReply& compare) {
    for (const CompareRow& row : compare.rows)
        if (row.vs_host && row.vs_host->is_object()) return true;
    return false;
}

// The line under a table with a "vs host" column that says what it is.
std::string vs_host_legend(const std::string& metric) {
    return "vs host = the configuration's mean " + metric +
           " as a share of the host baseline's (fio from the host on the same storage's "
           "raw volume, no guest)\n";
}

// The metric the "vs host" column compares: the primary one when shown,
// else the first; "" when no row has a host baseline to compare with.
std::string host_overhead_metric(const CompareReply& compare, const CompareColumns& columns) {
    if (!any_host_overhead(compare) || columns.metrics.empty()) return "";
    const std::string primary = metric_name(compare.primary_metric, "");
    const bool shown =
        std::find(columns.metrics.begin(), columns.metrics.end(), primary) != columns.metrics.end();
    return shown ? primary : columns.metrics.front();
}

// "41%" of the host baseline's mean, "-" without one.
std::string host_share_text(const CompareRow& row, const std::string& metric) {
    auto ratio = number_field(field(row.vs_host.value_or(Json()), "ratios"), metric);
    return ratio ? format_fixed(*ratio * 100, *ratio < 0.1 ? 1 : 0) + "%" : "-";
}

// A kind's ranked table (the seed study's for mariadb-atis, its sysbench
// counterpart), rows in the reply's ranking order. Rows without the ranked
// metric (no succeeded run) follow, so failures stay visible.
std::string format_ranked_table(const CompareReply& compare, const RankedView& view) {
    const std::vector<CompareRow>& rows = compare.rows;
    const std::string sweep_id = shown(compare.sweep_id);
    const Json shared = shared_view(compare);
    const std::vector<std::size_t> order = ranked_rows(shared);
    const bool any_risk = any_risk_in(rows);

    std::vector<std::string_view> metrics;
    for (const RankedColumn& column : view.columns) metrics.push_back(column.metric);
    const std::vector<std::vector<std::string>> metric_cells =
        aligned_metric_columns(rows, order, metrics);

    std::vector<Table::Column> header = {{"Filesystem"}, {"Options"}};
    for (const RankedColumn& column : view.columns)
        header.push_back({std::string(column.header), Align::kLeft});
    const bool durability = any_durability_measured(shared);
    if (durability) header.push_back({"durability"});
    header.push_back({"n"});
    if (any_risk) header.push_back({"!"});
    Table table(std::move(header));
    // Several workloads with the same server variables (or none) would read
    // alike: then the workload's name goes next to its options.
    std::set<std::string> option_texts, workload_names;
    for (const CompareRow& row : rows) {
        option_texts.insert(shown(row.options, "defaults"));
        workload_names.insert(shown(row.workload));
    }
    const bool name_workloads = option_texts.size() < workload_names.size();
    for (std::size_t i = 0; i < order.size(); ++i) {
        const CompareRow& row = rows[order[i]];
        std::string options = shown(row.options, "defaults");
        if (name_workloads) options += " [" + shown(row.workload) + "]";
        std::vector<std::string> line = {shown(row.filesystem), options};
        for (const auto& cells : metric_cells) line.push_back(cells[i]);
        if (durability) line.push_back(durability_cell_text(row.durability));
        line.push_back(runs_cell(row));
        if (any_risk) line.push_back(risks_of(row));
        table.add_row(std::move(line));
    }
    std::string text = "sweep " + sweep_id + ": ";
    text += view.title;
    text += "; mean ± sd (sample standard deviation) over n succeeded runs\n";
    text += table.render();
    if (durability) text += std::string(kDurabilityLegend) + "\n";
    if (any_risk) text += kRiskLegend;
    return text + not_checked_legend(shared);
}

}  // namespace

std::string format_golden_datasets(const CompareReply& compare) {
    if (!compare.golden_datasets) return "";
    const api::GoldenDatasetSavings& golden = *compare.golden_datasets;
    const auto seconds = [](const std::optional<double>& value) {
        return (value ? format_fixed(*value, 1) : std::string("?")) + " s";
    };
    return "golden datasets: " + shown(golden.runs) + " runs cloned from " +
           shown(golden.golden_volumes) + " golden volume(s); preparation avoided " +
           seconds(golden.avoided_s) + ", golden preparation " + seconds(golden.preparation_s) +
           " (its guest's boot included), clones " + seconds(golden.clone_s) + ": saved " +
           seconds(golden.saved_s) + "\n";
}

std::string format_compare_wide(const CompareReply& compare) {
    const std::vector<CompareRow>& rows = compare.rows;
    std::string sweep_id = shown(compare.sweep_id);
    if (rows.empty()) return "sweep " + sweep_id + " has no results yet\n";
    if (const RankedView* view = ranked_view_of(compare))
        return format_ranked_table(compare, *view);
    CompareColumns columns = compare_columns(compare);

    const bool any_risk = any_risk_in(rows);

    std::vector<std::size_t> every_row(rows.size());
    std::iota(every_row.begin(), every_row.end(), 0);
    const std::vector<std::vector<std::string>> metric_cells =
        aligned_metric_columns(rows, every_row, {columns.metrics.begin(), columns.metrics.end()});

    const std::string overhead_metric = host_overhead_metric(compare, columns);

    std::vector<Table::Column> header;
    add_configuration_columns(header, columns.axes);
    header.push_back({"workload"});
    for (const auto& metric : columns.metrics) header.push_back({metric, Align::kRight});
    if (!overhead_metric.empty()) header.push_back({"vs host", Align::kRight});
    const Json shared = shared_view(compare);
    const bool durability = any_durability_measured(shared);
    if (durability) header.push_back({"durability"});
    header.push_back({"n", Align::kRight});
    if (any_risk) header.push_back({"!"});
    Table table(std::move(header));

    for (std::size_t r = 0; r < rows.size(); ++r) {
        const CompareRow& row = rows[r];
        std::vector<std::string> line;
        add_configuration_cells(line, row, columns.axes);
        line.push_back(workload_cell(row));
        for (const auto& cells : metric_cells) line.push_back(cells[r]);
        if (!overhead_metric.empty()) line.push_back(host_share_text(row, overhead_metric));
        if (durability) line.push_back(durability_cell_text(row.durability));
        line.push_back(runs_cell(row));
        if (any_risk) line.push_back(risks_of(row));
        table.add_row(std::move(line));
    }

    std::string text = "sweep " + sweep_id +
                       ": mean ± stddev over n succeeded runs per configuration and workload\n" +
                       table.render();
    if (!overhead_metric.empty()) text += vs_host_legend(overhead_metric);
    if (durability) text += std::string(kDurabilityLegend) + "\n";
    if (any_risk) text += kRiskLegend;
    return text + not_checked_legend(shared);
}

namespace {

// The heading: what the numbers are, and against what.
std::string narrow_heading(const CompareReply& compare, const Json& shared,
                           const std::string& metric, bool lower_better) {
    const std::string baseline = baseline_settings_text(shared);
    const double threshold = compare.practical_difference.value_or(0.02);
    std::string text = "sweep " + shown(compare.sweep_id) + ": " +
                       (metric.empty() ? std::string("each workload's primary metric") : metric) +
                       (metric.empty() ? ""
                        : lower_better ? " (lower is better)"
                                       : " (higher is better)") +
                       ", mean ± 95% CI half-width over n succeeded runs, best first\n";
    const std::string chosen_by = compare.baseline ? shown(compare.baseline->chosen_by, "") : "";
    text += "ratio = mean / the baseline's (" + baseline +
            (chosen_by == "spec" ? ", chosen in the spec" : ", the first configuration") +
            ") with its 95% CI\nverdict: Holm-adjusted p < 0.05; differences under " +
            percent_text(threshold) + " are never called\n";
    return text;
}

}  // namespace

namespace {

// "workload NAME: OPTIONS" for each workload with server variables, in the
// order the rows first name them.
std::string workload_options_legend(const std::vector<CompareRow>& rows) {
    std::string legend;
    std::set<std::string> named;
    for (const CompareRow& row : rows) {
        const std::string workload = shown(row.workload);
        const std::string options = shown(row.options, "defaults");
        if (options == "defaults" || !named.insert(workload).second) continue;
        legend += "workload " + workload + ": " + options + "\n";
    }
    return legend;
}

// What the narrow compare table shows beyond the configuration's axes.
struct NarrowLayout {
    NarrowColumns columns;
    bool options_column = false;  // the workloads' server variables, in the table
    std::string metric;           // the analysed metric; "" when rows differ
    bool vs_host_column = false;
    bool durability_column = false;
};

// The narrow compare table's columns: the configuration (its axes, or its
// id when nothing varies), then the primary metric and what is said of it.
Table narrow_compare_table(const NarrowLayout& layout) {
    std::vector<Table::Column> header;
    add_configuration_columns(header, layout.columns.axes);
    if (layout.columns.workload) header.push_back({"workload"});
    if (layout.options_column) header.push_back({"options"});
    header.push_back({layout.metric.empty() ? "primary metric" : layout.metric, Align::kRight});
    if (layout.vs_host_column) header.push_back({"vs host", Align::kRight});
    header.push_back({"ratio [95% CI]", Align::kRight});
    header.push_back({"verdict"});
    if (layout.durability_column) header.push_back({"durability"});
    header.push_back({"n", Align::kRight});
    header.push_back({"!"});
    return Table(std::move(header));
}

// One row of the narrow compare table; its durability risks, when new, go
// to `risk_notes` (printed once each under the tables).
std::vector<std::string> narrow_compare_line(const CompareRow& row, const NarrowLayout& layout,
                                             std::vector<std::string>& risk_notes) {
    std::vector<std::string> line;
    add_configuration_cells(line, row, layout.columns.axes);
    if (layout.columns.workload) line.push_back(workload_cell(row));
    if (layout.options_column) line.push_back(shown(row.options, "defaults"));
    const std::string row_metric = metric_name(row.primary_metric, layout.metric);
    std::string value = mean_ci_text(field(row.metrics, row_metric));
    if (layout.metric.empty() && value != "-") value += " " + row_metric;
    line.push_back(value);
    if (layout.vs_host_column) line.push_back(host_share_text(row, row_metric));
    line.push_back(row.is_baseline == true ? "1" : ratio_text(row.vs_baseline.value_or(Json())));
    // The verdict as the report words it (its rule reads the row's JSON).
    line.push_back(verdict_text(to_json(row)));
    if (layout.durability_column) line.push_back(durability_cell_text(row.durability));
    line.push_back(runs_cell(row));
    const std::string risks = join(row.durability_risks, ", ");
    line.push_back(risks.empty() ? "" : "!");
    if (!risks.empty() &&
        std::find(risk_notes.begin(), risk_notes.end(), risks) == risk_notes.end())
        risk_notes.push_back(risks);
    return line;
}

}  // namespace

std::string format_compare_table(const CompareReply& compare) {
    const std::vector<CompareRow>& rows = compare.rows;
    const std::string sweep_id = shown(compare.sweep_id);
    if (rows.empty()) return "sweep " + sweep_id + " has no results yet\n";
    const Json shared = shared_view(compare);
    NarrowLayout layout;
    layout.metric = metric_name(compare.primary_metric, "");
    layout.columns = narrow_columns(shared);
    const Json& partitions = compare.partitions;
    const std::size_t partition_count = partitions.is_array() ? partitions.size() : 0;

    std::map<long, std::vector<std::size_t>> by_partition;
    for (std::size_t r : ranked_rows(shared))
        by_partition[rows[r].partition.value_or(0)].push_back(r);

    // With a workload column, the workloads' server variables (often longer
    // than the rest of a row) are a legend under the table, once each.
    layout.options_column = layout.columns.options && !layout.columns.workload;
    // The host baselines sit in a partition of their own (acceleration
    // "none"): whether to show the column is asked of every row.
    layout.vs_host_column = any_host_overhead(compare);
    layout.durability_column = any_durability_measured(shared);
    const bool lower_better =
        compare.primary_metric && compare.primary_metric->lower_is_better == true;
    std::string text = narrow_heading(compare, shared, layout.metric, lower_better);
    if (partition_count > 1) {
        text +=
            "runs of different acceleration, host or versions are shown apart: they are "
            "not pooled, and each is compared with the baseline of its own partition\n";
    }
    std::vector<std::string> risk_notes;
    for (const auto& [partition, members] : by_partition) {
        if (partition_count > 1 && partition >= 0 &&
            static_cast<std::size_t>(partition) < partition_count) {
            text += "\npartition " + std::to_string(partition + 1) + " of " +
                    std::to_string(partition_count) + ": " + partition_text(partitions[partition]) +
                    "\n";
        }
        Table table = narrow_compare_table(layout);
        for (std::size_t r : members)
            table.add_row(narrow_compare_line(rows[r], layout, risk_notes));
        text += table.render();
    }
    if (layout.vs_host_column)
        text += vs_host_legend(layout.metric.empty() ? "primary metric" : layout.metric);
    if (layout.durability_column) text += std::string(kDurabilityLegend) + "\n";
    if (layout.columns.options && !layout.options_column) text += workload_options_legend(rows);
    for (const auto& risks : risk_notes)
        text += "! " + risks + ": can lose data on a power failure or crash\n";
    text += not_checked_legend(shared);
    text +=
        "(--all: every metric; --metric NAME: rank and compare by another; --json, --csv: "
        "all numbers)\n";
    return text;
}

namespace {

constexpr const char* kCsvSummaryFields[] = {"n",  "mean",     "median",    "stddev",
                                             "cv", "ci95_low", "ci95_high", "geomean"};
constexpr const char* kCsvComparisonFields[] = {"ratio",   "ci95_low",   "ci95_high",
                                                "p_value", "p_adjusted", "verdict"};
// A row's "durability", last (so existing columns keep their places).
constexpr const char* kCsvDurabilityFields[] = {
    "verdict",   "safe",           "crash_states",  "states_with_losses", "max_lost",
    "mean_lost", "mount_failures", "fsck_failures", "recovery_failures"};

std::string csv_line(const std::vector<std::string>& fields) {
    std::string line;
    for (std::size_t i = 0; i < fields.size(); ++i) {
        if (i > 0) line += ',';
        line += csv_field(fields[i]);
    }
    return line + "\n";
}

// Numbers at full precision (JSON's shortest round-trip form); absent or
// null values (the spread of a single run) as empty fields.
std::string csv_number_text(const Json& value) {
    return value.is_number() ? value.dump() : std::string();
}

std::vector<std::string> csv_header(const CompareColumns& columns) {
    std::vector<std::string> header = {"sweep_id", "config_id", "workload"};
    for (const auto& axis : columns.axes) header.push_back(axis);
    header.push_back("runs_succeeded");
    header.push_back("runs_failed");
    for (const auto& metric : columns.metrics) {
        for (const char* part : kCsvSummaryFields) header.push_back(metric + "_" + part);
    }
    header.push_back("partition");
    header.push_back("compared_metric");
    for (const char* part : kCsvComparisonFields)
        header.push_back(std::string("vs_baseline_") + part);
    header.push_back("vs_host");
    header.push_back("durability_risks");
    for (const char* part : kCsvDurabilityFields)
        header.push_back(std::string("durability_") + part);
    return header;
}

// The fields of one compare row, in csv_header's order.
std::vector<std::string> csv_row(const CompareReply& compare, const CompareRow& row,
                                 const CompareColumns& columns) {
    std::vector<std::string> line = {shown(compare.sweep_id, ""), shown(row.config_id, ""),
                                     shown(row.workload, "")};
    for (const auto& axis : columns.axes) {
        line.push_back(format_setting_value(field(row.settings, axis)));
    }
    line.push_back(std::to_string(integer_field(row.runs, "succeeded")));
    line.push_back(std::to_string(integer_field(row.runs, "failed")));
    for (const auto& metric : columns.metrics) {
        const Json& summary = field(row.metrics, metric);
        for (const char* part : kCsvSummaryFields) {
            const Json& value = field(summary, part);
            // A metric no run reported has n = 0, not an empty field.
            line.push_back(
                std::string_view(part) == "n" && !value.is_number() ? "0" : csv_number_text(value));
        }
    }
    const Json& partitions = compare.partitions;
    const long partition = row.partition.value_or(-1);
    const bool known = partitions.is_array() && partition >= 0 &&
                       static_cast<std::size_t>(partition) < partitions.size();
    line.push_back(known ? partition_text(partitions[static_cast<std::size_t>(partition)]) : "");
    const Json versus = row.vs_baseline.value_or(Json());
    const std::string compared = metric_name(row.primary_metric, "");
    line.push_back(compared);
    for (const char* part : kCsvComparisonFields) {
        const Json& value = field(versus, part);
        line.push_back(value.is_string() ? value.get<std::string>() : csv_number_text(value));
    }
    // The compared metric's mean as a share of the host baseline's (any partition).
    line.push_back(csv_number_text(field(field(row.vs_host.value_or(Json()), "ratios"), compared)));
    line.push_back(join(row.durability_risks, ";"));
    const Json& durability = row.durability;
    for (const char* part : kCsvDurabilityFields) {
        const Json& value = field(durability, part);
        line.push_back(value.is_string()    ? value.get<std::string>()
                       : value.is_boolean() ? (value.get<bool>() ? "true" : "false")
                                            : csv_number_text(value));
    }
    return line;
}

}  // namespace

std::string format_compare_csv(const CompareReply& compare) {
    CompareColumns columns = compare_columns(compare);
    std::string text = csv_line(csv_header(columns));
    for (const CompareRow& row : compare.rows) text += csv_line(csv_row(compare, row, columns));
    return text;
}

}  // namespace ds::hostctl
