// The pgbench kind's output (guestagent/pgbench_workload.cpp) as metrics
// and per-second series, the parsers its descriptor points at
// (common/workload_kind.h). The output is the guest's, untrusted: every
// field is checked for its type and range, and a field that fails names
// itself in an errc::kInvalidArgument.
//
// output {"stdout": pgbench's summary as it printed it,
//         "progress": its "progress: ..." lines (-P 1),
//         "latency_us": {"count", "p50", "p95", "p99", "max"} from its
//                       per-transaction log (µs), or {"count": 0}, ...}
#pragma once

#include <string_view>

#include "common/workload_output.h"

namespace ds {

// tps ("tps = X (without initial connection time)", required),
// latency_avg_ms and latency_stddev_ms, transactions and failed
// ("number of transactions actually processed", "number of failed
// transactions"), and from latency_us: latency_p50_ms, latency_p95_ms,
// latency_p99_ms, latency_max_ms (count > 0 and p50 <= p95 <= p99 <= max,
// each finite and non-negative).
Result<MetricsMap> pgbench_output_metrics(std::string_view kind, const Json& output);

// tps and latency_ms, one value per "progress: N s, X tps, lat Y ms ..." line.
Result<SeriesMap> pgbench_output_series(const Json& output);

}  // namespace ds
