// What a native I/O job measured, and its JSON report. The report has the
// shape of fio 3.33's --output-format=json (jobs[].read.iops, bw_bytes,
// clat_ns.percentile{"99.000000": ns}, ...), so ds::metrics_from_fio_json
// turns either tool's output into the same normalised metrics; the keys fio
// has that this engine does not measure (slat_ns, lat_ns, latency buckets)
// are absent. docs/io-engine.md lists every key.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/settings.h"
#include "guestagent/io_histogram.h"
#include "guestagent/io_options.h"

namespace ds::io {

struct DirectionStats {
    std::uint64_t ios = 0;        // completed I/Os in the measured window
    std::uint64_t bytes = 0;      // their bytes
    std::uint64_t short_ios = 0;  // transfers that came back short and were retried
    LatencyHistogram clat;        // completion latency, ns
    // One entry per whole second of the measured window (a trailing partial
    // second is not sampled): I/Os and bytes per second in that second.
    std::vector<double> iops_per_second;
    std::vector<double> bw_bytes_per_second;
};

struct JobStats {
    unsigned job_index = 0;
    std::array<DirectionStats, kIoDirections> directions;  // by IoDirection
    std::uint64_t runtime_ns = 0;  // measured window: ramp end to last completion
    std::uint64_t elapsed_ns = 0;  // whole job including ramp_time
    double user_cpu_s = 0;         // the job thread's CPU time
    double system_cpu_s = 0;
    std::uint64_t context_switches = 0;
};

// All jobs as one (fio's group_reporting): counts and histograms added,
// per-second samples added index by index (over the seconds every job
// has), runtime the longest, CPU times added (cpu% is then per job, as fio).
JobStats merge_job_stats(const std::vector<JobStats>& jobs);

// The report: top-level "disksweep io version", "timestamp", "timestamp_ms",
// "time", "engine", "resolved options", "histogram", "jobs" (one per job,
// or one merged entry with group_reporting) and "all jobs" (the merged
// read/write sections whatever group_reporting says). `started` is when
// the job began.
Json io_report_json(const JobOptions& options, const std::vector<JobStats>& jobs,
                    std::chrono::system_clock::time_point started);

// A job's statistics as bytes and back, for a job that ran as its own
// process (io_job.h) and reports to the parent through a pipe. The encoding
// is for one build on one machine (native byte order, versioned by a magic
// prefix); decode_job_stats(encode_job_stats(s)) equals s.
// decode_job_stats: errc::kIo naming what is wrong when the bytes are not
// one complete encoding (truncated, wrong magic, bad histogram, trailing
// bytes).
std::string encode_job_stats(const JobStats& stats);
Result<JobStats> decode_job_stats(std::string_view bytes);

// fio's default percentile list, as in clat_ns.percentile.
inline constexpr std::array<double, 17> kReportedPercentiles = {
    1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99};

}  // namespace ds::io
