// Normalised metrics from fio's JSON output (fio 3.33, --output-format=json+,
// which the agent and the host baseline run, or plain json, which older
// stored runs hold) and from the native engine's fio-shaped report (kind io,
// guestagent/io_report.h). Both the guest agent and the daemon call this: the
// daemon re-derives the metrics from the raw output a guest sent, because the
// guest is untrusted.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/result.h"
#include "common/settings.h"

namespace ds {

// Metric names, in the units their suffix says.
//   read_iops, write_iops          summed over all jobs
//   read_bw_mib_s, write_bw_mib_s  summed over all jobs (bw_bytes / 2^20)
//   read_clat_p50_us, read_clat_p90_us, read_clat_p99_us, read_clat_p99_9_us,
//   and write_*: completion latency percentiles in microseconds of the POOLED
//       distribution: every I/O of every job in that direction. Taken from the
//       first of these the output has:
//       1. the native engine's "all jobs" section, whose percentiles come from
//          its histograms merged over the jobs;
//       2. every job's clat_ns.bins (json+; every job that did I/O that way
//          must have them), merged by bin value: fio_bins_percentile;
//       3. the one job entry that did I/O that way (numjobs=1, or the single
//          entry of group_reporting, which fio computes from merged bins): its
//          clat_ns.percentile.
//   read_clat_jobmax_p50_us, ... (same percentiles, same units), instead of
//       the pooled names when none of these applies (plain json with several
//       job entries, e.g. runs stored before json+): the MAXIMUM over the jobs
//       of each job's percentile. Not a percentile of all I/Os, but an upper
//       bound of it (and never named as one).
// A direction's keys are omitted when no job did I/O in that direction (no
// read_* for a pure write workload); a percentile key is omitted when its
// source does not have it (clat_percentiles=0, a percentile_list without it,
// lat_percentiles=1 which reports under lat_ns instead).
//
// Rejects, with errc::kInvalidArgument and a message naming the offending
// path (e.g. "jobs[1].write.iops", "jobs[0].read.clat_ns.bins[\"abc\"]"): a
// non-object, a missing or empty "jobs" array, a job that is not an object,
// missing read/write sections or numbers of the wrong type or sign, a
// malformed "all jobs" section, bins that are not an object of at most
// kMaxFioLatencyBins entries, a bin whose key is not a non-negative integer
// (ns) or whose count is not a non-negative integer, counts that sum beyond
// 2^64, and any job whose "error" is non-zero.
Result<std::map<std::string, double>> metrics_from_fio_json(const Json& fio_output);

// A completion latency distribution as fio's json+ prints it in
// clat_ns.bins: bin value in ns (fio's plat_idx_to_val, the middle of the
// bin) -> number of I/Os. Jobs share fio's bin values, so merging jobs adds
// counts by key.
using FioLatencyBins = std::map<std::uint64_t, std::uint64_t>;

// fio's own histogram has 1856 bins (FIO_IO_U_PLAT_NR in fio 3.33's stat.h);
// json+ prints the non-empty ones.
inline constexpr std::size_t kMaxFioLatencyBins = 1856;

// The `percent` percentile of `bins` by fio's rule (stat.c,
// calc_clat_percentiles): the smallest bin value whose cumulative count
// reaches percent/100 x the total count, compared in long double as fio
// does. So for one job it equals fio's own clat_ns.percentile entry.
// nullopt when the bins are empty, their counts sum beyond 2^64, or percent
// is above 100.
std::optional<std::uint64_t> fio_bins_percentile(const FioLatencyBins& bins, double percent);

}  // namespace ds
