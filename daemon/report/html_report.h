// The report of a sweep as one self-contained HTML page (docs/report.md):
// inline CSS and inline SVG charts, no script, nothing fetched from
// anywhere, readable on a laptop screen and on paper. Sections, in order:
// the sweep (name, id, spec summary, run counts, baseline, failed runs), the
// verdict table, the primary metric and its ratio to the baseline as bars
// with 95% CI whiskers, speed and safety (for a sweep with durability runs:
// what they measured, and speed against acknowledged commits lost with the
// Pareto front), latency percentiles, throughput over time, every
// metric relative to the baseline as a heat map, the settings as read back,
// the durability risks, and the environment (hosts, acceleration, versions).
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "daemon/report/report_data.h"
#include "daemon/store/store.h"

namespace ds::report {

// The page for `data`. Pure and deterministic: the same data gives the same
// bytes (no clock is read; the page says when the sweep ran, not when the
// report was made). Every text from the store or the guest is escaped.
std::string render_report_html(const ReportData& data);

// gather_report_data (the spec from `specs`), then render_report_html.
// Errors as gather_report_data.
Result<std::string> render_sweep_report(Store& store, std::int64_t sweep_id,
                                        SweepSpecs* specs = nullptr);

}  // namespace ds::report
