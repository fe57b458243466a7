// Inside the HTML report (html_report.cpp, chart_sections.cpp): the
// comparison as its sections read it, the HTML building blocks they share,
// and the sections themselves. Not a public interface.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/compare_text.h"
#include "daemon/report/report_data.h"
#include "daemon/report/svg.h"

namespace ds::report {

// The rows of the comparison in the order every section shows them (the
// ranking: partition, analysed metric, best first; rows without results
// last), each with the label that names it in tables and charts.
class ReportView {
  public:
    explicit ReportView(const ReportData& data);

    const ReportData& data;
    const Json& compare;
    const Json& rows;  // compare["rows"]
    NarrowColumns columns;
    std::vector<std::size_t> order;   // row indexes, ranked
    std::vector<std::string> labels;  // by row index: the settings that vary, " · "-joined

    std::size_t partition_count() const;
    // The row's partition index, -1 when it has none (no run finished).
    long partition_of(std::size_t row) const;
    // Partition indexes in order of first appearance in `order`.
    std::vector<long> partitions() const;
    // The ranked rows of one partition.
    std::vector<std::size_t> rows_of(long partition) const;
    // " (partition 1 of 2: kvm, QEMU 7.2.0, ...)" when the sweep has several
    // partitions, else "".
    std::string partition_suffix(long partition) const;
    // The name of the metric a row is judged by (its primary metric).
    std::string analysed_metric(std::size_t row) const;
};

// How a verdict looks: its bar colour and its CSS class. One entry per
// verdict text of the API (ds::to_string(Verdict), "baseline", "no baseline").
struct VerdictStyle {
    std::string verdict;
    std::string colour;
    std::string css_class;
};
const VerdictStyle& verdict_style(std::string_view verdict);

// HTML building blocks. An HTML element is never written self-closing (an
// HTML parser reads "<td/>" as an open <td>), so these always have content.
svg::Element html_element(std::string_view name);
svg::Element html_text(std::string_view name, std::string_view text);
svg::Element html_paragraph(std::string_view text, std::string_view css_class = "");
// A <section> with an id and an <h2>.
svg::Element html_section(std::string_view id, std::string_view heading);
// A table with a header row and text cells; `numeric` marks columns drawn
// right-aligned.
svg::Element html_table(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& cells,
                        const std::vector<bool>& numeric = {});
// A chart in its scrolling frame.
svg::Element chart_figure(svg::Element chart);

// The sections drawn as charts (chart_sections.cpp).
svg::Element primary_metric_section(const ReportView& view);
svg::Element latency_section(const ReportView& view);
svg::Element throughput_section(const ReportView& view);
svg::Element heat_map_section(const ReportView& view);
// Host CPU per I/O (cpu_section.cpp): the *_cpu_us_per_io medians.
svg::Element cpu_section(const ReportView& view);
// Speed and safety (durability_section.cpp): only for a sweep with
// durability runs (ds::any_durability_measured).
svg::Element durability_section(const ReportView& view);

}  // namespace ds::report
