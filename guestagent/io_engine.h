// The agent's native I/O engines (docs/io-engine.md). Every engine fills one
// versioned ops table, the shape of fio's: init, queue (-> completed | queued
// | busy), commit, getevents, cleanup. One file per engine (io_engine_*.cpp),
// each declaring its own options as data; the job runner (io_job.h) drives
// them and never knows which engine it talks to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace ds::io {

// Bumped whenever IoEngine or EngineDescriptor changes incompatibly; every
// descriptor states the version it was written against and the registry
// refuses a mismatch (engine_by_name).
inline constexpr int kIoEngineOpsVersion = 1;

// How an option's value is written (fio's conventions; io_options.h).
enum class OptionType {
    kString,
    kBool,  // true/false, 1/0, "1"/"0", "true"/"false"
    kInt,   // a non-negative integer, as a number or a string of digits
    kSize,  // bytes: a number, or a string with fio's suffixes ("4k" = 4096)
    kTime,  // seconds: a number, or a string with a unit ("10s", "500ms")
};

// One option as data: its name as fio spells it, how it is written, the
// one-line help that error messages and docs/io-engine.md show, and (for an
// engine's own options) its default in EngineOptionValues units.
struct OptionSpec {
    std::string_view name;
    OptionType type;
    std::string_view help;
    std::int64_t default_value = 0;
};

// An engine's own options after parsing: name -> value (bools as 0/1, sizes
// in bytes, times in microseconds). Exactly the names of the engine's table:
// parse_job_options fills in the default of every option not given.
using EngineOptionValues = std::map<std::string, std::int64_t, std::less<>>;

enum class IoDirection : std::uint8_t { kRead = 0, kWrite = 1 };
inline constexpr int kIoDirections = 2;

// One I/O in flight. The job runner owns the units (exactly `iodepth` of
// them per job, `index` 0..iodepth-1) and fills the request fields before
// queue(); the engine fills `result` and hands the unit back, either from
// queue() (kCompleted) or through getevents()/event().
struct IoUnit {
    // Request (set by the job runner).
    int fd = -1;
    IoDirection direction = IoDirection::kRead;
    std::uint32_t index = 0;  // unique among the job's units, < iodepth
    void* buffer = nullptr;   // O_DIRECT-aligned when the job is direct
    std::uint64_t offset = 0;
    std::uint32_t length = 0;
    // Completion (set by the engine): bytes transferred (0..length) or -errno.
    std::int64_t result = 0;
    // The job runner's bookkeeping; engines do not touch these.
    std::uint64_t issue_ns = 0;
    std::uint32_t requested = 0;  // the length before any short-transfer retry
};

enum class QueueOutcome {
    kCompleted,  // done already; unit.result is set (synchronous engines)
    kQueued,     // accepted; submitted by the next commit()
    kBusy,       // not accepted now; commit and reap first, then retry it
};

struct EngineSetup {
    unsigned iodepth = 1;                         // most units ever outstanding at once (>= 1)
    const EngineOptionValues* options = nullptr;  // never null
    // For engines that register them with the kernel once (io_uring's
    // registerfiles and fixedbufs): the job's file (-1 when diskless), and
    // its units' buffers: unit i's lies at buffers + i * buffer_bytes, and a
    // unit's buffer never leaves it.
    int fd = -1;
    void* buffers = nullptr;
    std::size_t buffer_bytes = 0;
};

// One engine instance serves one job (one thread); instances are not shared.
// Errors returned by any op are fatal for the job and name the syscall and
// errno; a failed individual I/O is not an op error but a negative
// unit.result.
class IoEngine {
  public:
    virtual ~IoEngine() = default;

    // Allocates what the engine needs for `setup.iodepth` outstanding units
    // (an AIO context, event arrays). Called once, before any other op.
    virtual Status init(const EngineSetup& setup) = 0;

    // Hands `unit` to the engine. kCompleted: the I/O already happened and
    // unit.result is set; the unit is back with the caller. kQueued: the
    // engine holds the unit until it comes back from event(). kBusy: the
    // engine did not take the unit.
    virtual Result<QueueOutcome> queue(IoUnit& unit) = 0;

    // Submits queued units, in queue order. Returns how many are still
    // queued, not submitted (the tail of the queue order): non-zero when
    // the kernel is out of resources (EAGAIN) while I/O is in flight; the
    // caller then reaps at least one completion and commits again.
    virtual Result<unsigned> commit() = 0;

    // Waits until at least min(min, in flight) submitted units completed and
    // returns how many (<= max) it reaped; min 0 polls without blocking.
    // They are event(0) .. event(n-1), valid until the next getevents().
    virtual Result<unsigned> getevents(unsigned min, unsigned max) = 0;
    virtual IoUnit& event(unsigned i) = 0;

    // Releases what init() allocated. Only called with nothing in flight
    // (the job runner drains first); also safe after a failed init().
    virtual void cleanup() = 0;
};

// The rule of the asynchronous engines for a submission the kernel refuses
// for lack of resources (EAGAIN) while none of the job's I/O is in flight,
// so that reaping cannot free anything: wait 100 µs and retry, and give up
// after 0.1 s. One per commit(); reset() after any progress.
class IdleSubmitRetry {
  public:
    // Waits before the next try; false when the time is up (give up).
    bool wait();
    void reset() { tries_ = 0; }

  private:
    int tries_ = 0;
};

struct EngineDescriptor {
    int ops_version = 0;  // kIoEngineOpsVersion when written
    std::string_view name;
    std::string_view description;
    std::span<const OptionSpec> options;  // the engine's own options
    // queue() completes every unit (kCompleted): the job stamps the issue
    // time just before queue() instead of after commit().
    bool synchronous = false;
    // Does no I/O on files: the job opens and lays out nothing (null).
    bool diskless = false;
    std::unique_ptr<IoEngine> (*create)() = nullptr;
};

// Defined in io_engine_libaio.cpp, io_engine_uring.cpp, io_engine_psync.cpp,
// io_engine_null.cpp.
extern const EngineDescriptor kLibaioEngine;
extern const EngineDescriptor kUringEngine;
extern const EngineDescriptor kPsyncEngine;
extern const EngineDescriptor kNullEngine;

// All engines, in the order error messages list them.
std::span<const EngineDescriptor* const> all_engines();

// The engine called `name`. errc::kInvalidArgument listing the valid names
// when there is none; errc::kInternal when its ops_version is not
// kIoEngineOpsVersion.
Result<const EngineDescriptor*> engine_by_name(std::string_view name);

// "libaio, io_uring, psync, null".
std::string engine_names();

}  // namespace ds::io
