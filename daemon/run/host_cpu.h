// Host CPU cost per I/O (docs/host-cpu.md): what a run's I/O cost the host
// (its QEMU's threads, by role) and the guest (its CPUs' busy time), per I/O
// the data disk did, plus the host's own I/O counters for context: the
// backing device's /proc/diskstats and the kernel's pressure stall
// information (PSI) for io and cpu.
//
// Everything is read over the job's window, the one the data disk's
// counters (Hypervisor::disk_counters) cover: from just before the job is
// sent to just after its result, i.e. tune, mkfs, mount, the workload,
// readback and trim. The parsers and the derivation are pure.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/settings.h"
#include "daemon/backends/storage/storage.h"

namespace ds {

// The line of /proc/diskstats for device major:minor, as counters:
//   {"reads", "read_sectors", "read_ms", "writes", "write_sectors",
//    "write_ms", "io_ms", "weighted_io_ms"}
// and "device" (its name). nullopt when no line has that device.
std::optional<Json> parse_diskstats(std::string_view text, unsigned major, unsigned minor);

// The cumulative stall totals of a /proc/pressure/{io,cpu} text, in µs:
// {"some_us", "full_us"} ("full" absent in older kernels' cpu file).
// nullopt when the text has no "some" line with a total.
std::optional<Json> parse_pressure(std::string_view text);

// The host's counters now, flat so that their change is a key-wise
// difference: "disk_" + each diskstats counter of the device backing
// `source` (a file: the device of the file system holding it; a block
// device: itself; none for RBD and hypervisor-allocated disks), and
// "psi_io_some_us", "psi_io_full_us", "psi_cpu_some_us", "psi_cpu_full_us"
// where /proc/pressure exists; "backing_device" names the device read
// ("sda1 (8:1)"). Best effort: what cannot be read is absent. Reads this
// machine's /proc under `proc_root`: call it only for a guest whose QEMU
// runs here.
Json read_host_io_counters(const DiskSource& source, const std::string& proc_root = "/proc");

// The per-I/O metrics of one run, in µs of CPU per I/O of the data disk
// (lower is better):
//   host_cpu_us_per_io (QEMU's whole process), and its split
//   host_vcpu_cpu_us_per_io, host_iothread_cpu_us_per_io,
//   host_main_loop_cpu_us_per_io, host_other_cpu_us_per_io, from
//   `emulator_cpu` (the change of Hypervisor::emulator_cpu_times);
//   guest_cpu_us_per_io from `guest_cpu` (the agent's result guest_cpu:
//   its busy seconds, everything but idle, iowait and steal).
// The I/O count is the data disk's rd_operations + wr_operations +
// flush_operations + discard_operations in `disk_counters` (the change of
// Hypervisor::disk_counters over the same window). A metric whose inputs
// are absent, or with no I/O at all, is absent (never inf or NaN).
std::map<std::string, double> cpu_per_io_metrics(const Json& emulator_cpu, const Json& guest_cpu,
                                                 const Json& disk_counters);

// One reading at either end of the window: {"qemu": emulator_cpu_times,
// "host": read_host_io_counters} or {"not_measured": why} when the
// emulator's CPU times cannot be read (then the host's /proc is not read
// either: it need not be the guest's host).
// The run's record of the window (applied_settings.cpu_cost,
// docs/schema.md): {"window": "job", "ios": the data disk's I/Os,
// "qemu": the change of each time (thread counts as at the end),
// "host_counters": the change of each host counter ("backing_device" as at
// the end), "guest": `guest_cpu` as the agent sent it}; "not_measured": why
// there are no QEMU figures. Parts without data are left out.
Json cpu_cost_record(const Json& before, const Json& after, const Json& guest_cpu,
                     const Json& disk_counters);

// The change of each numeric member between two readings (members only in
// `after`, or not numbers, are left out).
Json numeric_delta(const Json& before, const Json& after);

// The guest's busy CPU seconds in a guest_cpu record: the sum of its states
// but idle, iowait and steal (steal is the host's time, not the guest's).
std::optional<double> guest_busy_seconds(const Json& guest_cpu);

}  // namespace ds
