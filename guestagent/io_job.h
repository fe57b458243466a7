// Running a native I/O job: numjobs jobs, each with its own engine
// instance (its own AIO context), its own I/O buffers and its own file
// descriptor, doing the job's I/O pattern until its size or runtime is
// done. As fio's default, each job is a process forked from the caller in
// its own session (setsid: its own scheduling autogroup); with the option
// thread=1 the jobs are threads of the caller. See docs/io-engine.md for
// the semantics and how they compare with fio's. The parts: the files
// (io_job_targets.h), one job (io_job_runner.h), jobs as processes
// (io_job_processes.h).
#pragma once

#include <atomic>

#include "common/result.h"
#include "common/settings.h"
#include "guestagent/io_options.h"

namespace ds::io {

// Parses `params` (io_options.h) and runs the job. Blocks until it is done
// and, with job processes, until every one of them has exited and been
// waited for (by pid; the caller must not reap them with waitpid(-1)).
//
// Files: with `filename`, every job works on that one file or block device
// over [0, size) (size defaults to the file's or device's size); without
// it, job j works on <directory or cwd>/<name>.<j>.0 (size required). A
// regular file shorter than size is first laid out (written with the same
// pseudo-random data the I/O buffers hold, then fsync'ed), as fio does;
// that time is not measured.
//
// Returns the report (io_report.h), whose shape fio's JSON parser
// ds::metrics_from_fio_json understands. Errors:
//   errc::kInvalidArgument  bad params, or a target that cannot be used as
//                           asked (size missing or larger than the device)
//   errc::kIo               a file could not be opened or laid out, an
//                           engine op failed, or an I/O failed; the message
//                           names the job, the operation, offset, file and
//                           the errno, e.g. "job 0: write of 4096 bytes at
//                           offset 8192 on /mnt/f failed: ENOSPC (No space
//                           left on device)". The first failing job stops
//                           all others.
//   errc::kCancelled        *stop became true before the job ended (checked
//                           between batches of I/O; in-flight I/O is drained)
// `stop` may be null.
Result<Json> run_io_job(const Json& params, const std::atomic<bool>* stop);

// The same with parsed options.
Result<Json> run_io_job(const JobOptions& options, const std::atomic<bool>* stop);

}  // namespace ds::io
