// ioengine=libaio: Linux native asynchronous I/O (io_setup, io_submit,
// io_getevents) through libaio, linked statically so the guest image needs
// no libaio1. libaio's wrappers return -errno instead of setting errno.
#include <libaio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <vector>

#include "common/errno_text.h"
#include "guestagent/io_engine.h"

namespace ds::io {
namespace {

constexpr std::array<OptionSpec, 2> kLibaioOptions = {{
    {"userspace_reap", OptionType::kBool,
     "fio's: when polling (iodepth_batch_complete_min=0), read completions from the AIO ring "
     "in user space instead of calling io_getevents (0)",
     0},
    {"ring_first", OptionType::kBool,
     "disksweep's: take completions already in the AIO ring without a system call, and call "
     "io_getevents only to wait for more (1)",
     1},
}};

// The kernel's completion ring at the address of an io_context_t (its
// layout is ABI: fs/aio.c struct aio_ring).
struct AioRing {
    unsigned id;
    unsigned nr;  // events in the ring
    unsigned head;
    unsigned tail;
    unsigned magic;
    unsigned compat_features;
    unsigned incompat_features;
    unsigned header_length;
    struct io_event events[];
};
constexpr unsigned kAioRingMagic = 0xa10a10a1;

Error op_error(const char* call, int error_number, const std::string& what) {
    return make_error(errc::kIo, std::string("libaio: ") + call + " failed with " +
                                     describe_errno(error_number) + ": " + what);
}

// Why io_submit failed with `error_number` (not EAGAIN or EINTR) at the
// first iocb it did not take, `first`.
Error submit_error(int error_number, const iocb& first) {
    switch (error_number) {
        case EBADF:  // the fd of the first remaining iocb is not open
            return op_error("io_submit", error_number,
                            "file descriptor " + std::to_string(first.aio_fildes) +
                                " is not open for this I/O");
        case EINVAL:
            // The context is gone, or the first remaining iocb is unusable:
            // the file does not support AIO (e.g. a character device), or
            // with O_DIRECT its buffer, offset or length is not aligned to
            // the device's block size.
            return op_error("io_submit", error_number,
                            "the file does not support AIO, or the I/O is not aligned for O_DIRECT "
                            "(offset " +
                                std::to_string(first.u.c.offset) + ", length " +
                                std::to_string(first.u.c.nbytes) + ")");
        case EFAULT:  // an iocb or buffer address is invalid: a bug in the runner
            return op_error("io_submit", error_number, "invalid iocb or buffer address");
        case ENOSYS:  // kernel built without CONFIG_AIO
            return op_error("io_submit", error_number,
                            "this kernel has no native AIO; use ioengine=psync");
        default:  // e.g. EOPNOTSUPP, ENOMEM: nothing a retry would fix
            return op_error("io_submit", error_number, "cannot submit I/O");
    }
}

class LibaioEngine final : public IoEngine {
  public:
    Status init(const EngineSetup& setup) override {
        depth_ = setup.iodepth;
        // parse_job_options fills in every option of this engine.
        userspace_reap_ = setup.options->at("userspace_reap") != 0;
        ring_first_ = setup.options->at("ring_first") != 0;
        iocbs_.resize(depth_);
        pending_.reserve(depth_);
        events_.resize(depth_);
        completed_.resize(depth_);
        const int result = io_setup(static_cast<int>(depth_), &context_);
        if (result < 0) {
            switch (-result) {
                case EAGAIN:  // the system-wide limit of AIO events is used up
                    return op_error("io_setup", -result,
                                    "the system's AIO event limit (/proc/sys/fs/aio-max-nr) "
                                    "cannot take iodepth=" +
                                        std::to_string(depth_) + " more");
                case ENOSYS:  // kernel built without CONFIG_AIO
                    return op_error("io_setup", -result,
                                    "this kernel has no native AIO; use ioengine=psync");
                default:  // EINVAL (depth over the limit), ENOMEM, EFAULT
                    return op_error(
                        "io_setup", -result,
                        "cannot create an AIO context for iodepth=" + std::to_string(depth_));
            }
        }
        context_ready_ = true;
        return ok_status();
    }

    Result<QueueOutcome> queue(IoUnit& unit) override {
        // The job never has more than iodepth units out; busy only guards
        // the contract.
        if (inflight_ + pending_.size() >= depth_) return QueueOutcome::kBusy;
        iocb& control = iocbs_[unit.index];
        if (unit.direction == IoDirection::kRead) {
            io_prep_pread(&control, unit.fd, unit.buffer, unit.length,
                          static_cast<long long>(unit.offset));
        } else {
            io_prep_pwrite(&control, unit.fd, unit.buffer, unit.length,
                           static_cast<long long>(unit.offset));
        }
        control.data = &unit;
        pending_.push_back(&control);
        return QueueOutcome::kQueued;
    }

    Result<unsigned> commit() override {
        std::size_t submitted = 0;
        IdleSubmitRetry idle_retry;
        while (submitted < pending_.size()) {
            const long wanted = static_cast<long>(pending_.size() - submitted);
            const int result = io_submit(context_, wanted, pending_.data() + submitted);
            if (result > 0) {
                // A short count is a partial submission: the kernel took the
                // first `result` iocbs in order and stopped at one it could
                // not take. Loop: the retry either submits it or returns the
                // error that stopped it.
                submitted += static_cast<std::size_t>(result);
                inflight_ += static_cast<unsigned>(result);
                idle_retry.reset();
                continue;
            }
            const int error_number = result == 0 ? EAGAIN : -result;
            switch (error_number) {
                case EAGAIN:
                    // Out of resources (the ring or kernel memory) for now,
                    // also what a count of 0 means. With I/O in flight, give
                    // the rest back: the job reaps, which frees ring slots,
                    // and commits again. With nothing in flight, reaping
                    // cannot help: wait briefly, retry, and give up after
                    // 0.1 s.
                    if (inflight_ > 0) {
                        pending_.erase(pending_.begin(),
                                       pending_.begin() + static_cast<long>(submitted));
                        return static_cast<unsigned>(pending_.size());
                    }
                    if (!idle_retry.wait()) {
                        return op_error("io_submit", EAGAIN,
                                        "no resources even with no I/O in flight");
                    }
                    continue;
                case EINTR:  // a signal arrived before anything was queued: retry
                    continue;
                default:  // nothing a retry would fix
                    return submit_error(error_number, *pending_[submitted]);
            }
        }
        pending_.clear();
        return 0u;
    }

    Result<unsigned> getevents(unsigned min, unsigned max) override {
        min = std::min(min, inflight_);
        max = std::min({max, inflight_, depth_});
        if (max == 0) return 0u;
        unsigned reaped = 0;
        // From the ring when what is there already meets `min` (the same
        // events io_getevents would return, without the system call).
        if ((ring_first_ || (userspace_reap_ && min == 0)) && ring_usable() &&
            ring_ready() >= min) {
            reaped = reap_ring(max);
        } else {
            while (true) {
                // No timeout: every submitted I/O completes (a hung device
                // hangs fio the same way); the stop flag is checked between
                // reaps.
                const int result = io_getevents(context_, min, max, events_.data(), nullptr);
                if (result >= 0) {
                    reaped = static_cast<unsigned>(result);
                    break;
                }
                switch (-result) {
                    case EINTR:  // a signal interrupted the wait: wait again
                        continue;
                    case EINVAL:  // context gone or min/max out of range: a bug
                    case EFAULT:  // events array or timeout unreadable: a bug
                    case ENOSYS:  // kernel built without CONFIG_AIO
                    default:
                        return op_error("io_getevents", -result,
                                        "cannot reap completions (" + std::to_string(inflight_) +
                                            " in flight)");
                }
            }
        }
        for (unsigned i = 0; i < reaped; ++i) {
            IoUnit& unit = *static_cast<IoUnit*>(events_[i].data);
            // res is the byte count, or -errno for this one I/O (ENOSPC,
            // EIO...), which the job reports; res2 is unused for reads and
            // writes.
            unit.result = static_cast<long>(events_[i].res);
            completed_[i] = &unit;
        }
        inflight_ -= reaped;
        return reaped;
    }

    IoUnit& event(unsigned i) override { return *completed_[i]; }

    void cleanup() override {
        if (context_ready_) io_destroy(context_);  // waits for anything still in flight
        context_ready_ = false;
    }

    ~LibaioEngine() override { cleanup(); }

  private:
    // Whether the ring is in the format reap_ring() reads (fs/aio.c's
    // AIO_RING_MAGIC, no incompatible features); when not, reaping quietly
    // falls back to io_getevents.
    bool ring_usable() const {
        const auto* ring = reinterpret_cast<const AioRing*>(context_);
        return ring->magic == kAioRingMagic && ring->incompat_features == 0;
    }

    // Completed events waiting in the ring.
    unsigned ring_ready() const {
        const auto* ring = reinterpret_cast<const AioRing*>(context_);
        const unsigned head = ring->head;
        const unsigned tail = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE);
        return tail >= head ? tail - head : ring->nr - head + tail;
    }

    // fio's userspace_reap: take completed events straight from the ring the
    // kernel shares with us, without a system call: copy [head, tail), then
    // publish the new head (the kernel reads it to know which slots are free).
    unsigned reap_ring(unsigned max) {
        auto* ring = reinterpret_cast<AioRing*>(context_);
        unsigned head = ring->head;
        const unsigned tail = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE);
        unsigned reaped = 0;
        while (head != tail && reaped < max) {
            events_[reaped++] = ring->events[head];
            head = head + 1 == ring->nr ? 0 : head + 1;
        }
        __atomic_store_n(&ring->head, head, __ATOMIC_RELEASE);
        return reaped;
    }

    unsigned depth_ = 1;
    bool userspace_reap_ = false;
    bool ring_first_ = true;
    io_context_t context_ = nullptr;
    bool context_ready_ = false;
    std::vector<iocb> iocbs_;       // one per unit index
    std::vector<iocb*> pending_;    // queued, not yet submitted, in queue order
    std::vector<io_event> events_;  // from the last reap
    std::vector<IoUnit*> completed_;
    unsigned inflight_ = 0;  // submitted, not yet reaped
};

}  // namespace

const EngineDescriptor kLibaioEngine = {
    .ops_version = kIoEngineOpsVersion,
    .name = "libaio",
    .description = "Linux native AIO (io_submit/io_getevents)",
    .options = kLibaioOptions,
    .synchronous = false,
    .diskless = false,
    .create = []() -> std::unique_ptr<IoEngine> { return std::make_unique<LibaioEngine>(); },
};

}  // namespace ds::io
