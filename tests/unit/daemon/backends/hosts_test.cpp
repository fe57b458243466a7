// Hosts: host lines, the catalog's checks of pinned hosts and storages, and
// the pool that leases each run one slot of one host (daemon/backends/hosts.h).
#include "daemon/backends/hosts.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "daemon/backends/hypervisor/proxmox/proxmox_hypervisor.h"
#include "daemon/backends/registry.h"
#include "support/fakes/daemon_fakes.h"
#include "support/temp_dir.h"

using namespace ds;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<Host> fake_host(const std::string& name, const std::string& kind, int parallel,
                                std::vector<std::string> storages = {}) {
    auto host = std::make_unique<Host>();
    host->description = {
        .name = name, .kind = kind, .detail = "fake", .storages = std::move(storages)};
    host->hypervisor = std::make_unique<testing::FakeHypervisor>();
    host->parallel = parallel;
    return host;
}

StorageConfig on(const std::string& hypervisor, const std::string& storage,
                 const std::string& pool = "") {
    StorageConfig config;
    config.hypervisor = hypervisor;
    config.storage = storage;
    config.storage_pool = pool;
    return config;
}

}  // namespace

TEST_CASE("a host line needs a name and names its bad keys", "[hosts]") {
    auto line = parse_host_line("libvirt:node2,uri=qemu:///system,parallel=2");
    REQUIRE(line.ok());
    CHECK(line->kind == "libvirt");
    CHECK(line->pool == "node2");
    CHECK(line->options.at("parallel") == "2");

    auto nameless = parse_host_line("libvirt,uri=qemu:///system");
    REQUIRE_FALSE(nameless.ok());
    CHECK_THAT(nameless.error().message, Catch::Contains("no name; write KIND:NAME"));

    const HostContext context{"/tmp/disksweep-hosts-test/libvirt", "/tmp/disksweep-hosts-test"};
    auto unknown_kind = make_configured_hosts("xen:node3", context);
    REQUIRE_FALSE(unknown_kind.ok());
    CHECK_THAT(unknown_kind.error().message,
               Catch::Contains("unknown hypervisor kind 'xen'; valid: libvirt, proxmox"));
    auto unknown_key = make_configured_hosts("libvirt:node2,url=qemu:///system", context);
    REQUIRE_FALSE(unknown_key.ok());
    CHECK_THAT(unknown_key.error().message,
               Catch::Contains("host 'node2': unknown option 'url'; valid: uri, pool, parallel"));
    auto bad_parallel = make_configured_hosts("libvirt:node2,parallel=0", context);
    REQUIRE_FALSE(bad_parallel.ok());
    CHECK_THAT(bad_parallel.error().message, Catch::Contains("parallel must be a whole number"));
    // The host baselines' pseudo-hypervisor is no host a line may configure.
    CHECK_FALSE(make_configured_hosts("host:h", context).ok());
}

TEST_CASE("a proxmox host line refuses a secret in the line and names missing keys", "[hosts]") {
    const HostContext context{"", "/tmp/disksweep-hosts-test"};
    auto secret = make_configured_hosts(
        "proxmox:pve,host=pve1,token=a@pve!t,secret=5f0c2d1e-8a7b,fingerprint=AA", context);
    REQUIRE_FALSE(secret.ok());
    CHECK_THAT(secret.error().message, Catch::Contains("token_file"));
    CHECK_THAT(secret.error().message, !Catch::Contains("5f0c2d1e"));
    auto no_node = make_configured_hosts(
        "proxmox:pve,host=pve1,template_vmid=9000,vmid_min=9100,vmid_max=9199", context);
    REQUIRE_FALSE(no_node.ok());
    CHECK_THAT(no_node.error().message, Catch::Contains("'node': missing"));
}

TEST_CASE("a proxmox line with nodes= is one host per node, pinned by the line's name", "[hosts]") {
    test::TempDir dir;
    const std::string token_file = dir.file("token");
    { std::ofstream(token_file) << "5f0c2d1e-8a7b-4c6d-9e0f-1a2b3c4d5e6f\n"; }
    std::filesystem::permissions(token_file, std::filesystem::perms::owner_read,
                                 std::filesystem::perm_options::replace);
    const HostContext context{"", dir.path().string()};
    const std::string line = "proxmox:pve,host=pve1,token=a@pve!sweeps,token_file=" + token_file +
                             ",fingerprint=" + std::string(64, 'A') +
                             ",node=pve1,template_vmid=9000,vmid_min=9100,vmid_max=9199,parallel=2";
    // pve2 has a template of its own: a node that would clone pve1's template
    // needs PVE's answer on the template's storage first (proxmox_nodes_test).
    auto hosts =
        make_configured_hosts(line + ",nodes=pve2|pve1|pve2,template_per_node=pve2:9001", context);
    INFO((hosts.ok() ? "" : hosts.error().message));
    REQUIRE(hosts.ok());
    REQUIRE(hosts->size() == 2);
    CHECK((*hosts)[0]->description.name == "pve/pve2");
    CHECK((*hosts)[1]->description.name == "pve/pve1");
    for (const auto& host : *hosts) {
        CHECK(host->description.group == "pve");
        CHECK(host->description.kind == "proxmox");
        CHECK(host->parallel == 2);  // per node
        CHECK(host->description.selected_by("pve"));
        CHECK(host->description.selected_by(host->description.name));
        CHECK_FALSE(host->description.selected_by("pve1"));
    }
    const auto& first = dynamic_cast<ProxmoxHypervisor&>(*(*hosts)[0]->hypervisor);
    CHECK(first.run_node() == "pve2");
    CHECK(first.options().node == "pve2");  // its own template's node
    CHECK(first.options().template_vmid == 9001);
    const auto& second = dynamic_cast<ProxmoxHypervisor&>(*(*hosts)[1]->hypervisor);
    CHECK(second.options().template_vmid == 9000);

    auto single = make_configured_hosts(line, context);
    REQUIRE(single.ok());
    REQUIRE(single->size() == 1);
    CHECK((*single)[0]->description.name == "pve");
    CHECK((*single)[0]->description.group.empty());

    auto bad_node = make_configured_hosts(line + ",nodes=pve1|no/such", context);
    REQUIRE_FALSE(bad_node.ok());
    CHECK_THAT(bad_node.error().message, Catch::Contains("'nodes'"));
    auto both = make_configured_hosts(line + ",nodes=pve1,run_node=pve2", context);
    REQUIRE_FALSE(both.ok());
    CHECK_THAT(both.error().message, Catch::Contains("excludes run_node"));
}

TEST_CASE("the catalog checks pinned hosts and the storages a host reaches", "[hosts]") {
    BackendCatalog catalog;
    REQUIRE(catalog.add_host({.name = "local", .kind = "libvirt", .detail = "embedded"}).ok());
    REQUIRE(catalog
                .add_host({.name = "node2",
                           .kind = "libvirt",
                           .detail = "qemu:///system",
                           .storages = {"rbd:fast"}})
                .ok());
    CHECK_FALSE(catalog.add_host({.name = "node2", .kind = "libvirt", .detail = "again"}).ok());
    auto file =
        make_storage_backend(parse_storage_line("file").value(),
                             StorageContext{.default_file_directory = "/tmp/disksweep-hosts-test"});
    REQUIRE(file.ok());
    REQUIRE(catalog.add_storage(std::move(file).value()).ok());

    CHECK(catalog.check(on("libvirt", "file")).ok());
    CHECK(catalog.check(on("libvirt", "file"), {"local"}).ok());
    // node2 reaches only rbd:fast: a sweep of file disks pinned to it cannot run.
    Status unreachable = catalog.check(on("libvirt", "file"), {"node2"});
    REQUIRE_FALSE(unreachable.ok());
    CHECK_THAT(
        unreachable.error().message,
        Catch::Contains("no libvirt host of the sweep's hosts (node2) reaches storage 'file'"));
    Status nowhere = catalog.check(on("libvirt", "file"), {"nowhere"});
    REQUIRE_FALSE(nowhere.ok());
    CHECK_THAT(nowhere.error().message, Catch::Contains("nowhere"));
    const Json json = catalog.to_json();
    CHECK(json["hosts"].size() == 2);
    CHECK(json["hypervisors"].size() == 1);  // one entry per kind
}

TEST_CASE("the pool leases the least busy eligible host and waits when all are busy", "[hosts]") {
    HostPool pool;
    pool.add(fake_host("a", "libvirt", 1));
    pool.add(fake_host("b", "libvirt", 2));
    pool.add(fake_host("p", "proxmox", 1, {"pve:local-lvm"}));
    CHECK(pool.total_parallel() == 4);
    std::atomic<bool> cancelled{false};

    auto first = pool.acquire(on("libvirt", "file"), {}, cancelled);
    REQUIRE(first.ok());
    CHECK(first->host().description.name == "a");
    auto second = pool.acquire(on("libvirt", "file"), {}, cancelled);
    REQUIRE(second.ok());
    CHECK(second->host().description.name == "b");
    auto third = pool.acquire(on("libvirt", "file"), {}, cancelled);
    REQUIRE(third.ok());
    CHECK(third->host().description.name == "b");
    auto on_proxmox = pool.acquire(on("proxmox", "pve", "local-lvm"), {}, cancelled);
    REQUIRE(on_proxmox.ok());
    CHECK(on_proxmox->host().description.name == "p");

    // Every libvirt slot is taken: the next run waits until one is freed.
    auto waiting = std::async(
        std::launch::async, [&] { return pool.acquire(on("libvirt", "file"), {"a"}, cancelled); });
    CHECK(waiting.wait_for(300ms) == std::future_status::timeout);
    { auto freed = std::move(first).value(); }
    REQUIRE(waiting.wait_for(5s) == std::future_status::ready);
    auto leased = waiting.get();
    REQUIRE(leased.ok());
    CHECK(leased->host().description.name == "a");

    // Cancelled while waiting; and no host at all is said at once.
    auto cancelled_wait = std::async(
        std::launch::async, [&] { return pool.acquire(on("libvirt", "file"), {"a"}, cancelled); });
    std::this_thread::sleep_for(100ms);
    cancelled = true;
    REQUIRE(cancelled_wait.wait_for(5s) == std::future_status::ready);
    auto gave_up = cancelled_wait.get();
    REQUIRE_FALSE(gave_up.ok());
    CHECK(gave_up.error().code == errc::kCancelled);
    auto no_host = pool.acquire(on("proxmox", "file"), {}, cancelled);
    REQUIRE_FALSE(no_host.ok());
    CHECK(no_host.error().code == errc::kNotConfigured);
}
