// ioengine=null: does no I/O at all. queue() accepts, commit() completes
// everything queued with the full length, getevents() hands it back. It
// exercises the job runner (queueing, batching, reaping, statistics) at a
// speed no device limits; like fio's null engine it opens no files.
#include <algorithm>
#include <vector>

#include "guestagent/io_engine.h"

namespace ds::io {
namespace {

class NullEngine final : public IoEngine {
  public:
    Status init(const EngineSetup& setup) override {
        depth_ = setup.iodepth;
        queued_.reserve(depth_);
        done_.reserve(depth_);
        reaped_.reserve(depth_);
        return ok_status();
    }

    Result<QueueOutcome> queue(IoUnit& unit) override {
        if (queued_.size() + done_.size() >= depth_) return QueueOutcome::kBusy;
        queued_.push_back(&unit);
        return QueueOutcome::kQueued;
    }

    Result<unsigned> commit() override {
        for (IoUnit* unit : queued_) {
            unit->result = unit->length;
            done_.push_back(unit);
        }
        queued_.clear();
        return 0u;
    }

    Result<unsigned> getevents(unsigned, unsigned max) override {
        // Everything committed is complete, so `min` is always met.
        const std::size_t count = std::min<std::size_t>(max, done_.size());
        reaped_.assign(done_.end() - static_cast<long>(count), done_.end());
        done_.resize(done_.size() - count);
        return static_cast<unsigned>(count);
    }

    IoUnit& event(unsigned i) override { return *reaped_[i]; }
    void cleanup() override {}

  private:
    unsigned depth_ = 1;
    std::vector<IoUnit*> queued_;  // since the last commit
    std::vector<IoUnit*> done_;    // committed, not yet reaped
    std::vector<IoUnit*> reaped_;  // from the last getevents
};

}  // namespace

const EngineDescriptor kNullEngine = {
    .ops_version = kIoEngineOpsVersion,
    .name = "null",
    .description = "no I/O: completes everything at once (tests the runner)",
    .options = {},
    .synchronous = false,
    .diskless = true,
    .create = []() -> std::unique_ptr<IoEngine> { return std::make_unique<NullEngine>(); },
};

}  // namespace ds::io
