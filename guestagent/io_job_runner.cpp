#include "guestagent/io_job_runner.h"

#include <fcntl.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "common/errno_text.h"

namespace ds::io {
namespace {

constexpr std::uint64_t kNsPerSecond = 1000000000;

std::uint64_t now_ns() {
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<std::uint64_t>(now.tv_sec) * kNsPerSecond +
           static_cast<std::uint64_t>(now.tv_nsec);
}

double seconds_of(const timeval& time) {
    return static_cast<double>(time.tv_sec) + static_cast<double>(time.tv_usec) / 1e6;
}

}  // namespace

Error io_error(const std::string& what, int error_number) {
    return make_error(errc::kIo, what + ": " + describe_errno(error_number));
}

Error job_error(unsigned job, const Error& error) {
    return make_error(error.code, "job " + std::to_string(job) + ": " + error.message);
}

JobRunner::JobRunner(const JobOptions& options, JobTarget target, unsigned job_index,
                     SharedState& shared)
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

Status JobRunner::open_file() {
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

Status JobRunner::setup_io() {
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

void JobRunner::run() noexcept {
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

JobRunner::~JobRunner() {
    if (engine_) engine_->cleanup();
}

void JobRunner::start_clock() {
    start_ns_ = now_ns();
    ramp_end_ns_ = start_ns_ + static_cast<std::uint64_t>(options_.ramp_time_s * 1e9);
    end_ns_ = options_.runtime_s > 0
                  ? ramp_end_ns_ + static_cast<std::uint64_t>(options_.runtime_s * 1e9)
                  : UINT64_MAX;
    if (ramp_end_ns_ == start_ns_) begin_measuring(start_ns_);
}

bool JobRunner::should_stop(std::uint64_t at) const {
    return issued_ >= budget_ || at >= end_ns_ || shared_.abort->load(std::memory_order_relaxed) ||
           (shared_.stop && shared_.stop->load(std::memory_order_relaxed));
}

IoUnit* JobRunner::next_unit(bool stopping, bool& fresh) {
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

bool JobRunner::queue_ios(std::uint64_t& now, bool& stopping) {
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

void JobRunner::reap_ios(std::uint64_t& now, bool stopping, bool busy) {
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

void JobRunner::record_totals(const rusage& before) {
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

rusage JobRunner::cpu_usage() const {
    rusage usage{};
    getrusage(options_.thread ? RUSAGE_THREAD : RUSAGE_SELF, &usage);
    return usage;
}

void JobRunner::prepare(IoUnit& unit) {
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
            direction =
                random_.below(100) < options_.rwmixread ? IoDirection::kRead : IoDirection::kWrite;
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

void JobRunner::commit(std::uint64_t& now) {
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
    unsubmitted_.erase(unsubmitted_.begin(), unsubmitted_.begin() + static_cast<long>(submitted));
    engine_pending_ = *remaining;
}

void JobRunner::advance_clock(std::uint64_t now) {
    if (!measuring_) {
        if (now >= ramp_end_ns_) begin_measuring(now);
        return;
    }
    if (now >= next_sample_ns_) take_sample(now);
}

void JobRunner::begin_measuring(std::uint64_t now) {
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

void JobRunner::take_sample(std::uint64_t now) {
    const double seconds = static_cast<double>(now - last_sample_ns_) / 1e9;
    for (int d = 0; d < kIoDirections; ++d) {
        DirectionStats& direction = stats_.directions[d];
        direction.iops_per_second.push_back(static_cast<double>(direction.ios - sampled_ios_[d]) /
                                            seconds);
        direction.bw_bytes_per_second.push_back(
            static_cast<double>(direction.bytes - sampled_bytes_[d]) / seconds);
        sampled_ios_[d] = direction.ios;
        sampled_bytes_[d] = direction.bytes;
    }
    last_sample_ns_ = now;
    next_sample_ns_ += kNsPerSecond;
    if (next_sample_ns_ <= now) next_sample_ns_ = now + kNsPerSecond;
}

void JobRunner::complete(IoUnit& unit, std::uint64_t now) {
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

void JobRunner::drain() {
    if (!engine_) return;
    unsigned outstanding =
        depth_ - static_cast<unsigned>(free_.size() + retry_.size() + unsubmitted_.size());
    while (outstanding > 0) {
        auto reaped = engine_->getevents(1, depth_);
        if (!reaped || *reaped == 0) break;  // cleanup's io_destroy waits for the rest
        outstanding -= std::min(outstanding, *reaped);
    }
}

void JobRunner::fail(const std::string& message) {
    if (!error_)
        error_ = make_error(errc::kIo, "job " + std::to_string(job_index_) + ": " + message);
    shared_.abort->store(true, std::memory_order_relaxed);
}

}  // namespace ds::io
