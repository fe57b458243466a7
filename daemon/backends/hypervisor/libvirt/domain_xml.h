// libvirt domain XML for one benchmark guest, and the reverse mapping: from a
// domain's live XML back to our names for the data disk's settings.
//
// The guest: q35, direct kernel boot, no graphics, no network, no balloon;
// a read-only root disk (serial disksweep-root; virtio-blk, or with bus scsi
// a disk of the shared SCSI controller), the data disk under
// test (serial disksweep-data) with the requested settings, the agent's
// virtio-serial channel bound to a unix socket, the serial console to a file.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/settings.h"
#include "daemon/backends/hypervisor/hypervisor.h"
#include "daemon/backends/hypervisor/local_guest_files.h"

namespace ds {

// Which libvirt driver the XML is for. Only the <domain type> and the <os>
// <type> element differ: libvirt's test driver (test:///default) knows only
// domain type 'test' on i686 and has no q35 machine, so for it the arch and
// machine attributes are left out. Every device is identical in both.
enum class DomainXmlDialect { kQemu, kTestDriver };

// Where QEMU serves the guest's agent channel and serial console.
//  * kLocalSockets: unix sockets at the paths LocalGuestFiles names, which
//    the daemon connects to on this machine (libvirt's embedded driver).
//  * kLibvirtStreams: the channel on a unix socket whose path libvirt
//    chooses on its host (a bind source without a path: libvirt 9.0's
//    qemuDomainPrepareChannel puts it in the domain's channel directory),
//    and the console on a pty: virDomainOpenChannel streams only unix
//    channels and virDomainOpenConsole only pty consoles
//    (src/qemu/qemu_driver.c, qemuDomainOpenChannel/qemuDomainOpenConsole).
//    Both are read over the libvirt connection, so they work on a remote
//    host.
enum class GuestEndpoints { kLocalSockets, kLibvirtStreams };

// The unix socket QEMU serves the serial console on, beside the console log
// the daemon writes from it (see console_capture.h).
std::string console_socket_path(const std::string& console_log_path);

// User aliases ("ua-" prefix, kept by libvirt in the live XML) that mark the
// SCSI controllers, so the reverse mapping can tell a shared controller from a
// per-disk one even when neither has an IO thread.
inline constexpr std::string_view kSharedScsiControllerAlias = "ua-disksweep-scsi-shared";
inline constexpr std::string_view kDataDiskScsiControllerAlias = "ua-disksweep-scsi-data";

// The complete <domain> document for `request`. Contract:
//  * every string taken from `request` is XML-escaped;
//  * the data disk comes from request.data_disk, by its kind, never guessed
//    from a path: FileDisk -> <disk type='file'> with the file's format,
//    BlockDisk -> <disk type='block'>, RbdDisk -> <disk type='network'> with
//    <source protocol='rbd'>, its monitors as <host>, <auth> with
//    `rbd_secret_uuid` when that is set and the disk names a user (a libvirt
//    secret holding the cephx key), and <config file> when the disk names a
//    ceph.conf and either has no such <auth> (QEMU reads the key through
//    the conf) or no monitors (the conf is where they are); the driver type
//    is the volume's real format, not request.config.image_format;
//  * every requested setting is written as asked, even one libvirt or QEMU
//    will refuse (see libvirt_unsupported_reason): refusing is theirs to do,
//    at start_vm, with their own message; what they silently change instead
//    shows up in parse_applied_disk_settings. Nothing is dropped or faked here.
// The agent channel and the console are served by QEMU as `endpoints` says:
// with kLocalSockets on the sockets `files` names for request.name.
// Each of request.extra_disks is a virtio-blk <disk> (file or block, its
// format as for the data disk, cache='unsafe', its <serial>) on targets
// vdc, vdd, ... in order; whether they are valid (check_extra_disks) and of
// a kind libvirt attaches here is start_vm's to refuse.
// With request.write_log_path set, the data disk is not a <disk>: it is
// QEMU's own -blockdev graph with the blklogwrites filter and its device,
// in <qemu:commandline> (write_log_disk.h).
std::string build_domain_xml(const VmRequest& request, const LocalGuestFiles& files,
                             DomainXmlDialect dialect = DomainXmlDialect::kQemu,
                             const std::string& rbd_secret_uuid = "",
                             GuestEndpoints endpoints = GuestEndpoints::kLocalSockets);

// The data disk's <disk> element alone, exactly as build_domain_xml writes
// it into <devices> (same contract for `source` and `rbd_secret_uuid`), not
// indented: for a user who adds the disk to a domain of their own. A SCSI
// disk addresses controller 0, and an IO thread it asks for lives on that
// controller (scsi_controller_xml), which refers to the domain's IO thread 1
// (`<iothreads>1</iothreads>`).
std::string data_disk_xml(const StorageConfig& config, const DiskSource& source,
                          const std::string& rbd_secret_uuid = "");
// The virtio-scsi <controller> element build_domain_xml writes for a SCSI
// bus (scsi, scsi-single), not indented; "" for the other buses.
std::string scsi_controller_xml(const StorageConfig& config);

// Why `config` cannot be applied as requested through libvirt 9.0 + QEMU 7.2,
// or "" when it can. Examples: SSD emulation on virtio-blk (no rotation rate),
// an IO thread on SATA (AHCI has none), aio=native without O_DIRECT.
std::string libvirt_unsupported_reason(const StorageConfig& config);

// How QEMU authenticates to Ceph for an RBD data disk ("rbd_auth" of
// parse_applied_disk_settings): the key from a libvirt secret (<auth>), or
// whatever the ceph.conf QEMU reads says (the one <config file> names, else
// Ceph's default).
inline constexpr std::string_view kRbdAuthLibvirtSecret = "libvirt-secret";
inline constexpr std::string_view kRbdAuthCephConf = "ceph-conf";

// The data disk's settings as written in a domain's XML (normally the live
// XML), in our names: {"bus", "cache", "aio", "discard", "detect_zeroes",
// "ssd", "iothread", "image_format", "controller_model"}, plus "iops_limit",
// "bandwidth_limit" (<iotune> total_iops_sec, total_bytes_sec) and "queues"
// (the disk's or, for SCSI, its controller's driver queues) only when the XML
// has them, as to_json(StorageConfig) has them only when set, and for an RBD
// disk "rbd_auth" (kRbdAuthLibvirtSecret or kRbdAuthCephConf). The data disk is
// found by its serial (protocol::kDataDiskSerial). Values are what QEMU gets,
// e.g. detect_zeroes 'unmap' without discard 'unmap' is reported as "on"
// because libvirt downgrades it so. controller_model is the SCSI controller's
// model ("virtio-scsi", ...), "ahci" for SATA, "" for virtio-blk. Errors:
// errc::kHypervisor when the XML does not parse or has no such disk.
Result<Json> parse_applied_disk_settings(const std::string& live_xml);

// A rewrite of a guest's domain XML before libvirt gets it: the libvirt
// backend's fault-injection seam, used only by test binaries
// (LibvirtHypervisor::set_domain_xml_filter).
using DomainXmlFilter = std::function<std::string(const VmRequest& request, std::string xml)>;

// `text` with & < > ' " replaced by entities, safe in attributes and content.
std::string xml_escape(std::string_view text);

}  // namespace ds
