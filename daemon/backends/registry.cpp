#include "daemon/backends/registry.h"

#include <algorithm>
#include <cctype>

#include "common/text.h"
#include "daemon/backends/hypervisor/libvirt/libvirt_hypervisor.h"
#include "daemon/backends/hypervisor/proxmox/proxmox_host.h"
#include "daemon/backends/storage/block/block_storage.h"
#include "daemon/backends/storage/file/file_storage.h"
#include "daemon/backends/storage/lvm_thin/lvm_thin_storage.h"
#include "daemon/backends/storage/rbd/rbd_storage.h"

namespace ds {

namespace {

// Kinds, pools and option keys: letters, digits and -_./: (never a cephx
// key, whose base64 holds '=' or '+').
bool is_config_word(std::string_view text) {
    return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '/' || c == ':';
    });
}

// Option keys are lower-case words ("mon_host"): a pasted key is not one.
bool is_option_key(std::string_view text) {
    return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) {
        return std::islower(c) || c == '_';
    });
}

std::string attaches_text(const HypervisorKindDef& kind) {
    std::vector<std::string> names;
    for (DiskSourceKind source : kind.attaches) names.emplace_back(to_string(source));
    return join(names, ", ");
}

Result<std::unique_ptr<StorageBackend>> make_file_storage(const StorageLine& line,
                                                          const StorageContext& context) {
    auto dir = line.options.find("dir");
    std::string directory =
        dir == line.options.end() ? context.default_file_directory : dir->second;
    return std::unique_ptr<StorageBackend>(
        std::make_unique<FileStorage>(std::move(directory), context.process_runner));
}

Result<std::unique_ptr<StorageBackend>> make_block_storage(const StorageLine& line,
                                                           const StorageContext&) {
    if (!line.pool.starts_with("/dev/")) {
        return make_error(errc::kInvalidArgument,
                          "storage '" + line.name() + "': the device must be a path under /dev/");
    }
    return std::unique_ptr<StorageBackend>(std::make_unique<BlockStorage>(line.pool));
}

Result<std::unique_ptr<StorageBackend>> make_lvm_thin(const StorageLine& line,
                                                      const StorageContext& context) {
    if (context.process_runner == nullptr) {
        return make_error(errc::kInternal, "lvm-thin needs a process runner");
    }
    DS_ASSIGN_OR_RETURN(auto storage, make_lvm_thin_storage(line.pool, *context.process_runner));
    return std::unique_ptr<StorageBackend>(std::move(storage));
}

Result<std::unique_ptr<StorageBackend>> make_rbd(const StorageLine& line,
                                                 const StorageContext& context) {
    if (context.process_runner == nullptr) {
        return make_error(errc::kInternal, "rbd needs a process runner");
    }
    DS_ASSIGN_OR_RETURN(auto options, rbd_storage_options(line.pool, line.options));
    return std::unique_ptr<StorageBackend>(
        std::make_unique<RbdStorage>(std::move(options), context.process_runner));
}

Result<std::unique_ptr<StorageBackend>> make_pve_storage(const StorageLine& line,
                                                         const StorageContext&) {
    return std::unique_ptr<StorageBackend>(std::make_unique<PveStorage>(line.pool));
}

// The rbd kind's option keys, from the backend's own table.
std::vector<StorageOptionDef> rbd_options() {
    std::vector<StorageOptionDef> options;
    for (const auto& key : rbd_option_keys()) options.push_back({key.key, false, key.help});
    return options;
}

const std::vector<StorageKindDef>& storage_kind_table() {
    static const std::vector<StorageKindDef> kinds = {
        {"file",
         "",
         false,
         DiskSourceKind::kFile,
         {{"dir", false, "directory of the volume files (default: the daemon's volume-dir)"}},
         "one raw (sparse) or qcow2 file per run",
         "the file's allocated blocks (st_blocks)",
         "a reflink copy (FICLONE) where the volume directory's file system shares extents, "
         "else a sparse copy (SEEK_DATA/SEEK_HOLE)",
         "a reflink or sparse copy of the volume file",
         make_file_storage},
        {"block",
         "DEVICE",
         true,
         DiskSourceKind::kBlock,
         {},
         "a spare disk, partition or loop device, given whole to one run at a time and wiped "
         "by each (refused while mounted or in use)",
         "a loop device's backing file's allocated blocks; other devices: not measured",
         "",
         "",
         make_block_storage},
        {"lvm-thin",
         "VG/POOL",
         true,
         DiskSourceKind::kBlock,
         {},
         "one thin LV per run in an existing thin pool (lvm2 + thin-provisioning-tools)",
         "the thin LV's data_percent of its size",
         "a thin snapshot (lvcreate --snapshot without a size)",
         "",
         make_lvm_thin},
        {"rbd", "POOL", true, DiskSourceKind::kRbd, rbd_options(),
         "one Ceph RBD image per run (the rbd and ceph tools of ceph-common)",
         "the image's used size (rbd du)",
         "an RBD clone of the golden image's protected snapshot (rbd snap create, snap protect, "
         "clone)",
         "", make_rbd},
        {"pve",
         "STORAGE",
         true,
         DiskSourceKind::kHypervisorAllocated,
         {},
         "a Proxmox VE storage (local-lvm, RBD, directory): PVE allocates each run's disk in "
         "the VM's config and purges it with the VM",
         "",
         "",
         "",
         make_pve_storage},
    };
    return kinds;
}

// The libvirt drivers whose guests are QEMU guests: a URI of another
// driver (lxc://, xen://, ...) is refused at start, not at the first boot.
Status check_libvirt_driver(const std::string& uri) {
    if (uri.empty()) return ok_status();
    const std::string driver = uri.substr(0, uri.find_first_of("+:"));
    if (driver == "qemu" || driver == "test") return ok_status();
    return make_error(errc::kInvalidArgument,
                      "libvirt URI " + uri + " is of driver '" + driver +
                          "'; disksweep runs QEMU guests (qemu:///..., qemu+ssh://HOST/system, "
                          "qemu+tcp://HOST:PORT/system)");
}

Result<std::unique_ptr<Hypervisor>> make_libvirt_host(const BackendLine& line,
                                                      const HostContext& context) {
    auto uri_option = line.options.find("uri");
    const std::string uri = uri_option == line.options.end() ? "" : uri_option->second;
    DS_TRY(check_libvirt_driver(uri));
    if (is_remote_libvirt_uri(uri) && line.options.count("pool") == 0) {
        return make_error(errc::kInvalidArgument,
                          uri +
                              " is another machine: its guest image and file volumes go into a "
                              "libvirt storage pool there; name a dir pool with pool=NAME");
    }
    // A remote host that is down now is kept and retried (reachability()).
    auto hypervisor = LibvirtHypervisor::connect(
        uri, context.embedded_root, context.run_dir + "/" + line.pool, is_remote_libvirt_uri(uri));
    if (!hypervisor.ok()) return hypervisor.error();
    if (context.domain_xml_filter) (*hypervisor)->set_domain_xml_filter(context.domain_xml_filter);
    return std::unique_ptr<Hypervisor>(std::move(hypervisor).value());
}

// A libvirt host's pool (`pool=`): its `file` storage, and on a remote host
// where its guest images go. A remote host reaches no storage whose volumes
// are made by tools on this machine.
Result<HostStorages> libvirt_host_storages(const BackendLine& line, Hypervisor& hypervisor,
                                           const HostContext& context) {
    auto& libvirt = static_cast<LibvirtHypervisor&>(hypervisor);
    HostStorages storages;
    storages.remote = libvirt.remote();
    if (libvirt.remote()) {
        storages.unreached_kinds = {"block", "lvm-thin"};
        storages.unreached_reason =
            "its volumes are made by running tools (losetup, lvcreate) on this machine, which a "
            "remote libvirt host's API does not reach";
    }
    const auto pool = line.options.find("pool");
    if (pool == line.options.end()) return storages;
    // A host that is down now is checked when it is reached (its runs fail
    // with the pool's error until then).
    if (libvirt.reachability().value("state", "") == "connected") {
        DS_TRY(check_libvirt_dir_pool(libvirt, pool->second));
    }
    if (libvirt.remote()) libvirt.use_image_pool(pool->second, context.resource_prefix);
    storages.own.push_back(std::make_unique<LibvirtPoolStorage>(libvirt, pool->second));
    return storages;
}

Result<std::unique_ptr<Hypervisor>> make_proxmox_host(const BackendLine& line, const HostContext&) {
    DS_ASSIGN_OR_RETURN(auto hypervisor, make_proxmox_hypervisor(line.options));
    return std::unique_ptr<Hypervisor>(std::move(hypervisor));
}

// The preflight at start (ProxmoxHypervisor::check_access): the PVE release
// and the token's privileges on the storages of `storages=` (the pve:
// ones), the template's, the id range and the bridges. A release or a
// token that cannot sweep refuses the host, saying what to grant; a PVE
// that does not answer now is checked before its first run.
Result<HostStorages> proxmox_host_storages(const BackendLine& line, Hypervisor& hypervisor,
                                           const HostContext&) {
    std::vector<std::string> storages;
    if (const auto listed = line.options.find("storages"); listed != line.options.end()) {
        for (const std::string& name : split_list(listed->second, '|')) {
            if (name.starts_with("pve:")) storages.push_back(name.substr(4));
        }
    }
    auto* proxmox = dynamic_cast<ProxmoxHypervisor*>(&hypervisor);
    if (proxmox != nullptr) DS_TRY(proxmox->check_access(storages));
    return HostStorages{};
}

// `nodes=`: one line per cluster node, NAME/NODE, with run_node set.
Result<std::vector<BackendLine>> expand_proxmox_host_line(const BackendLine& line) {
    DS_ASSIGN_OR_RETURN(auto nodes, proxmox_host_nodes(line.options));
    if (nodes.empty()) return std::vector<BackendLine>{line};
    std::vector<BackendLine> members;
    for (const std::string& node : nodes) {
        BackendLine member = line;
        member.pool = line.pool + "/" + node;
        member.options.erase(std::string(kProxmoxNodesKey));
        member.options["run_node"] = node;
        members.push_back(std::move(member));
    }
    return members;
}

// The proxmox kind's keys: the client's and the hypervisor's own tables.
std::vector<BackendOptionDef> proxmox_options() {
    std::vector<BackendOptionDef> options;
    for (const auto& key : pve_option_keys()) options.push_back({key.key, false, key.help});
    for (const auto& key : proxmox_hypervisor_option_keys()) {
        options.push_back({key.key, false, key.help});
    }
    options.push_back({kProxmoxNodesKey, false, kProxmoxNodesHelp});
    return options;
}

const std::vector<HypervisorKindDef>& hypervisor_kind_table() {
    static const std::vector<HypervisorKindDef> kinds = {
        {"libvirt",
         {DiskSourceKind::kFile, DiskSourceKind::kBlock, DiskSourceKind::kRbd},
         "libvirt's C API: the embedded QEMU driver by default, or any libvirt URI",
         true,
         {{"uri", false,
           "libvirt URI (default: the embedded driver; qemu:///system; another machine: "
           "qemu+ssh://HOST/system, qemu+tcp://HOST:PORT/system), reached through libvirt's API "
           "only"},
          {"pool", false,
           "a dir storage pool on the host: its `file` volumes and, on another machine, the "
           "guest image (required there)"}},
         make_libvirt_host,
         {},
         {},
         libvirt_host_storages},
        {"proxmox",
         {DiskSourceKind::kHypervisorAllocated},
         "Proxmox VE through its REST API (an API token; docs/proxmox.md)",
         false,
         proxmox_options(),
         make_proxmox_host,
         expand_proxmox_host_line,
         // qemu-server builds the VM's drives itself (PVE/QemuServer.pm,
         // print_drive_commandline; no blklogwrites), the `args` escape hatch
         // is root@pam's only (PVE/API2/Qemu.pm, $check_vm_modify_config_perm),
         // and the log would be a file on the node, out of the API's reach.
         "Proxmox VE cannot put a VM's disk on QEMU's blklogwrites filter through its API "
         "(qemu-server writes the drive's -blockdev itself; 'args' is root@pam's only), and the "
         "log would stay on the node",
         proxmox_host_storages},
        // Not a hypervisor: the host baselines (spec host_baseline) run fio
        // from the host on the raw volume, which fio reaches as a file, a
        // block device or, through librbd, an RBD image.
        {std::string_view(kHostBaselineHypervisor),
         {DiskSourceKind::kFile, DiskSourceKind::kBlock, DiskSourceKind::kRbd},
         "no hypervisor: host baselines run fio from the host on the raw volume",
         false,
         {},
         nullptr,
         {},
         "host baselines run fio, not a ledger"},
    };
    return kinds;
}

const std::vector<BackendOptionDef>& host_option_table() {
    static const std::vector<BackendOptionDef> options = {
        {"parallel", false, "runs this host executes at the same time (default 1)"},
        {"storages", false,
         "the storages this host reaches, separated by '|' (default: every configured storage "
         "its kind attaches), e.g. file|rbd:rbd"},
    };
    return options;
}

bool has_option(std::span<const BackendOptionDef> options, std::string_view key) {
    return std::any_of(options.begin(), options.end(),
                       [&](const BackendOptionDef& def) { return def.key == key; });
}

// Unknown keys and missing required ones, against `options`.
Status check_line_options(const BackendLine& line, std::span<const BackendOptionDef> options,
                          std::span<const BackendOptionDef> also_allowed,
                          const std::function<Error(const std::string&)>& fail) {
    for (const auto& [key, value] : line.options) {
        if (has_option(options, key) || has_option(also_allowed, key)) continue;
        std::vector<std::string> valid;
        for (const auto& def : options) valid.emplace_back(def.key);
        for (const auto& def : also_allowed) valid.emplace_back(def.key);
        return fail("unknown option '" + key +
                    "'; valid: " + (valid.empty() ? "none" : join(valid, ", ")));
    }
    for (const auto& def : options) {
        if (def.required && !line.options.contains(std::string(def.key))) {
            return fail("option '" + std::string(def.key) + "' is required (" +
                        std::string(def.help) + ")");
        }
    }
    return ok_status();
}

std::string kind_names() {
    return join(storage_kind_names(), ", ");
}

}  // namespace

std::span<const StorageKindDef> storage_kinds() {
    return storage_kind_table();
}

const StorageKindDef* find_storage_kind(std::string_view kind) {
    for (const auto& def : storage_kinds()) {
        if (def.kind == kind) return &def;
    }
    return nullptr;
}

std::vector<std::string_view> storage_kind_names() {
    std::vector<std::string_view> names;
    for (const auto& kind : storage_kinds()) names.push_back(kind.kind);
    return names;
}

std::vector<std::string_view> spec_hypervisor_names() {
    std::vector<std::string_view> names;
    for (const auto& kind : hypervisor_kinds()) {
        if (kind.name != kHostBaselineHypervisor) names.push_back(kind.name);
    }
    return names;
}

std::span<const HypervisorKindDef> hypervisor_kinds() {
    return hypervisor_kind_table();
}

const HypervisorKindDef* find_hypervisor_kind(std::string_view name) {
    for (const auto& def : hypervisor_kinds()) {
        if (def.name == name) return &def;
    }
    return nullptr;
}

std::string storage_name(const StorageConfig& config) {
    return config.storage_pool.empty() ? config.storage
                                       : config.storage + ":" + config.storage_pool;
}

namespace {

// `noun` ("storage", "host") starts every error.
Result<BackendLine> parse_backend_line(std::string_view text, const std::string& noun) {
    const std::string line_text(trim_whitespace(text));
    BackendLine line;
    // Only words are echoed: a storage line may hold a secret pasted where it
    // does not belong (a cephx key as an option), and errors reach the logs.
    auto fail = [&](const std::string& why) {
        const std::string name = is_config_word(line.name()) ? " '" + line.name() + "'" : "";
        return make_error(errc::kInvalidArgument, noun + name + ": " + why);
    };
    const std::size_t first_comma = std::min(line_text.find(','), line_text.size());
    const std::string head = line_text.substr(0, first_comma);
    const std::size_t colon = std::min(head.find(':'), head.size());
    line.kind = head.substr(0, colon);
    if (colon < head.size()) line.pool = head.substr(colon + 1);
    if (line.kind.empty()) return fail("no " + noun + " kind before ','");
    if (colon < head.size() && line.pool.empty()) return fail("empty pool after ':'");
    std::size_t start = first_comma + 1;
    for (int position = 1; start <= line_text.size(); ++position) {
        const std::size_t end = std::min(line_text.find(',', start), line_text.size());
        const std::string item(
            trim_whitespace(std::string_view(line_text).substr(start, end - start)));
        start = end + 1;
        const std::size_t equals = std::min(item.find('='), item.size());
        const std::string key = item.substr(0, equals);
        if (equals == item.size() || !is_option_key(key)) {
            return fail(
                "option " +
                (is_option_key(item) ? "'" + item + "'" : "number " + std::to_string(position)) +
                " is not KEY=VALUE");
        }
        if (!line.options.emplace(key, item.substr(equals + 1)).second) {
            return fail("option '" + key + "' given twice");
        }
    }
    return line;
}

}  // namespace

Result<StorageLine> parse_storage_line(std::string_view text) {
    return parse_backend_line(text, "storage");
}

Result<BackendLine> parse_host_line(std::string_view text) {
    auto line = parse_backend_line(text, "host");
    if (line.ok() && line->pool.empty()) {
        return make_error(
            errc::kInvalidArgument,
            "host '" + line->kind + "': no name; write KIND:NAME, e.g. libvirt:node2");
    }
    return line;
}

Result<std::unique_ptr<StorageBackend>> make_storage_backend(const StorageLine& line,
                                                             const StorageContext& context) {
    const StorageKindDef* kind = find_storage_kind(line.kind);
    auto fail = [&](const std::string& why) {
        return make_error(errc::kInvalidArgument, "storage '" + line.name() + "': " + why);
    };
    if (kind == nullptr) {
        return fail("unknown storage kind '" + line.kind +
                    "'; this disksweepd has: " + kind_names());
    }
    if (kind->pool_syntax.empty() && !line.pool.empty()) {
        return fail(std::string(kind->kind) + " takes no pool after ':'");
    }
    if (kind->pool_required && line.pool.empty()) {
        return fail(std::string(kind->kind) + " needs a pool: " + std::string(kind->kind) + ":" +
                    std::string(kind->pool_syntax));
    }
    DS_TRY(check_line_options(line, kind->options, {}, fail));
    return kind->make(line, context);
}

std::span<const BackendOptionDef> host_option_defs() {
    return host_option_table();
}

Result<std::unique_ptr<Hypervisor>> make_host_hypervisor(const BackendLine& line,
                                                         const HostContext& context) {
    const HypervisorKindDef* kind = find_hypervisor_kind(line.kind);
    auto fail = [&](const std::string& why) {
        return make_error(errc::kInvalidArgument, "host '" + line.pool + "': " + why);
    };
    if (kind == nullptr || !kind->make) {
        std::vector<std::string> names;
        for (const auto& def : hypervisor_kinds()) {
            if (def.make) names.emplace_back(def.name);
        }
        return fail("unknown hypervisor kind '" + line.kind + "'; valid: " + join(names, ", "));
    }
    DS_TRY(check_line_options(line, kind->options, host_option_defs(), fail));
    BackendLine own = line;
    for (const auto& def : host_option_defs()) own.options.erase(std::string(def.key));
    auto hypervisor = kind->make(own, context);
    if (!hypervisor.ok()) return fail(hypervisor.error().message);
    return hypervisor;
}

bool HostDescription::selected_by(const std::string& pin) const {
    return pin == name || (!group.empty() && pin == group);
}

bool HostDescription::takes(const StorageConfig& config,
                            const std::vector<std::string>& pinned) const {
    if (kind != config.hypervisor || !reaches(storage_name(config))) return false;
    return pinned.empty() ||
           std::any_of(pinned.begin(), pinned.end(),
                       [this](const std::string& pin) { return selected_by(pin); });
}

bool HostDescription::reaches(const std::string& storage) const {
    const std::string kind = storage.substr(0, storage.find(':'));
    if (std::find(unreached_kinds.begin(), unreached_kinds.end(), kind) != unreached_kinds.end()) {
        return false;
    }
    return storages.empty() ||
           std::find(storages.begin(), storages.end(), storage) != storages.end();
}

void BackendCatalog::add_hypervisor(std::string kind, std::string detail) {
    hosts_.push_back({kind, kind, std::move(detail), {}});
}

Status BackendCatalog::add_host(HostDescription host) {
    for (const auto& known : hosts_) {
        if (known.name == host.name) {
            return make_error(errc::kInvalidArgument,
                              "host '" + host.name + "' is configured twice");
        }
    }
    hosts_.push_back(std::move(host));
    return ok_status();
}

Status BackendCatalog::add_storage(std::unique_ptr<StorageBackend> storage) {
    std::string name = storage->name();
    if (!storages_.emplace(name, std::move(storage)).second) {
        return make_error(errc::kInvalidArgument, "storage '" + name + "' is configured twice");
    }
    return ok_status();
}

std::string BackendCatalog::configured_storage_names() const {
    std::vector<std::string> names;
    for (const auto& [name, storage] : storages_) names.push_back(name);
    return names.empty() ? "none" : join(names, ", ");
}

Result<StorageBackend*> BackendCatalog::storage_for(const StorageConfig& config) const {
    const std::string name = storage_name(config);
    auto found = storages_.find(name);
    if (found == storages_.end()) {
        return make_error(errc::kNotConfigured, "storage '" + name +
                                                    "' is not configured on this disksweepd; "
                                                    "configured storages: " +
                                                    configured_storage_names() +
                                                    " (add a `storage = " + name +
                                                    ",...` line to disksweepd.conf)");
    }
    return found->second.get();
}

Status BackendCatalog::check_hosts(const StorageConfig& config,
                                   const std::vector<std::string>& pinned) const {
    std::vector<std::string> of_kind;
    for (const auto& host : hosts_) {
        if (host.kind != config.hypervisor) continue;
        of_kind.push_back(host.name);
        if (host.takes(config, is_host_baseline(config) ? std::vector<std::string>{} : pinned))
            return ok_status();
    }
    if (of_kind.empty()) {
        std::vector<std::string> kinds;
        for (const auto& host : hosts_) {
            if (std::find(kinds.begin(), kinds.end(), host.kind) == kinds.end()) {
                kinds.push_back(host.kind);
            }
        }
        return make_error(errc::kNotConfigured,
                          "hypervisor '" + config.hypervisor +
                              "' is not configured on this disksweepd; configured hypervisors: " +
                              (kinds.empty() ? "none" : join(kinds, ", ")));
    }
    return make_error(
        errc::kNotConfigured,
        "no " + config.hypervisor + " host" +
            (pinned.empty() ? "" : " of the sweep's hosts (" + join(pinned, ", ") + ")") +
            " reaches storage '" + storage_name(config) + "'; " + config.hypervisor +
            " hosts: " + join(of_kind, ", ") + " (a host line's storages= lists what it reaches)");
}

Status BackendCatalog::check(const StorageConfig& config,
                             const std::vector<std::string>& pinned) const {
    auto storage = storage_for(config);
    DS_TRY(check_hosts(config, pinned));
    if (!storage.ok()) return storage.error();
    const HypervisorKindDef* kind = find_hypervisor_kind(config.hypervisor);
    const DiskSourceKind produced = (*storage)->produces();
    if (kind == nullptr ||
        std::find(kind->attaches.begin(), kind->attaches.end(), produced) == kind->attaches.end()) {
        return make_error(errc::kNotConfigured,
                          "hypervisor '" + config.hypervisor + "' cannot attach the " +
                              std::string(to_string(produced)) + " disks of storage '" +
                              storage_name(config) + "'" +
                              (kind ? "; it attaches: " + attaches_text(*kind) : ""));
    }
    return ok_status();
}

std::vector<StorageBackend*> BackendCatalog::storages() const {
    std::vector<StorageBackend*> out;
    for (const auto& [name, storage] : storages_) out.push_back(storage.get());
    return out;
}

Json BackendCatalog::to_json() const {
    Json json = {
        {"hypervisors", Json::array()}, {"hosts", Json::array()}, {"storages", Json::array()}};
    std::vector<std::string> kinds_listed;
    for (const auto& host : hosts_) {
        json["hosts"].push_back({{"name", host.name},
                                 {"kind", host.kind},
                                 {"detail", host.detail},
                                 {"storages", host.storages}});
        if (std::find(kinds_listed.begin(), kinds_listed.end(), host.kind) != kinds_listed.end()) {
            continue;
        }
        kinds_listed.push_back(host.kind);
        Json attaches = Json::array();
        if (const HypervisorKindDef* kind = find_hypervisor_kind(host.kind)) {
            for (DiskSourceKind source : kind->attaches) attaches.push_back(to_string(source));
        }
        json["hypervisors"].push_back(
            {{"name", host.kind}, {"detail", host.detail}, {"attaches", attaches}});
    }
    for (const auto& [name, storage] : storages_) {
        json["storages"].push_back({{"name", name}, {"produces", to_string(storage->produces())}});
    }
    return json;
}

}  // namespace ds
