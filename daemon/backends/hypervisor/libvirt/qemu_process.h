// The data disk as the QEMU process itself runs it: the settings QEMU 7.2's
// QMP does not report (qemu_monitor.h), read from the process on this
// machine. A level of the settings check of its own ("QEMU process"),
// between QMP and the guest.
//
//  * discard: the open options of the data disk's block nodes, from the
//    -blockdev arguments QEMU was started with (libvirt opens every disk
//    there, as JSON). A node's options hold for its life: QEMU changes them
//    only on blockdev-reopen, which libvirt does not issue for a running
//    guest's disk. QEMU honours a guest's discard only when every node down
//    to the file has discard=unmap, so both must have it.
//  * aio: the engine QEMU really set up, from the process: Linux AIO maps
//    its ring ("/[aio] (deleted)" in /proc/PID/maps), io_uring holds an
//    "anon_inode:[io_uring]" descriptor, the thread pool neither. Measured
//    here (QEMU 7.2.22, with and without an IO thread): each appears as soon
//    as the node is opened with that aio, and only then. The -blockdev's aio
//    must name the same engine (absent: QEMU's default, the thread pool).
//
// Pure over a QemuProcessView, so unit tests feed it texts.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "common/settings.h"

namespace ds {

struct QemuProcessView {
    int pid = 0;
    std::vector<std::string> argv;        // /proc/PID/cmdline
    std::string maps;                     // /proc/PID/maps
    std::vector<std::string> fd_targets;  // readlink of each /proc/PID/fd/N
};

// The QEMU of libvirt guest `vm_name` running on this machine: the process
// whose arguments have "-name" "guest=VM_NAME[,...]" (how libvirt names
// it). errc::kNotFound when none runs here; errc::kIo when it cannot be read.
Result<QemuProcessView> read_qemu_process(const std::string& vm_name);
// Only its process id (the same search, reading nothing else).
Result<int> find_qemu_pid(const std::string& vm_name);

// The data disk's settings in our names, from the process and the name of
// the disk's top block node (query-block's node-name), followed down its
// "file" children to the protocol node (aio is that node's; discard holds
// when every node of the chain discards, a durability run's logger too):
//   {"aio": "threads" | "native" | "io_uring" | "default" (no aio option and
//    the thread pool in use), "discard": bool, "pid",
//    "sources": {key: where it was read}}.
// When the engine in use is not the one the -blockdev names, "aio" is the
// engine in use (what the guest's I/O really goes through). errc::kHypervisor
// when the node is not among the -blockdev arguments, or in use are both
// Linux AIO and io_uring.
Result<Json> qemu_process_disk_settings(const QemuProcessView& process,
                                        const std::string& node_name);

}  // namespace ds
