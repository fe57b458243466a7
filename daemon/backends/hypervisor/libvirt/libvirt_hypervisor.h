// The libvirt hypervisor backend: guests as transient libvirt domains built by
// build_domain_xml, through libvirt's C API only.
//
// By default it drives libvirt's embedded QEMU driver (qemu:///embed?root=DIR):
// libvirt runs inside this process, no libvirtd is needed, and QEMU's state
// lives under DIR. Any other URI (test:///default for tests, qemu:///system,
// qemu+ssh://host/system) is used as given.
//
// Guests are reached as GuestEndpoints says (domain_xml.h): on an embedded
// URI through sockets on this machine; on any other through libvirt streams
// over the connection (virDomainOpenChannel, virDomainOpenConsole), which
// work the same on a remote host. A remote connection that dies (its
// libvirtd restarted, the network lost) is opened again on the next call at
// most every kReconnectInterval; calls in between fail with libvirt's
// reason.
//
// RBD data disks authenticate in one of two ways, by what the connection has
// (asked once, at connect): with a secret driver (libvirtd, a remote host) the
// cephx key goes into an ephemeral libvirt secret for the guest's lifetime
// (libvirt_secret.h) and the disk's <auth> refers to it; without one (the
// embedded driver) QEMU reads the key through the disk's ceph.conf
// (<config file>, domain_xml.h). applied_settings reports which as
// "rbd_auth".
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/result.h"
#include "daemon/backends/hypervisor/hypervisor.h"
#include "daemon/backends/hypervisor/libvirt/console_capture.h"
#include "daemon/backends/hypervisor/libvirt/domain_xml.h"
#include "daemon/backends/hypervisor/libvirt/libvirt_pool.h"
#include "daemon/backends/hypervisor/libvirt/stream_bridge.h"
#include "daemon/backends/hypervisor/local_guest_files.h"

// libvirt's connection and domain handles, without pulling libvirt's headers
// into ours.
struct _virConnect;
struct _virDomain;
struct _virStream;

namespace ds {

class LibvirtHypervisor : public Hypervisor {
  public:
    // Opens `uri`, or when `uri` is empty the embedded QEMU driver rooted at
    // `embed_root_for_default` (an absolute directory, created if missing).
    // For any embedded URI (the default or an explicit qemu:///embed?root=)
    // DIR/etc/qemu.conf is written first (see write_embedded_qemu_conf).
    // Also starts, once per process, libvirt's default event loop in a
    // background thread (the embedded driver and remote keepalives need it);
    // it stops when the last LibvirtHypervisor is destroyed.
    // Run as root, libvirt's embedded driver needs the 'libvirt-qemu' user and
    // group to exist (it looks them up before reading qemu.conf; Debian's
    // libvirt-daemon-system creates them); the error then says so.
    // libvirt allows one embedded root per process: connecting to a second,
    // different root while the first is open fails.
    // Errors: errc::kInvalidArgument (relative root), errc::kIo (qemu.conf),
    // errc::kUnavailable (libvirt refused the connection, or failed to say
    // whether it has a secret driver).
    // Each guest's agent socket and console log go to `guest_files_directory`
    // (created when a guest starts; see LocalGuestFiles).
    // With `allow_unreachable` (a configured remote host), a connection
    // libvirt refuses now still gives a hypervisor: it tries again on each
    // call (reachability() says why it is down), so a host that is down when
    // the daemon starts is retried and reported, not dropped.
    static Result<std::unique_ptr<LibvirtHypervisor>> connect(
        const std::string& uri, const std::string& embed_root_for_default,
        const std::string& guest_files_directory, bool allow_unreachable = false);

    // How long a dead connection waits before it is opened again.
    static constexpr std::chrono::seconds kReconnectInterval{2};

    // "qemu:///embed?root=ROOT", ROOT percent-encoded where URIs need it.
    static std::string embedded_uri(const std::string& root);

    // Closes the connection. Guests keep running (the daemon destroys what it
    // started; an embedded driver opened later on the same root finds them).
    ~LibvirtHypervisor() override;
    LibvirtHypervisor(const LibvirtHypervisor&) = delete;
    LibvirtHypervisor& operator=(const LibvirtHypervisor&) = delete;

    std::string name() const override { return "libvirt"; }
    // A transient domain (virDomainCreateXML, schema-validated): it exists
    // only while running, so a failed start leaves nothing defined and a
    // destroyed guest is gone. errc::kConflict if a domain of that name
    // exists already. An RBD data disk whose user has a keyring of its own
    // (rbd_key_fits_secret) gets, where the connection has a secret driver,
    // a secret holding its key (define_rbd_secret); a failed start undefines
    // it again. errc::kHypervisor when the key cannot be read.
    Status start_vm(const VmRequest& request) override;
    // parse_applied_disk_settings of the live XML, plus (QEMU drivers) "qemu":
    // read_qemu_disk_settings through the QEMU monitor, and (a local URI,
    // qemu:///...) "qemu_process": qemu_process_disk_settings of the guest's
    // QEMU on this machine, and "levels" (settings_verify.h) saying so: on a
    // remote URI, qemu_process not checked, forbidden (out of reach).
    // errc::kNotFound if no such domain. The test driver runs no QEMU: its
    // readback is the domain XML alone, without "levels".
    // A durability run's logged data disk has no <disk> in the XML: its flat
    // keys come from QEMU (logged_disk_settings), with "write_log" saying so.
    Result<Json> applied_settings(const std::string& vm_name) override;
    // What QEMU says it accelerates with (read_qemu_accel: query-kvm); the
    // test driver runs no QEMU and reports `requested`.
    Result<RunningGuest> running_guest(const std::string& vm_name, Accel requested) override;
    // read_qemu_disk_counters through the QEMU monitor; errc::kUnsupported on
    // libvirt's test driver.
    Result<Json> disk_counters(const std::string& vm_name) override;
    // The guest's QEMU process on this machine (local URIs, qemu:///...):
    // its threads' roles from QMP, their times from /proc (qemu_threads.h).
    // errc::kUnsupported on a remote host and on libvirt's test driver.
    Result<Json> emulator_cpu_times(const std::string& vm_name) override;
    Result<bool> is_running(const std::string& vm_name) override;
    // The virtio-serial channel: QEMU's socket on this machine
    // (kLocalSockets) or a stream over the connection (kLibvirtStreams),
    // opened again every 100 ms until the deadline while the guest starts.
    Result<std::unique_ptr<AgentChannel>> open_agent_channel(
        const std::string& vm_name, Deadline deadline, const std::atomic<bool>* cancelled) override;
    // The console log the capture writes (console_capture.h), a file path.
    std::string console_tail(const std::string& vm_name, std::size_t max_bytes) override;
    std::string console_location(const std::string& vm_name) override;
    void discard_console(const std::string& vm_name) override;
    // Destroys the domain if it runs, undefines it if it is persistent (e.g.
    // defined by hand or by an older daemon), then undefines the guest's RBD
    // secret if it has one. Succeeds if neither exists.
    Status destroy_vm(const std::string& vm_name) override;
    // Sorted names of all domains, running or defined, starting with prefix,
    // and of the guests whose RBD secret is left though their domain is gone
    // (an earlier daemon stopped between start and destroy): destroy_vm of
    // each name removes everything, which is what start-up recovery does.
    Result<std::vector<std::string>> list_vms(const std::string& prefix) override;
    // {"libvirt": "9.0.0", "hypervisor_type": "QEMU", "hypervisor_version":
    //  "7.2.0", "qemu": "7.2.0" (QEMU drivers only), "hypervisor_uri": "..."}.
    Json versions() override;
    // {"state": "connected"|"unreachable", "error": why, "reconnects": N},
    // trying to connect first when the connection is down.
    Json reachability() override;
    bool take_reconnected() override;

    // The URI as opened and the XML dialect its driver needs.
    const std::string& uri() const { return uri_; }
    GuestEndpoints endpoints() const { return endpoints_; }
    // Whether the URI names another machine (is_remote_libvirt_uri).
    bool remote() const { return remote_; }

    // From now on guest images are staged into `pool` on the host
    // (PoolImages, volumes named from `prefix`): a remote host's guests boot
    // from there. Without it stage_image answers the local files.
    void use_image_pool(const std::string& pool, const std::string& prefix);
    Result<GuestImage> stage_image(const GuestImage& local) override;
    void release_image(const GuestImage& staged) override;
    // The live connection, opened again when it died (see the file comment);
    // errc::kUnavailable with libvirt's reason while the host is unreachable.
    Result<_virConnect*> live_connection();
    DomainXmlDialect dialect() const { return dialect_; }
    // Whether the connection has a secret driver (RBD keys go into secrets).
    bool has_secret_driver() const { return secret_driver_; }

    // The fault-injection seam: start_vm passes each guest's domain XML
    // through `filter` before libvirt gets it. Only test binaries set one
    // (tests/axes/: QEMU run with other settings than requested, which
    // verification must catch); disksweepd never does.
    void set_domain_xml_filter(DomainXmlFilter filter) { domain_xml_filter_ = std::move(filter); }

    // Thread safety: every method may be called from several threads at once.
    // libvirt's connection object is thread-safe and its last-error is
    // per-thread; the connection pointer is guarded by connection_mutex_ (a
    // replaced one stays open until destruction: handles made from it may be
    // in use), the console captures by consoles_mutex_.

  private:
    struct DomainFree {
        void operator()(_virDomain* domain) const;
    };
    using DomainHandle = std::unique_ptr<_virDomain, DomainFree>;
    // A started guest's console as the daemon captures it: from its socket,
    // or from a stream's bridge (declared first: the capture ends first).
    struct GuestConsole {
        std::unique_ptr<StreamBridge> bridge;
        std::unique_ptr<ConsoleCapture> capture;
    };
    // The domain named `vm_name`; errc::kNotFound when there is none.
    Result<DomainHandle> lookup_domain(const std::string& vm_name);

    LibvirtHypervisor(_virConnect* connection, std::string uri, DomainXmlDialect dialect,
                      bool secret_driver, LocalGuestFiles guest_files, GuestEndpoints endpoints);
    // The console capture of a started domain, by endpoints_.
    Result<GuestConsole> capture_console(_virDomain* domain, const std::string& vm_name);
    Result<std::unique_ptr<AgentChannel>> open_stream_channel(const std::string& vm_name,
                                                              Deadline deadline,
                                                              const std::atomic<bool>* cancelled);
    // applied_settings of a guest whose data disk is logged (write_log_disk.h).
    Result<Json> logged_disk_settings(_virDomain* domain, const std::string& vm_name);
    // applied["levels"] of a QEMU guest: the flat level read from
    // `flat_source`, QMP, and the process (not checked unless local).
    Json qemu_levels(std::string_view flat_source, bool local_process) const;
    // Removes the guest's console capture from the map (empty if none).
    GuestConsole take_console(const std::string& vm_name);
    // The UUID of the secret defined for the request's RBD disk, or "" when
    // its key does not go in a secret (see start_vm).
    Result<std::string> define_rbd_secret_for(const VmRequest& request);
    // Undefines the guest's RBD secret, if the connection has secrets at all.
    Status remove_rbd_secret(const std::string& vm_name);
    // destroy_vm's part for the domain itself.
    Status destroy_domain(const std::string& vm_name);

    std::mutex connection_mutex_;
    _virConnect* connection_;            // guarded; null while never connected
    std::vector<_virConnect*> retired_;  // guarded; replaced connections
    std::string connection_failure_;     // guarded; why the last open failed
    int reconnects_ = 0;                 // guarded
    bool reconnected_ = false;           // guarded; since take_reconnected()
    std::chrono::steady_clock::time_point last_open_attempt_{};  // guarded
    std::mutex consoles_mutex_;
    // A bounded capture of each started guest's serial console, by VM name
    // (see console_capture.h); ended by destroy_vm.
    std::map<std::string, GuestConsole> consoles_;  // guarded by consoles_mutex_
    std::string uri_;
    DomainXmlDialect dialect_;
    std::atomic<bool> secret_driver_;
    LocalGuestFiles guest_files_;
    GuestEndpoints endpoints_;
    bool remote_;
    std::unique_ptr<PoolImages> images_;  // set before any guest starts
    DomainXmlFilter domain_xml_filter_;   // set before any guest starts
};

// Writes ROOT/etc/qemu.conf for the embedded QEMU driver (creating
// directories): stdio_handler = "file" (no virtlogd), security_driver =
// "none" (no SELinux/AppArmor labelling), namespaces = [] (no private /dev
// mount namespace), user/group = this process's effective ids (QEMU runs as
// the daemon does; as root libvirt would otherwise look for a 'libvirt-qemu'
// user, which exists only with libvirt-daemon-system installed).
Status write_embedded_qemu_conf(const std::string& root);

// Whether a libvirt URI names another machine: it has a host part
// ("qemu+ssh://node2/system", "qemu+tcp://127.0.0.1:16509/system"), where
// "qemu:///system" and the embedded driver's have none. A remote host's
// files are out of the daemon's reach: everything goes through the API.
bool is_remote_libvirt_uri(std::string_view uri);

// Whether /dev/kvm exists and is readable and writable by this process. Says
// nothing about whether KVM really runs guests here (probe that with a boot).
bool kvm_device_present();

}  // namespace ds
