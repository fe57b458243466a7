// One job of a native I/O job (io_job.h): one engine instance, one file
// descriptor and iodepth units doing the job's I/O pattern until its size
// or runtime is done, and its statistics. It runs as a thread or as a
// process (io_job_processes.h); it does not know which.
#pragma once

#include <sys/resource.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/file_descriptor.h"
#include "common/result.h"
#include "guestagent/io_buffer.h"
#include "guestagent/io_engine.h"
#include "guestagent/io_options.h"
#include "guestagent/io_report.h"

namespace ds::io {

// errc::kIo "WHAT: ENOSPC (No space left on device)".
Error io_error(const std::string& what, int error_number);

// `error` as job `job`'s: "job N: ...", with its code.
Error job_error(unsigned job, const Error& error);

// One job's file and the part of it the job uses: [0, size).
struct JobTarget {
    std::string path;  // empty for diskless engines
    std::uint64_t size = 0;
};

// The flags every job reads on each pass of its loop. With jobs as threads
// they live in run_io_job's frame; with jobs as processes in a shared
// anonymous mapping (ProcessFlags). Written only to stop, so the cache line
// stays shared-clean while jobs run.
struct SharedState {
    const std::atomic<bool>* stop = nullptr;  // the caller asks all jobs to stop
    std::atomic<bool>* abort = nullptr;       // a job failed: the others stop too
};

// One job: one thread or process, one engine instance, one fd, iodepth
// units. Aligned to a cache line so no two jobs' hot state (counters,
// free list, clock) share one when jobs are threads.
class alignas(64) JobRunner {
  public:
    // Job `job_index` of `options` (which must outlive it) on `target`.
    JobRunner(const JobOptions& options, JobTarget target, unsigned job_index, SharedState& shared);

    // Opens the job's file. Runs in the caller before any job starts, so a
    // file that cannot be opened fails the job before any I/O.
    Status open_file();

    int fd() const { return fd_.get(); }

    // Allocates the buffers and units and initialises the engine, in the
    // process that runs the job: an AIO context belongs to the process
    // that created it (a forked child cannot use its parent's), and a job
    // process's buffers are then its own pages, not copy-on-write ones.
    // With thread=1 this runs in the caller's thread before the job
    // threads start (so a failure stops all before any I/O): an engine
    // bound to a thread binds on its first op (io_uring's ring).
    Status setup_io();

    // The I/O loop, on the job's own thread. Never throws.
    void run() noexcept;

    const std::optional<Error>& error() const { return error_; }
    JobStats take_stats() { return std::move(stats_); }
    unsigned job_index() const { return job_index_; }

    ~JobRunner();

  private:
    // Sets the job's clock going: its start, the end of the ramp and of the
    // runtime. Without a ramp, measuring starts at once.
    void start_clock();

    // Whether to stop issuing new I/O: the size is done, the runtime is
    // over, another job failed or the caller asked to stop.
    bool should_stop(std::uint64_t at) const;

    // The next unit to queue: a short transfer's rest first, else (unless
    // stopping) a free unit filled with new I/O, which sets `fresh`; null
    // when there is neither.
    IoUnit* next_unit(bool stopping, bool& fresh);

    // 1. Queue: retries of short transfers first, then new I/O while units
    //    are free. True when the engine is busy (takes no more for now).
    bool queue_ios(std::uint64_t& now, bool& stopping);

    // 2. Reap, as fio: when the queue is full (or cannot take more now),
    //    waiting for at least max(1, iodepth_batch_complete_min) and taking
    //    at most iodepth_batch_complete_max per call, until no more than
    //    iodepth_low are outstanding (by default one call: the queue stays
    //    full, as fio keeps it). With iodepth_batch_complete_min = 0 also
    //    check, without waiting, on every pass. Draining at the end takes
    //    anything. Called with I/O outstanding.
    void reap_ios(std::uint64_t& now, bool stopping, bool busy);

    // The job's totals once its I/O is over: the measured runtime, the
    // elapsed time and the thread's CPU use since `before`.
    void record_totals(const rusage& before);

    // The CPU the job has used so far, as fio counts it: its thread's with
    // thread=1, else its whole process's, which includes the kernel's
    // threads working for it (io_uring's io-wq workers, which do the I/O
    // the file cannot do without blocking, and its SQPOLL thread).
    rusage cpu_usage() const;

    // Fills a free unit with the next I/O of the job's pattern.
    void prepare(IoUnit& unit);

    // Commits what was queued; the units the engine submitted get their
    // issue time (one clock read per commit, as fio's libaio).
    void commit(std::uint64_t& now);

    // Time moved to `now`: end the ramp, take per-second samples.
    void advance_clock(std::uint64_t now);

    void begin_measuring(std::uint64_t now);

    void take_sample(std::uint64_t now);

    // A unit came back with its result at time `now`.
    void complete(IoUnit& unit, std::uint64_t now);

    // After a failure or the end: waits for everything still submitted so
    // no buffer is freed under the kernel's feet. Results are ignored.
    void drain();

    // Records the job's first error, prefixed with "job N: ", and stops the
    // other jobs.
    void fail(const std::string& message);

    const JobOptions& options_;
    JobTarget target_;
    unsigned job_index_;
    SharedState& shared_;
    Random random_;
    std::uint64_t blocks_;
    std::uint64_t budget_;  // I/Os to issue: the region once, or no limit when time_based
    unsigned depth_;

    FileDescriptor fd_;
    AlignedBuffer buffers_;
    std::unique_ptr<IoEngine> engine_;
    std::vector<IoUnit> units_;
    std::vector<std::uint32_t> free_;   // indexes of units nobody holds
    std::vector<IoUnit*> retry_;        // short transfers waiting to be queued again
    std::vector<IoUnit*> unsubmitted_;  // queued, not yet submitted, in queue order
    unsigned engine_pending_ = 0;       // the engine's count of the same
    std::uint64_t sequential_[kIoDirections] = {0, 0};

    std::uint64_t issued_ = 0;
    std::uint64_t start_ns_ = 0;
    std::uint64_t ramp_end_ns_ = 0;
    std::uint64_t end_ns_ = 0;
    bool measuring_ = false;
    std::uint64_t measure_start_ns_ = 0;
    std::uint64_t last_completion_ns_ = 0;
    std::uint64_t last_sample_ns_ = 0;
    std::uint64_t next_sample_ns_ = 0;
    std::array<std::uint64_t, kIoDirections> sampled_ios_{};
    std::array<std::uint64_t, kIoDirections> sampled_bytes_{};

    JobStats stats_;
    std::optional<Error> error_;
};

using Runners = std::vector<std::unique_ptr<JobRunner>>;

}  // namespace ds::io
