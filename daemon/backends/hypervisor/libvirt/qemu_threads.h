// The CPU time a guest's QEMU process spends, split by what its threads do
// (docs/host-cpu.md): vCPU threads (query-cpus-fast thread-id), IO threads
// (query-iothreads thread-id), the main loop (the thread whose id is the
// process's, TID == PID) and everything else ("other": the thread pool's
// workers, which do the disk's I/O with aio=threads, VNC, RCU, ...).
//
// Read from /proc/PID/stat (the whole process, including threads that have
// exited: their time is added to the process's when they go) and
// /proc/PID/task/TID/stat (each live thread). "other" is the process's time
// less the named threads', so the time of a pool worker that ran and exited
// between two readings is still counted there.
//
// The parsers are pure, so unit tests feed them texts.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/settings.h"
#include "daemon/backends/hypervisor/libvirt/qemu_monitor.h"

namespace ds {

// utime and stime of one /proc/.../stat line, in clock ticks.
struct TaskCpuTicks {
    std::uint64_t user = 0;
    std::uint64_t system = 0;
    std::uint64_t total() const { return user + system; }
};

// Fields 14 and 15 (utime, stime) of a /proc/PID/stat or
// /proc/PID/task/TID/stat text. The command name (field 2) is in
// parentheses and may itself hold spaces and ')', so the fields are counted
// from the last ')'. errc::kInvalidArgument when the text has no such fields.
Result<TaskCpuTicks> parse_task_stat(std::string_view text);

// Which of the QEMU process's threads do what, from QMP.
struct QemuThreadRoles {
    std::vector<long> vcpus;      // query-cpus-fast "thread-id" of the vCPUs
    std::vector<long> iothreads;  // query-iothreads "thread-id" of each IO thread
};

// The thread ids of query-cpus-fast's and query-iothreads' replies
// ("return" members), each thread once (single-threaded TCG runs all vCPUs
// on one thread), in ascending order. errc::kHypervisor when an entry has no integer
// thread-id or a reply is not a list.
Result<QemuThreadRoles> thread_roles_from_qmp(const Json& cpus_fast, const Json& iothreads);
// The same, asked through `qmp`.
Result<QemuThreadRoles> read_qemu_thread_roles(const QmpTransport& qmp);

// One reading of the process: its own total and each live thread's.
struct QemuCpuReading {
    long pid = 0;
    TaskCpuTicks process;                  // /proc/PID/stat
    std::map<long, TaskCpuTicks> threads;  // /proc/PID/task/TID/stat by TID
};

// The reading's times by role, in seconds (ticks / ticks_per_second):
//   {"vcpu_s", "iothread_s", "main_loop_s", "other_s", "total_s",
//    "vcpu_threads", "iothreads"}
// other_s = total_s less the named threads' (never below 0: a thread's and
// the process's figures are read at slightly different moments). A named
// thread that is not among the live threads counts 0.
Json cpu_times_by_role(const QemuCpuReading& reading, const QemuThreadRoles& roles,
                       long ticks_per_second);

// Reads /proc/PID/stat and every /proc/PID/task/TID/stat under `proc_root`.
// A thread that ends while being read is left out. errc::kNotFound when the
// process is gone, errc::kIo when its stat cannot be parsed.
Result<QemuCpuReading> read_qemu_cpu(long pid, const std::string& proc_root = "/proc");

}  // namespace ds
