// ioengine=io_uring: Linux io_uring through liburing, linked statically so
// the guest image needs no liburing2. The ring is set up as fio 3.33's
// io_uring engine sets it up (CQ sized to iodepth, COOP_TASKRUN,
// SINGLE_ISSUER + DEFER_TASKRUN, each dropped when the kernel refuses it),
// and submits and reaps with the same system calls, so ds-io and fio compare
// like for like. liburing's calls return -errno instead of setting errno.
#include <liburing.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <vector>

#include "common/errno_text.h"
#include "guestagent/io_engine.h"

namespace ds::io {
namespace {

constexpr std::array<OptionSpec, 4> kUringOptions = {{
    {"fixedbufs", OptionType::kBool,
     "fio's: register the job's buffers with the ring once and use READ_FIXED/WRITE_FIXED, so "
     "the kernel does not map them on every I/O (0)",
     0},
    {"registerfiles", OptionType::kBool,
     "fio's: register the job's file with the ring once (IOSQE_FIXED_FILE), so the kernel does "
     "not look the descriptor up on every I/O (0)",
     0},
    {"sqthread_poll", OptionType::kBool,
     "fio's: a kernel thread polls the submission queue (IORING_SETUP_SQPOLL), so submitting "
     "needs no system call while it is awake; implies registerfiles, as in fio (0)",
     0},
    {"nonvectored", OptionType::kBool,
     "fio's: IORING_OP_READ/WRITE with the buffer itself instead of READV/WRITEV with a "
     "one-element iovec (1, fio's choice on kernels that have them, >= 5.6)",
     1},
}};

// SINGLE_ISSUER ties the ring to the task that enables it. The job sets
// its engine up in the caller's thread when jobs are threads (thread=1), so
// the ring is created disabled (R_DISABLED) and enabled by the job's own
// thread on its first commit.
constexpr unsigned kSingleIssuerFlags =
    IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_R_DISABLED;

// The optional ring flags, in the order they are given up when the kernel
// refuses them with EINVAL (older kernels, or SQPOLL, which takes none of
// the first two): fio's order.
constexpr std::array<unsigned, 3> kOptionalSetupFlags = {
    kSingleIssuerFlags,
    IORING_SETUP_COOP_TASKRUN,
    IORING_SETUP_CQSIZE,
};

Error op_error(const char* call, int error_number, const std::string& what) {
    return make_error(errc::kIo, std::string("io_uring: ") + call + " failed with " +
                                     describe_errno(error_number) + ": " + what);
}

// Why io_uring_setup failed, in words a user can act on.
Error setup_error(int error_number, unsigned depth) {
    switch (error_number) {
        case ENOSYS:  // kernel built without CONFIG_IO_URING
            return op_error("io_uring_setup", error_number,
                            "this kernel has no io_uring; use ioengine=libaio or psync");
        case EPERM:  // sysctl kernel.io_uring_disabled, or a seccomp/container policy
            return op_error("io_uring_setup", error_number,
                            "io_uring is not allowed here (sysctl kernel.io_uring_disabled or a "
                            "seccomp policy); use ioengine=libaio or psync");
        case ENOMEM:  // before 5.12 rings counted against RLIMIT_MEMLOCK
            return op_error("io_uring_setup", error_number,
                            "no memory for a ring of iodepth=" + std::to_string(depth) +
                                " (older kernels count it against ulimit -l)");
        default:  // EINVAL (depth over the limit), EMFILE, ENFILE
            return op_error("io_uring_setup", error_number,
                            "cannot create a ring for iodepth=" + std::to_string(depth));
    }
}

// Why io_uring_enter failed while submitting (not EAGAIN, EBUSY or EINTR).
Error submit_error(int error_number, unsigned queued) {
    const std::string what = "cannot submit " + std::to_string(queued) + " queued I/Os";
    switch (error_number) {
        case EEXIST:  // SINGLE_ISSUER: a task other than the ring's creator submitted
            return op_error("io_uring_enter", error_number,
                            what + " from a thread other than the one that set the ring up");
        default:  // EBADF, EFAULT, EINVAL, ENXIO (ring being torn down): a bug
            return op_error("io_uring_enter", error_number, what);
    }
}

class UringEngine final : public IoEngine {
  public:
    Status init(const EngineSetup& setup) override {
        depth_ = setup.iodepth;
        read_options(*setup.options);
        iovecs_.resize(depth_);
        completed_.resize(depth_);
        DS_TRY(create_ring());
        if (registerfiles_) DS_TRY(register_file(setup.fd));
        if (fixedbufs_) DS_TRY(register_buffers(setup));
        return ok_status();
    }

    Result<QueueOutcome> queue(IoUnit& unit) override {
        // The job never has more than iodepth units out, so the ring (at
        // least iodepth entries) has room; busy guards the contract, and
        // a full submission queue (with sqthread_poll, entries the kernel
        // thread has not taken yet) asks the job to reap first.
        if (inflight_ + queued_ >= depth_) return QueueOutcome::kBusy;
        io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
        if (sqe == nullptr) return QueueOutcome::kBusy;
        prepare(*sqe, unit);
        ++queued_;
        return QueueOutcome::kQueued;
    }

    Result<unsigned> commit() override {
        if (!enabled_) DS_TRY(enable_ring());
        IdleSubmitRetry idle_retry;
        while (queued_ > 0) {
            const int result = submit();
            if (result > 0) {
                // A short count leaves the rest in the submission ring, in
                // order; the next submit takes them first.
                const auto submitted = std::min(static_cast<unsigned>(result), queued_);
                queued_ -= submitted;
                inflight_ += submitted;
                idle_retry.reset();
                continue;
            }
            const int error_number = result == 0 ? EAGAIN : -result;
            switch (error_number) {
                case EAGAIN:  // no memory for requests now
                case EBUSY:   // completions could not be posted (CQ overflow)
                    // With I/O in flight, give the rest back: the job
                    // reaps and commits again. With none, reaping cannot
                    // help: wait briefly, retry, give up after 0.1 s.
                    if (inflight_ > 0) return queued_;
                    if (!idle_retry.wait()) {
                        return op_error("io_uring_enter", error_number,
                                        "no resources even with no I/O in flight");
                    }
                    continue;
                case EINTR:  // a signal arrived before anything was submitted: retry
                    continue;
                default:
                    return submit_error(error_number, queued_);
            }
        }
        return 0u;
    }

    Result<unsigned> getevents(unsigned min, unsigned max) override {
        min = std::min(min, inflight_);
        max = std::min({max, inflight_, depth_});
        if (max == 0) return 0u;
        // Completions already in the ring cost no system call; wait (or,
        // polling, let the kernel post deferred completions) only when
        // there are too few.
        if (io_uring_cq_ready(&ring_) < std::max(min, 1u)) DS_TRY(wait_for(min));
        const unsigned reaped = take_completions(max);
        inflight_ -= reaped;
        return reaped;
    }

    IoUnit& event(unsigned i) override { return *completed_[i]; }

    void cleanup() override {
        if (!ring_ready_) return;
        // Normally nothing is in flight (the job drains first). After a
        // failed reap, wait what can be waited for, so the kernel is done
        // with the buffers before the job frees them; the ring's teardown
        // cancels the rest.
        while (inflight_ > 0 && wait_for(1).ok()) inflight_ -= take_completions(inflight_);
        io_uring_queue_exit(&ring_);
        ring_ready_ = false;
    }

    ~UringEngine() override { cleanup(); }

  private:
    // parse_job_options fills in every option of this engine.
    void read_options(const EngineOptionValues& options) {
        fixedbufs_ = options.at("fixedbufs") != 0;
        sqthread_poll_ = options.at("sqthread_poll") != 0;
        registerfiles_ = options.at("registerfiles") != 0 || sqthread_poll_;
        nonvectored_ = options.at("nonvectored") != 0;
    }

    // Sets the ring up with every optional flag the kernel takes (fio's
    // fallback: drop them one group at a time while it says EINVAL).
    Status create_ring() {
        io_uring_params params{};
        params.cq_entries = depth_;  // at most iodepth completions are ever pending
        if (sqthread_poll_) params.flags |= IORING_SETUP_SQPOLL;
        for (unsigned flag : kOptionalSetupFlags) params.flags |= flag;
        std::size_t dropped = 0;
        while (true) {
            io_uring_params attempt = params;
            const int result = io_uring_queue_init_params(depth_, &ring_, &attempt);
            if (result == 0) break;
            if (result != -EINVAL || dropped == kOptionalSetupFlags.size()) {
                return setup_error(-result, depth_);
            }
            params.flags &= ~kOptionalSetupFlags[dropped++];
        }
        ring_ready_ = true;
        enabled_ = (params.flags & IORING_SETUP_R_DISABLED) == 0;
        return ok_status();
    }

    // Makes the calling thread (the job's) the ring's single issuer.
    Status enable_ring() {
        const int result = io_uring_enable_rings(&ring_);
        if (result < 0) return op_error("io_uring_register", -result, "cannot enable the ring");
        enabled_ = true;
        return ok_status();
    }

    Status register_file(int fd) {
        if (fd < 0) return op_error("io_uring_register_files", EBADF, "the job has no file");
        const int result = io_uring_register_files(&ring_, &fd, 1);
        if (result < 0) {
            return op_error("io_uring_register_files", -result,
                            "cannot register file descriptor " + std::to_string(fd));
        }
        file_ = 0;  // its index in the registered set
        return ok_status();
    }

    // One registered buffer per unit (buf_index = unit index), as fio: a
    // single one could exceed the kernel's 1 GiB limit per buffer.
    Status register_buffers(const EngineSetup& setup) {
        if (setup.buffers == nullptr || setup.buffer_bytes == 0) {
            return op_error("io_uring_register_buffers", EINVAL, "the job has no buffers");
        }
        for (unsigned i = 0; i < depth_; ++i) {
            iovecs_[i] = {static_cast<char*>(setup.buffers) + std::size_t{i} * setup.buffer_bytes,
                          setup.buffer_bytes};
        }
        const int result = io_uring_register_buffers(&ring_, iovecs_.data(), depth_);
        if (result < 0) {
            // ENOMEM: pinned buffers count against ulimit -l without
            // CAP_IPC_LOCK.
            return op_error("io_uring_register_buffers", -result,
                            "cannot register " + std::to_string(depth_) + " buffers of " +
                                std::to_string(setup.buffer_bytes) +
                                " bytes (pinned memory counts against ulimit -l)");
        }
        return ok_status();
    }

    // Fills `sqe` for `unit`'s read or write (its buffer, length and offset
    // as they are now: a short transfer's rest has them advanced).
    void prepare(io_uring_sqe& sqe, IoUnit& unit) {
        const bool read = unit.direction == IoDirection::kRead;
        const int fd = registerfiles_ ? file_ : unit.fd;
        if (fixedbufs_) {
            if (read) {
                io_uring_prep_read_fixed(&sqe, fd, unit.buffer, unit.length, unit.offset,
                                         static_cast<int>(unit.index));
            } else {
                io_uring_prep_write_fixed(&sqe, fd, unit.buffer, unit.length, unit.offset,
                                          static_cast<int>(unit.index));
            }
        } else if (nonvectored_) {
            if (read) {
                io_uring_prep_read(&sqe, fd, unit.buffer, unit.length, unit.offset);
            } else {
                io_uring_prep_write(&sqe, fd, unit.buffer, unit.length, unit.offset);
            }
        } else {
            // The iovec must stay valid until the kernel has read it: one
            // per unit, rewritten only when the unit is queued again.
            iovec& vector = iovecs_[unit.index];
            vector = {unit.buffer, unit.length};
            if (read) {
                io_uring_prep_readv(&sqe, fd, &vector, 1, unit.offset);
            } else {
                io_uring_prep_writev(&sqe, fd, &vector, 1, unit.offset);
            }
        }
        if (registerfiles_) io_uring_sqe_set_flags(&sqe, IOSQE_FIXED_FILE);
        io_uring_sqe_set_data(&sqe, &unit);
    }

    // Submits what is in the submission ring: the count submitted or
    // -errno. As fio, also asks the kernel to post completions that are
    // ready (DEFER_TASKRUN defers them until the task enters the kernel);
    // with sqthread_poll it only wakes the kernel thread when it sleeps.
    int submit() {
        return sqthread_poll_ ? io_uring_submit(&ring_) : io_uring_submit_and_get_events(&ring_);
    }

    // Waits until at least `min` completions are in the ring; with min 0,
    // lets the kernel post the ones that are ready without waiting.
    Status wait_for(unsigned min) {
        while (true) {
            io_uring_cqe* cqe = nullptr;
            const int result =
                min == 0 ? io_uring_get_events(&ring_) : io_uring_wait_cqe_nr(&ring_, &cqe, min);
            if (result >= 0) return ok_status();
            switch (-result) {
                case EINTR:   // a signal interrupted the wait: wait again
                case EAGAIN:  // nothing was ready for a non-waiting call: fine, or retry
                    if (min == 0) return ok_status();
                    continue;
                default:  // EBADF, EFAULT, EINVAL, EEXIST (another task): a bug
                    return op_error(
                        "io_uring_enter", -result,
                        "cannot reap completions (" + std::to_string(inflight_) + " in flight)");
            }
        }
    }

    // Takes up to `max` completions from the ring and hands their units'
    // results to completed_.
    unsigned take_completions(unsigned max) {
        unsigned taken = 0;
        io_uring_cqe* cqe = nullptr;
        unsigned head = 0;
        io_uring_for_each_cqe(&ring_, head, cqe) {
            if (taken == max) break;
            IoUnit& unit = *static_cast<IoUnit*>(io_uring_cqe_get_data(cqe));
            // res is the byte count, or -errno for this one I/O (ENOSPC,
            // EIO...), which the job reports; a short count is re-queued
            // by the job.
            unit.result = cqe->res;
            completed_[taken++] = &unit;
        }
        io_uring_cq_advance(&ring_, taken);
        return taken;
    }

    unsigned depth_ = 1;
    bool fixedbufs_ = false;
    bool registerfiles_ = false;
    bool sqthread_poll_ = false;
    bool nonvectored_ = true;
    io_uring ring_{};
    bool ring_ready_ = false;
    bool enabled_ = false;            // false until the first commit when created R_DISABLED
    int file_ = -1;                   // the job's file's index among the registered ones
    std::vector<iovec> iovecs_;       // per unit: registered buffers, or readv/writev's vector
    std::vector<IoUnit*> completed_;  // from the last reap
    unsigned queued_ = 0;             // in the submission ring, not yet submitted
    unsigned inflight_ = 0;           // submitted, not yet reaped
};

}  // namespace

const EngineDescriptor kUringEngine = {
    .ops_version = kIoEngineOpsVersion,
    .name = "io_uring",
    .description = "Linux io_uring (liburing)",
    .options = kUringOptions,
    .synchronous = false,
    .diskless = false,
    .create = []() -> std::unique_ptr<IoEngine> { return std::make_unique<UringEngine>(); },
};

}  // namespace ds::io
