#include "daemon/hypervisor/proxmox/proxmox_hypervisor.h"

#include <algorithm>
#include <thread>
#include <variant>

#include "common/protocol.h"
#include "daemon/hypervisor/qemu_block.h"

namespace ds {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kGiB = 1ull << 30;
// agent/file-write's content must keep the form body under pveproxy's 64 KiB
// (docs/proxmox.md, "Requests").
constexpr std::size_t kMaxFileWriteBytes = 61440;
// agent/file-read hands over at most 16 MiB of a file.
constexpr std::size_t kMaxFileReadBytes = 16u << 20;
constexpr auto kPingInterval = 1s;

// ---------------------------------------------------------------------------
// The data disk: each bus's drive key and controller, and what PVE's drive
// of that bus has (its keys in PVE 8.4's schema: scsi[n], virtio[n], sata[n]).

struct BusRule {
    Bus bus;
    std::string_view key;                    // the data disk's drive key
    std::optional<std::string_view> scsihw;  // the controller to set, if any
    bool ssd;                                // the drive has `ssd`
    bool iothread;                           // the drive has `iothread` and it takes effect
    bool queues;                             // the drive has `queues` (>= 2)
};

constexpr BusRule kBusRules[] = {
    {Bus::kVirtioBlk, "virtio1", std::nullopt, false, true, false},
    // A shared virtio-scsi controller: PVE gives a disk its own IO thread only
    // on virtio-scsi-single (else it warns and ignores `iothread`).
    {Bus::kScsi, "scsi1", "virtio-scsi-pci", true, false, true},
    {Bus::kScsiSingle, "scsi1", "virtio-scsi-single", true, true, true},
    {Bus::kSata, "sata1", std::nullopt, true, false, false},
};

const BusRule& rule_for(Bus bus) {
    return *std::find_if(std::begin(kBusRules), std::end(kBusRules),
                         [bus](const BusRule& rule) { return rule.bus == bus; });
}

Error unsupported(const StorageConfig& config, const std::string& what) {
    return make_error(errc::kUnsupported, "proxmox cannot apply " + what + " (bus " +
                                              std::string(to_string(config.bus)) +
                                              "): PVE 8.4's drive has no such setting");
}

// PVE derives QEMU's detect-zeroes from two drive keys: detect_zeroes=0 is
// off; otherwise it is unmap with discard=on and on without it.
Result<bool> pve_detect_zeroes(const StorageConfig& config) {
    switch (config.detect_zeroes) {
        case DetectZeroes::kOff:
            return false;
        case DetectZeroes::kOn:
            if (config.discard) return unsupported(config, "detect_zeroes=on with discard");
            return true;
        case DetectZeroes::kUnmap:
            if (!config.discard) return unsupported(config, "detect_zeroes=unmap without discard");
            return true;
    }
    return false;
}

// The drive's limits: PVE drops bps*, so bandwidth goes as mbps (MiB/s, a number).
void add_limits(const StorageConfig& config, PvePropertyString& drive) {
    if (config.bandwidth_limit) {
        drive.set_number("mbps", static_cast<double>(*config.bandwidth_limit) / kMiB);
    }
    if (config.iops_limit) drive.set_integer("iops", static_cast<std::int64_t>(*config.iops_limit));
}

Status check_bus_support(const StorageConfig& config, const BusRule& rule) {
    if (config.ssd && !rule.ssd) return unsupported(config, "ssd");
    if (config.iothread && !rule.iothread) return unsupported(config, "iothread");
    if (config.queues && !rule.queues) return unsupported(config, "queues");
    if (config.queues && *config.queues < 2) {
        return make_error(errc::kUnsupported,
                          "proxmox cannot apply queues=" + std::to_string(*config.queues) +
                              ": PVE's drive queues start at 2");
    }
    return ok_status();
}

// PVE's JSON gives a boolean drive key as 0/1 (number or string).
bool pve_flag(const PvePropertyString& drive, std::string_view key) {
    const auto value = drive.get(key);
    return value && (*value == "1" || *value == "on" || *value == "yes" || *value == "true");
}

std::string detect_zeroes_in_force(const PvePropertyString& drive) {
    const auto value = drive.get("detect_zeroes");
    if (value && !pve_flag(drive, "detect_zeroes")) return "off";
    return drive.get("discard") == std::optional<std::string>("on") ? "unmap" : "on";
}

// The config's value of `key` as text (PVE gives numbers as numbers).
std::optional<std::string> config_text(const Json& config, const std::string& key) {
    if (!config.contains(key)) return std::nullopt;
    const Json& value = config[key];
    return value.is_string() ? value.get<std::string>() : value.dump();
}

// A string of JSON made of code points 0..255 (file-read's bytes as PVE's
// JSON encoder gives them) back to those bytes.
Result<std::string> latin1_bytes(const std::string& utf8) {
    std::string bytes;
    bytes.reserve(utf8.size());
    for (std::size_t i = 0; i < utf8.size(); ++i) {
        const auto lead = static_cast<unsigned char>(utf8[i]);
        if (lead < 0x80) {
            bytes += static_cast<char>(lead);
        } else if ((lead == 0xC2 || lead == 0xC3) && i + 1 < utf8.size()) {
            const auto next = static_cast<unsigned char>(utf8[++i]);
            bytes += static_cast<char>(((lead & 0x03) << 6) | (next & 0x3F));
        } else {
            return make_error(errc::kProtocol, "agent/file-read gave a character past U+00FF");
        }
    }
    return bytes;
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

// ---------------------------------------------------------------------------
// The agent channel over the QEMU guest agent.

struct GuestAgent {
    std::shared_ptr<PveClient> client;
    std::string vm_path;  // /nodes/NODE/qemu/VMID
    Status write_file(const std::string& path, std::string_view content) {
        if (content.size() > kMaxFileWriteBytes) {
            return make_error(errc::kInvalidArgument, "agent/file-write of " + path + ": " +
                                                          std::to_string(content.size()) +
                                                          " bytes, over PVE's limit of " +
                                                          std::to_string(kMaxFileWriteBytes));
        }
        auto written =
            client->post(vm_path + "/agent/file-write",
                         PveParams().set("file", path).set("content", std::string(content)));
        if (!written) return written.error();
        return ok_status();
    }
};

// The one-shot agent's messages: the output file's new complete lines, read
// with agent/file-read; the agent's end from agent/exec-status, which
// answers "exited" exactly once, so that answer is kept.
class PveAgentChannel : public AgentChannel {
  public:
    PveAgentChannel(GuestAgent agent, const ProxmoxHypervisorOptions& options, std::int64_t pid,
                    const std::atomic<bool>* cancelled)
        : agent_(std::move(agent)), options_(options), pid_(pid), cancelled_(cancelled) {}

    Result<std::string> read_line(Deadline deadline) override {
        for (;;) {
            if (auto line = take_line()) return *line;
            if (pending_.size() > protocol::kMaxMessageBytes) {
                return make_error(errc::kProtocol, "agent message exceeds the limit of " +
                                                       std::to_string(protocol::kMaxMessageBytes) +
                                                       " bytes");
            }
            // Whatever the agent wrote before it exited is read before its end is told.
            const bool exited_before_read = exit_.has_value();
            DS_TRY(read_output());
            if (has_line()) continue;
            if (exited_before_read) return make_error(errc::kIo, "channel closed: " + *exit_);
            if (!exit_) DS_TRY(poll_exit());
            if (exit_) continue;
            if (cancelled_ && cancelled_->load()) return make_error(errc::kCancelled, "cancelled");
            if (Clock::now() >= deadline) {
                return make_error(errc::kTimeout,
                                  "no message from the agent in " + options_.guest_output_file);
            }
            std::this_thread::sleep_for(options_.agent_poll_interval);
        }
    }

    // The first message is the job: it goes to the job file the agent waits
    // for. The agent reads nothing after it (it ends after its result), so
    // later messages (shutdown) are dropped.
    Status write(std::string_view data) override {
        if (job_written_) return ok_status();
        DS_TRY(agent_.write_file(options_.guest_job_file, data));
        job_written_ = true;
        return ok_status();
    }

  private:
    bool has_line() const { return pending_.find('\n') != std::string::npos; }
    std::optional<std::string> take_line() {
        const auto newline = pending_.find('\n');
        if (newline == std::string::npos) return std::nullopt;
        std::string line = pending_.substr(0, newline);
        pending_.erase(0, newline + 1);
        return line;
    }

    // Appends what the output file holds past what was read before.
    Status read_output() {
        auto answer = agent_.client->get(agent_.vm_path + "/agent/file-read",
                                         PveParams().set("file", options_.guest_output_file));
        if (!answer) return answer.error();
        if (!answer->contains("content") || !(*answer)["content"].is_string()) {
            return make_error(errc::kProtocol, "agent/file-read answered without content");
        }
        auto bytes = latin1_bytes((*answer)["content"]);
        if (!bytes) return bytes.error();
        if (bytes->size() < consumed_) {
            return make_error(errc::kProtocol, options_.guest_output_file + " shrank");
        }
        if (bytes->size() >= kMaxFileReadBytes) {
            return make_error(errc::kProtocol, options_.guest_output_file +
                                                   " reached agent/file-read's limit of 16 MiB");
        }
        pending_ += bytes->substr(consumed_);
        consumed_ = bytes->size();
        return ok_status();
    }

    Status poll_exit() {
        auto status = agent_.client->get(agent_.vm_path + "/agent/exec-status",
                                         PveParams().set_integer("pid", pid_));
        if (!status) return status.error();
        if (status->value("exited", 0) != 1) return ok_status();
        std::string how = "the agent exited";
        if (status->contains("exitcode")) how += " with code " + (*status)["exitcode"].dump();
        if (status->contains("signal")) how += " on signal " + (*status)["signal"].dump();
        const std::string err = status->value("err-data", "");
        if (!err.empty())
            how += "; stderr: " + err.substr(err.size() > 2000 ? err.size() - 2000 : 0);
        exit_ = how;
        return ok_status();
    }

    GuestAgent agent_;
    ProxmoxHypervisorOptions options_;
    std::int64_t pid_;
    const std::atomic<bool>* cancelled_;
    bool job_written_ = false;
    std::size_t consumed_ = 0;         // bytes of the output file taken into pending_
    std::string pending_;              // read, not yet returned
    std::optional<std::string> exit_;  // how the agent ended, once exec-status said
};

}  // namespace

// ---------------------------------------------------------------------------

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

Result<PveDataDisk> pve_data_disk(const StorageConfig& config,
                                  const HypervisorAllocatedDisk& disk) {
    const BusRule& rule = rule_for(config.bus);
    DS_TRY(check_bus_support(config, rule));
    if (disk.storage.empty()) {
        return make_error(errc::kInvalidArgument, "proxmox data disk: no PVE storage named");
    }
    if (disk.size_bytes == 0 || disk.size_bytes % kMiB != 0) {
        return make_error(errc::kUnsupported,
                          "proxmox data disk: size must be a positive whole number of MiB");
    }
    auto detect_zeroes = pve_detect_zeroes(config);
    if (!detect_zeroes) return detect_zeroes.error();

    PvePropertyString drive(disk.storage + ":" +
                            pve_number_text(static_cast<double>(disk.size_bytes) / kGiB));
    drive.set("format", std::string(to_string(config.image_format)))
        .set("cache", std::string(to_string(config.cache)));
    if (config.aio != AioMode::kDefault) drive.set("aio", std::string(to_string(config.aio)));
    drive.set("discard", config.discard ? "on" : "ignore");
    if (rule.ssd) drive.set_flag("ssd", config.ssd);
    if (rule.iothread) drive.set_flag("iothread", config.iothread);
    drive.set_flag("detect_zeroes", *detect_zeroes);
    if (config.queues) drive.set_integer("queues", static_cast<std::int64_t>(*config.queues));
    add_limits(config, drive);
    drive.set("serial", std::string(protocol::kDataDiskSerial));

    PveDataDisk data_disk{std::string(rule.key), std::move(drive), std::nullopt};
    if (rule.scsihw) data_disk.scsihw = std::string(*rule.scsihw);
    DS_TRY(data_disk.drive.encode());
    return data_disk;
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

std::string ProxmoxHypervisor::vm_path(const VmRef& vm, std::string_view tail) const {
    return pve_path({"nodes", vm.node, "qemu", std::to_string(vm.vmid)}) + std::string(tail);
}

Result<PveTaskEnd> ProxmoxHypervisor::task(PveMethod method, const std::string& path,
                                           const PveParams& params) {
    return client_->run_task(method, path, params, options_.task_timeout);
}

Result<std::optional<ProxmoxHypervisor::VmRef>> ProxmoxHypervisor::find_vm(
    const std::string& vm_name) {
    auto resources = client_->get("/cluster/resources", PveParams().set("type", "vm"));
    if (!resources) return resources.error();
    for (const Json& resource : *resources) {
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
    auto resources = client_->get("/cluster/resources", PveParams().set("type", "vm"));
    if (!resources) return resources.error();
    std::vector<int> taken;
    for (const Json& resource : *resources) taken.push_back(resource.value("vmid", 0));
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
    const auto* disk = std::get_if<HypervisorAllocatedDisk>(&request.data_disk);
    if (disk == nullptr) {
        return make_error(errc::kInvalidArgument,
                          "proxmox attaches only disks PVE allocates (STORAGE:SIZE), not " +
                              std::string(to_string(kind_of(request.data_disk))));
    }
    auto data_disk = pve_data_disk(request.config, *disk);
    if (!data_disk) return data_disk.error();

    // One id allocation and clone at a time in this daemon, across all its
    // Proxmox hosts: the nodes of one cluster share its VM ids.
    static std::mutex allocation_mutex;
    std::lock_guard<std::mutex> lock(allocation_mutex);
    auto existing = find_vm(request.name);
    if (!existing) return existing.error();
    if (*existing) return make_error(errc::kConflict, "proxmox: VM " + request.name + " exists");
    auto vmid = allocate_vmid();
    if (!vmid) return vmid.error();
    const VmRef vm{*vmid, run_node()};
    Status started = clone_and_start(request, *data_disk, vm);
    if (!started) (void)destroy_vm(request.name);
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

// QEMU's own view of the drive (`info block` through PVE's monitor
// endpoint) as applied["qemu_info_block"]; a token without VM.Monitor gets
// PVE's 403, which leaves that level out with the reason in
// applied["qemu_check"] (the PVE config level is still verified).
void ProxmoxHypervisor::add_qemu_level(const VmRef& vm, std::string_view drive_key, Json& applied) {
    auto text = client_->post(vm_path(vm, "/monitor"), PveParams().set("command", "info block"));
    if (!text.ok() || !text->is_string()) {
        applied["qemu_check"] =
            text.ok() ? "not done: PVE's monitor answered no text"
            : text.error().code == errc::kForbidden
                ? "not done: the token may not use the QEMU monitor (VM.Monitor on /vms)"
                : "not done: " + text.error().message;
        return;
    }
    auto settings = parse_info_block(text->get<std::string>(), "drive-" + std::string(drive_key));
    if (!settings.ok()) {
        applied["qemu_check"] = "not done: " + settings.error().message;
        return;
    }
    applied["qemu_info_block"] = std::move(settings).value();
    applied["qemu_check"] = "info block through PVE's monitor";
}

Result<Json> ProxmoxHypervisor::applied_settings(const std::string& vm_name) {
    auto vm = require_vm(vm_name);
    if (!vm) return vm.error();
    auto config = client_->get(vm_path(*vm, "/config"));
    if (!config) return config.error();
    for (const BusRule& rule : kBusRules) {
        const auto value = config_text(*config, std::string(rule.key));
        if (!value) continue;
        auto drive = PvePropertyString::parse(*value);
        if (!drive) return drive.error();
        if (drive->get("serial") != std::optional<std::string>(protocol::kDataDiskSerial)) continue;
        const auto scsihw = config_text(*config, "scsihw");
        Bus bus = rule.bus;
        if (rule.key.starts_with("scsi")) {
            bus = scsihw == std::optional<std::string>("virtio-scsi-single") ? Bus::kScsiSingle
                                                                             : Bus::kScsi;
        }
        Json options = Json::object();
        for (const auto& [key, option] : drive->entries()) options[key] = option;
        Json applied = {{"bus", to_string(bus)},
                        {"cache", drive->get("cache").value_or("none")},
                        {"aio", drive->get("aio").value_or("default")},
                        {"discard", drive->get("discard") == std::optional<std::string>("on")},
                        {"detect_zeroes", detect_zeroes_in_force(*drive)},
                        {"ssd", pve_flag(*drive, "ssd")},
                        {"iothread", pve_flag(*drive, "iothread")},
                        {"pve",
                         {{"drive", rule.key},
                          {"value", *value},
                          {"volume", drive->default_value()},
                          {"options", options},
                          {"scsihw", scsihw.value_or("lsi")}}}};
        if (auto format = drive->get("format")) applied["image_format"] = *format;
        add_qemu_level(*vm, rule.key, applied);
        return applied;
    }
    return make_error(errc::kNotFound, "proxmox: VM " + vm_name + " has no data disk (serial " +
                                           std::string(protocol::kDataDiskSerial) + ")");
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
    auto vm = require_vm(vm_name);
    if (!vm) return vm.error();
    GuestAgent agent{client_, vm_path(*vm)};
    for (;;) {
        auto ping = client_->post(agent.vm_path + "/agent/ping");
        if (ping) break;
        if (cancelled && cancelled->load()) return make_error(errc::kCancelled, "cancelled");
        if (Clock::now() >= deadline) {
            return make_error(errc::kTimeout,
                              "proxmox: the guest agent of " + vm_name +
                                  " did not answer agent/ping: " + ping.error().message);
        }
        std::this_thread::sleep_for(kPingInterval);
    }
    // An empty output file first: the channel reads it from the start.
    DS_TRY(agent.write_file(options_.guest_output_file, ""));
    auto exec =
        client_->post(agent.vm_path + "/agent/exec",
                      PveParams().set_array(
                          "command", {options_.agent_program, "--job-file", options_.guest_job_file,
                                      "--output-file", options_.guest_output_file}));
    if (!exec) return exec.error();
    if (!exec->contains("pid") || !(*exec)["pid"].is_number_integer()) {
        return make_error(errc::kProtocol, "proxmox: agent/exec answered no pid");
    }
    return std::unique_ptr<AgentChannel>(
        std::make_unique<PveAgentChannel>(std::move(agent), options_, (*exec)["pid"], cancelled));
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
    auto status = client_->get(vm_path(**vm, "/status/current"));
    if (!status) return status.error();
    if (status->value("status", "") == "running") {
        DS_TRY(task(PveMethod::kPost, vm_path(**vm, "/status/stop"), PveParams()));
    }
    DS_TRY(task(PveMethod::kDelete, vm_path(**vm),
                PveParams().set_flag("purge", true).set_flag("destroy-unreferenced-disks", true)));
    return ok_status();
}

Result<std::vector<std::string>> ProxmoxHypervisor::list_vms(const std::string& prefix) {
    auto resources = client_->get("/cluster/resources", PveParams().set("type", "vm"));
    if (!resources) return resources.error();
    std::vector<std::string> names;
    for (const Json& resource : *resources) {
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
    return {{"proxmox", version->value("version", "")},
            {"proxmox_release", version->value("release", "")},
            {"proxmox_repoid", version->value("repoid", "")}};
}

}  // namespace ds
