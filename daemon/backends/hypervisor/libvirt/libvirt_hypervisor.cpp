#include "daemon/backends/hypervisor/libvirt/libvirt_hypervisor.h"

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <system_error>
#include <thread>
#include <variant>

#include "daemon/backends/hypervisor/libvirt/libvirt_error.h"
#include "daemon/backends/hypervisor/libvirt/libvirt_secret.h"
#include "daemon/backends/hypervisor/libvirt/qemu_monitor.h"
#include "daemon/backends/hypervisor/libvirt/qemu_process.h"
#include "daemon/backends/hypervisor/libvirt/qemu_threads.h"
#include "daemon/backends/hypervisor/libvirt/write_log_disk.h"

namespace ds {
namespace {

// ---------------------------------------------------------------------------
// Process-wide libvirt setup.

// libvirt's default error handler prints every error to stderr; ours are
// values (see libvirt_error), so the handler does nothing.
void ignore_libvirt_error(void* /*user_data*/, virErrorPtr /*error*/) {}

// Once per process: initialise libvirt for threaded use, silence its error
// printing, register its default event loop implementation (which cannot be
// unregistered again). Returns false if either call failed.
bool init_libvirt_once() {
    static std::once_flag once;
    static bool initialised = false;
    std::call_once(once, [] {
        if (virInitialize() < 0) return;
        virSetErrorFunc(nullptr, ignore_libvirt_error);
        if (virEventRegisterDefaultImpl() < 0) return;
        initialised = true;
    });
    return initialised;
}

// The thread that runs libvirt's default event loop, shared by all
// LibvirtHypervisor instances of the process: started by the first, stopped
// (and joined) when the last one goes. libvirt's default loop must be run by
// one thread only.
class EventLoopThread {
  public:
    static void acquire() {
        std::lock_guard<std::mutex> lock(mutex_);
        if (users_++ > 0) return;
        stop_ = false;
        thread_ = new std::thread([] {
            while (!stop_.load()) {
                if (virEventRunDefaultImpl() < 0) {
                    // Only fails on an internal poll error; do not spin.
                    std::this_thread::sleep_for(std::chrono::milliseconds(10));
                }
            }
        });
    }
    static void release() {
        std::lock_guard<std::mutex> lock(mutex_);
        if (--users_ > 0) return;
        stop_ = true;
        // The loop sleeps in poll(); adding a timer wakes it, the timer fires
        // at once and removes itself, and the loop then sees stop_.
        virEventAddTimeout(
            0, [](int timer, void*) { virEventRemoveTimeout(timer); }, nullptr, nullptr);
        thread_->join();
        delete thread_;
        thread_ = nullptr;
    }

  private:
    static inline std::mutex mutex_;
    static inline int users_ = 0;
    static inline std::atomic<bool> stop_{false};
    // A pointer, never destroyed at exit: a process that exits with a
    // hypervisor still open must not std::terminate on a joinable thread.
    static inline std::thread* thread_ = nullptr;
};

// ---------------------------------------------------------------------------
// Small RAII and error helpers.

struct MallocFree {
    void operator()(char* text) const { std::free(text); }
};
using LibvirtString = std::unique_ptr<char, MallocFree>;

// libvirt packs versions as major * 1,000,000 + minor * 1,000 + release.
std::string version_string(unsigned long packed) {
    return std::to_string(packed / 1000000) + "." + std::to_string(packed / 1000 % 1000) + "." +
           std::to_string(packed % 1000);
}

// The user (and group) Debian's libvirt is built to run QEMU as.
constexpr const char* kDebianQemuUser = "libvirt-qemu";

constexpr std::string_view kEmbeddedUriPrefix = "qemu:///embed?root=";

// The (percent-decoded) root of an embedded URI, or "" for any other URI.
std::string embedded_root_of(const std::string& uri) {
    if (uri.rfind(kEmbeddedUriPrefix, 0) != 0) return "";
    std::string encoded = uri.substr(kEmbeddedUriPrefix.size());
    encoded = encoded.substr(0, encoded.find('&'));
    std::string decoded;
    for (std::size_t i = 0; i < encoded.size(); ++i) {
        const bool escape = encoded[i] == '%' && i + 2 < encoded.size() &&
                            std::isxdigit(static_cast<unsigned char>(encoded[i + 1])) &&
                            std::isxdigit(static_cast<unsigned char>(encoded[i + 2]));
        if (escape) {
            decoded += static_cast<char>(std::stoi(encoded.substr(i + 1, 2), nullptr, 16));
            i += 2;
        } else {
            decoded += encoded[i];
        }
    }
    return decoded;
}

// Extra disks are throwaway images on this host: files and block devices.
Status extra_disks_attachable(const std::vector<ExtraDisk>& disks) {
    for (const ExtraDisk& disk : disks) {
        const DiskSourceKind kind = kind_of(disk.source);
        if (kind != DiskSourceKind::kFile && kind != DiskSourceKind::kBlock) {
            return make_error(errc::kUnsupported, "libvirt: extra disk " + disk.serial + " is " +
                                                      std::string(to_string(kind)) +
                                                      "; only files and block devices are "
                                                      "attached as extra disks");
        }
    }
    return ok_status();
}

}  // namespace

void LibvirtHypervisor::DomainFree::operator()(virDomainPtr domain) const {
    virDomainFree(domain);
}

std::string LibvirtHypervisor::embedded_uri(const std::string& root) {
    std::string uri(kEmbeddedUriPrefix);
    for (unsigned char c : root) {
        const bool plain =
            std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~';
        if (plain) {
            uri += static_cast<char>(c);
        } else {
            char escaped[4];
            std::snprintf(escaped, sizeof escaped, "%%%02X", c);
            uri += escaped;
        }
    }
    return uri;
}

Status write_embedded_qemu_conf(const std::string& root) {
    namespace fs = std::filesystem;
    if (root.empty() || root.front() != '/') {
        return make_error(errc::kInvalidArgument,
                          "embedded libvirt root must be an absolute path, got '" + root + "'");
    }
    const fs::path etc = fs::path(root) / "etc";
    std::error_code ec;
    fs::create_directories(etc, ec);
    if (ec) return make_error(errc::kIo, "cannot create " + etc.string() + ": " + ec.message());

    const fs::path conf = etc / "qemu.conf";
    const fs::path temporary = etc / "qemu.conf.tmp";
    {
        std::ofstream out(temporary, std::ios::trunc);
        out << "# Written by disksweepd for libvirt's embedded QEMU driver; rewritten on every "
               "start.\n"
               "# QEMU's stdout/stderr go to files, not to virtlogd (no daemon runs).\n"
               "stdio_handler = \"file\"\n"
               "# No SELinux/AppArmor labelling.\n"
               "security_driver = \"none\"\n"
               "# No private /dev mount namespace for QEMU.\n"
               "namespaces = []\n"
               "# QEMU runs as this process's own user and group (run as root, libvirt would\n"
               "# otherwise want a 'libvirt-qemu' user), so it can open what the daemon made.\n"
               "user = \"+"
            << ::geteuid()
            << "\"\n"
               "group = \"+"
            << ::getegid() << "\"\n";
        out.flush();
        if (!out) return make_error(errc::kIo, "cannot write " + temporary.string());
    }
    fs::rename(temporary, conf, ec);
    if (ec)
        return make_error(errc::kIo, "cannot rename " + temporary.string() + ": " + ec.message());
    return ok_status();
}

bool kvm_device_present() {
    return ::access("/dev/kvm", R_OK | W_OK) == 0;
}

Result<std::unique_ptr<LibvirtHypervisor>> LibvirtHypervisor::connect(
    const std::string& uri, const std::string& embed_root_for_default,
    const std::string& guest_files_directory, bool allow_unreachable) {
    std::string effective_uri = uri;
    if (effective_uri.empty()) {
        if (embed_root_for_default.empty() || embed_root_for_default.front() != '/') {
            return make_error(errc::kInvalidArgument,
                              "embedded libvirt root must be an absolute path, got '" +
                                  embed_root_for_default + "'");
        }
        effective_uri = embedded_uri(embed_root_for_default);
    }
    const std::string embedded_root = embedded_root_of(effective_uri);
    if (!embedded_root.empty()) DS_TRY(write_embedded_qemu_conf(embedded_root));

    if (!init_libvirt_once()) {
        return libvirt_error(errc::kUnavailable, "cannot initialise libvirt", effective_uri);
    }
    // The event loop must run before an embedded driver is opened.
    EventLoopThread::acquire();
    // Guests on an embedded driver are reached through sockets here; on any
    // other QEMU connection through streams over it (domain_xml.h).
    const GuestEndpoints endpoints = embedded_root.empty() && effective_uri.rfind("test:", 0) != 0
                                         ? GuestEndpoints::kLibvirtStreams
                                         : GuestEndpoints::kLocalSockets;
    virConnectPtr connection = virConnectOpen(effective_uri.c_str());
    if (connection == nullptr && allow_unreachable && embedded_root.empty()) {
        Error error = libvirt_error(errc::kUnavailable, "cannot connect", effective_uri);
        auto unreachable = std::unique_ptr<LibvirtHypervisor>(
            new LibvirtHypervisor(nullptr, effective_uri, DomainXmlDialect::kQemu, false,
                                  LocalGuestFiles{guest_files_directory}, endpoints));
        unreachable->connection_failure_ = error.message;
        unreachable->last_open_attempt_ = std::chrono::steady_clock::now();
        return unreachable;
    }
    if (connection == nullptr) {
        Error error = libvirt_error(errc::kUnavailable, "cannot connect", effective_uri);
        EventLoopThread::release();
        // Run as root, the embedded driver looks up Debian's QEMU user before
        // it reads qemu.conf, so the user= line there cannot help.
        if (!embedded_root.empty() && ::geteuid() == 0 && ::getpwnam(kDebianQemuUser) == nullptr) {
            error.message +=
                std::string("; as root the embedded QEMU driver needs the '") + kDebianQemuUser +
                "' user and group (package libvirt-daemon-system creates them, or: useradd "
                "--system --user-group --no-create-home " +
                kDebianQemuUser + ")";
        }
        return error;
    }
    const char* type = virConnectGetType(connection);  // owned by libvirt
    const DomainXmlDialect dialect = type != nullptr && std::string_view(type) == "TEST"
                                         ? DomainXmlDialect::kTestDriver
                                         : DomainXmlDialect::kQemu;
    // Asked once: a connection's drivers do not change while it is open.
    const Result<bool> secrets = ds::has_secret_driver(connection, effective_uri);
    if (!secrets.ok()) {
        virConnectClose(connection);
        EventLoopThread::release();
        return secrets.error();
    }
    return std::unique_ptr<LibvirtHypervisor>(
        new LibvirtHypervisor(connection, effective_uri, dialect, *secrets,
                              LocalGuestFiles{guest_files_directory}, endpoints));
}

LibvirtHypervisor::LibvirtHypervisor(virConnectPtr connection, std::string uri,
                                     DomainXmlDialect dialect, bool secret_driver,
                                     LocalGuestFiles guest_files, GuestEndpoints endpoints)
    : connection_(connection),
      uri_(std::move(uri)),
      dialect_(dialect),
      secret_driver_(secret_driver),
      guest_files_(std::move(guest_files)),
      endpoints_(endpoints),
      remote_(is_remote_libvirt_uri(uri_)) {}

bool is_remote_libvirt_uri(std::string_view uri) {
    const std::size_t scheme_end = uri.find("://");
    if (scheme_end == std::string_view::npos) return false;
    const std::string_view rest = uri.substr(scheme_end + 3);
    return !rest.empty() && rest.front() != '/';
}

void LibvirtHypervisor::use_image_pool(const std::string& pool, const std::string& prefix) {
    images_ = std::make_unique<PoolImages>(*this, pool, prefix);
}

Result<GuestImage> LibvirtHypervisor::stage_image(const GuestImage& local) {
    if (!images_) return local;
    return images_->stage(local);
}

void LibvirtHypervisor::release_image(const GuestImage& staged) {
    if (images_) images_->release(staged);
}

LibvirtHypervisor::~LibvirtHypervisor() {
    {
        std::lock_guard lock(consoles_mutex_);
        consoles_.clear();  // their streams belong to the connection
    }
    if (connection_ != nullptr) virConnectClose(connection_);
    for (virConnectPtr retired : retired_) virConnectClose(retired);
    EventLoopThread::release();
}

Result<virConnectPtr> LibvirtHypervisor::live_connection() {
    std::lock_guard lock(connection_mutex_);
    const bool embedded = endpoints_ == GuestEndpoints::kLocalSockets;
    if (connection_ != nullptr && (embedded || virConnectIsAlive(connection_) == 1)) {
        return connection_;
    }
    reset_libvirt_error();
    const auto now = std::chrono::steady_clock::now();
    if (now - last_open_attempt_ >= kReconnectInterval) {
        last_open_attempt_ = now;
        if (virConnectPtr fresh = virConnectOpen(uri_.c_str())) {
            const Result<bool> secrets = ds::has_secret_driver(fresh, uri_);
            secret_driver_ = secrets.ok() && *secrets;
            if (connection_ != nullptr) retired_.push_back(connection_);
            connection_ = fresh;
            connection_failure_.clear();
            ++reconnects_;
            reconnected_ = true;
            return connection_;
        }
        connection_failure_ = libvirt_error(errc::kUnavailable, "cannot connect", uri_).message;
    }
    return make_error(
        errc::kUnavailable,
        "host unreachable: " + (connection_failure_.empty()
                                    ? "libvirt: the connection to " + uri_ + " was lost"
                                    : connection_failure_));
}

Json LibvirtHypervisor::reachability() {
    const Result<virConnectPtr> connection = live_connection();
    std::lock_guard lock(connection_mutex_);
    Json status = {{"state", connection.ok() ? "connected" : "unreachable"},
                   {"reconnects", reconnects_}};
    if (!connection.ok()) status["error"] = connection.error().message;
    return status;
}

bool LibvirtHypervisor::take_reconnected() {
    std::lock_guard lock(connection_mutex_);
    return std::exchange(reconnected_, false);
}

Status LibvirtHypervisor::start_vm(const VmRequest& request) {
    DS_ASSIGN_OR_RETURN(virConnectPtr connection, live_connection());
    if (DomainHandle existing{virDomainLookupByName(connection, request.name.c_str())}) {
        return make_error(errc::kConflict,
                          "libvirt: domain " + request.name + " already exists (" + uri_ + ")");
    }
    virResetLastError();  // the failed lookup's "no domain" is expected
    if (remote_ && (!request.write_log_path.empty() || !request.extra_disks.empty())) {
        return make_error(errc::kUnsupported,
                          "libvirt: a durability run's write log and crash images are files this "
                          "daemon reads and writes on its own machine; " +
                              uri_ + " is another machine (run durability sweeps on a local host)");
    }
    if (!request.write_log_path.empty()) {
        const std::string reason = write_log_unsupported_reason(request.config, request.data_disk);
        if (!reason.empty()) {
            return make_error(errc::kUnsupported, "libvirt: data disk with a write log: " + reason);
        }
    }
    DS_TRY(check_extra_disks(request.extra_disks));
    DS_TRY(extra_disks_attachable(request.extra_disks));
    if (!guest_files_.prepare(request.name)) {
        return make_error(errc::kIo,
                          "cannot create the guest files directory " + guest_files_.directory);
    }
    const Result<std::string> secret_uuid = define_rbd_secret_for(request);
    if (!secret_uuid.ok()) return secret_uuid.error();
    std::string xml = build_domain_xml(request, guest_files_, dialect_, *secret_uuid, endpoints_);
    if (domain_xml_filter_) xml = domain_xml_filter_(request, std::move(xml));
    // VALIDATE: check the XML against libvirt's schema first, so a mistake in
    // it is reported as such rather than as whatever it later breaks.
    DomainHandle domain{virDomainCreateXML(connection, xml.c_str(), VIR_DOMAIN_START_VALIDATE)};
    Result<GuestConsole> console =
        domain ? capture_console(domain.get(), request.name)
               : Result<GuestConsole>(
                     libvirt_error(errc::kHypervisor, "cannot start domain", uri_, request.name));
    if (!console.ok()) {
        Error error = console.error();
        // Nothing is left of a failed start: the domain, the key's secret.
        Status removed = domain ? destroy_domain(request.name) : ok_status();
        if (removed.ok()) removed = remove_rbd_secret(request.name);
        if (!removed.ok()) error.message += "; and then " + removed.error().message;
        return error;
    }
    std::lock_guard lock(consoles_mutex_);
    consoles_[request.name] = std::move(console).value();
    return ok_status();
}

Result<LibvirtHypervisor::GuestConsole> LibvirtHypervisor::capture_console(
    virDomainPtr domain, const std::string& vm_name) {
    GuestConsole console;
    const std::string log = guest_files_.console_log(vm_name);
    if (endpoints_ == GuestEndpoints::kLocalSockets) {
        console.capture = std::make_unique<ConsoleCapture>(console_socket_path(log), log);
        return console;
    }
    virStreamPtr stream = virStreamNew(virDomainGetConnect(domain), VIR_STREAM_NONBLOCK);
    if (stream == nullptr) {
        return libvirt_error(errc::kHypervisor, "cannot make a console stream", uri_, vm_name);
    }
    // FORCE: a console left open by an earlier daemon's stream is taken over.
    if (virDomainOpenConsole(domain, nullptr, stream, VIR_DOMAIN_CONSOLE_FORCE) < 0) {
        Error error = libvirt_error(errc::kHypervisor, "cannot open the console", uri_, vm_name);
        virStreamFree(stream);
        return error;
    }
    DS_ASSIGN_OR_RETURN(console.bridge,
                        StreamBridge::start(virDomainGetConnect(domain), stream,
                                            "console of " + vm_name + " on " + uri_));
    console.capture = std::make_unique<ConsoleCapture>(console.bridge->take_local_end(), log);
    return console;
}

Result<std::unique_ptr<AgentChannel>> LibvirtHypervisor::open_agent_channel(
    const std::string& vm_name, Deadline deadline, const std::atomic<bool>* cancelled) {
    if (endpoints_ == GuestEndpoints::kLibvirtStreams) {
        return open_stream_channel(vm_name, deadline, cancelled);
    }
    return connect_unix_agent_channel(guest_files_.agent_socket(vm_name), deadline, cancelled);
}

namespace {

// The agent's line transport over a stream's bridge: the socket end the
// daemon reads, with the stream's own failure added to a read or write that
// fails because the stream ended.
class StreamAgentChannel : public AgentChannel {
  public:
    explicit StreamAgentChannel(std::unique_ptr<StreamBridge> bridge)
        : bridge_(std::move(bridge)), socket_(bridge_->take_local_end()) {}

    Result<std::string> read_line(Deadline deadline) override {
        Result<std::string> line = socket_.read_line(deadline);
        if (!line.ok() && line.error().code == errc::kIo) return with_cause(line.error());
        return line;
    }
    Status write(std::string_view data) override {
        Status written = socket_.write(data);
        if (!written.ok()) return with_cause(written.error());
        return written;
    }

  private:
    Error with_cause(Error error) const {
        const std::string cause = bridge_->failure();
        if (!cause.empty()) error.message += " (" + cause + ")";
        return error;
    }
    std::unique_ptr<StreamBridge> bridge_;  // first: outlives the socket end
    SocketAgentChannel socket_;
};

constexpr auto kChannelRetryInterval = std::chrono::milliseconds(100);

}  // namespace

Result<std::unique_ptr<AgentChannel>> LibvirtHypervisor::open_stream_channel(
    const std::string& vm_name, Deadline deadline, const std::atomic<bool>* cancelled) {
    const std::string what = "agent channel of " + vm_name + " on " + uri_;
    for (;;) {
        std::string last_error;
        if (Result<DomainHandle> domain = lookup_domain(vm_name); domain.ok()) {
            virStreamPtr stream =
                virStreamNew(virDomainGetConnect(domain->get()), VIR_STREAM_NONBLOCK);
            if (stream != nullptr &&
                virDomainOpenChannel(domain->get(), std::string(protocol::kChannelName).c_str(),
                                     stream, 0) == 0) {
                DS_ASSIGN_OR_RETURN(
                    auto bridge,
                    StreamBridge::start(virDomainGetConnect(domain->get()), stream, what));
                return std::unique_ptr<AgentChannel>(
                    std::make_unique<StreamAgentChannel>(std::move(bridge)));
            }
            last_error = libvirt_error(errc::kHypervisor, "cannot open the " + what, uri_).message;
            if (stream != nullptr) virStreamFree(stream);
        } else {
            last_error = domain.error().message;
        }
        if (cancelled != nullptr && cancelled->load()) {
            return make_error(errc::kCancelled, "run cancelled");
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            return make_error(errc::kTimeout, "cannot open the " + what + ": " + last_error);
        }
        std::this_thread::sleep_for(kChannelRetryInterval);
    }
}

std::string LibvirtHypervisor::console_tail(const std::string& vm_name, std::size_t max_bytes) {
    return guest_files_.console_tail(vm_name, max_bytes);
}

std::string LibvirtHypervisor::console_location(const std::string& vm_name) {
    return guest_files_.console_log(vm_name);
}

void LibvirtHypervisor::discard_console(const std::string& vm_name) {
    guest_files_.remove_console_log(vm_name);
}

LibvirtHypervisor::GuestConsole LibvirtHypervisor::take_console(const std::string& vm_name) {
    std::lock_guard lock(consoles_mutex_);
    auto found = consoles_.find(vm_name);
    if (found == consoles_.end()) return {};
    GuestConsole console = std::move(found->second);
    consoles_.erase(found);
    return console;
}

Result<Json> LibvirtHypervisor::applied_settings(const std::string& vm_name) {
    DS_ASSIGN_OR_RETURN(DomainHandle domain, lookup_domain(vm_name));
    // Flags 0: the live definition (what the running QEMU was started with).
    LibvirtString xml{virDomainGetXMLDesc(domain.get(), 0)};
    if (!xml) return libvirt_error(errc::kHypervisor, "cannot read domain XML", uri_, vm_name);
    // A durability run's logged data disk is on QEMU's command line, not a
    // <disk> (write_log_disk.h): QEMU's own views are all there is.
    if (dialect_ == DomainXmlDialect::kQemu &&
        std::string_view(xml.get()).find(kLoggerNode) != std::string_view::npos) {
        return logged_disk_settings(domain.get(), vm_name);
    }
    Result<Json> applied = parse_applied_disk_settings(xml.get());
    // libvirt's test driver runs no QEMU: the domain XML is all there is.
    if (!applied.ok() || dialect_ != DomainXmlDialect::kQemu) return applied;
    Result<Json> qemu = read_qemu_disk_settings(libvirt_qmp_transport(domain.get()));
    if (!qemu.ok()) return qemu.error();
    // The process is read where it runs here: the local drivers' URIs
    // (qemu:///embed, qemu:///system, qemu:///session). A remote host's QEMU
    // is out of reach: its "QEMU process" level is reported not checked.
    const bool local = uri_.starts_with("qemu:///");
    if (local) {
        DS_ASSIGN_OR_RETURN(const QemuProcessView process, read_qemu_process(vm_name));
        DS_ASSIGN_OR_RETURN(Json from_process,
                            qemu_process_disk_settings(process, qemu->value("node_name", "")));
        (*applied)["qemu_process"] = std::move(from_process);
    }
    (*applied)["qemu"] = std::move(*qemu);
    (*applied)["levels"] = qemu_levels("libvirt's live domain XML (virDomainGetXMLDesc)", local);
    return applied;
}

// The levels a QEMU guest's readback has (settings_verify.h,
// verify_applied_settings): the flat level, QMP, and the process when it
// runs on this machine. A remote process is "forbidden": the host does not
// let disksweep reach it, so by default it is reported, not failed.
Json LibvirtHypervisor::qemu_levels(std::string_view flat_source, bool local_process) const {
    Json process = {{"checked", true}, {"source", "/proc/PID of the guest's QEMU on this machine"}};
    if (!local_process) {
        process = {
            {"checked", false},
            {"reason", "QEMU runs on the remote host: its process is out of reach (" + uri_ + ")"},
            {"forbidden", true}};
    }
    return {{"domain_xml", {{"checked", true}, {"source", flat_source}}},
            {"qemu", {{"checked", true}, {"source", "QMP (virDomainQemuMonitorCommand)"}}},
            {"qemu_process", std::move(process)}};
}

Result<Json> LibvirtHypervisor::logged_disk_settings(_virDomain* domain,
                                                     const std::string& vm_name) {
    if (!uri_.starts_with("qemu:///")) {
        return make_error(errc::kUnsupported,
                          "a logged data disk's aio and discard are read from its QEMU process, "
                          "which runs on another machine (" +
                              uri_ + ")");
    }
    DS_ASSIGN_OR_RETURN(Json qemu, read_qemu_logged_disk_settings(libvirt_qmp_transport(domain),
                                                                  std::string(kLoggedVolumeNode)));
    DS_ASSIGN_OR_RETURN(const QemuProcessView process, read_qemu_process(vm_name));
    DS_ASSIGN_OR_RETURN(Json from_process,
                        qemu_process_disk_settings(process, qemu.value("node_name", "")));
    // The flat level, which the XML gives for other disks: QMP's keys, and
    // aio and discard from the process (QMP reports neither).
    Json applied = Json::object();
    for (const char* key : {"bus", "cache", "detect_zeroes", "image_format", "ssd", "iothread",
                            "queues", "iops_limit", "bandwidth_limit", "controller_model"}) {
        if (qemu.contains(key)) applied[key] = qemu[key];
    }
    applied["aio"] = from_process["aio"];
    applied["discard"] = from_process["discard"];
    applied["write_log"] = {
        {"logger_node", std::string(kLoggerNode)},
        {"domain_xml",
         "no <disk>: the data disk is on QEMU's command line (<qemu:commandline>), "
         "so its settings are read from QEMU (query-block) and its process"}};
    applied["qemu_process"] = std::move(from_process);
    applied["qemu"] = std::move(qemu);
    applied["levels"] = qemu_levels("QEMU (no <disk>: query-block and the process)", true);
    return applied;
}

Result<RunningGuest> LibvirtHypervisor::running_guest(const std::string& vm_name, Accel requested) {
    if (dialect_ != DomainXmlDialect::kQemu) return Hypervisor::running_guest(vm_name, requested);
    DS_ASSIGN_OR_RETURN(DomainHandle domain, lookup_domain(vm_name));
    return read_qemu_accel(libvirt_qmp_transport(domain.get()));
}

Result<Json> LibvirtHypervisor::disk_counters(const std::string& vm_name) {
    DS_ASSIGN_OR_RETURN(DomainHandle domain, lookup_domain(vm_name));
    if (dialect_ != DomainXmlDialect::kQemu) {
        return make_error(errc::kUnsupported,
                          "libvirt's test driver has no disk counters (" + uri_ + ")");
    }
    return read_qemu_disk_counters(libvirt_qmp_transport(domain.get()));
}

Result<Json> LibvirtHypervisor::emulator_cpu_times(const std::string& vm_name) {
    DS_ASSIGN_OR_RETURN(DomainHandle domain, lookup_domain(vm_name));
    // As applied_settings: only a local driver's QEMU has its /proc here.
    if (dialect_ != DomainXmlDialect::kQemu || !uri_.starts_with("qemu:///")) {
        return make_error(errc::kUnsupported, "the QEMU of " + vm_name +
                                                  " does not run on this machine (" + uri_ + ")");
    }
    DS_ASSIGN_OR_RETURN(const QemuThreadRoles roles,
                        read_qemu_thread_roles(libvirt_qmp_transport(domain.get())));
    DS_ASSIGN_OR_RETURN(const int pid, find_qemu_pid(vm_name));
    DS_ASSIGN_OR_RETURN(const QemuCpuReading reading, read_qemu_cpu(pid));
    return cpu_times_by_role(reading, roles, ::sysconf(_SC_CLK_TCK));
}

Result<LibvirtHypervisor::DomainHandle> LibvirtHypervisor::lookup_domain(
    const std::string& vm_name) {
    DS_ASSIGN_OR_RETURN(virConnectPtr connection, live_connection());
    DomainHandle domain{virDomainLookupByName(connection, vm_name.c_str())};
    if (!domain) {
        const bool missing = last_libvirt_error_code() == VIR_ERR_NO_DOMAIN;
        return libvirt_error(missing ? errc::kNotFound : errc::kHypervisor, "cannot look up domain",
                             uri_, vm_name);
    }
    return domain;
}

Result<bool> LibvirtHypervisor::is_running(const std::string& vm_name) {
    DS_ASSIGN_OR_RETURN(virConnectPtr connection, live_connection());
    DomainHandle domain{virDomainLookupByName(connection, vm_name.c_str())};
    if (!domain) {
        if (last_libvirt_error_code() == VIR_ERR_NO_DOMAIN) {
            virResetLastError();
            return false;
        }
        return libvirt_error(errc::kHypervisor, "cannot look up domain", uri_, vm_name);
    }
    const int active = virDomainIsActive(domain.get());
    if (active < 0) {
        // A transient domain that ended between lookup and query is gone.
        if (last_libvirt_error_code() == VIR_ERR_NO_DOMAIN) {
            virResetLastError();
            return false;
        }
        return libvirt_error(errc::kHypervisor, "cannot query domain state", uri_, vm_name);
    }
    return active == 1;
}

Result<std::string> LibvirtHypervisor::define_rbd_secret_for(const VmRequest& request) {
    const auto* rbd = std::get_if<RbdDisk>(&request.data_disk);
    if (rbd == nullptr || !secret_driver_ || !rbd_key_fits_secret(*rbd)) return std::string();
    const Result<SecretBytes> key = read_cephx_key(rbd->keyring, rbd->user);
    if (!key.ok()) {
        return make_error(errc::kHypervisor, "cannot give guest " + request.name +
                                                 " its cephx key: " + key.error().message);
    }
    DS_ASSIGN_OR_RETURN(virConnectPtr connection, live_connection());
    return define_rbd_secret(connection, uri_, request.name, *key);
}

Status LibvirtHypervisor::remove_rbd_secret(const std::string& vm_name) {
    if (!secret_driver_) return ok_status();
    DS_ASSIGN_OR_RETURN(virConnectPtr connection, live_connection());
    return undefine_rbd_secret(connection, uri_, vm_name);
}

Status LibvirtHypervisor::destroy_vm(const std::string& vm_name) {
    // Declared first, so it is destroyed last: once QEMU is gone the capture
    // reads the console to its end and stops.
    const GuestConsole console = take_console(vm_name);
    // Connections made already are unaffected; nothing new can connect.
    guest_files_.remove_socket(vm_name);
    DS_TRY(destroy_domain(vm_name));
    // QEMU got the key when it started; the secret goes with the guest (also
    // one left by an earlier daemon whose guest is already gone).
    return remove_rbd_secret(vm_name);
}

Status LibvirtHypervisor::destroy_domain(const std::string& vm_name) {
    DS_ASSIGN_OR_RETURN(virConnectPtr connection, live_connection());
    DomainHandle domain{virDomainLookupByName(connection, vm_name.c_str())};
    if (!domain) {
        if (last_libvirt_error_code() == VIR_ERR_NO_DOMAIN) {
            virResetLastError();
            return ok_status();
        }
        return libvirt_error(errc::kHypervisor, "cannot look up domain", uri_, vm_name);
    }
    if (virDomainIsActive(domain.get()) == 1 && virDomainDestroy(domain.get()) < 0) {
        // It may have stopped on its own in the meantime (a transient domain
        // then no longer exists; a persistent one is merely inactive).
        const int code = last_libvirt_error_code();
        if (code != VIR_ERR_NO_DOMAIN && code != VIR_ERR_OPERATION_INVALID) {
            return libvirt_error(errc::kHypervisor, "cannot destroy domain", uri_, vm_name);
        }
        virResetLastError();
    }
    if (virDomainIsPersistent(domain.get()) == 1 && virDomainUndefine(domain.get()) < 0) {
        if (last_libvirt_error_code() != VIR_ERR_NO_DOMAIN) {
            return libvirt_error(errc::kHypervisor, "cannot undefine domain", uri_, vm_name);
        }
    }
    virResetLastError();
    return ok_status();
}

Result<std::vector<std::string>> LibvirtHypervisor::list_vms(const std::string& prefix) {
    DS_ASSIGN_OR_RETURN(virConnectPtr connection, live_connection());
    virDomainPtr* domains = nullptr;
    // Flags 0: running and defined-but-inactive domains alike.
    const int count = virConnectListAllDomains(connection, &domains, 0);
    if (count < 0) return libvirt_error(errc::kHypervisor, "cannot list domains", uri_);
    std::vector<std::string> names;
    for (int i = 0; i < count; ++i) {
        DomainHandle domain{domains[i]};
        const char* name = virDomainGetName(domain.get());  // owned by the domain object
        if (name != nullptr && std::string_view(name).substr(0, prefix.size()) == prefix)
            names.emplace_back(name);
    }
    std::free(domains);
    if (secret_driver_) {
        DS_ASSIGN_OR_RETURN(auto with_secrets, guests_with_rbd_secrets(connection, uri_, prefix));
        names.insert(names.end(), with_secrets.begin(), with_secrets.end());
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
}

Json LibvirtHypervisor::versions() {
    Json versions = Json::object();
    versions["hypervisor_uri"] = uri_;
    const Result<virConnectPtr> live = live_connection();
    if (!live.ok()) return versions;
    virConnectPtr connection = *live;
    unsigned long library_version = 0;
    if (virConnectGetLibVersion(connection, &library_version) == 0) {
        versions["libvirt"] = version_string(library_version);
    }
    const char* type = virConnectGetType(connection);
    if (type != nullptr) versions["hypervisor_type"] = type;
    unsigned long hypervisor_version = 0;
    if (virConnectGetVersion(connection, &hypervisor_version) == 0) {
        versions["hypervisor_version"] = version_string(hypervisor_version);
        if (type != nullptr && std::string_view(type) == "QEMU")
            versions["qemu"] = version_string(hypervisor_version);
    }
    virResetLastError();
    return versions;
}

}  // namespace ds
