// A native I/O job's jobs as processes, fio's default (io_job.h).
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
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "common/result.h"
#include "guestagent/io_job_runner.h"
#include "guestagent/io_report.h"

namespace ds::io {

struct ProcessFlags {
    std::atomic<bool> stop{false};   // relayed by the parent from the caller's flag
    std::atomic<bool> abort{false};  // set by a failing job or by the parent
};
static_assert(std::atomic<bool>::is_always_lock_free,
              "flags shared between processes must be lock-free atomics");

struct UnmapFlags {
    void operator()(ProcessFlags* flags) const;
};
using SharedFlags = std::unique_ptr<ProcessFlags, UnmapFlags>;

// The flags in an anonymous shared mapping, for the parent and its job
// processes; errc::kIo when it cannot be mapped.
Result<SharedFlags> map_shared_flags();

// Runs each runner as a job process and waits for every one of them; their
// statistics in job order, or the first job's error. `flags` must come from
// map_shared_flags (the runners' SharedState points into it); the caller's
// `stop` (may be null) is relayed to the jobs.
Result<std::vector<JobStats>> run_as_processes(Runners& runners, ProcessFlags& flags,
                                               const std::atomic<bool>* stop);

}  // namespace ds::io
