// The report's "Host CPU per I/O" section (docs/host-cpu.md): per
// configuration, the median CPU its runs cost per I/O of the data disk, on
// the host split by QEMU thread role and in the guest, as a table and a
// grouped bar chart per partition. Everything comes from the comparison's
// rows (their metrics' medians).
#include <algorithm>
#include <cmath>

#include "common/compare_text.h"
#include "daemon/report/charts.h"
#include "daemon/report/report_view.h"

namespace ds::report {

using svg::Element;
using namespace json_read;

namespace {

// The section's columns: each metric (daemon/run/host_cpu.h names them)
// and its heading. The first four add up to QEMU's total.
struct CpuColumn {
    const char* metric;
    const char* heading;
};
constexpr CpuColumn kSplit[] = {
    {"host_vcpu_cpu_us_per_io", "vCPU threads"},
    {"host_iothread_cpu_us_per_io", "IO threads"},
    {"host_main_loop_cpu_us_per_io", "main loop"},
    {"host_other_cpu_us_per_io", "other threads"},
};
constexpr CpuColumn kTotals[] = {
    {"host_cpu_us_per_io", "QEMU total"},
    {"guest_cpu_us_per_io", "guest"},
};

double median_of(const Json& row, const char* metric) {
    const Json& summary = field(field(row, "metrics"), metric);
    return integer_field(summary, "n", 0) > 0 ? number_field(summary, "median").value_or(kNoValue)
                                              : kNoValue;
}

bool has_cpu_figures(const Json& row) {
    return std::isfinite(median_of(row, "host_cpu_us_per_io")) ||
           std::isfinite(median_of(row, "guest_cpu_us_per_io"));
}

std::string cell_text(double value) {
    return std::isfinite(value) ? format_fixed(value, 1) : "-";
}

Element cpu_table(const ReportView& view, const std::vector<std::size_t>& rows) {
    std::vector<std::string> header{"configuration"};
    for (const CpuColumn& column : kSplit) header.push_back(column.heading);
    for (const CpuColumn& column : kTotals) header.push_back(column.heading);
    std::vector<std::vector<std::string>> cells;
    for (std::size_t r : rows) {
        std::vector<std::string> line{view.labels[r]};
        for (const CpuColumn& column : kSplit)
            line.push_back(cell_text(median_of(view.rows[r], column.metric)));
        for (const CpuColumn& column : kTotals)
            line.push_back(cell_text(median_of(view.rows[r], column.metric)));
        cells.push_back(std::move(line));
    }
    std::vector<bool> numeric(header.size(), true);
    numeric[0] = false;
    return html_element("div").set("class", "wide").add(html_table(header, cells, numeric));
}

Element cpu_chart(const ReportView& view, const std::vector<std::size_t>& rows,
                  const std::string& title) {
    GroupedBarChart chart;
    chart.title = title;
    chart.axis_label = "CPU µs per I/O, median (lower is better)";
    for (const CpuColumn& column : kSplit) chart.series.push_back(column.heading);
    chart.series.push_back("guest");
    for (std::size_t r : rows) {
        BarGroup group{view.labels[r], {}, {}, {}};
        for (const CpuColumn& column : kSplit)
            group.values.push_back(median_of(view.rows[r], column.metric));
        group.values.push_back(median_of(view.rows[r], "guest_cpu_us_per_io"));
        chart.groups.push_back(std::move(group));
    }
    return grouped_bar_chart(chart);
}

}  // namespace

Element cpu_section(const ReportView& view) {
    Element section = html_section("cpu", "Host CPU per I/O");
    const bool any = std::any_of(view.order.begin(), view.order.end(),
                                 [&](std::size_t r) { return has_cpu_figures(view.rows[r]); });
    if (!any) {
        section.add(html_paragraph(
            "No CPU figures: no succeeded run recorded its QEMU's or its guest's CPU time (a "
            "remote libvirt host and Proxmox do not show QEMU's threads; older agents do not "
            "report the guest's)."));
        return section;
    }
    section.add(html_paragraph(
        "Per configuration, the median over its succeeded runs of the CPU time spent per I/O of "
        "the data disk (QEMU's count of reads, writes, flushes and discards), in µs, over the "
        "job (mkfs and mount included): on the host by QEMU's threads (vCPU, IO threads, main "
        "loop, others such as the thread pool of aio=threads; together QEMU's total), and in the "
        "guest (its CPUs' busy time). Under TCG the vCPU threads also emulate the guest's "
        "instructions, so their share is not comparable to KVM's.",
        "note"));
    for (long partition : view.partitions()) {
        std::vector<std::size_t> rows;
        for (std::size_t r : view.rows_of(partition)) {
            if (has_cpu_figures(view.rows[r])) rows.push_back(r);
        }
        if (rows.empty()) continue;
        const std::string suffix = view.partition_suffix(partition);
        if (!suffix.empty()) section.add(html_text("h3", "Runs" + suffix));
        section.add(cpu_table(view, rows));
        section.add(chart_figure(cpu_chart(view, rows, "CPU µs per I/O" + suffix)));
    }
    return section;
}

}  // namespace ds::report
