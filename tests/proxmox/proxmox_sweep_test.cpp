// Whole sweeps on Proxmox VE through disksweepd, against the fake PVE API
// over real HTTPS with a pinned certificate: the daemon's config names a
// proxmox host and a pve: storage, hostctl submits a sweep, and every
// request the daemon makes is checked against PVE 8.4's schema by the fake.
// The guest behind agent/exec is tests/proxmox/standin_guest.py: real fio
// on this machine, the disk as the VM's PVE config presents it.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>

#include "proxmox/pve_fake_fixture.h"
#include "support/daemon_fixture.h"
#include "support/run_rows.h"
#include "support/skip.h"

using namespace ds;
using ds::test::DaemonFixture;
using ds::test::PveFake;

namespace {

void skip_without_fio() {
    if (std::system("command -v fio >/dev/null 2>&1") != 0) {
        test::skip_test("fio is not installed (the stand-in guest measures with it)");
    }
}

std::string proxmox_host_line(const PveFake& fake, const std::string& extra = "") {
    return "proxmox:pve-test,host=127.0.0.1,port=" + std::to_string(fake.port()) +
           ",token=" + PveFake::kTokenId + ",token_file=" + fake.secret_file() +
           ",fingerprint=" + fake.fingerprint() +
           ",node=pve1,template_vmid=9000,vmid_min=5000,vmid_max=5099,parallel=2" + extra;
}

std::vector<std::string> daemon_args(const PveFake& fake) {
    return {"--accel", "tcg", "--host", proxmox_host_line(fake), "--storage", "pve:local-lvm",
            // No guest image: Proxmox clones its template, so sweeps on it
            // run without one.
            "--image-dir", test::test_temp_dir() + "/no-images"};
}

constexpr const char* kSpec = R"(
name = "pve-cache"
repetitions = 2
[hypervisor]
backend = "proxmox"
[matrix]
storage = "pve:local-lvm"
bus = "scsi-single"
iothread = true
ssd = true
discard = true
cache = ["none", "unsafe"]
filesystem = "ext4:noatime"
[[workload]]
kind = "fio"
name = "randrw"
rw = "randrw"
bs = "4k"
size = "8m"
runtime = "1s"
)";

}  // namespace

TEST_CASE("a sweep runs on Proxmox through the API, every request valid by PVE's schema",
          "[proxmox][fake][sweep]") {
    skip_without_fio();
    PveFake fake({"--guest-exec", std::string(PYTHON3_EXECUTABLE) + " " + STANDIN_GUEST_SCRIPT});
    DaemonFixture daemon(daemon_args(fake));
    INFO("daemon log: " << daemon.log());
    REQUIRE(daemon.ready());

    const std::string spec = test::write_temp_file("pve-sweep.toml", kSpec);
    auto submitted = daemon.hostctl({"sweep", "submit", spec, "--wait"}, std::chrono::seconds(300));
    INFO("hostctl: " << submitted.out << submitted.err << "\nfake PVE log: " << fake.log());
    REQUIRE(submitted.exit_code == 0);

    const auto runs = test::runs_of_sweep(daemon.database(), 1);
    REQUIRE(runs.size() == 4);
    for (const auto& run : runs) {
        INFO(run.failure_reason);
        CHECK(run.status == "succeeded");
        CHECK(run.config["hypervisor"] == "proxmox");
        // What PVE's config says of the data disk, read back and verified.
        const Json& pve = run.applied["hypervisor"]["pve"];
        CHECK(pve["drive"] == "scsi1");
        CHECK(pve["scsihw"] == "virtio-scsi-single");
        const std::string drive = pve["value"];
        CHECK(drive.find("cache=" + run.config["cache"].get<std::string>()) != std::string::npos);
        CHECK(drive.find("iothread=1") != std::string::npos);
        CHECK(drive.find("ssd=1") != std::string::npos);
        CHECK(drive.find("discard=on") != std::string::npos);
        // QEMU's view through PVE's monitor, verified as a third level.
        CHECK(run.applied["hypervisor"]["qemu_info_block"]["cache"] == run.config["cache"]);
        CHECK(run.metrics.at("read_iops") > 0);
    }
    // The runs name their host.
    auto shown = daemon.hostctl({"--json", "sweep", "show", "1"});
    REQUIRE(shown.exit_code == 0);
    const Json shown_runs = Json::parse(shown.out)["runs"];
    REQUIRE(shown_runs.size() == 4);
    for (const auto& run : shown_runs) {
        CHECK(run["versions"]["host"] == "pve-test");
        CHECK(run["versions"].contains("proxmox"));
    }
    // Every request was valid: the fake answers an invalid one with 400 and
    // logs it; and nothing of disksweep is left in the cluster.
    CHECK(fake.log().find(" 400 ") == std::string::npos);
    auto client = PveClient::create(fake.pinned_options());
    REQUIRE(client.ok());
    auto resources = (*client)->get("/cluster/resources", PveParams().set("type", "vm"));
    REQUIRE(resources.ok());
    auto status = daemon.hostctl({"--json", "status"});
    REQUIRE(status.exit_code == 0);
    const Json daemon_status = Json::parse(status.out);
    // The daemon's guests carry its instance's prefix (the template does not).
    const std::string prefix = daemon_status["instance"]["resource_prefix"];
    REQUIRE(prefix.starts_with("disksweep-"));
    for (const auto& vm : *resources) {
        CHECK(vm.value("name", "").rfind(prefix, 0) == std::string::npos);
    }
    const Json hosts = daemon_status["hosts"];
    REQUIRE(hosts.size() == 2);
    CHECK(hosts[1]["name"] == "pve-test");
    CHECK(hosts[1]["parallel"] == 2);
}

TEST_CASE("a Proxmox host line with a bad key stops the daemon and names the key",
          "[proxmox][fake][sweep]") {
    PveFake fake;
    DaemonFixture daemon({"--accel", "tcg", "--host", proxmox_host_line(fake, ",vmid_mx=5100")});
    CHECK_FALSE(daemon.ready());
    CHECK(daemon.log().find("unknown option 'vmid_mx'") != std::string::npos);
    CHECK(daemon.log().find(PveFake::kSecret) == std::string::npos);
}

namespace {

// Two nodes sharing an RBD storage that holds the template's disk, so
// linked clones may go to either node (PVE refuses a clone to another node
// from local storage).
constexpr const char* kTwoNodeCluster = R"({
  "nodes": ["pve1", "pve2"],
  "storages": [{"id": "local", "type": "dir", "content": ["iso", "images"]},
               {"id": "ceph", "type": "rbd", "shared": true}],
  "vms": [{"vmid": 9000, "node": "pve1", "status": "stopped",
           "config": {"name": "disksweep-template", "template": "1", "agent": "1",
                      "memory": "1024", "cores": "1", "ostype": "l26",
                      "scsihw": "virtio-scsi-single", "boot": "order=scsi0",
                      "scsi0": "ceph:base-9000-disk-0,size=2G"}}]
})";

std::string two_node_spec() {
    std::string spec = kSpec;
    spec.replace(spec.find("pve:local-lvm"), std::string("pve:local-lvm").size(), "pve:ceph");
    return spec;
}

}  // namespace

TEST_CASE("a Proxmox cluster's nodes from /cluster/resources each take runs",
          "[proxmox][fake][sweep]") {
    skip_without_fio();
    const std::string state = test::write_temp_file("pve-two-nodes.json", kTwoNodeCluster);
    PveFake fake({"--state", state, "--guest-exec",
                  std::string(PYTHON3_EXECUTABLE) + " " + STANDIN_GUEST_SCRIPT});
    std::string line = proxmox_host_line(fake, ",nodes=auto");
    line.replace(line.find("parallel=2"), std::string("parallel=2").size(), "parallel=1");
    DaemonFixture daemon({"--accel", "tcg", "--host", line, "--storage", "pve:ceph", "--image-dir",
                          test::test_temp_dir() + "/no-images"});
    INFO("daemon log: " << daemon.log());
    REQUIRE(daemon.ready());

    auto status = daemon.hostctl({"--json", "status"});
    REQUIRE(status.exit_code == 0);
    const Json hosts = Json::parse(status.out)["hosts"];
    REQUIRE(hosts.size() == 3);  // local, and one per online node
    CHECK(hosts[1]["name"] == "pve-test/pve1");
    CHECK(hosts[2]["name"] == "pve-test/pve2");

    // Pinned by the line's name: any of its nodes.
    std::string spec = two_node_spec();
    spec.replace(spec.find("backend = \"proxmox\""), std::string("backend = \"proxmox\"").size(),
                 "backend = \"proxmox\"\nhosts = [\"pve-test\"]");
    const std::string spec_file = test::write_temp_file("pve-two-nodes.toml", spec);
    auto submitted =
        daemon.hostctl({"sweep", "submit", spec_file, "--wait"}, std::chrono::seconds(300));
    INFO("hostctl: " << submitted.out << submitted.err << "\nfake PVE log: " << fake.log());
    REQUIRE(submitted.exit_code == 0);
    CHECK(fake.log().find(" 400 ") == std::string::npos);

    auto shown = daemon.hostctl({"--json", "sweep", "show", "1"});
    REQUIRE(shown.exit_code == 0);
    std::set<std::string> used;
    const Json runs = Json::parse(shown.out)["runs"];
    REQUIRE(runs.size() == 4);
    for (const auto& run : runs) {
        CHECK(run["status"] == "succeeded");
        used.insert(run["versions"]["host"].get<std::string>());
    }
    // With one run per node at a time, both nodes took runs.
    CHECK(used == std::set<std::string>{"pve-test/pve1", "pve-test/pve2"});
    // Runs of different nodes are not pooled: each host is its own partition.
    auto compared = daemon.hostctl({"--json", "results", "compare", "1"});
    REQUIRE(compared.exit_code == 0);
    CHECK(Json::parse(compared.out)["partitions"].size() == 2);
}
