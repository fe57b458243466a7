// ioengine=psync: one pread(2)/pwrite(2) per I/O, completed inside queue().
// iodepth has no effect beyond 1, as in fio.
#include <unistd.h>

#include <cerrno>

#include "guestagent/io_engine.h"

namespace ds::io {
namespace {

class PsyncEngine final : public IoEngine {
  public:
    Status init(const EngineSetup&) override { return ok_status(); }

    Result<QueueOutcome> queue(IoUnit& unit) override {
        while (true) {
            const ssize_t done =
                unit.direction == IoDirection::kRead
                    ? pread(unit.fd, unit.buffer, unit.length, static_cast<off_t>(unit.offset))
                    : pwrite(unit.fd, unit.buffer, unit.length, static_cast<off_t>(unit.offset));
            if (done < 0 && errno == EINTR) continue;  // interrupted before any transfer: retry
            // Bytes done (a short count is retried by the job for the
            // rest), or -errno for this I/O (ENOSPC, EIO...), which the job
            // reports.
            unit.result = done < 0 ? -errno : done;
            return QueueOutcome::kCompleted;
        }
    }

    Result<unsigned> commit() override { return 0u; }  // nothing is ever queued
    Result<unsigned> getevents(unsigned, unsigned) override { return 0u; }
    IoUnit& event(unsigned) override { return *no_unit_; }  // getevents never returns events
    void cleanup() override {}

  private:
    IoUnit* no_unit_ = nullptr;
};

}  // namespace

const EngineDescriptor kPsyncEngine = {
    .ops_version = kIoEngineOpsVersion,
    .name = "psync",
    .description = "pread/pwrite, one at a time",
    .options = {},
    .synchronous = true,
    .diskless = false,
    .create = []() -> std::unique_ptr<IoEngine> { return std::make_unique<PsyncEngine>(); },
};

}  // namespace ds::io
