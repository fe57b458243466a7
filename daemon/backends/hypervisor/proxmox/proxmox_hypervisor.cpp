#include "daemon/backends/hypervisor/proxmox/proxmox_hypervisor.h"

#include <algorithm>
#include <regex>
#include <set>
#include <thread>
#include <variant>

#include "common/json_fields.h"
#include "common/protocol.h"
#include "daemon/backends/hypervisor/qemu_block.h"

namespace ds {
namespace {

using Steady = std::chrono::steady_clock;
using namespace std::chrono_literals;

// How often a clone still under way is looked at again (destroy_if_named).
constexpr auto kCloneLockPoll = 1s;

// Storage types whose volumes can only be raw: pve-storage's plugins
// without a `format` in their plugindata (LvmThinPlugin, LVMPlugin,
// RBDPlugin, ISCSIPlugin, ISCSIDirectPlugin), for which
// src/PVE/Storage/Plugin.pm default_format gives the valid formats [raw].
constexpr std::string_view kRawOnlyStorageTypes[] = {"lvmthin", "lvm", "rbd", "iscsi",
                                                     "iscsidirect"};

// HMP `info kvm` (QEMU's hmp_info_kvm): "kvm support: enabled", "disabled"
// or "not compiled". True for enabled, false for the others.
std::optional<bool> kvm_enabled_in(std::string_view text) {
    constexpr std::string_view kLead = "kvm support: ";
    const auto at = text.find(kLead);
    if (at == std::string_view::npos) return std::nullopt;
    const std::string_view answer = text.substr(at + kLead.size());
    if (answer.starts_with("enabled")) return true;
    if (answer.starts_with("disabled") || answer.starts_with("not compiled")) return false;
    return std::nullopt;
}

bool has_tag(const Json& resource) {
    if (!resource.contains("tags") || !resource["tags"].is_string()) return false;
    std::string tags = resource["tags"];
    std::replace_if(
        tags.begin(), tags.end(), [](char c) { return c == ',' || c == ' '; }, ';');
    std::size_t start = 0;
    for (;;) {
        const auto end = tags.find(';', start);
        if (tags.substr(start, end - start) == kProxmoxTag) return true;
        if (end == std::string::npos) return false;
        start = end + 1;
    }
}

}  // namespace

// ---------------------------------------------------------------------------

std::vector<std::pair<std::string, std::string>> pve_template_volumes(const Json& config) {
    static const std::regex drive_key("(ide|scsi|virtio|sata)[0-9]+|efidisk0|tpmstate0");
    std::vector<std::pair<std::string, std::string>> volumes;
    if (!config.is_object()) return volumes;
    for (const auto& item : config.items()) {
        const std::string& key = item.key();
        if (!std::regex_match(key, drive_key) || !item.value().is_string()) continue;
        auto drive = PvePropertyString::parse(item.value().get<std::string>());
        if (!drive) continue;
        const std::string& volume = drive->default_value();
        if (volume.empty() || volume == "none" || volume == "cdrom") continue;
        volumes.emplace_back(key, volume);
    }
    return volumes;
}

std::vector<std::string> pve_template_bridges(const Json& config) {
    static const std::regex net_key("net[0-9]+");
    std::set<std::string> bridges;
    if (!config.is_object()) return {};
    for (const auto& item : config.items()) {
        if (!std::regex_match(item.key(), net_key) || !item.value().is_string()) continue;
        auto nic = PvePropertyString::parse(item.value().get<std::string>());
        if (!nic) continue;
        if (auto bridge = nic->get("bridge"); bridge && !bridge->empty()) bridges.insert(*bridge);
    }
    return {bridges.begin(), bridges.end()};
}

std::string pve_storage_of(const std::string& volume) {
    const auto colon = volume.find(':');
    return colon == std::string::npos || volume.starts_with('/') ? "" : volume.substr(0, colon);
}

Status check_proxmox_options(const ProxmoxHypervisorOptions& options) {
    const auto invalid = [](const std::string& message) {
        return make_error(errc::kInvalidArgument, "proxmox: " + message);
    };
    if (options.node.empty()) return invalid("node is required");
    if (options.template_vmid < kPveVmidMin || options.template_vmid > kPveVmidMax) {
        return invalid("template_vmid must be a VM id (100..999999999)");
    }
    if (options.vmid_min < kPveVmidMin || options.vmid_max > kPveVmidMax ||
        options.vmid_min > options.vmid_max) {
        return invalid("vmid_min..vmid_max must be a range within 100..999999999");
    }
    if (options.template_vmid >= options.vmid_min && options.template_vmid <= options.vmid_max) {
        return invalid("the template's id lies in vmid_min..vmid_max: cleanup could remove it");
    }
    if (options.linked_clone && !options.clone_storage.empty()) {
        return invalid(
            "clone_storage applies to full clones only (PVE refuses it for linked ones)");
    }
    return ok_status();
}

Result<std::unique_ptr<ProxmoxHypervisor>> ProxmoxHypervisor::create(
    std::shared_ptr<PveClient> client, ProxmoxHypervisorOptions options) {
    DS_TRY(check_proxmox_options(options));
    return std::unique_ptr<ProxmoxHypervisor>(
        new ProxmoxHypervisor(std::move(client), std::move(options)));
}

ProxmoxHypervisor::ProxmoxHypervisor(std::shared_ptr<PveClient> client,
                                     ProxmoxHypervisorOptions options)
    : client_(std::move(client)), options_(std::move(options)) {}

const std::string& ProxmoxHypervisor::run_node() const {
    return options_.run_node.empty() ? options_.node : options_.run_node;
}

PveAgentOptions ProxmoxHypervisor::agent_options() const {
    return {options_.agent_program, options_.guest_job_file, options_.guest_progress_file,
            options_.agent_poll_interval, options_.guest_result_file};
}

std::string ProxmoxHypervisor::vm_path(const VmRef& vm, std::string_view tail) const {
    return pve_path({"nodes", vm.node, "qemu", std::to_string(vm.vmid)}) + std::string(tail);
}

Result<PveTaskEnd> ProxmoxHypervisor::task(PveMethod method, const std::string& path,
                                           const PveParams& params) {
    return client_->run_task(method, path, params, options_.task_timeout);
}

// ---- the preflight (pve_version.h) -------------------------------------------------------------

Result<PvePreflight> ProxmoxHypervisor::run_preflight() {
    PvePreflightTargets targets{
        options_.node, options_.template_vmid, options_.vmid_min, options_.vmid_max, {}, {}};
    std::set<std::string> storages;
    {
        std::lock_guard lock(preflight_mutex_);
        storages.insert(storages_.begin(), storages_.end());
    }
    if (!options_.clone_storage.empty()) storages.insert(options_.clone_storage);
    // The template's own storages (a clone allocates on them) and bridges
    // (SDN.Use); a token that may not read its config lacks VM.Audit there,
    // which the table names too.
    const VmRef template_vm{options_.template_vmid, options_.node};
    auto config = client_->get(vm_path(template_vm, "/config"));
    if (config.ok()) {
        for (const auto& [key, volume] : pve_template_volumes(*config)) {
            if (const std::string storage = pve_storage_of(volume); !storage.empty())
                storages.insert(storage);
        }
        targets.bridges = pve_template_bridges(*config);
    } else if (config.error().code != errc::kForbidden) {
        return config.error();
    }
    targets.storages.assign(storages.begin(), storages.end());
    return pve_preflight(*client_, targets);
}

Status ProxmoxHypervisor::check_access(const std::vector<std::string>& storages) {
    {
        std::lock_guard lock(preflight_mutex_);
        storages_ = storages;
    }
    auto found = preflight();
    if (!found.ok() && found.error().code != errc::kUnavailable &&
        found.error().code != errc::kTimeout) {
        return found.error();
    }
    return ok_status();
}

Result<PvePreflight> ProxmoxHypervisor::preflight() {
    {
        std::lock_guard lock(preflight_mutex_);
        if (preflight_) return *preflight_;
    }
    DS_ASSIGN_OR_RETURN(auto found, run_preflight());
    if (!found.ready()) {
        return make_error(errc::kForbidden,
                          "proxmox: the token cannot run sweeps here.\n" +
                              pve_preflight_report(found, client_->options().token_id));
    }
    std::lock_guard lock(preflight_mutex_);
    preflight_ = found;
    return found;
}

Result<Json> ProxmoxHypervisor::check_host() {
    DS_ASSIGN_OR_RETURN(auto found, run_preflight());
    Json missing = Json::array();
    for (const PveMissingPrivilege& entry : found.missing) {
        missing.push_back({{"path", entry.path},
                           {"privileges", entry.privileges},
                           {"need", entry.need == PveNeed::kRequired ? "required" : "verification"},
                           {"used_by", entry.used_by}});
    }
    if (found.ready()) {
        std::lock_guard lock(preflight_mutex_);
        preflight_ = found;
    }
    return Json{
        {"proxmox", found.version},
        {"rules", found.release->name},
        {"ready", found.ready()},
        {"missing", missing},
        {"monitor", found.monitor_allowed ? "allowed" : "not allowed: " + found.monitor_reason},
        {"report", pve_preflight_report(found, client_->options().token_id)}};
}

Json ProxmoxHypervisor::reachability() {
    auto found = preflight();
    if (!found.ok()) {
        const bool down =
            found.error().code == errc::kUnavailable || found.error().code == errc::kTimeout;
        return {{"state", down ? "unreachable" : "refused"}, {"error", found.error().message}};
    }
    return {
        {"state", "connected"},
        {"proxmox", found->version},
        {"rules", found->release->name},
        {"monitor", found->monitor_allowed ? "allowed" : "not allowed: " + found->monitor_reason}};
}

Result<std::optional<ProxmoxHypervisor::VmRef>> ProxmoxHypervisor::find_vm(
    const std::string& vm_name) {
    DS_ASSIGN_OR_RETURN(auto resources,
                        client_->get("/cluster/resources", PveParams().set("type", "vm")));
    for (const Json& resource : resources) {
        const int vmid = resource.value("vmid", 0);
        if (resource.value("name", "") != vm_name || !has_tag(resource) ||
            vmid < options_.vmid_min || vmid > options_.vmid_max) {
            continue;
        }
        return std::optional<VmRef>(VmRef{vmid, resource.value("node", options_.node)});
    }
    return std::optional<VmRef>();
}

Result<ProxmoxHypervisor::VmRef> ProxmoxHypervisor::require_vm(const std::string& vm_name) {
    auto vm = find_vm(vm_name);
    if (!vm) return vm.error();
    if (!*vm) return make_error(errc::kNotFound, "proxmox: no VM " + vm_name + " of disksweep's");
    return **vm;
}

// The lowest id of the range that no VM has, confirmed free by /cluster/nextid.
Result<int> ProxmoxHypervisor::allocate_vmid() {
    DS_ASSIGN_OR_RETURN(auto resources,
                        client_->get("/cluster/resources", PveParams().set("type", "vm")));
    std::vector<int> taken;
    for (const Json& resource : resources) taken.push_back(resource.value("vmid", 0));
    for (int candidate = options_.vmid_min; candidate <= options_.vmid_max; ++candidate) {
        if (std::find(taken.begin(), taken.end(), candidate) != taken.end()) continue;
        auto confirmed =
            client_->get("/cluster/nextid", PveParams().set_integer("vmid", candidate));
        if (!confirmed) {
            if (confirmed.error().code == errc::kInvalidArgument) continue;  // taken meanwhile
            return confirmed.error();
        }
        const int vmid = confirmed->is_string() ? std::stoi(confirmed->get<std::string>())
                                                : confirmed->get<int>();
        if (vmid != candidate) {
            return make_error(errc::kProtocol, "proxmox: /cluster/nextid answered " +
                                                   std::to_string(vmid) + " for " +
                                                   std::to_string(candidate));
        }
        return vmid;
    }
    return make_error(errc::kUnavailable, "proxmox: no free VM id in " +
                                              std::to_string(options_.vmid_min) + ".." +
                                              std::to_string(options_.vmid_max));
}

Status ProxmoxHypervisor::start_vm(const VmRequest& request) {
    if (!request.write_log_path.empty()) {
        return make_error(errc::kUnsupported,
                          "proxmox cannot put a data disk on a write log (durability runs need "
                          "the libvirt backend)");
    }
    if (!request.extra_disks.empty()) {
        return make_error(errc::kUnsupported,
                          "proxmox cannot attach extra disks (a checker guest's crash images are "
                          "files on the daemon's host; durability runs need the libvirt backend)");
    }
    // A host PVE did not answer at start is checked before its first run.
    DS_TRY(preflight());
    const auto* disk = std::get_if<HypervisorAllocatedDisk>(&request.data_disk);
    if (disk == nullptr) {
        return make_error(errc::kInvalidArgument,
                          "proxmox attaches only disks PVE allocates (STORAGE:SIZE), not " +
                              std::string(to_string(kind_of(request.data_disk))));
    }
    DS_ASSIGN_OR_RETURN(auto data_disk, pve_data_disk(request.config, *disk));

    // One id allocation and clone at a time in this daemon, across all its
    // Proxmox hosts: the nodes of one cluster share its VM ids.
    static std::mutex allocation_mutex;
    std::lock_guard<std::mutex> lock(allocation_mutex);
    DS_ASSIGN_OR_RETURN(auto existing, find_vm(request.name));
    if (existing) return make_error(errc::kConflict, "proxmox: VM " + request.name + " exists");
    auto vmid = allocate_vmid();
    if (!vmid) return vmid.error();
    const VmRef vm{*vmid, run_node()};
    // Recorded before the clone: whatever fails from here on (this call, the
    // daemon), the id is known and destroy_recorded_vm finds the clone,
    // which carries the run's name from its start but the tag only after
    // the config step.
    if (request.record_handle) {
        DS_TRY(request.record_handle(Json{{"vmid", vm.vmid}, {"node", vm.node}}));
    }
    Status started = clone_and_start(request, data_disk, vm);
    if (!started) (void)destroy_if_named(vm, request.name);
    return started;
}

Status ProxmoxHypervisor::clone_and_start(const VmRequest& request, const PveDataDisk& disk,
                                          const VmRef& vm) {
    PveParams clone;
    clone.set_integer("newid", vm.vmid).set("name", request.name);
    if (!options_.linked_clone) {
        clone.set_flag("full", true);
        if (!options_.clone_storage.empty()) clone.set("storage", options_.clone_storage);
    }
    if (vm.node != options_.node) clone.set("target", vm.node);
    const VmRef template_vm{options_.template_vmid, options_.node};
    DS_TRY(task(PveMethod::kPost, vm_path(template_vm, "/clone"), clone));

    PveParams config;
    config.set("tags", std::string(kProxmoxTag))
        .set_integer("cores", request.vcpus)
        .set_integer("memory", request.memory_mib);
    if (disk.scsihw) config.set("scsihw", *disk.scsihw);
    config.set_property_string(disk.key, disk.drive);
    DS_TRY(task(PveMethod::kPost, vm_path(vm, "/config"), config));
    DS_TRY(task(PveMethod::kPost, vm_path(vm, "/status/start"), PveParams()));
    return ok_status();
}

// QEMU's own view of the drive through PVE's monitor endpoint, as
// applied["qemu_info_block"], and whether that level was checked as
// applied["levels"]["qemu_info_block"] (docs/verification.md, "Levels not
// checked"). A token the preflight found without the release's monitor
// privilege is not sent to the monitor at all (PVE would refuse it): the
// level is reported forbidden. PVE 9 builds a drive as a -blockdev chain,
// whose format and cache flags only `info block -n` shows (qemu_block.h).
void ProxmoxHypervisor::add_qemu_level(const VmRef& vm, std::string_view drive_key, Json& applied) {
    Json& level = applied["levels"]["qemu_info_block"];
    auto access = preflight();
    if (access.ok() && !access->monitor_allowed) {
        level = {{"checked", false}, {"forbidden", true}, {"reason", access->monitor_reason}};
        return;
    }
    const auto not_checked = [&level](const Error& error) {
        level = {{"checked", false},
                 {"forbidden", error.code == errc::kForbidden},
                 {"reason", error.message}};
    };
    const auto monitor = [&](const char* command) -> Result<std::string> {
        auto text = client_->post(vm_path(vm, "/monitor"), PveParams().set("command", command));
        if (!text) return text.error();
        if (!text->is_string()) {
            return make_error(errc::kProtocol,
                              std::string("PVE's monitor answered `") + command + "` with no text");
        }
        return text->get<std::string>();
    };
    auto block = monitor("info block");
    if (!block) return not_checked(block.error());
    const std::string block_text = std::move(block).value();
    HmpDriveTexts texts;
    texts.info_block = block_text;
    std::string source = "info block";
    // QEMU 10's `info qtree` prints no link properties, so nothing an
    // `info` command shows names the IO thread: not asked (the reader lists
    // iothread as unseen).
    std::string nodes_text;  // kept alive for `texts`, which views it
    if (access.ok() && access->release->drive_model == PveDriveModel::kBlockdev) {
        auto nodes = monitor("info block -n");
        if (!nodes) return not_checked(nodes.error());
        nodes_text = std::move(nodes).value();
        texts.info_block_nodes = nodes_text;
        source += ", info block -n";
    }
    auto settings = parse_qemu_drive_view(texts, "drive-" + std::string(drive_key));
    if (!settings.ok()) return not_checked(settings.error());
    applied["qemu_info_block"] = std::move(settings).value();
    level = {{"checked", true}, {"source", source + " through PVE's monitor"}};
}

Result<Json> ProxmoxHypervisor::applied_settings(const std::string& vm_name) {
    DS_ASSIGN_OR_RETURN(auto vm, require_vm(vm_name));
    DS_ASSIGN_OR_RETURN(auto config, client_->get(vm_path(vm, "/config")));
    DS_ASSIGN_OR_RETURN(auto disk, read_pve_data_disk(config));
    if (!disk) {
        return make_error(errc::kNotFound, "proxmox: VM " + vm_name + " has no data disk (serial " +
                                               std::string(protocol::kDataDiskSerial) + ")");
    }
    Json applied = std::move(disk->applied);
    const VolumeFormat format = volume_format(vm, disk->drive.default_value(), disk->drive);
    if (format.format) applied["image_format"] = *format.format;
    applied["sources"] = {{"image_format", format.source}};
    add_qemu_level(vm, disk->key, applied);
    return applied;
}

// qemu-server's create_disks drops `format` from a disk it allocates
// (PVE/API2/Qemu.pm create_disks at c2287c17: `delete $disk->{format}; # no
// longer needed`), so GET config names no format for the data disk: the
// storage says what the volume is.
ProxmoxHypervisor::VolumeFormat ProxmoxHypervisor::volume_format(const VmRef& vm,
                                                                 const std::string& volid,
                                                                 const PvePropertyString& drive) {
    const std::string storage = volid.substr(0, volid.find(':'));
    // pve-storage src/PVE/API2/Storage/Content.pm `info`: the format
    // volume_size_info reads from the volume itself. It checks
    // Datastore.Audit (check_volume_access): a token the preflight found
    // without it is not sent there, PVE would refuse it.
    const std::string storage_path = "/storage/" + storage;
    auto access = preflight();
    const bool may_read =
        !access.ok() || std::none_of(access->missing.begin(), access->missing.end(),
                                     [&](const PveMissingPrivilege& missing) {
                                         return missing.path == storage_path &&
                                                missing.privileges == "Datastore.Audit";
                                     });
    std::string content_problem = "the token lacks Datastore.Audit on " + storage_path;
    if (may_read) {
        auto content =
            client_->get(pve_path({"nodes", vm.node, "storage", storage, "content", volid}));
        if (content.ok() && content->is_object() && (*content)["format"].is_string() &&
            !(*content)["format"].get<std::string>().empty()) {
            return {(*content)["format"].get<std::string>(), "PVE storage content of " + volid};
        }
        content_problem =
            content.ok() ? "its content entry names no format" : content.error().message;
    }
    if (auto format = drive.get("format")) return {*format, "PVE config format="};
    auto storages =
        client_->get(pve_path({"nodes", vm.node, "storage"}), PveParams().set("storage", storage));
    if (storages.ok() && storages->is_array()) {
        for (const Json& entry : *storages) {
            if (!entry.is_object() || entry.value("storage", "") != storage) continue;
            const std::string type = entry.value("type", "");
            for (std::string_view raw_only : kRawOnlyStorageTypes) {
                if (type == raw_only) {
                    return {"raw", "PVE storage type " + type + " (raw volumes only)"};
                }
            }
            return {std::nullopt, "not reported: storage " + storage + " (type " + type +
                                      ") holds several formats and " + content_problem};
        }
    }
    return {std::nullopt, "not reported: " + content_problem};
}

Result<bool> ProxmoxHypervisor::is_running(const std::string& vm_name) {
    auto vm = find_vm(vm_name);
    if (!vm) return vm.error();
    if (!*vm) return false;
    auto status = client_->get(vm_path(**vm, "/status/current"));
    if (!status) return status.error();
    return status->value("status", "") == "running";
}

Result<std::unique_ptr<AgentChannel>> ProxmoxHypervisor::open_agent_channel(
    const std::string& vm_name, Deadline deadline, const std::atomic<bool>* cancelled) {
    DS_ASSIGN_OR_RETURN(auto vm, require_vm(vm_name));
    return open_pve_agent_channel(client_, vm_path(vm), agent_options(), vm_name, deadline,
                                  cancelled);
}

std::string ProxmoxHypervisor::console_tail(const std::string&, std::size_t) {
    return "";
}

std::string ProxmoxHypervisor::console_location(const std::string&) {
    return "";
}

void ProxmoxHypervisor::discard_console(const std::string&) {}

Status ProxmoxHypervisor::destroy_vm(const std::string& vm_name) {
    auto vm = find_vm(vm_name);
    if (!vm) return vm.error();
    if (!*vm) return ok_status();
    return stop_and_delete(**vm);
}

Status ProxmoxHypervisor::stop_and_delete(const VmRef& vm) {
    auto status = client_->get(vm_path(vm, "/status/current"));
    if (!status) return status.error();
    if (status->value("status", "") == "running") {
        DS_TRY(task(PveMethod::kPost, vm_path(vm, "/status/stop"), PveParams()));
    }
    DS_TRY(task(PveMethod::kDelete, vm_path(vm),
                PveParams().set_flag("purge", true).set_flag("destroy-unreferenced-disks", true)));
    return ok_status();
}

Result<Json> ProxmoxHypervisor::resource_of(int vmid) {
    DS_ASSIGN_OR_RETURN(auto resources,
                        client_->get("/cluster/resources", PveParams().set("type", "vm")));
    for (const Json& resource : resources) {
        if (resource.is_object() && resource.value("vmid", 0) == vmid) return resource;
    }
    return Json(nullptr);
}

Status ProxmoxHypervisor::destroy_recorded_vm(const std::string& vm_name, const Json& handle) {
    const bool valid = handle.is_object() && handle.contains("vmid") &&
                       handle["vmid"].is_number_integer() && handle.contains("node") &&
                       handle["node"].is_string();
    const int vmid = valid ? handle["vmid"].get<int>() : 0;
    if (!valid || vmid < options_.vmid_min || vmid > options_.vmid_max) {
        return make_error(errc::kInvalidArgument,
                          "proxmox: recorded guest " + handle.dump() + " of " + vm_name +
                              " is no VM id of the range " + std::to_string(options_.vmid_min) +
                              ".." + std::to_string(options_.vmid_max) + ": not touched");
    }
    return destroy_if_named(VmRef{vmid, handle["node"].get<std::string>()}, vm_name);
}

// qemu-server PVE/API2/Qemu.pm clone_vm: the new id's config is first a
// temporary file holding only `lock: clone` (so /cluster/resources shows it
// as "VM N", no name of its own); the worker writes the config with the
// name after the first disk and drops the lock at its end, or removes the
// config when it fails. So a locked clone is waited for.
Status ProxmoxHypervisor::destroy_if_named(const VmRef& recorded, const std::string& vm_name) {
    const auto deadline = Steady::now() + options_.task_timeout;
    const std::string unnamed = "VM " + std::to_string(recorded.vmid);
    for (;;) {
        DS_ASSIGN_OR_RETURN(auto resource, resource_of(recorded.vmid));
        if (resource.is_null()) return ok_status();
        const std::string name = json_read::string_or_empty(resource, "name");
        const bool cloning = json_read::string_or_empty(resource, "lock") == "clone" &&
                             (name.empty() || name == unnamed || name == vm_name);
        if (!cloning) {
            // Another's VM now holds the id (or a template): not ours to touch.
            const Json& template_flag = (resource)["template"];
            if (name != vm_name || template_flag == 1 || template_flag == "1") return ok_status();
            const std::string node = json_read::string_or_empty(resource, "node");
            return stop_and_delete(VmRef{recorded.vmid, node.empty() ? recorded.node : node});
        }
        if (Steady::now() >= deadline) {
            return make_error(errc::kTimeout, "proxmox: the clone to VM " +
                                                  std::to_string(recorded.vmid) +
                                                  " is still locked; left for a later cleanup");
        }
        std::this_thread::sleep_for(kCloneLockPoll);
    }
}

Result<RunningGuest> ProxmoxHypervisor::running_guest(const std::string& vm_name, Accel) {
    auto vm = require_vm(vm_name);
    if (!vm) return vm.error();
    auto config = client_->get(vm_path(*vm, "/config"));
    if (!config) return config.error();
    // qemu-server PVE/QemuServer.pm: the `kvm` option, default 1
    // (config_to_command: `$kvm //= 1 if is_native_arch($arch)`).
    const auto kvm_option = pve_config_text(*config, "kvm");
    const bool config_kvm = !kvm_option || (*kvm_option != "0" && *kvm_option != "false");
    const std::string config_says = "PVE config kvm=" + kvm_option.value_or("1 (default)");
    RunningGuest guest{config_kvm ? Accel::kKvm : Accel::kTcg, config_says, Json::object()};
    auto access = preflight();
    if (access.ok() && !access->monitor_allowed) {
        guest.accel_source += "; QEMU not asked: " + access->monitor_reason;
        return add_running_versions(*vm, guest);
    }
    auto answer = client_->post(vm_path(*vm, "/monitor"), PveParams().set("command", "info kvm"));
    const auto qemu_kvm = answer.ok() && answer->is_string()
                              ? kvm_enabled_in(answer->get<std::string>())
                              : std::optional<bool>();
    if (qemu_kvm) {
        guest.accel = *qemu_kvm ? Accel::kKvm : Accel::kTcg;
        guest.accel_source = std::string("QEMU info kvm: ") + (*qemu_kvm ? "enabled" : "disabled") +
                             " (" + config_says + ")";
    } else {
        guest.accel_source +=
            "; QEMU not asked: " + (answer.ok() ? std::string("no kvm support line in its answer")
                                                : answer.error().message);
    }
    return add_running_versions(*vm, guest);
}

// The QEMU binary and machine the VM runs, from status/current.
Result<RunningGuest> ProxmoxHypervisor::add_running_versions(const VmRef& vm, RunningGuest guest) {
    DS_ASSIGN_OR_RETURN(auto status, client_->get(vm_path(vm, "/status/current")));
    for (const auto& [from, to] :
         {std::pair{"running-qemu", "qemu"}, std::pair{"running-machine", "qemu_machine"}}) {
        if (status.contains(from) && (status)[from].is_string())
            guest.versions[to] = (status)[from];
    }
    return guest;
}

Result<std::vector<std::string>> ProxmoxHypervisor::list_vms(const std::string& prefix) {
    DS_ASSIGN_OR_RETURN(auto resources,
                        client_->get("/cluster/resources", PveParams().set("type", "vm")));
    std::vector<std::string> names;
    for (const Json& resource : resources) {
        const std::string name = resource.value("name", "");
        const int vmid = resource.value("vmid", 0);
        if (name.starts_with(prefix) && has_tag(resource) && vmid >= options_.vmid_min &&
            vmid <= options_.vmid_max) {
            names.push_back(name);
        }
    }
    std::sort(names.begin(), names.end());
    return names;
}

Json ProxmoxHypervisor::versions() {
    auto version = client_->get("/version");
    if (!version) return {{"proxmox", "unknown: " + version.error().message}};
    Json versions = {{"proxmox", version->value("version", "")},
                     {"proxmox_release", version->value("release", "")},
                     {"proxmox_repoid", version->value("repoid", "")}};
    if (auto release = pve_release_of(*version); release.ok())
        versions["proxmox_rules"] = std::string((*release)->name);
    return versions;
}

}  // namespace ds
