// fio's per-second samples. fio's JSON has no time series, so the agent runs
// fio with per-job average logs (fio_log_options) and, after the run, adds
// them to fio's report in the shape the native engine writes: each job
// entry's "read" and "write" sections get "iops_per_second" and
// "bw_bytes_per_second" arrays, one value per whole second, which
// per_second_series (common/workload_output.h) reads for either kind.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/settings.h"

namespace ds {

// The per-second arrays' keys in a job entry's direction sections.
inline constexpr std::string_view kIopsPerSecondKey = "iops_per_second";
inline constexpr std::string_view kBwBytesPerSecondKey = "bw_bytes_per_second";
// Top-level key of fio's report under which attach_fio_logs notes what it
// did (fio itself has no such key).
inline constexpr std::string_view kFioLogsNoteKey = "disksweep per-second logs";

// fio's averaging window: one log entry per direction per second.
inline constexpr unsigned kFioLogAverageMs = 1000;
// fio closes a window up to this early (stat.c, LOG_MSEC_SLACK).
inline constexpr unsigned kFioLogSlackMs = 1;
// At most this many per-second values (over all arrays of all entries) are
// added to a report; a result message holds at most 262,144 JSON values
// (common/protocol.h) and fio's json+ itself needs up to ~2,000 per job.
inline constexpr std::size_t kMaxFioSampleValues = 65536;
// A log file is read up to this size: 86,400 seconds of two directions
// (kMaxSeriesSeconds) are about 3 MiB.
inline constexpr std::size_t kMaxFioLogBytes = 8u << 20;

// The options that make fio write them: --write_bw_log=PREFIX
// --write_iops_log=PREFIX --log_avg_msec=1000. fio then writes, per job
// thread N (1, 2, ... in job order, numjobs clones included),
// PREFIX_bw.N.log (KiB/s) and PREFIX_iops.N.log. The options these depend on
// are guarded (common/fio_options.cpp): the agent's own, and the ones that
// would change the files (per_job_logs, log_max_value, log_store_compressed,
// log_unix_epoch, log_alternate_epoch, bwavgtime, iopsavgtime).
std::vector<std::string> fio_log_options(const std::string& prefix);

// One average log as per-second values by direction (0 read, 1 write).
// Lines are "TIME_MS, VALUE, DIRECTION, BS, OFFSET[, PRIO]"; fio writes an
// entry when a window of kFioLogAverageMs has passed since the previous
// boundary (the previous entry's time rounded down to a whole second; 0 at
// first), so an entry at TIME_MS belongs to second (TIME_MS + slack) / 1000
// - 1 (0-based). Rules:
//   * an entry whose window is shorter than 1000 - slack ms is the partial
//     window fio flushes at the job's end: dropped (`partial_entries`), as
//     the native engine drops a trailing partial second;
//   * fio writes no entry for a direction that did no I/O in a window: that
//     second is 0;
//   * entries that land on the same second are averaged;
//   * direction 2 (trim) is not a series and is ignored;
//   * a line that does not parse (fewer than 3 fields, a time that is not a
//     non-negative integer, a value that is not a finite number >= 0, another
//     direction) or that lies beyond kMaxSeriesSeconds is skipped and
//     counted (`skipped_lines`), never fatal.
// Both directions' vectors have the same length: up to the last second
// either has. `scale` multiplies every value (1024 for the bw log: KiB/s to
// bytes/s).
struct FioLogSeries {
    std::array<std::vector<double>, 2> per_second;
    std::size_t skipped_lines = 0;
    std::size_t partial_entries = 0;
};
FioLogSeries parse_fio_average_log(std::string_view text, double scale);

// One job thread's two logs.
struct FioThreadLogs {
    FioLogSeries iops;
    FioLogSeries bw_bytes;  // bytes/s
};

// PREFIX_iops.N.log and PREFIX_bw.N.log for N = 1, 2, ... until neither
// exists (a missing or unreadable one of the pair is an empty series), each
// read up to kMaxFioLogBytes.
std::vector<FioThreadLogs> read_fio_thread_logs(const std::string& prefix);

// What attach_fio_samples did; also written under kFioLogsNoteKey.
struct FioLogAttachment {
    std::size_t job_logs = 0;      // threads with logs
    std::size_t iops_seconds = 0;  // length of the attached iops arrays
    std::size_t bw_seconds = 0;    // length of the attached bw arrays
    std::size_t skipped_lines = 0;
    std::string not_attached;  // why nothing was attached; empty when attached
};

// Adds the threads' series to fio's report `fio_json` (jobs[].read/write,
// the keys above) and the note under kFioLogsNoteKey. Threads map to job
// entries one to one when there are as many; all threads are summed into
// the one entry when there is one (group_reporting), index by index over the
// seconds every thread has. Nothing is attached (and `not_attached` says
// why) when there are no threads, when the counts differ otherwise
// (group_reporting over several groups: which threads make which entry is
// not in fio's output), or when the arrays would exceed kMaxFioSampleValues.
// A job entry or direction section that is not an object is left alone.
FioLogAttachment attach_fio_samples(Json& fio_json, const std::vector<FioThreadLogs>& threads);

}  // namespace ds
