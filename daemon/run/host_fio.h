// The job of a host baseline run (ds::is_host_baseline): the workload's fio
// job from the host on the raw volume its storage backend made, with no
// guest and no filesystem, so reports can set each hypervisor setting
// against bare storage.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/fio_job.h"
#include "common/process.h"
#include "common/result.h"
#include "common/settings.h"
#include "daemon/backends/storage/storage.h"

namespace ds {

// Where each of the job's `numjobs` jobs does its I/O on the raw volume. In
// the guest every job has a file of its own (`size` bytes); on the raw
// volume each job gets its own region of that size (offset_increment) when
// they all fit, else they share the first `size` bytes, as fio would.
struct RawVolumeLayout {
    std::uint64_t job_bytes = 0;  // each job's region (size, or the whole volume)
    std::uint64_t numjobs = 1;
    bool separate_regions = false;    // offset_increment = job_bytes
    std::uint64_t prefill_bytes = 0;  // written once before the job (see run_host_fio)
};
// errc::kInvalidArgument when `size` or `numjobs` does not parse as fio reads
// them. `volume_bytes` is the volume's size.
Result<RawVolumeLayout> plan_raw_volume_layout(const Json& params, std::uint64_t volume_bytes);
Json to_json(const RawVolumeLayout&);

// fio's target for a disk source: a file or block device as a raw volume, an
// RBD image through librbd. HypervisorAllocatedDisk has no host path
// (errc::kUnsupported).
Result<FioTarget> host_fio_target(const DiskSource& source);

// The argv of both fio commands of a baseline, for tests and the run record:
// the prefill (a sequential write of the layout's region, so reads meet
// written blocks, as in the guest, where fio lays its files out first), then
// the workload's own job. RBD targets run under `env CEPH_CONF=...`, which is
// how librados finds the monitors and key.
struct HostFioCommands {
    std::vector<std::string> prefill;  // empty when there is nothing to prefill
    std::vector<std::string> job;
};
Result<HostFioCommands> host_fio_commands(const Workload& workload, const DiskSource& source,
                                          const RawVolumeLayout& layout);

struct HostFioResult {
    Json fio_output;  // fio's JSON document of the job
    Json layout;      // to_json(RawVolumeLayout), plus the commands run
    double prefill_s = 0;
    double bench_s = 0;
};

// Runs the prefill and the job through `runner`. `timeout` bounds each.
// Errors carry fio's own message (describe_fio_failure, fio_job_error).
Result<HostFioResult> run_host_fio(const Workload& workload, const DiskSource& source,
                                   std::uint64_t volume_bytes, ProcessRunner& runner,
                                   std::chrono::seconds timeout);

// "fio-3.33", from `fio --version`; "" when fio does not answer.
std::string host_fio_version(ProcessRunner& runner);
// The host kernel's release (uname -r), as a guest's hello reports its own.
std::string host_kernel_release();

}  // namespace ds
