// The comparison as the report's sections read it, and the HTML building
// blocks they share (report_view.h).
#include "daemon/report/report_view.h"

#include <algorithm>

#include "common/text.h"
#include "daemon/compare/comparison.h"

namespace ds::report {

using svg::Element;
using namespace json_read;

namespace {

// "btrfs · unsafe": the row's values of the settings that vary, and its
// workload when the sweep has several (its server variables are the
// workload's: the header lists them); the config id when nothing varies.
std::string row_label(const Json& row, const NarrowColumns& columns) {
    const bool host = field(row, "host_baseline") == true;
    const Json& settings = field(row, "settings");
    std::vector<std::string> parts;
    for (const auto& axis : columns.axes)
        parts.push_back(!host || settings.contains(axis) ? setting_text(settings, axis) : "-");
    if (columns.workload) parts.push_back(text_field(row, "workload"));
    std::string label =
        parts.empty() ? text_field(row, "config_id").substr(0, 12) : join(parts, " · ");
    return host ? label + " (host, raw volume)" : label;
}

}  // namespace

ReportView::ReportView(const ReportData& report)
    : data(report),
      compare(report.compare),
      rows(field(report.compare, "rows")),
      columns(narrow_columns(report.compare)),
      order(ranked_rows(report.compare)) {
    for (const auto& row : rows) labels.push_back(row_label(row, columns));
}

std::size_t ReportView::partition_count() const {
    const Json& partitions = field(compare, "partitions");
    return partitions.is_array() ? partitions.size() : 0;
}

long ReportView::partition_of(std::size_t row) const {
    return integer_field(rows[row], "partition", -1);
}

std::vector<long> ReportView::partitions() const {
    std::vector<long> seen;
    for (std::size_t r : order)
        if (std::find(seen.begin(), seen.end(), partition_of(r)) == seen.end())
            seen.push_back(partition_of(r));
    return seen;
}

std::vector<std::size_t> ReportView::rows_of(long partition) const {
    std::vector<std::size_t> members;
    for (std::size_t r : order)
        if (partition_of(r) == partition) members.push_back(r);
    return members;
}

std::string ReportView::partition_suffix(long partition) const {
    const std::size_t count = partition_count();
    if (count < 2) return "";
    if (partition < 0 || static_cast<std::size_t>(partition) >= count) return " (no run finished)";
    return " (partition " + std::to_string(partition + 1) + " of " + std::to_string(count) + ": " +
           partition_text(compare["partitions"][static_cast<std::size_t>(partition)]) + ")";
}

std::string ReportView::analysed_metric(std::size_t row) const {
    return text_field(field(rows[row], "primary_metric"), "name", "");
}

const VerdictStyle& verdict_style(std::string_view verdict) {
    static const std::vector<VerdictStyle> kStyles = {
        {"baseline", "#37474f", "baseline"},
        {std::string(to_string(Verdict::kBetter)), "#2e7d32", "better"},
        {std::string(to_string(Verdict::kWorse)), "#c62828", "worse"},
        {std::string(to_string(Verdict::kNoDifference)), "#7b8d99", "same"},
        {std::string(to_string(Verdict::kNotEnoughData)), "#b0bec5", "unknown"},
        {"no baseline", "#b0bec5", "unknown"},
    };
    auto found = std::find_if(kStyles.begin(), kStyles.end(),
                              [&](const VerdictStyle& style) { return style.verdict == verdict; });
    return found == kStyles.end() ? kStyles.back() : *found;
}

Element html_element(std::string_view name) {
    Element element(name);
    element.text("");
    return element;
}

Element html_text(std::string_view name, std::string_view text) {
    Element element(name);
    element.text(text);
    return element;
}

Element html_paragraph(std::string_view text, std::string_view css_class) {
    Element paragraph = html_text("p", text);
    if (!css_class.empty()) paragraph.set("class", css_class);
    return paragraph;
}

Element html_section(std::string_view id, std::string_view heading) {
    Element section = html_element("section");
    section.set("id", id);
    section.add(html_text("h2", heading));
    return section;
}

Element html_table(const std::vector<std::string>& header,
                   const std::vector<std::vector<std::string>>& cells,
                   const std::vector<bool>& numeric) {
    auto is_numeric = [&](std::size_t c) { return c < numeric.size() && numeric[c]; };
    auto text_cell = [&](std::string_view name, std::size_t c, const std::string& text) {
        Element element = html_text(name, text);
        if (is_numeric(c)) element.set("class", "num");
        return element;
    };
    Element head = html_element("tr");
    for (std::size_t c = 0; c < header.size(); ++c) head.add(text_cell("th", c, header[c]));
    Element table = html_element("table");
    table.add(html_element("thead").add(std::move(head)));
    Element body = html_element("tbody");
    for (const auto& line : cells) {
        Element row = html_element("tr");
        for (std::size_t c = 0; c < line.size(); ++c) row.add(text_cell("td", c, line[c]));
        body.add(std::move(row));
    }
    table.add(std::move(body));
    return table;
}

Element chart_figure(Element chart) {
    Element figure = html_element("div");
    figure.set("class", "chart");
    figure.add(std::move(chart));
    return figure;
}

}  // namespace ds::report
