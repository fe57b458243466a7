#include "daemon/backends/hypervisor/libvirt/domain_xml.h"

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <libxml/xpath.h>

#include <charconv>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "common/protocol.h"
#include "common/text.h"
#include "daemon/backends/hypervisor/libvirt/write_log_disk.h"

namespace ds {
namespace {

// ---------------------------------------------------------------------------
// Our enums in libvirt's vocabulary (domain XML attribute values).

std::string_view libvirt_cache(CacheMode cache) {
    switch (cache) {
        case CacheMode::kNone:
            return "none";
        case CacheMode::kWriteback:
            return "writeback";
        case CacheMode::kWritethrough:
            return "writethrough";
        case CacheMode::kDirectsync:
            return "directsync";
        case CacheMode::kUnsafe:
            return "unsafe";
    }
    return "none";
}

// "" = leave the attribute out, QEMU's default applies.
std::string_view libvirt_io(AioMode aio) {
    switch (aio) {
        case AioMode::kDefault:
            return "";
        case AioMode::kThreads:
            return "threads";
        case AioMode::kNative:
            return "native";
        case AioMode::kIoUring:
            return "io_uring";
    }
    return "";
}

std::string_view libvirt_detect_zeroes(DetectZeroes detect_zeroes) {
    switch (detect_zeroes) {
        case DetectZeroes::kOff:
            return "off";
        case DetectZeroes::kOn:
            return "on";
        case DetectZeroes::kUnmap:
            return "unmap";
    }
    return "off";
}

std::string_view libvirt_image_type(ImageFormat format) {
    return format == ImageFormat::kQcow2 ? "qcow2" : "raw";
}

// The only IO thread the guest has; both virtio-blk and a virtio-scsi
// controller refer to it by this id.
constexpr int kIoThreadId = 1;

// ---------------------------------------------------------------------------
// A tiny indenting writer: keeps build_domain_xml readable and makes it hard
// to forget escaping (attribute values and text always go through xml_escape).

class XmlWriter {
  public:
    // <name attrs...> with children to follow; close with close(name).
    void open(std::string_view name,
              std::initializer_list<std::pair<std::string_view, std::string>> attrs = {}) {
        start_tag(name, attrs);
        out_ += ">\n";
        ++depth_;
    }
    void close(std::string_view name) {
        --depth_;
        indent();
        out_ += "</";
        out_ += name;
        out_ += ">\n";
    }
    // <name attrs.../>; attributes with an empty value are left out.
    void empty(std::string_view name,
               std::initializer_list<std::pair<std::string_view, std::string>> attrs = {}) {
        start_tag(name, attrs);
        out_ += "/>\n";
    }
    // <name attrs...>text</name>
    void text(std::string_view name, std::string_view content,
              std::initializer_list<std::pair<std::string_view, std::string>> attrs = {}) {
        start_tag(name, attrs);
        out_ += '>';
        out_ += xml_escape(content);
        out_ += "</";
        out_ += name;
        out_ += ">\n";
    }
    std::string take() { return std::move(out_); }

  private:
    void indent() { out_.append(static_cast<std::size_t>(depth_) * 2, ' '); }
    void start_tag(std::string_view name,
                   std::initializer_list<std::pair<std::string_view, std::string>> attrs) {
        indent();
        out_ += '<';
        out_ += name;
        for (const auto& [key, value] : attrs) {
            if (value.empty()) continue;
            out_ += ' ';
            out_ += key;
            out_ += "='";
            out_ += xml_escape(value);
            out_ += '\'';
        }
    }

    std::string out_;
    int depth_ = 0;
};

std::string str(std::string_view view) {
    return std::string(view);
}

std::string kernel_cmdline(const VmRequest& request) {
    // panic=-1: a panicking guest reboots at once, and on_reboot=destroy turns
    // that into a stopped domain instead of a hung run. quiet: only errors
    // reach the console (as on the PVE template, scripts/pve-make-template.sh);
    // every byte on the emulated UART costs the guest a VM exit, and the
    // kernel's info lines took about 1 s of a TCG boot. cryptomgr.notests:
    // no self-tests of the kernel's crypto algorithms at boot (0.3 s under
    // TCG, measured with initcall_debug). The init's own lines still show.
    // no_timer_check: the kernel's boot-time test of the IO-APIC timer
    // (check_timer) counts timer interrupts over a busy loop; under TCG on a
    // loaded host too few arrive and it panics ("IO-APIC + timer doesn't
    // work!"), as a remote-tier guest did with both cores busy. The check
    // guards against broken hardware that an emulated one is not.
    std::string cmdline = "console=ttyS0 panic=-1 quiet cryptomgr.notests no_timer_check";
    if (!request.kernel_cmdline_extra.empty()) {
        cmdline += ' ';
        cmdline += request.kernel_cmdline_extra;
    }
    return cmdline;
}

void write_os(XmlWriter& xml, const VmRequest& request, DomainXmlDialect dialect) {
    xml.open("os");
    if (dialect == DomainXmlDialect::kQemu) {
        xml.text("type", "hvm", {{"arch", "x86_64"}, {"machine", "q35"}});
    } else {
        xml.text("type", "hvm");
    }
    xml.text("kernel", request.image.kernel);
    if (!request.image.initrd.empty()) xml.text("initrd", request.image.initrd);
    xml.text("cmdline", kernel_cmdline(request));
    xml.close("os");
}

bool is_scsi(Bus bus) {
    return bus == Bus::kScsi || bus == Bus::kScsiSingle;
}

// The root disk is virtio-blk, except with the shared SCSI controller
// (bus scsi): then it is a disk of that controller too, as a guest's system
// disk is on Proxmox's virtio-scsi-pci, so the data disk really shares its
// controller (QEMU's device tree shows two devices on it, which is how the
// QEMU level tells scsi from scsi-single, qemu_monitor.h). SCSI target 1:
// the data disk is target 0.
void write_root_disk(XmlWriter& xml, const VmRequest& request) {
    const bool on_shared_controller = request.config.bus == Bus::kScsi;
    // Read-only and shared by every run, so nothing a run does can change the
    // next run's root file system.
    xml.open("disk", {{"type", "file"}, {"device", "disk"}});
    xml.empty("driver", {{"name", "qemu"}, {"type", "raw"}});
    xml.empty("source", {{"file", request.image.root_disk}});
    if (on_shared_controller) {
        xml.empty("target", {{"dev", "sdb"}, {"bus", "scsi"}});
    } else {
        xml.empty("target", {{"dev", "vda"}, {"bus", "virtio"}});
    }
    xml.empty("readonly");
    xml.text("serial", protocol::kRootDiskSerial);
    if (on_shared_controller) {
        xml.empty(
            "address",
            {{"type", "drive"}, {"controller", "0"}, {"bus", "0"}, {"target", "1"}, {"unit", "0"}});
    }
    xml.close("disk");
}

// "host:port" or "[v6]:port" -> {host, port}; a bare host keeps port ""
// (libvirt's default).
std::pair<std::string, std::string> split_monitor(const std::string& monitor) {
    if (!monitor.empty() && monitor.front() == '[') {
        const std::size_t close = monitor.find(']');
        if (close == std::string::npos) return {monitor, ""};
        const std::string port = monitor.size() > close + 2 && monitor[close + 1] == ':'
                                     ? monitor.substr(close + 2)
                                     : "";
        return {monitor.substr(1, close - 1), port};
    }
    const std::size_t colon = monitor.rfind(':');
    if (colon == std::string::npos) return {monitor, ""};
    return {monitor.substr(0, colon), monitor.substr(colon + 1)};
}

// <source> of an RBD image. With a libvirt secret the key is referenced from
// <auth>, and the ceph.conf is named only when it is the one place that says
// where the monitors are (QEMU then runs as libvirt's QEMU user, who cannot
// read a root-only config). Without a secret (libvirt 9.0's embedded driver
// has no secret driver) QEMU reads the cephx key through the ceph.conf that
// <config file> names.
void write_rbd_source(XmlWriter& xml, const RbdDisk& disk, const std::string& secret_uuid) {
    xml.open("source", {{"protocol", "rbd"}, {"name", disk.pool + "/" + disk.image}});
    for (const auto& monitor : disk.monitors) {
        const auto [host, port] = split_monitor(monitor);
        xml.empty("host", {{"name", host}, {"port", port}});
    }
    const bool with_secret = !secret_uuid.empty() && !disk.user.empty();
    if (!disk.ceph_conf.empty() && (!with_secret || disk.monitors.empty())) {
        xml.empty("config", {{"file", disk.ceph_conf}});
    }
    if (with_secret) {
        xml.open("auth", {{"username", disk.user}});
        xml.empty("secret", {{"type", "ceph"}, {"uuid", secret_uuid}});
        xml.close("auth");
    }
    xml.close("source");
}

// The <disk type> and the disk's format as QEMU opens it.
std::pair<std::string, ImageFormat> disk_type_and_format(const DiskSource& source) {
    if (const auto* file = std::get_if<FileDisk>(&source)) return {"file", file->format};
    if (std::holds_alternative<RbdDisk>(source)) return {"network", ImageFormat::kRaw};
    return {"block", ImageFormat::kRaw};
}

void write_disk_source(XmlWriter& xml, const DiskSource& source, const std::string& secret_uuid) {
    if (const auto* file = std::get_if<FileDisk>(&source)) {
        xml.empty("source", {{"file", file->path}});
    } else if (const auto* block = std::get_if<BlockDisk>(&source)) {
        xml.empty("source", {{"dev", block->path}});
    } else if (const auto* rbd = std::get_if<RbdDisk>(&source)) {
        write_rbd_source(xml, *rbd, secret_uuid);
    }
    // HypervisorAllocatedDisk: refused by the registry before any XML is made.
}

// <iotune> with the requested limits (reads and writes together), nothing
// when the disk is not throttled.
void write_iotune(XmlWriter& xml, const StorageConfig& config) {
    if (!config.iops_limit && !config.bandwidth_limit) return;
    xml.open("iotune");
    if (config.bandwidth_limit)
        xml.text("total_bytes_sec", std::to_string(*config.bandwidth_limit));
    if (config.iops_limit) xml.text("total_iops_sec", std::to_string(*config.iops_limit));
    xml.close("iotune");
}

void write_data_disk(XmlWriter& xml, const StorageConfig& config, const DiskSource& source,
                     const std::string& secret_uuid) {
    const auto [disk_type, format] = disk_type_and_format(source);
    // IO thread on the disk itself exists only for virtio-blk; for SCSI it
    // belongs to the controller (write_scsi_controller). On SATA it is written
    // anyway so that libvirt refuses it with its own message.
    const bool iothread_on_disk = config.iothread && !is_scsi(config.bus);
    // Queues likewise: a SCSI disk's belong to its controller; on SATA they are
    // written for libvirt to refuse.
    const std::string queues_on_disk =
        config.queues && !is_scsi(config.bus) ? std::to_string(*config.queues) : "";

    xml.open("disk", {{"type", disk_type}, {"device", "disk"}});
    xml.empty("driver", {{"name", "qemu"},
                         {"type", str(libvirt_image_type(format))},
                         {"cache", str(libvirt_cache(config.cache))},
                         {"io", str(libvirt_io(config.aio))},
                         {"discard", config.discard ? "unmap" : "ignore"},
                         {"detect_zeroes", str(libvirt_detect_zeroes(config.detect_zeroes))},
                         {"iothread", iothread_on_disk ? std::to_string(kIoThreadId) : ""},
                         {"queues", queues_on_disk}});
    write_disk_source(xml, source, secret_uuid);

    std::string dev;
    std::string bus;
    switch (config.bus) {
        case Bus::kVirtioBlk:
            dev = "vdb";
            bus = "virtio";
            break;
        case Bus::kScsi:
        case Bus::kScsiSingle:
            dev = "sda";
            bus = "scsi";
            break;
        case Bus::kSata:
            dev = "sda";
            bus = "sata";
            break;
    }
    // rotation_rate='1' is how libvirt says "non-rotational" (SSD emulation).
    xml.empty("target", {{"dev", dev}, {"bus", bus}, {"rotation_rate", config.ssd ? "1" : ""}});
    write_iotune(xml, config);
    xml.text("serial", protocol::kDataDiskSerial);
    if (is_scsi(config.bus)) {
        xml.empty(
            "address",
            {{"type", "drive"}, {"controller", "0"}, {"bus", "0"}, {"target", "0"}, {"unit", "0"}});
    }
    xml.close("disk");
}

// libvirt's name for the virtio disk at `index`: vda .. vdz, vdaa, vdab, ...
std::string virtio_target(std::size_t index) {
    std::string letters;
    for (std::size_t rest = index + 1; rest > 0; rest = (rest - 1) / 26) {
        letters.insert(letters.begin(), static_cast<char>('a' + (rest - 1) % 26));
    }
    return "vd" + letters;
}

// The extra disks (VmRequest::extra_disks), virtio-blk after the root (vda)
// and the data disk (vdb; or its place when the data disk is SCSI, SATA or
// logged): cache unsafe, since a crash image is thrown away after the guest
// and nothing on it needs to outlive the host.
void write_extra_disks(XmlWriter& xml, const std::vector<ExtraDisk>& disks) {
    constexpr std::size_t kFirstExtraTarget = 2;
    for (std::size_t i = 0; i < disks.size(); ++i) {
        const auto [disk_type, format] = disk_type_and_format(disks[i].source);
        xml.open("disk", {{"type", disk_type}, {"device", "disk"}});
        xml.empty("driver", {{"name", "qemu"},
                             {"type", str(libvirt_image_type(format))},
                             {"cache", str(libvirt_cache(CacheMode::kUnsafe))}});
        write_disk_source(xml, disks[i].source, "");
        xml.empty("target", {{"dev", virtio_target(kFirstExtraTarget + i)}, {"bus", "virtio"}});
        xml.text("serial", disks[i].serial);
        xml.close("disk");
    }
}

// scsi: the one virtio-scsi controller every SCSI disk of the guest shares
// (Proxmox's "virtio-scsi-pci"), the root disk included (write_root_disk).
// scsi-single: a controller of the data disk's own (Proxmox's
// "virtio-scsi-single"), which is where an IO thread for a SCSI disk lives.
// Both are the controller at index 0; the user alias names which one was
// meant. An IO thread requested with the shared controller is given to the
// shared controller.
void write_scsi_controller(XmlWriter& xml, const StorageConfig& config) {
    const bool own_controller = config.bus == Bus::kScsiSingle;
    xml.open("controller", {{"type", "scsi"}, {"index", "0"}, {"model", "virtio-scsi"}});
    if (config.iothread || config.queues) {
        xml.empty("driver", {{"queues", config.queues ? std::to_string(*config.queues) : ""},
                             {"iothread", config.iothread ? std::to_string(kIoThreadId) : ""}});
    }
    xml.empty("alias", {{"name", str(own_controller ? kDataDiskScsiControllerAlias
                                                    : kSharedScsiControllerAlias)}});
    xml.close("controller");
}

// libvirt's namespace for QEMU's own arguments (<qemu:commandline>).
constexpr std::string_view kQemuNamespace = "http://libvirt.org/schemas/domain/qemu/1.0";

// The arguments libvirt appends to QEMU's command line as given
// (write_log_disk.h says why the logged data disk goes there).
void write_qemu_commandline(XmlWriter& xml, const std::vector<std::string>& args) {
    xml.open("qemu:commandline");
    for (const std::string& arg : args) xml.empty("qemu:arg", {{"value", arg}});
    xml.close("qemu:commandline");
}

// ---------------------------------------------------------------------------
// libxml2 plumbing for the reverse mapping.

struct XmlDocFree {
    void operator()(xmlDoc* doc) const { xmlFreeDoc(doc); }
};
struct XPathContextFree {
    void operator()(xmlXPathContext* context) const { xmlXPathFreeContext(context); }
};
struct XPathObjectFree {
    void operator()(xmlXPathObject* object) const { xmlXPathFreeObject(object); }
};
using XmlDocPtr = std::unique_ptr<xmlDoc, XmlDocFree>;
using XPathContextPtr = std::unique_ptr<xmlXPathContext, XPathContextFree>;
using XPathObjectPtr = std::unique_ptr<xmlXPathObject, XPathObjectFree>;

void init_libxml_once() {
    // xmlInitParser must run once before threads use libxml2 concurrently.
    static std::once_flag once;
    std::call_once(once, [] { xmlInitParser(); });
}

const xmlChar* to_xml_chars(const std::string& text) {
    return reinterpret_cast<const xmlChar*>(text.c_str());
}

// The string value of XPath `expression` evaluated at `node` ("" when it
// selects nothing).
std::string xpath_string(xmlXPathContext* context, xmlNode* node, const std::string& expression) {
    const std::string wrapped = "string(" + expression + ")";
    XPathObjectPtr result(xmlXPathNodeEval(node, to_xml_chars(wrapped), context));
    if (!result || result->type != XPATH_STRING || result->stringval == nullptr) return "";
    return reinterpret_cast<const char*>(result->stringval);
}

// The first node `expression` selects at `node`, or nullptr.
xmlNode* xpath_first_node(xmlXPathContext* context, xmlNode* node, const std::string& expression) {
    XPathObjectPtr result(xmlXPathNodeEval(node, to_xml_chars(expression), context));
    if (!result || result->type != XPATH_NODESET || result->nodesetval == nullptr ||
        result->nodesetval->nodeNr == 0) {
        return nullptr;
    }
    return result->nodesetval->nodeTab[0];
}

Error xml_error(const std::string& what) {
    return make_error(errc::kHypervisor, "domain XML: " + what);
}

// A decimal integer > 0 (libvirt's <iotune> values and queue counts).
std::optional<std::uint64_t> parse_positive(const std::string& text) {
    std::uint64_t number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc() || end != text.data() + text.size() || number == 0)
        return std::nullopt;
    return number;
}

// The serial console and the agent's virtio-serial channel (GuestEndpoints).
void write_guest_endpoints(XmlWriter& xml, const VmRequest& request, const LocalGuestFiles& files,
                           GuestEndpoints endpoints) {
    const bool local = endpoints == GuestEndpoints::kLocalSockets;
    // QEMU serves the console; the daemon captures it with a size bound. A
    // file chardev would grow as long as the guest prints.
    xml.open("serial", {{"type", local ? "unix" : "pty"}});
    if (local) {
        xml.empty("source", {{"mode", "bind"},
                             {"path", console_socket_path(files.console_log(request.name))}});
    }
    xml.empty("target", {{"port", "0"}});
    xml.close("serial");

    xml.open("channel", {{"type", "unix"}});
    if (local) {
        xml.empty("source", {{"mode", "bind"}, {"path", files.agent_socket(request.name)}});
    } else {
        xml.empty("source", {{"mode", "bind"}});
    }
    xml.empty("target", {{"type", "virtio"}, {"name", str(protocol::kChannelName)}});
    xml.close("channel");
}

}  // namespace

std::string console_socket_path(const std::string& console_log_path) {
    return console_log_path + ".sock";
}

std::string xml_escape(std::string_view text) {
    std::string escaped;
    escaped.reserve(text.size());
    for (char c : text) {
        switch (c) {
            case '&':
                escaped += "&amp;";
                break;
            case '<':
                escaped += "&lt;";
                break;
            case '>':
                escaped += "&gt;";
                break;
            case '\'':
                escaped += "&apos;";
                break;
            case '"':
                escaped += "&quot;";
                break;
            default:
                escaped += c;
        }
    }
    return escaped;
}

std::string build_domain_xml(const VmRequest& request, const LocalGuestFiles& files,
                             DomainXmlDialect dialect, const std::string& rbd_secret_uuid,
                             GuestEndpoints endpoints) {
    const StorageConfig& config = request.config;
    const bool logged = !request.write_log_path.empty();
    XmlWriter xml;
    // 'qemu' is libvirt's name for TCG (QEMU without hardware acceleration).
    std::string domain_type = request.accel == Accel::kKvm ? "kvm" : "qemu";
    if (dialect == DomainXmlDialect::kTestDriver) domain_type = "test";
    xml.open("domain", {{"type", domain_type}, {"xmlns:qemu", logged ? str(kQemuNamespace) : ""}});
    xml.text("name", request.name);
    xml.text("memory", std::to_string(request.memory_mib), {{"unit", "MiB"}});
    xml.text("vcpu", std::to_string(request.vcpus));
    // One IO thread whenever one is asked for: virtio-blk and virtio-scsi
    // controllers use it; on SATA the disk's iothread attribute is then
    // refused by libvirt for the real reason (AHCI has none).
    if (config.iothread) xml.text("iothreads", std::to_string(kIoThreadId));
    write_os(xml, request, dialect);
    xml.open("features");
    // ACPI so that `poweroff` in the guest ends the domain.
    xml.empty("acpi");
    xml.empty("apic");
    xml.close("features");
    if (dialect == DomainXmlDialect::kQemu && request.accel == Accel::kKvm) {
        xml.empty("cpu", {{"mode", "host-passthrough"}});
    }
    xml.empty("clock", {{"offset", "utc"}});
    // Every way the guest can end ends the domain: a run never reboots into a
    // second life, and a transient domain disappears once destroyed.
    xml.text("on_poweroff", "destroy");
    xml.text("on_reboot", "destroy");
    xml.text("on_crash", "destroy");

    xml.open("devices");
    write_root_disk(xml, request);
    if (!logged) write_data_disk(xml, config, request.data_disk, rbd_secret_uuid);
    write_extra_disks(xml, request.extra_disks);
    if (is_scsi(config.bus)) write_scsi_controller(xml, config);
    // No USB: nothing in the guest uses it, and it only adds noise.
    xml.empty("controller", {{"type", "usb"}, {"model", "none"}});
    xml.empty("controller", {{"type", "virtio-serial"}, {"index", "0"}});

    write_guest_endpoints(xml, request, files, endpoints);
    xml.empty("memballoon", {{"model", "none"}});
    // The host's entropy: without it the guest kernel's random pool is not
    // ready for seconds after boot, and each mkfs waits about 3 s under TCG
    // (guest/initramfs/modules.txt loads virtio_rng).
    xml.open("rng", {{"model", "virtio"}});
    xml.text("backend", "/dev/urandom", {{"model", "random"}});
    xml.close("rng");
    xml.close("devices");
    if (logged) {
        write_qemu_commandline(
            xml, write_log_disk_args(config, request.data_disk, request.write_log_path));
    }
    xml.close("domain");
    return xml.take();
}

std::string data_disk_xml(const StorageConfig& config, const DiskSource& source,
                          const std::string& rbd_secret_uuid) {
    XmlWriter xml;
    write_data_disk(xml, config, source, rbd_secret_uuid);
    return xml.take();
}

std::string scsi_controller_xml(const StorageConfig& config) {
    if (!is_scsi(config.bus)) return "";
    XmlWriter xml;
    write_scsi_controller(xml, config);
    return xml.take();
}

std::string libvirt_unsupported_reason(const StorageConfig& config) {
    std::vector<std::string> reasons;
    if (config.ssd && config.bus == Bus::kVirtioBlk) {
        reasons.push_back(
            "ssd: virtio-blk has no rotation rate (libvirt accepts rotation_rate only on scsi, "
            "sata, ide)");
    }
    if (config.iothread && config.bus == Bus::kSata) {
        reasons.push_back("iothread: SATA (AHCI) disks have no IO thread");
    }
    if (config.queues && config.bus == Bus::kSata) {
        reasons.push_back("queues: SATA (AHCI) disks have no virtio queues");
    }
    if (config.aio == AioMode::kNative && config.cache != CacheMode::kNone &&
        config.cache != CacheMode::kDirectsync) {
        reasons.push_back(
            "aio native: QEMU requires O_DIRECT, i.e. cache none or directsync, not " +
            str(libvirt_cache(config.cache)));
    }
    if (config.detect_zeroes == DetectZeroes::kUnmap && !config.discard) {
        reasons.push_back(
            "detect_zeroes unmap: needs discard; without it libvirt passes detect-zeroes=on");
    }
    return join(reasons, "; ");
}

namespace {

// The live XML as a document; libxml2's own message when it does not parse.
Result<XmlDocPtr> parse_domain_xml(const std::string& live_xml) {
    init_libxml_once();
    // NONET: never fetch anything a document refers to. NOERROR/NOWARNING:
    // errors come back as values, not as text on stderr.
    XmlDocPtr doc(xmlReadMemory(live_xml.data(), static_cast<int>(live_xml.size()), "domain.xml",
                                nullptr,
                                XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING));
    if (!doc) {
        const xmlError* error = xmlGetLastError();
        std::string detail =
            error != nullptr && error->message != nullptr ? error->message : "unknown error";
        while (!detail.empty() && (detail.back() == '\n' || detail.back() == ' '))
            detail.pop_back();
        return xml_error("does not parse: " + detail);
    }
    return doc;
}

// The data disk's bus as disksweep names it, with what of it may live on
// its controller (a SCSI disk's IO thread and queues are its controller's).
struct AppliedBus {
    std::string bus;
    bool iothread = false;
    std::string queues;
    std::string controller_model;
};

// A SCSI disk's: read from the controller its <address> names (index 0
// when it names none).
Result<AppliedBus> applied_scsi_bus(xmlXPathContext* context, xmlNode* root, xmlNode* disk) {
    std::string controller_index = xpath_string(context, disk, "address/@controller");
    if (controller_index.empty()) controller_index = "0";
    xmlNode* controller = xpath_first_node(
        context, root,
        "/domain/devices/controller[@type='scsi'][@index='" + controller_index + "']");
    if (controller == nullptr)
        return xml_error("no SCSI controller " + controller_index + " for the data disk");
    const auto controller_attr = [&](const std::string& path) {
        return xpath_string(context, controller, path);
    };
    AppliedBus applied;
    applied.controller_model = controller_attr("@model");
    applied.iothread = !controller_attr("driver/@iothread").empty();
    applied.queues = controller_attr("driver/@queues");
    const std::string alias = controller_attr("alias/@name");
    // A controller with an IO thread is the per-disk kind unless our own
    // alias says it is the shared one (whose IO thread all its disks share).
    const bool shared = alias == kSharedScsiControllerAlias || (alias.empty() && !applied.iothread);
    applied.bus = str(to_string(shared ? Bus::kScsi : Bus::kScsiSingle));
    return applied;
}

Result<AppliedBus> applied_bus(xmlXPathContext* context, xmlNode* root, xmlNode* disk) {
    const std::string target_bus = xpath_string(context, disk, "target/@bus");
    if (target_bus == "scsi") return applied_scsi_bus(context, root, disk);
    AppliedBus applied;
    applied.bus = target_bus;  // an unknown bus is reported as libvirt names it
    applied.iothread = !xpath_string(context, disk, "driver/@iothread").empty();
    applied.queues = xpath_string(context, disk, "driver/@queues");
    if (target_bus == "virtio") {
        applied.bus = str(to_string(Bus::kVirtioBlk));
    } else if (target_bus == "sata") {
        applied.bus = str(to_string(Bus::kSata));
        applied.controller_model = "ahci";
    }
    return applied;
}

// The data disk's <driver> and <target> settings, with what libvirt means
// by an attribute it leaves out.
Json applied_driver_settings(xmlXPathContext* context, xmlNode* disk) {
    const auto disk_attr = [&](const std::string& path) {
        return xpath_string(context, disk, path);
    };
    const std::string discard = disk_attr("driver/@discard");
    std::string detect_zeroes = disk_attr("driver/@detect_zeroes");
    if (detect_zeroes.empty()) detect_zeroes = "off";
    // libvirt passes detect-zeroes=unmap to QEMU only together with
    // discard=unmap and 'on' otherwise (QEMU refuses unmap without it).
    if (detect_zeroes == "unmap" && discard != "unmap") detect_zeroes = "on";
    std::string cache = disk_attr("driver/@cache");
    if (cache.empty()) cache = "default";
    std::string aio = disk_attr("driver/@io");
    if (aio.empty()) aio = str(to_string(AioMode::kDefault));
    std::string image_format = disk_attr("driver/@type");
    if (image_format.empty()) image_format = "raw";
    return Json{
        {"cache", cache},
        {"aio", aio},
        {"discard", discard == "unmap"},
        {"detect_zeroes", detect_zeroes},
        {"ssd", disk_attr("target/@rotation_rate") == "1"},
        {"image_format", image_format},
    };
}

// The limits and queue count, present only when the XML has them, like the
// keys of to_json.
Status add_applied_numbers(xmlXPathContext* context, xmlNode* disk, const std::string& queues,
                           Json& applied) {
    const std::pair<const char*, std::string> optional_numbers[] = {
        {"iops_limit", xpath_string(context, disk, "iotune/total_iops_sec")},
        {"bandwidth_limit", xpath_string(context, disk, "iotune/total_bytes_sec")},
        {"queues", queues},
    };
    for (const auto& [key, text] : optional_numbers) {
        if (text.empty()) continue;
        const std::optional<std::uint64_t> number = parse_positive(text);
        if (!number) return xml_error(std::string(key) + " is not a positive integer: " + text);
        applied[key] = *number;
    }
    return ok_status();
}

}  // namespace

Result<Json> parse_applied_disk_settings(const std::string& live_xml) {
    DS_ASSIGN_OR_RETURN(XmlDocPtr doc, parse_domain_xml(live_xml));
    XPathContextPtr context(xmlXPathNewContext(doc.get()));
    if (!context) return xml_error("cannot create an XPath context");
    xmlNode* root = xmlDocGetRootElement(doc.get());

    const std::string data_serial(protocol::kDataDiskSerial);
    xmlNode* disk =
        xpath_first_node(context.get(), root, "/domain/devices/disk[serial='" + data_serial + "']");
    if (disk == nullptr) return xml_error("no disk with serial " + data_serial);

    DS_ASSIGN_OR_RETURN(const AppliedBus bus, applied_bus(context.get(), root, disk));
    Json applied = applied_driver_settings(context.get(), disk);
    applied["bus"] = bus.bus;
    applied["iothread"] = bus.iothread;
    applied["controller_model"] = bus.controller_model;
    DS_TRY(add_applied_numbers(context.get(), disk, bus.queues, applied));
    // How QEMU authenticates to Ceph, for an RBD disk only.
    if (xpath_string(context.get(), disk, "source/@protocol") == "rbd") {
        applied["rbd_auth"] = xpath_string(context.get(), disk, "source/auth/secret/@uuid").empty()
                                  ? str(kRbdAuthCephConf)
                                  : str(kRbdAuthLibvirtSecret);
    }
    return applied;
}

}  // namespace ds
