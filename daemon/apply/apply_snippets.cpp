#include "daemon/apply/apply_snippets.h"

#include <algorithm>
#include <charconv>

#include "common/compare_text.h"
#include "common/protocol.h"
#include "common/text.h"
#include "common/workload_kind.h"
#include "daemon/backends/hypervisor/libvirt/domain_xml.h"
#include "daemon/backends/hypervisor/proxmox/proxmox_hypervisor.h"
#include "daemon/backends/hypervisor/proxmox/pve_encoding.h"

namespace ds {
namespace {

// The disk's formats; the server settings formats come from the workload
// kinds' rules (server_settings_format_def).
const ApplyFormatDef kDiskFormats[] = {
    {ApplyFormat::kQm, "qm", "# ", "",
     "a `qm set` line adding the data disk to a Proxmox VE VM (--vmid, --storage)"},
    {ApplyFormat::kLibvirt, "libvirt", "<!-- ", " -->",
     "the libvirt <disk> element (and the SCSI <controller> it needs) for a file image"},
    {ApplyFormat::kFstab, "fstab", "# ", "",
     "the guest's fstab line with the mount options, the mkfs command as a comment"},
};

// A server settings format, as ServerSettingsRules::format says it: "# "
// comments (my.cnf and postgresql.conf alike).
ApplyFormatDef server_settings_format_def(const ServerSettingsRules& rules) {
    return {ApplyFormat{ApplyTarget::kServerSettings, &rules}, rules.format, "# ", "",
            std::string(rules.format_help) + " of the configuration's " +
                std::string(rules.server) + " workload (--workload)"};
}

const std::vector<ApplyFormatDef>& format_table() {
    static const std::vector<ApplyFormatDef> formats = [] {
        std::vector<ApplyFormatDef> all(std::begin(kDiskFormats), std::end(kDiskFormats));
        for (const ServerSettingsRules* rules : server_settings_rule_sets())
            all.push_back(server_settings_format_def(*rules));
        return all;
    }();
    return formats;
}

// The query parameters of the apply route, and which one each format reads.
constexpr std::string_view kQueryParameters[] = {"format", "vmid", "storage", "workload"};

// The body of one format and what it leaves to the user or to other formats.
struct RenderedBody {
    std::string body;
    std::vector<std::string> notes;
};

// A comment line of the format. "--" may not appear inside an XML comment.
std::string comment_line(const ApplyFormatDef& format, std::string text) {
    if (format.comment_close == " -->") {
        for (std::size_t at = text.find("--"); at != std::string::npos; at = text.find("--", at))
            text.replace(at, 2, "- -");
    }
    return std::string(format.comment_open) + text + std::string(format.comment_close) + "\n";
}

// An argv word as a POSIX shell reads it back: bare when it holds only
// characters without meaning to the shell, else single-quoted.
std::string shell_word(const std::string& word) {
    const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
               std::string_view("-_./=:,+^@%").find(c) != std::string_view::npos;
    });
    if (plain) return word;
    std::string quoted = "'";
    for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
}

std::string shell_line(const std::vector<std::string>& argv) {
    std::vector<std::string> words;
    for (const auto& word : argv) words.push_back(shell_word(word));
    return join(words, " ");
}

// Where the configuration was measured: what a placeholder storage stands for.
std::string measured_storage(const StorageConfig& config) {
    return config.storage + (config.storage_pool.empty() ? "" : ":" + config.storage_pool);
}

std::string guest_side_note(const StorageConfig& config) {
    return "inside the guest: " + filesystem_shorthand(config.filesystem) +
           " (the fstab format shows how)";
}

// ---------------------------------------------------------------------------
// qm: the Proxmox backend's own data disk (pve_data_disk), on a storage the
// user names.

Result<RenderedBody> qm_body(const StorageConfig& config, const ApplyRequest& request) {
    const std::string storage =
        request.pve_storage.empty() ? std::string(kPveStoragePlaceholder) : request.pve_storage;
    auto disk = pve_data_disk(config, HypervisorAllocatedDisk{storage, config.disk_size_bytes});
    if (!disk.ok()) {
        return make_error(errc::kInvalidArgument,
                          "no qm line for this configuration: " + disk.error().message);
    }
    auto drive = disk->drive.encode();
    if (!drive.ok()) return make_error(errc::kInvalidArgument, drive.error().message);

    std::vector<std::string> argv = {
        "qm", "set", request.vmid ? std::to_string(*request.vmid) : std::string(kVmidPlaceholder)};
    if (disk->scsihw) argv.insert(argv.end(), {"--scsihw", *disk->scsihw});
    argv.insert(argv.end(), {"--" + disk->key, drive.value()});

    RenderedBody rendered{shell_line(argv) + "\n", {}};
    if (!request.vmid || request.pve_storage.empty()) {
        rendered.notes.push_back(
            "replace VMID with the VM's id and STORAGE with a PVE storage of the kind it was "
            "measured on (" +
            measured_storage(config) + "), or ask with --vmid and --storage");
    }
    rendered.notes.push_back("the disk gets serial=" + std::string(protocol::kDataDiskSerial) +
                             ", as in the runs: /dev/disk/by-id/ names it in the guest");
    rendered.notes.push_back(guest_side_note(config));
    return rendered;
}

// ---------------------------------------------------------------------------
// libvirt: the libvirt backend's own <disk> element (data_disk_xml) on an
// image file.

Result<RenderedBody> libvirt_body(const StorageConfig& config, const ApplyRequest&) {
    const std::string path =
        std::string(kDiskImagePlaceholder) + "." + std::string(to_string(config.image_format));
    RenderedBody rendered;
    rendered.body =
        data_disk_xml(config, FileDisk{path, config.image_format}) + scsi_controller_xml(config);
    rendered.notes.push_back("replace " + path + " with the image (measured on storage " +
                             measured_storage(config) + ")");
    if (!scsi_controller_xml(config).empty()) {
        rendered.notes.push_back(
            "the <controller> goes into <devices> with the disk: a SCSI disk's IO thread and "
            "queues are its controller's; its index must match the disk's <address controller>");
    }
    if (config.iothread) rendered.notes.push_back("the domain needs <iothreads>1</iothreads>");
    if (std::string refused = libvirt_unsupported_reason(config); !refused.empty())
        rendered.notes.push_back("libvirt and QEMU refuse this: " + refused);
    rendered.notes.push_back(guest_side_note(config));
    return rendered;
}

// ---------------------------------------------------------------------------
// fstab: what the agent does in the guest, in the order it does it.

// fstab's sixth field. fsck.xfs and fsck.btrfs do nothing at boot (xfs and
// btrfs check themselves at mount), so their pass is 0, as fstab(5) and
// their man pages advise; ext4 is checked after the root file system.
constexpr std::pair<std::string_view, int> kFsckPass[] = {{"ext4", 2}, {"xfs", 0}, {"btrfs", 0}};

int fsck_pass(const std::string& type) {
    for (const auto& [name, pass] : kFsckPass)
        if (name == type) return pass;
    return 0;
}

Result<RenderedBody> fstab_body(const StorageConfig& config, const ApplyRequest&) {
    const ApplyFormatDef format = format_def(ApplyFormat::kFstab);
    const FilesystemSpec& filesystem = config.filesystem;
    const std::string device(kGuestDevicePlaceholder);
    RenderedBody rendered;

    std::vector<std::string> mkfs = {"mkfs." + filesystem.type};
    mkfs.insert(mkfs.end(), filesystem.mkfs_options.begin(), filesystem.mkfs_options.end());
    mkfs.push_back(device);
    std::string& body = rendered.body;
    body += comment_line(format, "format: " + shell_line(mkfs));
    for (const auto& step_name : filesystem.post_format) {
        const PostFormatStepDef* step = find_post_format_step(step_name);
        if (step != nullptr)
            body += comment_line(format,
                                 "after mounting, " + step_name + ": " + std::string(step->help));
    }
    const Json block = block_settings_json(config);
    for (const auto& [name, value] : block.items()) {
        const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
        body += comment_line(format, "before mkfs: echo " + text + " > /sys/block/DEVICE/queue/" +
                                         name + " (e.g. from a udev rule)");
    }
    const std::string options =
        filesystem.mount_options.empty() ? "defaults" : filesystem.mount_options;
    body += device + "  " + std::string(kMountPointPlaceholder) + "  " + filesystem.type + "  " +
            options + "  0  " + std::to_string(fsck_pass(filesystem.type)) + "\n";

    rendered.notes.push_back("replace DEVICE with the data disk (the agent finds it by serial " +
                             std::string(protocol::kDataDiskSerial) +
                             ") and POINT with the mount point");
    rendered.notes.push_back("the VM's side (cache, bus, discard, ...): the qm or libvirt format");
    return rendered;
}

// ---------------------------------------------------------------------------
// A server settings format: the workload's `server` table, as its rules
// render it (mycnf: as the agent writes it into [mysqld]).

Result<RenderedBody> server_settings_body(const StorageConfig&, const ApplyRequest& request) {
    const ServerSettingsRules& rules = *request.format.server_settings;
    if (!request.workload) {
        return make_error(errc::kInvalidArgument, "the " + std::string(rules.format) +
                                                      " format needs the " +
                                                      std::string(rules.server) +
                                                      " workload whose server variables to print");
    }
    RenderedBody rendered;
    const Json server = workload_server_variables(*request.workload);
    rendered.body = rules.render(server);
    rendered.notes.push_back(
        "server variables of workload '" + request.workload->name + "' (" + request.workload->kind +
        ")" +
        (server.empty() ? ": none, it ran on " + std::string(rules.server) + "'s defaults" : ""));
    if (!rules.agent_settings_note.empty()) rendered.notes.emplace_back(rules.agent_settings_note);
    return rendered;
}

using BodyRenderer = Result<RenderedBody> (*)(const StorageConfig&, const ApplyRequest&);

constexpr std::pair<ApplyTarget, BodyRenderer> kRenderers[] = {
    {ApplyTarget::kQm, qm_body},
    {ApplyTarget::kLibvirt, libvirt_body},
    {ApplyTarget::kFstab, fstab_body},
    {ApplyTarget::kServerSettings, server_settings_body},
};

BodyRenderer renderer_for(ApplyFormat format) {
    for (const auto& [target, renderer] : kRenderers)
        if (target == format.target) return renderer;
    return nullptr;
}

std::vector<std::string> risks_of(const StorageConfig& config, const ApplyRequest& request) {
    std::vector<std::string> risks = durability_risks(config);
    if (prints_server_settings(request.format) && request.workload) {
        for (std::string& risk :
             request.format.server_settings->risks(workload_server_variables(*request.workload)))
            risks.push_back(std::move(risk));
    }
    return risks;
}

Result<std::int64_t> parse_vmid(const std::string& text) {
    std::int64_t vmid = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), vmid);
    if (ec != std::errc() || end != text.data() + text.size() || !is_pve_vmid(vmid)) {
        return make_error(errc::kInvalidArgument,
                          "vmid must be a Proxmox VE VM id (" + std::to_string(kPveVmidMin) +
                              " to " + std::to_string(kPveVmidMax) + "), not '" + text + "'");
    }
    return vmid;
}

}  // namespace

std::span<const ApplyFormatDef> apply_formats() {
    return format_table();
}

ApplyFormatDef format_def(ApplyFormat format) {
    if (format.target == ApplyTarget::kServerSettings)
        return server_settings_format_def(*format.server_settings);
    return *std::find_if(std::begin(kDiskFormats), std::end(kDiskFormats),
                         [format](const ApplyFormatDef& def) { return def.format == format; });
}

bool prints_server_settings(ApplyFormat format) {
    return format.target == ApplyTarget::kServerSettings;
}

Result<ApplyFormat> parse_apply_format(std::string_view name) {
    std::vector<std::string> names;
    for (const auto& def : format_table()) {
        if (def.name == name) return def.format;
        names.emplace_back(def.name);
    }
    return make_error(errc::kInvalidArgument, "unknown format '" + std::string(name) +
                                                  "'; valid formats: " + join(names, ", "));
}

Result<ApplyRequest> apply_request_from_query(const std::map<std::string, std::string>& query) {
    for (const auto& [name, value] : query) {
        if (std::find(std::begin(kQueryParameters), std::end(kQueryParameters), name) ==
            std::end(kQueryParameters))
            return make_error(errc::kInvalidArgument, "unknown parameter '" + name +
                                                          "'; known: format, vmid, storage, "
                                                          "workload");
    }
    const auto format = query.find("format");
    if (format == query.end())
        return make_error(errc::kInvalidArgument, "parameter 'format' is required");
    ApplyRequest request;
    DS_ASSIGN_OR_RETURN(auto parsed, parse_apply_format(format->second));
    request.format = parsed;
    if (const auto vmid = query.find("vmid"); vmid != query.end()) {
        DS_ASSIGN_OR_RETURN(auto value, parse_vmid(vmid->second));
        request.vmid = value;
    }
    if (const auto storage = query.find("storage"); storage != query.end()) {
        if (!is_pve_storage_id(storage->second)) {
            return make_error(errc::kInvalidArgument,
                              "storage must be a Proxmox VE storage id (a letter, then letters, "
                              "digits, '-', '_' or '.', ending in a letter or digit), not '" +
                                  storage->second + "'");
        }
        request.pve_storage = storage->second;
    }
    if (const auto workload = query.find("workload"); workload != query.end())
        request.workload_name = workload->second;
    return request;
}

std::span<const std::string_view> apply_query_parameters() {
    return kQueryParameters;
}

Json workload_server_variables(const Workload& workload) {
    const Json& params = workload.params;
    if (!params.is_object() || !params.contains("server") || !params["server"].is_object())
        return Json::object();
    return params["server"];
}

namespace {

// "ledger workload 'ledger'; host-power-cut model; volatile-cache rule".
std::string measurement_text(const DurabilityResult& durability) {
    std::vector<std::string> quoted;
    for (const std::string& workload : durability.workloads())
        quoted.push_back("'" + workload + "'");
    std::string text =
        (quoted.size() == 1 ? "ledger workload " : "ledger workloads ") + join(quoted, ", ");
    if (!durability.models().empty()) text += "; " + join(durability.models(), ", ") + " model";
    if (durability.volatile_cache()) text += "; volatile-cache rule";
    return text + "; docs/durability.md";
}

// The typical figure beside the worst case the warning rests on, for the
// modes whose host page cache delays writes: "typically, with this host's
// writeback (35 s): kept every acknowledged commit in 16 crash states".
std::string host_writeback_line(const DurabilityResult& durability) {
    const std::vector<double>& windows = durability.host_writeback_windows();
    std::vector<std::string> seconds;
    for (double window : windows) seconds.push_back(seconds_text(window));
    return "typically, with the host writing back what is older than " + join(seconds, " or ") +
           " (vm.dirty_expire_centisecs + dirty_writeback_centisecs): " +
           durability.host_writeback_summary().verdict() +
           "; the warning above is the worst case the mode permits";
}

constexpr std::string_view kLabelWarning =
    "WARNING: trades durability for speed (a crash or power cut can lose or corrupt data): ";

// The durability lines of the snippet (see ApplySnippet), as comments.
std::string durability_lines(const ApplyFormatDef& format, const ApplySnippet& snippet,
                             const ApplyRequest& request) {
    const bool measured = request.durability && request.durability->measured();
    std::vector<std::string> unmeasured;
    for (const std::string& risk : snippet.durability_risks)
        if (std::find(snippet.measured_risks.begin(), snippet.measured_risks.end(), risk) ==
            snippet.measured_risks.end())
            unmeasured.push_back(risk);
    std::string text;
    if (measured) {
        const DurabilityResult& durability = *request.durability;
        const std::string measurement =
            "measured: " + durability.verdict() + " (" + measurement_text(durability) + ")";
        if (durability.safe()) {
            text += comment_line(format, measurement);
            if (!snippet.measured_risks.empty())
                text += comment_line(format, std::string(kLabelWarning) +
                                                 join(snippet.measured_risks, ", ") +
                                                 " (measured without loss; crash points are a "
                                                 "sample, not a proof)");
        } else {
            text += comment_line(format, "WARNING: " + measurement +
                                             (snippet.measured_risks.empty()
                                                  ? std::string()
                                                  : ": " + join(snippet.measured_risks, ", ")));
            if (durability.host_writeback_measured())
                text += comment_line(format, host_writeback_line(durability));
        }
    }
    if (!unmeasured.empty())
        text += comment_line(format, std::string(kLabelWarning) + join(unmeasured, ", ") +
                                         (measured ? " (not covered by the measurement)" : ""));
    return text;
}

}  // namespace

Result<ApplySnippet> render_apply_snippet(const StorageConfig& config,
                                          const ApplyRequest& request) {
    if (is_host_baseline(config)) {
        return make_error(errc::kInvalidArgument,
                          "a host baseline has no VM and no guest: there is nothing to apply");
    }
    const BodyRenderer renderer = renderer_for(request.format);
    DS_ASSIGN_OR_RETURN(auto rendered, renderer(config, request));

    const ApplyFormatDef format = format_def(request.format);
    ApplySnippet snippet;
    snippet.durability_risks = risks_of(config, request);
    if (request.durability) {
        for (const std::string& risk : snippet.durability_risks)
            if (measurement_covers(*request.durability, risk))
                snippet.measured_risks.push_back(risk);
    }
    snippet.notes = std::move(rendered.notes);
    snippet.body = std::move(rendered.body);
    snippet.text += durability_lines(format, snippet, request);
    for (const auto& note : snippet.notes) snippet.text += comment_line(format, note);
    snippet.text += snippet.body;
    return snippet;
}

}  // namespace ds
