#include "daemon/hypervisor/proxmox/proxmox_host.h"

#include <algorithm>

#include "common/text.h"

namespace ds {

namespace {

using HypervisorOptionSetter = Status (*)(ProxmoxHypervisorOptions&, std::string_view key,
                                          std::string_view value);

struct HypervisorOptionRule {
    PveOptionKey key;
    HypervisorOptionSetter set;
};

// PVE's VM ids: 100..999999999.
Status set_vmid(int& field, std::string_view key, std::string_view value) {
    auto number = parse_pve_option_number(key, value, 100, 999999999);
    DS_TRY(number);
    field = static_cast<int>(*number);
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
         auto flag = parse_pve_option_number(k, v, 0, 1);
         DS_TRY(flag);
         o.linked_clone = *flag == 1;
         return ok_status();
     }},
    {{"clone_storage",
      "full clones only: the PVE storage of their disks (default: the template's)"},
     [](ProxmoxHypervisorOptions& o, std::string_view k, std::string_view v) -> Status {
         return set_identifier(o.clone_storage, k, v);
     }},
    {{"agent_program", "the agent's path in the guest (default /usr/local/bin/disksweep-agent)"},
     [](ProxmoxHypervisorOptions& o, std::string_view k, std::string_view v) -> Status {
         if (!v.starts_with('/')) return pve_option_error(k, "expected an absolute path");
         o.agent_program = v;
         return ok_status();
     }},
};

const HypervisorOptionRule* find_hypervisor_rule(std::string_view key) {
    for (const auto& rule : kHypervisorOptionRules) {
        if (rule.key.key == key) return &rule;
    }
    return nullptr;
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
    auto parsed = pve_client_options(client_options);
    DS_TRY(parsed);
    return PveClient::create(std::move(parsed).value());
}

// The online nodes of the cluster, sorted.
Result<std::vector<std::string>> online_nodes(const std::map<std::string, std::string>& options) {
    auto client = client_for(options);
    DS_TRY(client);
    auto resources = (*client)->get("/cluster/resources", PveParams().set("type", "node"));
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

std::string all_keys() {
    std::vector<std::string> keys;
    for (const auto& key : pve_option_keys()) keys.emplace_back(key.key);
    for (const auto& key : proxmox_hypervisor_option_keys()) keys.emplace_back(key.key);
    return join(keys, ", ");
}

}  // namespace

std::span<const PveOptionKey> proxmox_hypervisor_option_keys() {
    static const std::vector<PveOptionKey> keys = [] {
        std::vector<PveOptionKey> all;
        for (const auto& rule : kHypervisorOptionRules) all.push_back(rule.key);
        return all;
    }();
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
    auto hypervisor_options = proxmox_hypervisor_options(options);
    DS_TRY(hypervisor_options);
    auto client = client_for(options);
    DS_TRY(client);
    return ProxmoxHypervisor::create(std::shared_ptr<PveClient>(std::move(client).value()),
                                     std::move(hypervisor_options).value());
}

}  // namespace ds
