#include "guestagent/io_job.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <latch>
#include <memory>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "common/errno_text.h"
#include "common/file_descriptor.h"
#include "guestagent/io_report.h"

namespace ds::io {
namespace {

constexpr std::uint64_t kNsPerSecond = 1000000000;
constexpr std::size_t kBufferAlignment = 4096;  // O_DIRECT on any device we target
constexpr std::size_t kLayoutChunk = 1 << 20;

std::uint64_t now_ns() {
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<std::uint64_t>(now.tv_sec) * kNsPerSecond +
           static_cast<std::uint64_t>(now.tv_nsec);
}

// splitmix64: fast, 64 good bits per call; seeded per job so runs repeat
// (fio's randrepeat=1).
class Random {
  public:
    explicit Random(std::uint64_t seed) : state_(seed) {}
    std::uint64_t next() {
        std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    // Uniform in [0, bound) (Lemire's multiply-shift, no division).
    std::uint64_t below(std::uint64_t bound) {
        return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * bound) >> 64);
    }

  private:
    std::uint64_t state_;
};

void fill_random(void* buffer, std::size_t bytes, std::uint64_t seed) {
    Random random(seed);
    auto* words = static_cast<std::uint64_t*>(buffer);
    for (std::size_t i = 0; i < bytes / sizeof(std::uint64_t); ++i) words[i] = random.next();
}

struct AlignedFree {
    void operator()(void* memory) const { std::free(memory); }
};
using AlignedBuffer = std::unique_ptr<void, AlignedFree>;

Result<AlignedBuffer> allocate_aligned(std::size_t bytes) {
    void* memory = nullptr;
    const int result = posix_memalign(&memory, kBufferAlignment, std::max<std::size_t>(bytes, 1));
    if (result != 0) {
        return make_error(errc::kIo, "cannot allocate " + std::to_string(bytes) +
                                         " bytes of I/O buffers: " + describe_errno(result));
    }
    return AlignedBuffer(memory);
}

Error io_error(const std::string& what, int error_number) {
    return make_error(errc::kIo, what + ": " + describe_errno(error_number));
}

// One job's file and the part of it the job uses: [0, size).
struct JobTarget {
    std::string path;  // empty for diskless engines
    std::uint64_t size = 0;
};

// Writes [from, to) of `path` with pseudo-random data and fsyncs it,
// creating the file if needed.
Status lay_out(const std::string& path, std::uint64_t from, std::uint64_t to) {
    FileDescriptor fd(open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    if (fd.get() < 0) return io_error("cannot create " + path, errno);
    auto chunk = allocate_aligned(kLayoutChunk);
    if (!chunk) return chunk.error();
    fill_random(chunk->get(), kLayoutChunk, 0x1a70u);
    std::uint64_t offset = from;
    while (offset < to) {
        const std::size_t length =
            static_cast<std::size_t>(std::min<std::uint64_t>(kLayoutChunk, to - offset));
        const ssize_t written = pwrite(fd.get(), chunk->get(), length, static_cast<off_t>(offset));
        if (written < 0 && errno == EINTR) continue;
        if (written < 0) {
            return io_error("laying out " + path + " at offset " + std::to_string(offset), errno);
        }
        if (written == 0) {
            return make_error(errc::kIo, "laying out " + path + ": write returned 0 at offset " +
                                             std::to_string(offset));
        }
        offset += static_cast<std::uint64_t>(written);
    }
    if (fsync(fd.get()) != 0) return io_error("fsync of " + path + " after laying it out", errno);
    return ok_status();
}

// Sizes and, where needed, lays out `path` for a job of `wanted` bytes.
Result<JobTarget> prepare_file(const std::string& path, std::optional<std::uint64_t> wanted) {
    struct stat info {};
    if (stat(path.c_str(), &info) != 0) {
        if (errno != ENOENT) return io_error("cannot stat " + path, errno);
        if (!wanted) {
            return make_error(errc::kInvalidArgument,
                              "io job option 'size' is required: " + path + " does not exist");
        }
        DS_TRY(lay_out(path, 0, *wanted));
        return JobTarget{path, *wanted};
    }
    if (S_ISBLK(info.st_mode)) {
        FileDescriptor fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
        if (fd.get() < 0) return io_error("cannot open " + path, errno);
        std::uint64_t device_bytes = 0;
        if (ioctl(fd.get(), BLKGETSIZE64, &device_bytes) != 0) {
            return io_error("cannot read the size of " + path, errno);
        }
        const std::uint64_t size = wanted.value_or(device_bytes);
        if (size > device_bytes || size == 0) {
            return make_error(errc::kInvalidArgument,
                              "io job option 'size': " + std::to_string(size) +
                                  " bytes does not fit block device " + path + " of " +
                                  std::to_string(device_bytes) + " bytes");
        }
        return JobTarget{path, size};
    }
    if (S_ISCHR(info.st_mode)) {
        if (!wanted) {
            return make_error(errc::kInvalidArgument,
                              "io job option 'size' is required for character device " + path);
        }
        return JobTarget{path, *wanted};
    }
    if (!S_ISREG(info.st_mode)) {
        return make_error(errc::kInvalidArgument,
                          path + " is neither a regular file nor a block or character device");
    }
    const auto existing = static_cast<std::uint64_t>(info.st_size);
    const std::uint64_t size = wanted.value_or(existing);
    if (size == 0) {
        return make_error(errc::kInvalidArgument,
                          "io job option 'size' is required: " + path + " is empty");
    }
    if (existing < size) DS_TRY(lay_out(path, existing, size));
    return JobTarget{path, size};
}

Result<std::vector<JobTarget>> prepare_targets(const JobOptions& options) {
    std::vector<JobTarget> targets;
    if (options.engine->diskless) {
        targets.assign(options.numjobs, JobTarget{"", *options.size});
        return targets;
    }
    if (!options.filename.empty()) {
        std::string path = options.filename;
        if (!options.directory.empty() && path.front() != '/') {
            path = options.directory + "/" + path;
        }
        auto target = prepare_file(path, options.size);
        if (!target) return target.error();
        targets.assign(options.numjobs, *target);
        return targets;
    }
    if (!options.size) {
        return make_error(errc::kInvalidArgument,
                          "io job option 'size' is required when the job creates its own files "
                          "(no filename)");
    }
    const std::string directory = options.directory.empty() ? "." : options.directory;
    for (unsigned job = 0; job < options.numjobs; ++job) {
        auto target = prepare_file(
            directory + "/" + options.name + "." + std::to_string(job) + ".0", options.size);
        if (!target) return target.error();
        targets.push_back(*target);
    }
    return targets;
}

double seconds_of(const timeval& time) {
    return static_cast<double>(time.tv_sec) + static_cast<double>(time.tv_usec) / 1e6;
}

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
    JobRunner(const JobOptions& options, JobTarget target, unsigned job_index, SharedState& shared)
        : options_(options),
          target_(std::move(target)),
          job_index_(job_index),
          shared_(shared),
          random_(0x5eedull + job_index),
          blocks_(target_.size / options.bs),
          budget_(options.time_based ? UINT64_MAX : blocks_),
          depth_(options.iodepth) {
        stats_.job_index = job_index;
    }

    // Opens the job's file. Runs in the caller before any job starts, so a
    // file that cannot be opened fails the job before any I/O.
    Status open_file() {
        if (!options_.engine->diskless) {
            int flags = O_CLOEXEC | (rw_writes(options_.rw) ? O_RDWR : O_RDONLY);
            if (options_.direct) flags |= O_DIRECT;
            fd_ = FileDescriptor(open(target_.path.c_str(), flags));
            if (fd_.get() < 0) {
                const int error_number = errno;
                std::string what = "cannot open " + target_.path;
                if (options_.direct && error_number == EINVAL) {
                    what += " with O_DIRECT (direct=1): its file system does not support it";
                }
                return io_error(what, error_number);
            }
        }
        return ok_status();
    }

    int fd() const { return fd_.get(); }

    // Allocates the buffers and units and initialises the engine, in the
    // process that runs the job: an AIO context belongs to the process
    // that created it (a forked child cannot use its parent's), and a job
    // process's buffers are then its own pages, not copy-on-write ones.
    // With thread=1 this runs in the caller's thread before the job
    // threads start (so a failure stops all before any I/O): an engine
    // bound to a thread binds on its first op (io_uring's ring).
    Status setup_io() {
        auto buffers = allocate_aligned(static_cast<std::size_t>(depth_) * options_.bs);
        if (!buffers) return buffers.error();
        buffers_ = std::move(*buffers);
        // Random contents, so compressing or zero-detecting storage (QEMU's
        // detect_zeroes) sees data, as with fio's default buffers.
        fill_random(buffers_.get(), static_cast<std::size_t>(depth_) * options_.bs,
                    0xb0ffe7ull + job_index_);
        units_.resize(depth_);
        free_.reserve(depth_);
        retry_.reserve(depth_);
        unsubmitted_.reserve(depth_);
        for (unsigned i = 0; i < depth_; ++i) {
            IoUnit& unit = units_[i];
            unit.fd = fd_.get();
            unit.index = i;
            free_.push_back(depth_ - 1 - i);
        }
        engine_ = options_.engine->create();
        const EngineSetup setup{.iodepth = depth_,
                                .options = &options_.engine_options,
                                .fd = fd_.get(),
                                .buffers = buffers_.get(),
                                .buffer_bytes = static_cast<std::size_t>(options_.bs)};
        return engine_->init(setup);
    }

    // The I/O loop, on the job's own thread. Never throws.
    void run() noexcept {
        const rusage before = cpu_usage();
        start_clock();
        std::uint64_t now = start_ns_;
        bool stopping = false;
        while (!error_) {
            if (!stopping) stopping = should_stop(now);
            const bool busy = queue_ios(now, stopping);
            if (error_) break;
            if (!unsubmitted_.empty()) commit(now);
            if (error_) break;
            const unsigned outstanding = depth_ - static_cast<unsigned>(free_.size());
            if (outstanding == 0) {
                if (stopping || issued_ >= budget_) break;
                continue;
            }
            reap_ios(now, stopping, busy);
        }
        drain();
        record_totals(before);
    }

    const std::optional<Error>& error() const { return error_; }
    JobStats take_stats() { return std::move(stats_); }
    unsigned job_index() const { return job_index_; }

    ~JobRunner() {
        if (engine_) engine_->cleanup();
    }

  private:
    // Sets the job's clock going: its start, the end of the ramp and of the
    // runtime. Without a ramp, measuring starts at once.
    void start_clock() {
        start_ns_ = now_ns();
        ramp_end_ns_ = start_ns_ + static_cast<std::uint64_t>(options_.ramp_time_s * 1e9);
        end_ns_ = options_.runtime_s > 0
                      ? ramp_end_ns_ + static_cast<std::uint64_t>(options_.runtime_s * 1e9)
                      : UINT64_MAX;
        if (ramp_end_ns_ == start_ns_) begin_measuring(start_ns_);
    }

    // Whether to stop issuing new I/O: the size is done, the runtime is
    // over, another job failed or the caller asked to stop.
    bool should_stop(std::uint64_t at) const {
        return issued_ >= budget_ || at >= end_ns_ ||
               shared_.abort->load(std::memory_order_relaxed) ||
               (shared_.stop && shared_.stop->load(std::memory_order_relaxed));
    }

    // The next unit to queue: a short transfer's rest first, else (unless
    // stopping) a free unit filled with new I/O, which sets `fresh`; null
    // when there is neither.
    IoUnit* next_unit(bool stopping, bool& fresh) {
        if (!retry_.empty()) {
            IoUnit* unit = retry_.back();
            retry_.pop_back();
            return unit;
        }
        if (stopping || free_.empty() || issued_ >= budget_) return nullptr;
        IoUnit* unit = &units_[free_.back()];
        free_.pop_back();
        prepare(*unit);
        ++issued_;
        fresh = true;
        return unit;
    }

    // 1. Queue: retries of short transfers first, then new I/O while units
    //    are free. True when the engine is busy (takes no more for now).
    bool queue_ios(std::uint64_t& now, bool& stopping) {
        const bool synchronous = options_.engine->synchronous;
        while (!error_) {
            bool fresh = false;
            IoUnit* unit = next_unit(stopping, fresh);
            if (unit == nullptr) break;
            if (synchronous) unit->issue_ns = now_ns();
            auto outcome = engine_->queue(*unit);
            if (!outcome) {
                fail(outcome.error().message);
                break;
            }
            if (*outcome == QueueOutcome::kCompleted) {
                now = now_ns();
                advance_clock(now);
                complete(*unit, now);
                stopping = stopping || should_stop(now);
                continue;
            }
            if (*outcome == QueueOutcome::kBusy) {
                if (fresh) {
                    free_.push_back(unit->index);
                    --issued_;
                } else {
                    retry_.push_back(unit);
                }
                return true;
            }
            unsubmitted_.push_back(unit);
            if (unsubmitted_.size() >= options_.iodepth_batch_submit) commit(now);
        }
        return false;
    }

    // 2. Reap, as fio: when the queue is full (or cannot take more now),
    //    waiting for at least max(1, iodepth_batch_complete_min) and taking
    //    at most iodepth_batch_complete_max per call, until no more than
    //    iodepth_low are outstanding (by default one call: the queue stays
    //    full, as fio keeps it). With iodepth_batch_complete_min = 0 also
    //    check, without waiting, on every pass. Draining at the end takes
    //    anything. Called with I/O outstanding.
    void reap_ios(std::uint64_t& now, bool stopping, bool busy) {
        const bool draining = stopping || issued_ >= budget_;
        const bool full = free_.empty() || busy || engine_pending_ > 0;
        unsigned min_events = 0;
        unsigned max_events = options_.iodepth_batch_complete_max;
        if (draining) {
            min_events = 1;
            max_events = depth_;
        } else if (full) {
            min_events = std::max(1u, options_.iodepth_batch_complete);
        } else if (options_.iodepth_batch_complete != 0) {
            return;  // room for more I/O: queue it before waiting
        }
        while (true) {
            auto reaped = engine_->getevents(min_events, max_events);
            if (!reaped) {
                fail(reaped.error().message);
                return;
            }
            now = now_ns();
            advance_clock(now);
            for (unsigned i = 0; i < *reaped; ++i) complete(engine_->event(i), now);
            if (draining || !full || *reaped == 0 || error_ || !retry_.empty() ||
                depth_ - free_.size() <= options_.iodepth_low) {
                return;
            }
        }
    }

    // The job's totals once its I/O is over: the measured runtime, the
    // elapsed time and the thread's CPU use since `before`.
    void record_totals(const rusage& before) {
        if (last_completion_ns_ > measure_start_ns_) {
            stats_.runtime_ns = last_completion_ns_ - measure_start_ns_;
        }
        stats_.elapsed_ns = now_ns() - start_ns_;
        const rusage after = cpu_usage();
        stats_.user_cpu_s = seconds_of(after.ru_utime) - seconds_of(before.ru_utime);
        stats_.system_cpu_s = seconds_of(after.ru_stime) - seconds_of(before.ru_stime);
        stats_.context_switches = static_cast<std::uint64_t>((after.ru_nvcsw - before.ru_nvcsw) +
                                                             (after.ru_nivcsw - before.ru_nivcsw));
    }

    // The CPU the job has used so far, as fio counts it: its thread's with
    // thread=1, else its whole process's, which includes the kernel's
    // threads working for it (io_uring's io-wq workers, which do the I/O
    // the file cannot do without blocking, and its SQPOLL thread).
    rusage cpu_usage() const {
        rusage usage{};
        getrusage(options_.thread ? RUSAGE_THREAD : RUSAGE_SELF, &usage);
        return usage;
    }

    // Fills a free unit with the next I/O of the job's pattern.
    void prepare(IoUnit& unit) {
        IoDirection direction = IoDirection::kRead;
        switch (options_.rw) {
            case RwMode::kRead:
            case RwMode::kRandRead:
                direction = IoDirection::kRead;
                break;
            case RwMode::kWrite:
            case RwMode::kRandWrite:
                direction = IoDirection::kWrite;
                break;
            case RwMode::kRandRw:
            case RwMode::kReadWrite:
                direction = random_.below(100) < options_.rwmixread ? IoDirection::kRead
                                                                    : IoDirection::kWrite;
                break;
        }
        std::uint64_t block = 0;
        if (rw_is_random(options_.rw)) {
            block = random_.below(blocks_);
        } else {
            // Sequential, each direction with its own position (as fio's
            // readwrite), wrapping around at the end of the region.
            std::uint64_t& position = sequential_[static_cast<int>(direction)];
            block = position;
            position = position + 1 == blocks_ ? 0 : position + 1;
        }
        unit.direction = direction;
        unit.buffer = static_cast<char*>(buffers_.get()) + std::size_t{unit.index} * options_.bs;
        unit.offset = block * options_.bs;
        unit.length = static_cast<std::uint32_t>(options_.bs);
        unit.requested = unit.length;
    }

    // Commits what was queued; the units the engine submitted get their
    // issue time (one clock read per commit, as fio's libaio).
    void commit(std::uint64_t& now) {
        auto remaining = engine_->commit();
        if (!remaining) {
            fail(remaining.error().message);
            return;
        }
        const std::size_t submitted = unsubmitted_.size() - *remaining;
        if (submitted > 0 && !options_.engine->synchronous) {
            now = now_ns();
            for (std::size_t i = 0; i < submitted; ++i) unsubmitted_[i]->issue_ns = now;
        }
        unsubmitted_.erase(unsubmitted_.begin(),
                           unsubmitted_.begin() + static_cast<long>(submitted));
        engine_pending_ = *remaining;
    }

    // Time moved to `now`: end the ramp, take per-second samples.
    void advance_clock(std::uint64_t now) {
        if (!measuring_) {
            if (now >= ramp_end_ns_) begin_measuring(now);
            return;
        }
        if (now >= next_sample_ns_) take_sample(now);
    }

    void begin_measuring(std::uint64_t now) {
        measuring_ = true;
        for (auto& direction : stats_.directions) direction = DirectionStats{};
        issued_ = 0;  // size counts from the end of the ramp
        measure_start_ns_ = now;
        last_completion_ns_ = now;
        last_sample_ns_ = now;
        next_sample_ns_ = now + kNsPerSecond;
        sampled_ios_ = {};
        sampled_bytes_ = {};
    }

    void take_sample(std::uint64_t now) {
        const double seconds = static_cast<double>(now - last_sample_ns_) / 1e9;
        for (int d = 0; d < kIoDirections; ++d) {
            DirectionStats& direction = stats_.directions[d];
            direction.iops_per_second.push_back(
                static_cast<double>(direction.ios - sampled_ios_[d]) / seconds);
            direction.bw_bytes_per_second.push_back(
                static_cast<double>(direction.bytes - sampled_bytes_[d]) / seconds);
            sampled_ios_[d] = direction.ios;
            sampled_bytes_[d] = direction.bytes;
        }
        last_sample_ns_ = now;
        next_sample_ns_ += kNsPerSecond;
        if (next_sample_ns_ <= now) next_sample_ns_ = now + kNsPerSecond;
    }

    // A unit came back with its result at time `now`.
    void complete(IoUnit& unit, std::uint64_t now) {
        const auto transferred = unit.result;
        if (transferred < 0 || transferred == 0) {
            const char* verb = unit.direction == IoDirection::kRead ? "read" : "write";
            std::string what = std::string(verb) + " of " + std::to_string(unit.length) +
                               " bytes at offset " + std::to_string(unit.offset) + " on " +
                               (target_.path.empty() ? std::string("(null)") : target_.path);
            free_.push_back(unit.index);
            if (transferred < 0) {
                // This one I/O failed (ENOSPC, EIO, ...): the job fails, as
                // fio's default continue_on_error=none.
                fail(what + " failed: " + describe_errno(static_cast<int>(-transferred)));
            } else {
                fail(what + " transferred nothing (past the end of the file or device?)");
            }
            return;
        }
        if (static_cast<std::uint64_t>(transferred) < unit.length) {
            // Short transfer: queue the rest again (fio does the same).
            ++stats_.directions[static_cast<int>(unit.direction)].short_ios;
            unit.buffer = static_cast<char*>(unit.buffer) + transferred;
            unit.offset += static_cast<std::uint64_t>(transferred);
            unit.length -= static_cast<std::uint32_t>(transferred);
            retry_.push_back(&unit);
            return;
        }
        if (measuring_) {
            DirectionStats& direction = stats_.directions[static_cast<int>(unit.direction)];
            direction.clat.record(now > unit.issue_ns ? now - unit.issue_ns : 0);
            ++direction.ios;
            direction.bytes += unit.requested;
            last_completion_ns_ = now;
        }
        free_.push_back(unit.index);
    }

    // After a failure or the end: waits for everything still submitted so
    // no buffer is freed under the kernel's feet. Results are ignored.
    void drain() {
        if (!engine_) return;
        unsigned outstanding =
            depth_ - static_cast<unsigned>(free_.size() + retry_.size() + unsubmitted_.size());
        while (outstanding > 0) {
            auto reaped = engine_->getevents(1, depth_);
            if (!reaped || *reaped == 0) break;  // cleanup's io_destroy waits for the rest
            outstanding -= std::min(outstanding, *reaped);
        }
    }

    // Records the job's first error, prefixed with "job N: ", and stops the
    // other jobs.
    void fail(const std::string& message) {
        if (!error_)
            error_ = make_error(errc::kIo, "job " + std::to_string(job_index_) + ": " + message);
        shared_.abort->store(true, std::memory_order_relaxed);
    }

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

Error job_error(unsigned job, const Error& error) {
    return make_error(error.code, "job " + std::to_string(job) + ": " + error.message);
}

// Jobs as threads of this process (fio's thread=1): they start together
// once every thread exists.
Result<std::vector<JobStats>> run_as_threads(Runners& runners, SharedState& shared) {
    for (auto& runner : runners) {
        if (auto status = runner->setup_io(); !status) {
            return job_error(runner->job_index(), status.error());
        }
    }
    std::latch start_gate(1);
    std::vector<std::thread> threads;
    std::optional<Error> spawn_error;
    for (auto& runner : runners) {
        try {
            threads.emplace_back([&start_gate, &runner] {
                start_gate.wait();
                runner->run();
            });
        } catch (const std::system_error& e) {
            spawn_error =
                make_error(errc::kIo, std::string("cannot start a job thread: ") + e.what());
            shared.abort->store(true);
            break;
        }
    }
    start_gate.count_down();
    for (auto& thread : threads) thread.join();
    if (spawn_error) return *spawn_error;
    for (const auto& runner : runners) {
        if (runner->error()) return *runner->error();
    }
    std::vector<JobStats> stats;
    for (auto& runner : runners) stats.push_back(runner->take_stats());
    return stats;
}

// --- Jobs as processes (fio's default) ---------------------------------
//
// Each job is a forked child that calls setsid(), as fio's job processes
// do. With autogroup scheduling (sched_autogroup_enabled=1, the default of
// most distributions) every session is its own scheduling group, so on a
// machine busy with other work N job processes get N shares of the CPU
// where N threads of one process get one (docs/io-engine.md has the
// measurements). The parent and the children share ProcessFlags through an
// anonymous shared mapping; each child reports through its own pipe:
//   'R'                                  set up, waiting for the start
//   'S' u64 n, n bytes                   encode_job_stats of its statistics
//   'E' u64 n, code, u64 m, message      its error ("job N: ...")
// and then exits. The start is the gate pipe: the parent closes its write
// end once every child reported 'R', and each child's read() returns 0.

struct ProcessFlags {
    std::atomic<bool> stop{false};   // relayed by the parent from the caller's flag
    std::atomic<bool> abort{false};  // set by a failing job or by the parent
};
static_assert(std::atomic<bool>::is_always_lock_free,
              "flags shared between processes must be lock-free atomics");

struct UnmapFlags {
    void operator()(ProcessFlags* flags) const {
        flags->~ProcessFlags();
        munmap(flags, sizeof(ProcessFlags));
    }
};
using SharedFlags = std::unique_ptr<ProcessFlags, UnmapFlags>;

Result<SharedFlags> map_shared_flags() {
    void* memory = mmap(nullptr, sizeof(ProcessFlags), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) {
        return io_error("cannot map the flags shared with job processes", errno);
    }
    return SharedFlags(new (memory) ProcessFlags);
}

// Whole-buffer write; false when the pipe is gone.
bool write_all(int fd, const std::string& bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t written = write(fd, bytes.data() + done, bytes.size() - done);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) return false;
        done += static_cast<std::size_t>(written);
    }
    return true;
}

void append_u64(std::string& out, std::uint64_t value) {
    out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

std::string error_frame(const Error& error) {
    std::string frame = "E";
    append_u64(frame, error.code.size());
    frame += error.code;
    append_u64(frame, error.message.size());
    frame += error.message;
    return frame;
}

std::string stats_frame(const JobStats& stats) {
    const std::string encoded = encode_job_stats(stats);
    std::string frame = "S";
    append_u64(frame, encoded.size());
    frame += encoded;
    return frame;
}

// Closes every descriptor the child inherited except stdio and `keep`: the
// caller's sockets and files (the agent's channel, other jobs' pipes) must
// not stay open in, or be touched by, a job process.
void close_inherited_fds(std::vector<int> keep) {
    keep.push_back(STDERR_FILENO);
    std::sort(keep.begin(), keep.end());
    unsigned from = 0;
    for (const int fd : keep) {
        if (fd < 0) continue;
        const auto kept = static_cast<unsigned>(fd);
        if (kept > from) {
            if (close_range(from, kept - 1, 0) != 0) {
                for (unsigned each = from; each < kept; ++each) close(static_cast<int>(each));
            }
        }
        from = std::max(from, kept + 1);
    }
    if (close_range(from, ~0u, 0) != 0) {
        for (unsigned each = from; each < 65536; ++each) close(static_cast<int>(each));
    }
}

// The body of a job process; never returns. Runs in a child forked from a
// possibly multithreaded caller, so it only uses its own runner, the
// kernel and malloc (which glibc keeps usable across fork), and leaves
// with _exit (no atexit handlers, no stdio flush of the parent's buffers).
[[noreturn]] void job_process(JobRunner& runner, int result_fd, int gate_fd, pid_t parent) {
    // Die with the thread that forked us: run_io_job waits for every job,
    // so that only happens when the caller itself dies.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    setsid();  // its own session: its own autogroup, as fio's jobs
    close_inherited_fds({STDIN_FILENO, STDOUT_FILENO, runner.fd(), result_fd, gate_fd});
    if (auto status = runner.setup_io(); !status) {
        (void)write_all(result_fd, error_frame(job_error(runner.job_index(), status.error())));
        _exit(0);
    }
    if (!write_all(result_fd, "R")) _exit(1);
    char byte = 0;
    while (read(gate_fd, &byte, 1) < 0 && errno == EINTR) {
    }
    runner.run();
    const std::string frame =
        runner.error() ? error_frame(*runner.error()) : stats_frame(runner.take_stats());
    _exit(write_all(result_fd, frame) ? 0 : 1);
}

// What one job process sent, decoded.
Result<JobStats> decode_frame(unsigned job, std::string_view bytes, int wait_status) {
    auto take_u64 = [&](std::uint64_t& value) {
        if (bytes.size() < sizeof value) return false;
        std::memcpy(&value, bytes.data(), sizeof value);
        bytes.remove_prefix(sizeof value);
        return true;
    };
    auto take_text = [&](std::string& text) {
        std::uint64_t size = 0;
        if (!take_u64(size) || size > bytes.size()) return false;
        text.assign(bytes.substr(0, size));
        bytes.remove_prefix(size);
        return true;
    };
    if (!bytes.empty() && bytes.front() == 'R') bytes.remove_prefix(1);
    const char kind = bytes.empty() ? '\0' : bytes.front();
    if (!bytes.empty()) bytes.remove_prefix(1);
    if (kind == 'E') {
        Error error;
        if (take_text(error.code) && take_text(error.message)) return error;
    } else if (kind == 'S') {
        std::string encoded;
        if (take_text(encoded)) return decode_job_stats(encoded);
    }
    std::string how = "ended";
    if (WIFEXITED(wait_status)) {
        how = "exited with status " + std::to_string(WEXITSTATUS(wait_status));
    } else if (WIFSIGNALED(wait_status)) {
        const char* name = sigabbrev_np(WTERMSIG(wait_status));
        how = "was killed by signal " + std::to_string(WTERMSIG(wait_status)) +
              (name ? std::string(" (SIG") + name + ")" : std::string());
    }
    return make_error(errc::kIo, "job " + std::to_string(job) + ": its process " + how +
                                     " without a complete report");
}

// One job process as its parent sees it.
struct JobProcess {
    pid_t pid = -1;
    FileDescriptor result;  // the read end of its result pipe
    std::string bytes;      // what it has sent so far
    bool eof = false;
    int wait_status = 0;
};

// Reads what `child` has sent so far (one read); false on EOF or error.
bool read_some(JobProcess& child) {
    char buffer[65536];
    while (true) {
        const ssize_t got = read(child.result.get(), buffer, sizeof buffer);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            child.eof = true;
            return false;
        }
        child.bytes.append(buffer, static_cast<std::size_t>(got));
        return true;
    }
}

// Forks one job process per runner, in order, into `children`; stops at
// the first that cannot be started and returns why.
std::optional<Error> start_job_processes(Runners& runners, int gate_read,
                                         std::vector<JobProcess>& children) {
    const pid_t parent = getpid();
    for (std::size_t job = 0; job < runners.size(); ++job) {
        int result[2];
        if (pipe2(result, O_CLOEXEC) != 0) {
            return io_error("cannot create the result pipe of job " + std::to_string(job), errno);
        }
        FileDescriptor read_end(result[0]);
        FileDescriptor write_end(result[1]);
        const pid_t pid = fork();
        if (pid == 0) job_process(*runners[job], write_end.get(), gate_read, parent);
        if (pid < 0) {
            return io_error("cannot start the process of job " + std::to_string(job), errno);
        }
        JobProcess& child = children.emplace_back();
        child.pid = pid;
        child.result = std::move(read_end);
        // write_end closes here: the pipe reads EOF once the child is gone.
    }
    return std::nullopt;
}

// Waits for each child's first report; true when every one said 'R'.
bool all_set_up(std::vector<JobProcess>& children) {
    bool all_ready = true;
    for (JobProcess& child : children) {
        while (child.bytes.empty() && read_some(child)) {
        }
        if (child.bytes.empty() || child.bytes.front() != 'R') all_ready = false;
    }
    return all_ready;
}

// Reads every child's report to its EOF, relaying the caller's stop flag
// meanwhile (it lives in this process's memory, which the children do not
// share).
void collect_reports(std::vector<JobProcess>& children, ProcessFlags& flags,
                     const std::atomic<bool>* stop) {
    constexpr int kStopPollMs = 20;
    std::vector<pollfd> waiting;
    std::vector<std::size_t> waiting_job;
    while (true) {
        if (stop && stop->load(std::memory_order_relaxed)) flags.stop.store(true);
        waiting.clear();
        waiting_job.clear();
        for (std::size_t job = 0; job < children.size(); ++job) {
            if (children[job].eof) continue;
            waiting.push_back({children[job].result.get(), POLLIN, 0});
            waiting_job.push_back(job);
        }
        if (waiting.empty()) return;
        const int ready = poll(waiting.data(), waiting.size(), stop ? kStopPollMs : -1);
        if (ready < 0 && errno != EINTR) {
            // Cannot happen with valid descriptors; read blocking instead.
            for (const std::size_t job : waiting_job) {
                while (read_some(children[job])) {
                }
            }
            return;
        }
        for (std::size_t i = 0; ready > 0 && i < waiting.size(); ++i) {
            if (waiting[i].revents != 0) (void)read_some(children[waiting_job[i]]);
        }
    }
}

// Every child's statistics, in job order, or the first job's error.
Result<std::vector<JobStats>> decode_reports(const std::vector<JobProcess>& children) {
    std::vector<JobStats> stats;
    std::optional<Error> first_error;
    for (std::size_t job = 0; job < children.size(); ++job) {
        auto decoded = decode_frame(static_cast<unsigned>(job), children[job].bytes,
                                    children[job].wait_status);
        if (!decoded) {
            if (!first_error) first_error = decoded.error();
            continue;
        }
        stats.push_back(std::move(*decoded));
    }
    if (first_error) return *first_error;
    return stats;
}

Result<std::vector<JobStats>> run_as_processes(Runners& runners, ProcessFlags& flags,
                                               const std::atomic<bool>* stop) {
    int gate[2];
    if (pipe2(gate, O_CLOEXEC) != 0) return io_error("cannot create the job start pipe", errno);
    FileDescriptor gate_read(gate[0]);
    FileDescriptor gate_write(gate[1]);

    std::vector<JobProcess> children;
    children.reserve(runners.size());
    const std::optional<Error> spawn_error =
        start_job_processes(runners, gate_read.get(), children);
    // Start only when every job is set up: a job whose setup failed (or
    // could not be started) aborts the others before any I/O.
    const bool all_ready = all_set_up(children);
    if (spawn_error || !all_ready) flags.abort.store(true);
    gate_write = FileDescriptor();  // every child's read() of the gate returns 0: go

    collect_reports(children, flags, stop);
    for (JobProcess& child : children) {
        while (waitpid(child.pid, &child.wait_status, 0) < 0 && errno == EINTR) {
        }
    }
    if (spawn_error) return *spawn_error;
    return decode_reports(children);
}

}  // namespace

Result<Json> run_io_job(const Json& params, const std::atomic<bool>* stop) {
    auto options = parse_job_options(params);
    if (!options) return options.error();
    return run_io_job(*options, stop);
}

Result<Json> run_io_job(const JobOptions& options, const std::atomic<bool>* stop) {
    if (options.engine == nullptr) {
        return make_error(errc::kInvalidArgument, "io job options have no resolved engine");
    }
    const auto started = std::chrono::system_clock::now();
    auto targets = prepare_targets(options);
    if (!targets) return targets.error();

    std::atomic<bool> thread_abort{false};
    SharedFlags process_flags;
    SharedState shared;
    if (options.thread) {
        shared = SharedState{stop, &thread_abort};
    } else {
        auto mapped = map_shared_flags();
        if (!mapped) return mapped.error();
        process_flags = std::move(*mapped);
        shared = SharedState{&process_flags->stop, &process_flags->abort};
    }
    Runners runners;
    for (unsigned job = 0; job < options.numjobs; ++job) {
        runners.push_back(std::make_unique<JobRunner>(options, (*targets)[job], job, shared));
        if (auto status = runners.back()->open_file(); !status) {
            return job_error(job, status.error());
        }
    }
    auto stats = options.thread ? run_as_threads(runners, shared)
                                : run_as_processes(runners, *process_flags, stop);
    if (!stats) return stats.error();
    if (stop && stop->load()) {
        return make_error(errc::kCancelled, "io job stopped before it ended");
    }
    return io_report_json(options, *stats, started);
}

}  // namespace ds::io
