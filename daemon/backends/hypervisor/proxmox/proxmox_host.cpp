#include "daemon/backends/hypervisor/proxmox/proxmox_host.h"

#include <algorithm>
#include <optional>

#include "common/text.h"
#include "daemon/backends/option_rules.h"

namespace ds {

namespace {

using HypervisorOptionRule = OptionRule<ProxmoxHypervisorOptions, PveOptionKey>;

// PVE's VM ids: 100..999999999.
Status set_vmid(int& field, std::string_view key, std::string_view value) {
    DS_ASSIGN_OR_RETURN(auto number, parse_pve_option_number(key, value, 100, 999999999));
    field = static_cast<int>(number);
    return ok_status();
}

// PVE's storage and node ids (pve-storage-id, pve-node).
Status set_identifier(std::string& field, std::string_view key, std::string_view value) {
    const bool valid = !value.empty() && std::all_of(value.begin(), value.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    });
    if (!valid) return pve_option_error(key, "expected a PVE id (letters, digits, -_.)");
    field = value;
    return ok_status();
}

constexpr std::string_view kTemplatePerNodeKey = "template_per_node";

// `template_per_node=NODE:VMID|NODE:VMID`: each node's own template.
Result<std::map<std::string, int>> parse_template_per_node(std::string_view key,
                                                           std::string_view value) {
    std::map<std::string, int> templates;
    for (const std::string& item : split_list(value, '|')) {
        const auto colon = item.find(':');
        if (colon == std::string::npos) return pve_option_error(key, "expected NODE:VMID|...");
        std::string node;
        int vmid = 0;
        DS_TRY(set_identifier(node, key, std::string_view(item).substr(0, colon)));
        DS_TRY(set_vmid(vmid, key, std::string_view(item).substr(colon + 1)));
        if (!templates.emplace(node, vmid).second) {
            return pve_option_error(key, "names node " + node + " twice");
        }
    }
    if (templates.empty()) return pve_option_error(key, "expected NODE:VMID|...");
    return templates;
}

Result<std::map<std::string, int>> templates_per_node(
    const std::map<std::string, std::string>& options) {
    const auto found = options.find(std::string(kTemplatePerNodeKey));
    if (found == options.end()) return std::map<std::string, int>{};
    return parse_template_per_node(kTemplatePerNodeKey, found->second);
}

const HypervisorOptionRule kHypervisorOptionRules[] = {
    {{"node", "the cluster node of the template (and of the runs, unless run_node or nodes)"},
     [](ProxmoxHypervisorOptions& o, std::string_view k, std::string_view v) -> Status {
         return set_identifier(o.node, k, v);
     }},
    {{"run_node",
      "the node runs' VMs are cloned to and run on (default: node; nodes= sets it per node)"},
     [](ProxmoxHypervisorOptions& o, std::string_view k, std::string_view v) -> Status {
         return set_identifier(o.run_node, k, v);
     }},
    {{"template_vmid", "the guest template's VM id (docs/proxmox.md, \"Guest template\")"},
     [](ProxmoxHypervisorOptions& o, std::string_view k, std::string_view v) -> Status {
         return set_vmid(o.template_vmid, k, v);
     }},
    {{"vmid_min", "the lowest VM id disksweep may create and remove"},
     [](ProxmoxHypervisorOptions& o, std::string_view k, std::string_view v) -> Status {
         return set_vmid(o.vmid_min, k, v);
     }},
    {{"vmid_max", "the highest VM id disksweep may create and remove"},
     [](ProxmoxHypervisorOptions& o, std::string_view k, std::string_view v) -> Status {
         return set_vmid(o.vmid_max, k, v);
     }},
    {{"linked_clone", "1 (default): linked clones of the template; 0: full clones"},
     [](ProxmoxHypervisorOptions& o, std::string_view k, std::string_view v) -> Status {
         DS_ASSIGN_OR_RETURN(auto flag, parse_pve_option_number(k, v, 0, 1));
         o.linked_clone = flag == 1;
         return ok_status();
     }},
    {{"clone_storage",
      "full clones only: the PVE storage of their disks (default: the template's)"},
     [](ProxmoxHypervisorOptions& o, std::string_view k, std::string_view v) -> Status {
         return set_identifier(o.clone_storage, k, v);
     }},
    {{"template_per_node",
      "NODE:VMID|...: a template of its own on these nodes, so their runs need no clone to "
      "another node (which PVE refuses for a template on local storage)"},
     [](ProxmoxHypervisorOptions&, std::string_view k, std::string_view v) -> Status {
         DS_ASSIGN_OR_RETURN(auto parsed, parse_template_per_node(k, v));
         return ok_status();
     }},
    {{"agent_program", "the agent's path in the guest (default /usr/local/bin/disksweep-agent)"},
     [](ProxmoxHypervisorOptions& o, std::string_view k, std::string_view v) -> Status {
         if (!v.starts_with('/')) return pve_option_error(k, "expected an absolute path");
         o.agent_program = v;
         return ok_status();
     }},
};

const HypervisorOptionRule* find_hypervisor_rule(std::string_view key) {
    return find_option_rule(std::span<const HypervisorOptionRule>(kHypervisorOptionRules), key);
}

bool is_client_key(std::string_view key) {
    const auto keys = pve_option_keys();
    return std::any_of(keys.begin(), keys.end(), [&](const auto& k) { return k.key == key; });
}

// The PVE client of a host line: its client keys (pve_option_keys).
Result<std::unique_ptr<PveClient>> client_for(const std::map<std::string, std::string>& options) {
    std::map<std::string, std::string> client_options;
    for (const auto& [key, value] : options) {
        if (is_client_key(key)) client_options.emplace(key, value);
    }
    DS_ASSIGN_OR_RETURN(auto parsed, pve_client_options(client_options));
    return PveClient::create(std::move(parsed));
}

// The online nodes of the cluster, sorted.
Result<std::vector<std::string>> online_nodes(const std::map<std::string, std::string>& options) {
    DS_ASSIGN_OR_RETURN(auto client, client_for(options));
    auto resources = (client)->get("/cluster/resources", PveParams().set("type", "node"));
    if (!resources.ok()) {
        return pve_option_error(kProxmoxNodesKey,
                                "cannot list the cluster's nodes: " + resources.error().message);
    }
    std::vector<std::string> nodes;
    for (const Json& resource : *resources) {
        if (!resource.is_object() || resource.value("type", "") != "node" ||
            resource.value("status", "") != "online") {
            continue;
        }
        std::string node;
        DS_TRY(set_identifier(node, kProxmoxNodesKey, resource.value("node", "")));
        nodes.push_back(std::move(node));
    }
    std::sort(nodes.begin(), nodes.end());
    return nodes;
}

// ---- clones to another node ---------------------------------------------------------------------
//
// PVE clones to another node (`target`) only a VM whose every volume is on
// shared storage, linked or full: qemu-server PVE/API2/Qemu.pm, clone_vm
// dies "can't clone VM to node '$target' (VM uses local storage)\n" when
// $check_storage_access_clone found a volume (CD-ROM images included, "none"
// and "cdrom" not) whose storage config lacks `shared`; and a full clone's
// `storage` must itself be shared ("can't clone to non-shared storage
// '$storage'\n"). So the line is checked when the daemon starts, not when the
// first run fails.

// The storages /cluster/resources lists as shared (type storage, `shared`
// as pve-manager PVE/API2Tools.pm extract_storage_stats reports it: 0 or 1).
Result<std::vector<std::string>> shared_storages(PveApi& api) {
    auto resources = api.get("/cluster/resources", PveParams().set("type", "storage"));
    if (!resources) return resources.error();
    std::vector<std::string> shared;
    if (!resources->is_array()) return shared;
    for (const Json& resource : *resources) {
        if (!resource.is_object() || !resource.contains("storage") ||
            !resource["storage"].is_string()) {
            continue;
        }
        const Json flag = resource.value("shared", Json(0));
        if (flag == 1 || flag == true) shared.push_back(resource["storage"].get<std::string>());
    }
    return shared;
}

bool contains(const std::vector<std::string>& list, const std::string& item) {
    return std::find(list.begin(), list.end(), item) != list.end();
}

// What to change when `nodes` need clones of a template on local storage.
Error local_template_error(const ProxmoxHypervisorOptions& template_options,
                           const std::vector<std::string>& other_nodes, const std::string& key,
                           const std::string& volume) {
    const std::string storage = pve_storage_of(volume);
    return pve_option_error(
        kProxmoxNodesKey,
        "runs on " + join(other_nodes, ", ") + " would be clones of template " +
            std::to_string(template_options.template_vmid) + " from node " + template_options.node +
            ", whose " + key + " is on " +
            (storage.empty() ? "a local path" : "storage '" + storage + "', which is not shared") +
            "; PVE refuses such a clone, linked or full (\"can't clone VM to node '" +
            other_nodes.front() +
            "' (VM uses local storage)\"). Put the template's disks on shared storage (RBD, "
            "NFS), or give those nodes templates of their own with template_per_node=" +
            other_nodes.front() + ":VMID|..., or leave them out of nodes=");
}

// Every node of `nodes` that is not the template's and has no template of
// its own gets clones through PVE's `target`: checked as PVE will check them.
Status check_clones_to_other_nodes(const std::map<std::string, std::string>& options,
                                   const std::vector<std::string>& nodes) {
    // The line's own template (node, template_vmid), which the other nodes clone.
    std::map<std::string, std::string> line_template = options;
    line_template.erase(std::string(kTemplatePerNodeKey));
    auto template_options = proxmox_hypervisor_options(line_template);
    DS_TRY(template_options);
    auto own_templates = templates_per_node(options);
    DS_TRY(own_templates);
    std::vector<std::string> other_nodes;
    for (const std::string& node : nodes) {
        if (node != template_options->node && !own_templates->contains(node)) {
            other_nodes.push_back(node);
        }
    }
    if (other_nodes.empty()) return ok_status();

    DS_ASSIGN_OR_RETURN(auto client, client_for(options));
    auto shared = shared_storages(*client);
    if (!shared) {
        return pve_option_error(kProxmoxNodesKey,
                                "cannot list the cluster's storages: " + shared.error().message);
    }
    const std::string template_path =
        pve_path({"nodes", template_options->node, "qemu",
                  std::to_string(template_options->template_vmid), "config"});
    auto config = (client)->get(template_path);
    if (!config) {
        return pve_option_error(kProxmoxNodesKey,
                                "cannot read the template's config: " + config.error().message);
    }
    for (const auto& [key, volume] : pve_template_volumes(*config)) {
        if (!contains(*shared, pve_storage_of(volume))) {
            return local_template_error(*template_options, other_nodes, key, volume);
        }
    }
    const std::string& clone_storage = template_options->clone_storage;
    if (!template_options->linked_clone && !clone_storage.empty() &&
        !contains(*shared, clone_storage)) {
        return pve_option_error("clone_storage",
                                "'" + clone_storage +
                                    "' is not shared, and PVE clones to another node (" +
                                    join(other_nodes, ", ") +
                                    ") only onto shared storage (\"can't clone to non-shared "
                                    "storage\"); name a shared one or leave clone_storage out");
    }
    return ok_status();
}

std::string all_keys() {
    std::vector<std::string> keys;
    for (const auto& key : pve_option_keys()) keys.emplace_back(key.key);
    for (const auto& key : proxmox_hypervisor_option_keys()) keys.emplace_back(key.key);
    return join(keys, ", ");
}

}  // namespace

std::span<const PveOptionKey> proxmox_hypervisor_option_keys() {
    static const std::vector<PveOptionKey> keys =
        option_keys_of(std::span<const HypervisorOptionRule>(kHypervisorOptionRules));
    return keys;
}

Result<ProxmoxHypervisorOptions> proxmox_hypervisor_options(
    const std::map<std::string, std::string>& options) {
    ProxmoxHypervisorOptions parsed;
    for (const auto& [key, value] : options) {
        if (const HypervisorOptionRule* rule = find_hypervisor_rule(key)) {
            DS_TRY(rule->set(parsed, key, value));
        }
    }
    for (std::string_view required : {"node", "template_vmid", "vmid_min", "vmid_max"}) {
        if (!options.contains(std::string(required))) return pve_option_error(required, "missing");
    }
    DS_ASSIGN_OR_RETURN(auto own_templates, templates_per_node(options));
    for (const auto& [node, vmid] : own_templates) {
        if (vmid >= parsed.vmid_min && vmid <= parsed.vmid_max) {
            return pve_option_error(kTemplatePerNodeKey,
                                    "the template of " + node + " is in vmid_min..vmid_max");
        }
    }
    // A run node with a template of its own clones that one, on that node.
    const std::string run_node = parsed.run_node.empty() ? parsed.node : parsed.run_node;
    if (const auto own = own_templates.find(run_node); own != own_templates.end()) {
        parsed.node = run_node;
        parsed.template_vmid = own->second;
        parsed.run_node.clear();
    }
    DS_TRY(check_proxmox_options(parsed));
    return parsed;
}

Result<std::vector<std::string>> proxmox_host_nodes(
    const std::map<std::string, std::string>& options) {
    const auto found = options.find(std::string(kProxmoxNodesKey));
    if (found == options.end()) return std::vector<std::string>{};
    if (options.contains("run_node")) {
        return pve_option_error(kProxmoxNodesKey, "excludes run_node (it sets run_node per node)");
    }
    std::vector<std::string> nodes;
    if (found->second == "auto") {
        auto online = online_nodes(options);
        DS_TRY(online);
        nodes = std::move(online).value();
    } else {
        for (const std::string& listed : split_list(found->second, '|')) {
            std::string node;
            DS_TRY(set_identifier(node, kProxmoxNodesKey, listed));
            if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(node);
        }
    }
    if (nodes.empty()) return pve_option_error(kProxmoxNodesKey, "names no (online) node");
    DS_TRY(check_clones_to_other_nodes(options, nodes));
    return nodes;
}

Result<std::unique_ptr<ProxmoxHypervisor>> make_proxmox_hypervisor(
    const std::map<std::string, std::string>& options) {
    std::map<std::string, std::string> client_options;
    for (const auto& [key, value] : options) {
        if (is_client_key(key)) {
            client_options.emplace(key, value);
        } else if (find_hypervisor_rule(key) == nullptr) {
            return pve_option_error(key, "unknown key (known: " + all_keys() + ")");
        }
    }
    DS_ASSIGN_OR_RETURN(auto hypervisor_options, proxmox_hypervisor_options(options));
    DS_ASSIGN_OR_RETURN(auto client, client_for(options));
    return ProxmoxHypervisor::create(std::shared_ptr<PveClient>(std::move(client)),
                                     std::move(hypervisor_options));
}

}  // namespace ds
