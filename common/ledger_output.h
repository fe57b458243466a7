// The `ledger` workload kind's output (docs/spec.md, docs/durability.md):
// records written one at a time, each acknowledged (a file record after its
// fsync, a database row after its COMMIT) before the next. What the agent
// sends as result.output:
//   {"variant": "file" | "database",
//    "acknowledged": N,        records acknowledged, ids 1..N
//    "wall_s": S,              seconds from the first write to the last ack
//    "commit_latency_us": {"p50": .., "p99": .., "max": ..},
//    "per_second": [c0, c1, ...]   acknowledgements in each second
//    (+ "server_version" for database)}
// The guest is untrusted: every field is checked here before use.
#pragma once

#include <string_view>

#include "common/result.h"
#include "common/settings.h"
#include "common/workload_output.h"

namespace ds {

// The most records one ledger run may report (far above what any run
// reaches: a record per fsync).
inline constexpr long long kMaxLedgerRecords = 1'000'000'000;

// commits_per_s (acknowledged / wall_s), acknowledged, commit_p50_ms,
// commit_p99_ms, commit_max_ms. errc::kInvalidArgument naming the field
// when the output breaks the shape above.
Result<MetricsMap> ledger_output_metrics(std::string_view kind, const Json& output);
// "commits": output.per_second.
Result<SeriesMap> ledger_output_series(const Json& output);

}  // namespace ds
