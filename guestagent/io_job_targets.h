// The files a native I/O job works on (io_job.h describes which): each
// sized and, where it is shorter than the job's size, laid out first.
#pragma once

#include <vector>

#include "common/result.h"
#include "guestagent/io_job_runner.h"
#include "guestagent/io_options.h"

namespace ds::io {

// One JobTarget per job, in job order. errc::kInvalidArgument for a size
// missing or larger than a device, errc::kIo when a file cannot be created
// or laid out.
Result<std::vector<JobTarget>> prepare_targets(const JobOptions& options);

}  // namespace ds::io
