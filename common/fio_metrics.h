// Normalised metrics from fio's JSON output (fio 3.33, --output-format=json).
// Both the guest agent and the daemon call this: the daemon re-derives the
// metrics from the raw fio JSON a guest sent, because the guest is untrusted.
#pragma once

#include <map>
#include <string>

#include "common/result.h"
#include "common/settings.h"

namespace ds {

// Metric names, in the units their suffix says.
//   read_iops, write_iops          summed over all jobs
//   read_bw_mib_s, write_bw_mib_s  summed over all jobs (bw_bytes / 2^20)
//   read_clat_p50_us, read_clat_p99_us, read_clat_p99_9_us, and write_*:
//       completion latency percentiles in microseconds. With several jobs
//       (numjobs > 1 without group_reporting) this is the MAXIMUM of the
//       jobs' percentiles: fio does not export the histograms needed to merge
//       them exactly, and the worst job is the conservative figure (a mean of
//       percentiles would understate tail latency).
// A direction's keys are omitted when no job did I/O in that direction (no
// read_* for a pure write workload); a percentile key is omitted when fio did
// not report it (clat_percentiles=0, or a percentile_list without it).
//
// Rejects, with errc::kInvalidArgument and a message naming the offending
// path (e.g. "jobs[1].write.iops"): a non-object, a missing or empty "jobs"
// array, a job that is not an object, missing read/write sections or numbers
// of the wrong type or sign, and any job whose "error" is non-zero.
Result<std::map<std::string, double>> metrics_from_fio_json(const Json& fio_output);

}  // namespace ds
