// How hostctl prints a sweep's comparison (GET /v1/sweeps/{id}/compare,
// `results compare`): the narrow table read first, the wide table of every
// metric (--all), CSV (--csv), and the golden datasets' savings.
#pragma once

#include <string>

#include "common/api/compare.h"
#include "hostctl/format.h"

namespace ds::hostctl {

// GET /v1/sweeps/{id}/compare's reply as the narrow table people read first:
// one row per configuration (and workload, when several), only the settings
// that vary, the analysed metric as mean ± 95% CI half-width, the ratio to
// the baseline with its 95% CI, the verdict, n (succeeded runs, and failed
// ones if any) and a "!" flag for durability risks (named below the table).
// Rows in the reply's ranking order: best first. Rows of different
// partitions (acceleration, host, versions) are printed as separate tables
// under a line naming the partition. Fits 120 columns for a typical sweep.
std::string format_compare_table(const api::CompareReply& compare);
// The wide table (--all): one row per (configuration, workload), the varying
// settings as columns, each metric as mean ± stddev aligned on "±", "vs
// host" when host baselines ran, an n column, and a "!" column naming
// durability risks. When every row is of one workload kind with a ranked
// view (WorkloadKind::ranked_view, common/workload_kind.h): Filesystem |
// Options | that view's metric columns | n | !, in ranking order; so for
// mariadb-atis Filesystem | Options | Time (total_s mean ± sd) | n | !,
// fastest first, and for sysbench-oltp Filesystem | Options | TPS | p95 ms |
// p99 ms | n | !, highest TPS first.
std::string format_compare_wide(const api::CompareReply& compare);
// The same as CSV with separate n/mean/stddev/ci95 columns per metric and
// full-precision numbers; just the header line when there are no rows.
std::string format_compare_csv(const api::CompareReply& compare);
// The compare reply's "golden_datasets" as one line: how many runs cloned
// how many golden volumes and the seconds that saved (or cost); "" when no
// run of the sweep used one.
std::string format_golden_datasets(const api::CompareReply& compare);

}  // namespace ds::hostctl
