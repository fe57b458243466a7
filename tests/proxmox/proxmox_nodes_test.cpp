// A proxmox host line over a cluster's nodes (nodes=, proxmox_host.h)
// against the fake PVE with two nodes: a template whose disks are on local
// storage cannot be cloned to the other node (qemu-server PVE/API2/Qemu.pm,
// clone_vm: "can't clone VM to node ... (VM uses local storage)", linked or
// full), so the line is refused at start with what to change; shared
// storage or a template per node (template_per_node=) is accepted.
#include <catch2/catch.hpp>
#include <fstream>

#include "daemon/backends/hypervisor/proxmox/proxmox_host.h"
#include "proxmox/pve_fake_fixture.h"
#include "support/temp_dir.h"

namespace ds {
namespace {

using test::PveFake;

// Two nodes, a local storage (lvmthin, on each node) and a shared one (RBD);
// template 9000 on pve1 with its disk `template_disk`, and 9001 on pve2 on
// local storage, `extra_config` added to 9000's config.
std::string two_node_state(const std::string& template_disk, const std::string& extra_config = "") {
    return R"({
  "nodes": ["pve1", "pve2"],
  "storages": [{"id": "local", "type": "dir", "content": ["iso", "images"]},
               {"id": "local-lvm", "type": "lvmthin", "content": ["images"]},
               {"id": "ceph", "type": "rbd", "shared": true}],
  "vms": [{"vmid": 9000, "node": "pve1", "status": "stopped",
           "config": {"name": "disksweep-template", "template": "1", "agent": "1",
                      "memory": "1024", "cores": "1", "ostype": "l26",
                      "scsihw": "virtio-scsi-single", "boot": "order=scsi0",
                      "scsi0": ")" +
           template_disk + R"(")" + extra_config + R"(}},
          {"vmid": 9001, "node": "pve2", "status": "stopped",
           "config": {"name": "disksweep-template-2", "template": "1", "agent": "1",
                      "memory": "1024", "cores": "1", "ostype": "l26",
                      "scsihw": "virtio-scsi-single", "boot": "order=scsi0",
                      "scsi0": "local-lvm:base-9001-disk-0,size=2G"}}]
})";
}

constexpr const char* kLocalDisk = "local-lvm:base-9000-disk-0,size=2G";
constexpr const char* kSharedDisk = "ceph:base-9000-disk-0,size=2G";

struct Cluster {
    test::TempDir dir{"disksweep-pvenodes"};
    std::unique_ptr<PveFake> fake;

    explicit Cluster(const std::string& state) {
        std::ofstream(dir.file("state.json")) << state;
        fake =
            std::make_unique<PveFake>(std::vector<std::string>{"--state", dir.file("state.json")});
    }
    std::map<std::string, std::string> line(std::map<std::string, std::string> extra) const {
        std::map<std::string, std::string> options = {{"host", "127.0.0.1"},
                                                      {"port", std::to_string(fake->port())},
                                                      {"token", PveFake::kTokenId},
                                                      {"token_file", fake->secret_file()},
                                                      {"fingerprint", fake->fingerprint()},
                                                      {"node", "pve1"},
                                                      {"template_vmid", "9000"},
                                                      {"vmid_min", "5000"},
                                                      {"vmid_max", "5099"},
                                                      {"nodes", "auto"}};
        for (auto& [key, value] : extra) options[key] = value;
        return options;
    }
};

Error refusal(const Result<std::vector<std::string>>& nodes) {
    INFO((nodes.ok() ? "unexpectedly accepted" : ""));
    REQUIRE_FALSE(nodes.ok());
    CHECK(nodes.error().code == errc::kInvalidArgument);
    return nodes.error();
}

TEST_CASE("nodes=auto with a template on local storage is refused, saying what to change",
          "[proxmox][fake]") {
    Cluster cluster(two_node_state(kLocalDisk));
    for (const char* linked : {"1", "0"}) {
        INFO("linked_clone=" << linked);
        const Error error = refusal(proxmox_host_nodes(cluster.line({{"linked_clone", linked}})));
        CHECK_THAT(error.message, Catch::StartsWith("proxmox option 'nodes': "));
        CHECK_THAT(error.message, Catch::Contains("runs on pve2"));
        CHECK_THAT(error.message, Catch::Contains("scsi0 is on storage 'local-lvm', which is "
                                                  "not shared"));
        CHECK_THAT(error.message,
                   Catch::Contains("can't clone VM to node 'pve2' (VM uses local storage)"));
        CHECK_THAT(error.message, Catch::Contains("shared storage"));
        CHECK_THAT(error.message, Catch::Contains("template_per_node=pve2:VMID"));
    }
    // Listed nodes are checked the same way; the template's own node alone needs no clone
    // to another node.
    refusal(proxmox_host_nodes(cluster.line({{"nodes", "pve1|pve2"}})));
    auto own = proxmox_host_nodes(cluster.line({{"nodes", "pve1"}}));
    REQUIRE(own.ok());
    CHECK(*own == std::vector<std::string>{"pve1"});
}

TEST_CASE("nodes=auto with the template on shared storage takes every node", "[proxmox][fake]") {
    Cluster cluster(two_node_state(kSharedDisk, R"(, "ide2": "none,media=cdrom")"));
    auto nodes = proxmox_host_nodes(cluster.line({}));
    INFO((nodes.ok() ? "" : nodes.error().message));
    REQUIRE(nodes.ok());
    CHECK(*nodes == std::vector<std::string>{"pve1", "pve2"});
}

TEST_CASE("a CD-ROM image on local storage keeps a template on its node, as PVE counts it",
          "[proxmox][fake]") {
    Cluster cluster(two_node_state(kSharedDisk, R"(, "ide2": "local:iso/debian.iso,media=cdrom")"));
    const Error error = refusal(proxmox_host_nodes(cluster.line({})));
    CHECK_THAT(error.message, Catch::Contains("ide2 is on storage 'local'"));
}

TEST_CASE("a full clone to another node needs a shared clone_storage", "[proxmox][fake]") {
    Cluster cluster(two_node_state(kSharedDisk));
    const Error error = refusal(
        proxmox_host_nodes(cluster.line({{"linked_clone", "0"}, {"clone_storage", "local-lvm"}})));
    CHECK_THAT(error.message, Catch::StartsWith("proxmox option 'clone_storage': 'local-lvm' is "
                                                "not shared"));
    CHECK(
        proxmox_host_nodes(cluster.line({{"linked_clone", "0"}, {"clone_storage", "ceph"}})).ok());
}

TEST_CASE("template_per_node gives a node its own template: no clone to another node",
          "[proxmox][fake]") {
    Cluster cluster(two_node_state(kLocalDisk));
    const auto line = cluster.line({{"template_per_node", "pve2:9001"}});
    auto nodes = proxmox_host_nodes(line);
    INFO((nodes.ok() ? "" : nodes.error().message));
    REQUIRE(nodes.ok());
    CHECK(*nodes == std::vector<std::string>{"pve1", "pve2"});

    // Each member line (the registry sets run_node) clones on its own node.
    auto member = [&](const std::string& node) {
        auto options = line;
        options.erase("nodes");
        options["run_node"] = node;
        auto parsed = proxmox_hypervisor_options(options);
        INFO((parsed.ok() ? "" : parsed.error().message));
        REQUIRE(parsed.ok());
        return *parsed;
    };
    const ProxmoxHypervisorOptions pve2 = member("pve2");
    CHECK(pve2.node == "pve2");
    CHECK(pve2.template_vmid == 9001);
    CHECK(pve2.run_node.empty());
    const ProxmoxHypervisorOptions pve1 = member("pve1");
    CHECK(pve1.node == "pve1");
    CHECK(pve1.template_vmid == 9000);
}

TEST_CASE("template_per_node is checked: its form, and its templates outside the range",
          "[proxmox]") {
    std::map<std::string, std::string> line = {
        {"node", "pve1"}, {"template_vmid", "9000"}, {"vmid_min", "5000"}, {"vmid_max", "5099"}};
    auto refused = [&](const std::string& value, const std::string& fragment) {
        auto options = line;
        options["template_per_node"] = value;
        auto parsed = proxmox_hypervisor_options(options);
        INFO(value);
        REQUIRE_FALSE(parsed.ok());
        CHECK_THAT(parsed.error().message,
                   Catch::StartsWith("proxmox option 'template_per_node': "));
        CHECK_THAT(parsed.error().message, Catch::Contains(fragment));
    };
    refused("pve2", "expected NODE:VMID");
    refused("pve2:12", "100");
    refused("pve2:9001|pve2:9002", "names node pve2 twice");
    refused("pve2:5050", "in vmid_min..vmid_max");
}

}  // namespace
}  // namespace ds
