// The Proxmox hypervisor backend against the fake PVE API (every request
// checked against PVE 8.4's schema; a request PVE would refuse fails the
// call): the data disk's property string, the VM's id range, name and tag,
// the agent channel through agent/exec + file-write + file-read with the
// real disksweep-agent in one-shot mode, destroy, and cleanup that leaves
// foreign VMs alone.
#include "daemon/backends/hypervisor/proxmox/proxmox_hypervisor.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "common/protocol.h"
#include "proxmox/pve_fake_fixture.h"
#include "support/temp_dir.h"

namespace ds {
namespace {

using test::PveFake;
using namespace std::chrono_literals;

constexpr auto kTaskTimeout = 60s;
constexpr const char* kPrefix = "disksweep-t-";

StorageConfig scsi_single_config() {
    StorageConfig config;
    config.hypervisor = "proxmox";
    config.bus = Bus::kScsiSingle;
    config.cache = CacheMode::kUnsafe;
    config.aio = AioMode::kIoUring;
    config.discard = true;
    config.detect_zeroes = DetectZeroes::kUnmap;
    config.ssd = true;
    config.iothread = true;
    config.iops_limit = 5000;
    config.bandwidth_limit = 100ull << 20;  // 100 MiB/s
    config.queues = 4;
    return config;
}

const HypervisorAllocatedDisk kDisk{"local-lvm", 4ull << 30};

std::string encoded(const PveDataDisk& disk) {
    auto text = disk.drive.encode();
    REQUIRE(text.ok());
    return *text;
}

Error refusal(const StorageConfig& config) {
    auto disk = pve_data_disk(config, kDisk);
    REQUIRE_FALSE(disk.ok());
    return disk.error();
}

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream content;
    content << in.rdbuf();
    return content.str();
}

void write_script(const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
}

// A stand-in for an agent that has a disk to run the job on: speaks the
// protocol into its files as the real one does (hello, wait for the job,
// progress, result; the progress file replaced whole each time), slowly
// enough that the host polls several times.
constexpr const char* kStandIn =
    "#!/bin/sh\n"
    "# args: --job-file JOB --progress-file PROGRESS --result-file RESULT\n"
    "job=$2; progress=$4; result=$6\n"
    "hello='{\"type\":\"hello\",\"protocol\":2}'\n"
    "replace() { printf '%s\\n' \"$2\" > \"$1.tmp\" && mv \"$1.tmp\" \"$1\"; }\n"
    "replace \"$progress\" \"$hello\"\n"
    "while ! grep -q . \"$job\" 2>/dev/null; do sleep 0.05; done\n"
    "sleep 0.3\n"
    "replace \"$progress\" "
    "\"$hello\n{\\\"type\\\":\\\"progress\\\",\\\"phase\\\":\\\"bench\\\",\\\"fraction\\\":0.5}\"\n"
    "sleep 0.3\n"
    "replace \"$result\" '{\"type\":\"result\",\"run_id\":\"r1\"}'\n";

struct Backend {
    test::TempDir dir{"disksweep-pvehv"};
    std::unique_ptr<PveFake> fake;
    std::shared_ptr<PveClient> client;
    std::unique_ptr<ProxmoxHypervisor> hypervisor;

    // `guest_program`: what agent/exec runs ("" = the fake's built-ins only).
    explicit Backend(const std::string& guest_program = "", std::vector<std::string> extra = {}) {
        extra.insert(extra.end(), {"--guest-root", dir.file("guests")});
        if (!guest_program.empty()) {
            write_script(dir.file("guest-wrapper.sh"), test::guest_exec_wrapper(guest_program));
            extra.insert(extra.end(), {"--guest-exec", "sh " + dir.file("guest-wrapper.sh")});
        }
        fake = std::make_unique<PveFake>(extra);
        auto created = PveClient::create(fake->pinned_options());
        REQUIRE(created.ok());
        client = std::move(created).value();
        auto made = ProxmoxHypervisor::create(client, options());
        INFO((made.ok() ? "" : made.error().message));
        REQUIRE(made.ok());
        hypervisor = std::move(made).value();
    }
    static ProxmoxHypervisorOptions options() {
        ProxmoxHypervisorOptions options;
        options.node = "pve1";
        options.template_vmid = 9000;
        options.vmid_min = 5000;
        options.vmid_max = 5002;
        options.task_timeout = kTaskTimeout;
        options.agent_poll_interval = 50ms;
        return options;
    }
    VmRequest request(const std::string& name, StorageConfig config = scsi_single_config()) {
        VmRequest request;
        request.name = name;
        request.config = std::move(config);
        request.data_disk = kDisk;
        request.vcpus = 2;
        request.memory_mib = 1024;
        return request;
    }
    void start(const std::string& name, StorageConfig config = scsi_single_config()) {
        Status started = hypervisor->start_vm(request(name, std::move(config)));
        INFO((started.ok() ? "" : started.error().message + "\n" + fake->log()));
        REQUIRE(started.ok());
    }
    Json config_of(int vmid) {
        auto config =
            client->get(pve_path({"nodes", "pve1", "qemu", std::to_string(vmid), "config"}));
        REQUIRE(config.ok());
        return *config;
    }
    Json vm_resources() {
        auto resources = client->get("/cluster/resources", PveParams().set("type", "vm"));
        REQUIRE(resources.ok());
        return *resources;
    }
    // The resource of the VM named `name`, null when there is none.
    Json resource_named(const std::string& name) {
        for (const Json& resource : vm_resources()) {
            if (resource.value("name", "") == name) return resource;
        }
        return nullptr;
    }
    // Every volume of every storage of pve1, as PVE lists their content.
    std::vector<std::string> volumes() {
        std::vector<std::string> found;
        for (const char* storage : {"local", "local-lvm"}) {
            auto content = client->get(pve_path({"nodes", "pve1", "storage", storage, "content"}));
            REQUIRE(content.ok());
            for (const Json& entry : *content) found.push_back(entry.value("volid", ""));
        }
        return found;
    }
    // The ids of the cluster's VMs, the template's apart.
    std::vector<int> vm_ids() {
        std::vector<int> ids;
        for (const Json& resource : vm_resources()) {
            if (resource["vmid"] != 9000) ids.push_back(resource["vmid"]);
        }
        return ids;
    }
    std::string guest_file(int vmid, const std::string& path) {
        return read_text(dir.file("guests") + "/" + std::to_string(vmid) + path);
    }
};

Json decode(const Result<std::string>& line) {
    INFO((line.ok() ? "" : line.error().message));
    REQUIRE(line.ok());
    return Json::parse(*line);
}

}  // namespace

TEST_CASE("proxmox data disk: every setting PVE has, as one property string", "[proxmox]") {
    auto disk = pve_data_disk(scsi_single_config(), kDisk);
    REQUIRE(disk.ok());
    CHECK(disk->key == "scsi1");
    CHECK(disk->scsihw == "virtio-scsi-single");
    CHECK(encoded(*disk) ==
          "local-lvm:4,format=raw,cache=unsafe,aio=io_uring,discard=on,ssd=1,iothread=1,"
          "detect_zeroes=1,queues=4,mbps=100,iops=5000,serial=disksweep-data");

    StorageConfig plain;
    plain.bus = Bus::kVirtioBlk;
    auto virtio = pve_data_disk(plain, HypervisorAllocatedDisk{"local", 512ull << 20});
    REQUIRE(virtio.ok());
    CHECK(virtio->key == "virtio1");
    CHECK_FALSE(virtio->scsihw.has_value());
    CHECK(encoded(*virtio) ==
          "local:0.5,format=raw,cache=none,discard=ignore,iothread=0,detect_zeroes=0,"
          "serial=disksweep-data");

    plain.bus = Bus::kSata;
    plain.ssd = true;
    plain.bandwidth_limit = 1536ull << 10;  // 1.5 MiB/s
    auto sata = pve_data_disk(plain, kDisk);
    REQUIRE(sata.ok());
    CHECK(sata->key == "sata1");
    CHECK(encoded(*sata) ==
          "local-lvm:4,format=raw,cache=none,discard=ignore,ssd=1,detect_zeroes=0,mbps=1.5,"
          "serial=disksweep-data");

    plain.bus = Bus::kScsi;
    auto scsi = pve_data_disk(plain, kDisk);
    REQUIRE(scsi.ok());
    CHECK(scsi->scsihw == "virtio-scsi-pci");
}

TEST_CASE("proxmox data disk: what PVE cannot express is refused, naming it", "[proxmox]") {
    StorageConfig config;
    config.bus = Bus::kVirtioBlk;
    config.ssd = true;
    CHECK(refusal(config).code == errc::kUnsupported);
    CHECK_THAT(refusal(config).message, Catch::Contains("ssd") && Catch::Contains("virtio-blk"));

    config = StorageConfig();
    config.bus = Bus::kVirtioBlk;
    config.queues = 2;
    CHECK_THAT(refusal(config).message, Catch::Contains("queues"));

    config = StorageConfig();
    config.bus = Bus::kScsiSingle;
    config.queues = 1;
    CHECK_THAT(refusal(config).message, Catch::Contains("queues=1"));

    config = StorageConfig();
    config.bus = Bus::kSata;
    config.iothread = true;
    CHECK_THAT(refusal(config).message, Catch::Contains("iothread"));

    config.bus = Bus::kScsi;  // a shared controller: PVE would ignore it
    CHECK_THAT(refusal(config).message, Catch::Contains("iothread"));

    config = StorageConfig();
    config.detect_zeroes = DetectZeroes::kUnmap;
    CHECK_THAT(refusal(config).message, Catch::Contains("unmap without discard"));
    config.detect_zeroes = DetectZeroes::kOn;
    config.discard = true;
    CHECK_THAT(refusal(config).message, Catch::Contains("on with discard"));

    auto odd_size = pve_data_disk(StorageConfig(), HypervisorAllocatedDisk{"local-lvm", 1000});
    REQUIRE_FALSE(odd_size.ok());
    CHECK_THAT(odd_size.error().message, Catch::Contains("MiB"));
}

TEST_CASE("proxmox options: the range must keep clear of the template", "[proxmox]") {
    auto options = Backend::options();
    CHECK(check_proxmox_options(options).ok());
    options.template_vmid = 5001;
    CHECK_THAT(check_proxmox_options(options).error().message, Catch::Contains("template"));
    options = Backend::options();
    options.vmid_min = 99;
    CHECK_FALSE(check_proxmox_options(options).ok());
    options = Backend::options();
    options.clone_storage = "local-lvm";
    CHECK_THAT(check_proxmox_options(options).error().message, Catch::Contains("full clones"));
}

TEST_CASE("proxmox: a run's VM is a tagged clone in the range with the data disk",
          "[proxmox][fake]") {
    Backend backend;
    backend.start(std::string(kPrefix) + "run-1");

    const Json resource = backend.resource_named(std::string(kPrefix) + "run-1");
    REQUIRE(resource.is_object());
    const int vmid = resource["vmid"];
    CHECK(vmid == 5000);
    CHECK(resource["tags"] == "disksweep");
    CHECK(resource["status"] == "running");

    const Json config = backend.config_of(vmid);
    CHECK(config["scsihw"] == "virtio-scsi-single");
    CHECK(config["cores"] == 2);
    // As PVE prints a drive: the allocated volume, then the keys sorted, size added.
    const std::string drive = config["scsi1"];
    CHECK_THAT(drive, Catch::StartsWith("local-lvm:vm-5000-disk-"));
    for (const char* part :
         {"aio=io_uring", "cache=unsafe", "discard=on", "detect_zeroes=1", "iothread=1", "ssd=1",
          "mbps=100", "iops=5000", "queues=4", "serial=disksweep-data", "size=4G"}) {
        CHECK_THAT(drive, Catch::Contains(part));
    }

    auto applied = backend.hypervisor->applied_settings(std::string(kPrefix) + "run-1");
    INFO((applied.ok() ? "" : applied.error().message));
    REQUIRE(applied.ok());
    CHECK((*applied)["bus"] == "scsi-single");
    CHECK((*applied)["cache"] == "unsafe");
    CHECK((*applied)["aio"] == "io_uring");
    CHECK((*applied)["discard"] == true);
    CHECK((*applied)["detect_zeroes"] == "unmap");
    CHECK((*applied)["ssd"] == true);
    CHECK((*applied)["iothread"] == true);
    CHECK((*applied)["pve"]["drive"] == "scsi1");
    CHECK((*applied)["pve"]["scsihw"] == "virtio-scsi-single");
    CHECK((*applied)["pve"]["options"]["mbps"] == "100");
    // QEMU's own view, through PVE's monitor endpoint (`info block`).
    CHECK((*applied)["levels"]["qemu_info_block"]["checked"] == true);
    CHECK((*applied)["levels"]["qemu_info_block"]["source"] == "info block through PVE's monitor");
    const Json& qemu = (*applied)["qemu_info_block"];
    CHECK(qemu["cache"] == "unsafe");
    CHECK(qemu["detect_zeroes"] == "unmap");
    CHECK(qemu["discard"] == true);
    CHECK(qemu["iops_limit"] == 5000);
    CHECK(qemu["bandwidth_limit"] == 100 * 1024 * 1024);

    auto running = backend.hypervisor->is_running(std::string(kPrefix) + "run-1");
    REQUIRE(running.ok());
    CHECK(*running);
    CHECK(backend.hypervisor->versions()["proxmox"].get<std::string>().rfind("8.", 0) == 0);

    // A second of the same name is refused; the next run gets the next id.
    CHECK(backend.hypervisor->start_vm(backend.request(std::string(kPrefix) + "run-1"))
              .error()
              .code == errc::kConflict);
    backend.start(std::string(kPrefix) + "run-2");
    CHECK(backend.resource_named(std::string(kPrefix) + "run-2")["vmid"] == 5001);
}

// PVE's config of a disk it allocated names no format (qemu-server
// create_disks: `delete $disk->{format}`), as the drive is written here.
void drop_format(Backend& backend, int vmid) {
    const Json config = backend.config_of(vmid);
    auto drive = PvePropertyString::parse(config["scsi1"].get<std::string>());
    REQUIRE(drive.ok());
    PvePropertyString without(drive->default_value());
    for (const auto& [key, value] : drive->entries()) {
        if (key != "format" && key != "size") without.set(key, value);
    }
    auto updated = backend.client->run_task(
        PveMethod::kPost, pve_path({"nodes", "pve1", "qemu", std::to_string(vmid), "config"}),
        PveParams().set_property_string("scsi1", without), kTaskTimeout);
    INFO((updated.ok() ? "" : updated.error().message));
    REQUIRE(updated.ok());
    REQUIRE(backend.config_of(vmid)["scsi1"].get<std::string>().find("format=") ==
            std::string::npos);
}

TEST_CASE("proxmox: image_format is what PVE says of the volume, without format= in the config",
          "[proxmox][fake]") {
    Backend backend;
    const std::string name = std::string(kPrefix) + "format";
    backend.start(name);
    drop_format(backend, 5000);
    auto applied = backend.hypervisor->applied_settings(name);
    INFO((applied.ok() ? "" : applied.error().message));
    REQUIRE(applied.ok());
    INFO(applied->dump());
    CHECK((*applied)["image_format"] == "raw");
    // Read from the storage (its content entry, or its type: lvmthin holds raw only).
    CHECK_THAT((*applied)["sources"]["image_format"].get<std::string>(),
               Catch::Contains("PVE storage"));
    CHECK((*applied)["qemu_info_block"]["image_format"] == "raw");
}

TEST_CASE("proxmox: the limits and queues are read back where the verifier compares them",
          "[proxmox][fake]") {
    Backend backend;
    const std::string name = std::string(kPrefix) + "limits";
    backend.start(name);
    auto applied = backend.hypervisor->applied_settings(name);
    REQUIRE(applied.ok());
    INFO(applied->dump());
    // scsi_single_config: iops 5000, 100 MiB/s, 4 queues, as to_json(StorageConfig) has them.
    const Json wanted = to_json(scsi_single_config());
    CHECK((*applied)["iops_limit"] == wanted["iops_limit"]);
    CHECK((*applied)["bandwidth_limit"] == wanted["bandwidth_limit"]);
    CHECK((*applied)["queues"] == wanted["queues"]);
    CHECK((*applied)["qemu_info_block"]["iops_limit"] == wanted["iops_limit"]);
    CHECK((*applied)["qemu_info_block"]["bandwidth_limit"] == wanted["bandwidth_limit"]);

    // Unthrottled, one queue: PVE writes no key, and none is read back.
    StorageConfig plain;
    plain.bus = Bus::kScsiSingle;
    backend.start(std::string(kPrefix) + "plain", plain);
    auto unthrottled = backend.hypervisor->applied_settings(std::string(kPrefix) + "plain");
    REQUIRE(unthrottled.ok());
    CHECK_FALSE(unthrottled->contains("iops_limit"));
    CHECK_FALSE(unthrottled->contains("bandwidth_limit"));
    CHECK_FALSE(unthrottled->contains("queues"));
}

TEST_CASE("proxmox: the run's accel is read from the VM: kvm=0 runs TCG", "[proxmox][fake]") {
    Backend backend;
    const std::string name = std::string(kPrefix) + "accel";
    backend.start(name);
    auto guest = backend.hypervisor->running_guest(name, Accel::kKvm);
    INFO((guest.ok() ? "" : guest.error().message));
    REQUIRE(guest.ok());
    CHECK(guest->accel == Accel::kKvm);  // kvm unset: qemu-server's default 1
    CHECK(guest->versions["qemu"].is_string());

    // A template with kvm: 0 (a nested PVE test node's): its clones run TCG.
    REQUIRE(backend.client
                ->put(pve_path({"nodes", "pve1", "qemu", "9000", "config"}),
                      PveParams().set_flag("kvm", false))
                .ok());
    backend.start(std::string(kPrefix) + "tcg");
    guest = backend.hypervisor->running_guest(std::string(kPrefix) + "tcg", Accel::kKvm);
    INFO((guest.ok() ? "" : guest.error().message));
    REQUIRE(guest.ok());
    CHECK(guest->accel == Accel::kTcg);
    CHECK_THAT(guest->accel_source, Catch::Contains("kvm=0"));
}

TEST_CASE("proxmox: the id is recorded before the clone, and a failed step destroys exactly it",
          "[proxmox][fake]") {
    // Each step after the clone fails in turn: an HTTP 500 on the config
    // POST, a qmconfig task that fails, a start that fails.
    const std::vector<std::string> faults = {
        R"({"method": "POST", "path": "/nodes/*/qemu/*/config", "status": 500,
            "message": "unable to write config"})",
        R"({"method": "POST", "path": "/nodes/*/qemu/*/config",
            "task": {"exitstatus": "unable to create disk: out of space"}})",
        R"({"method": "POST", "path": "/nodes/*/qemu/*/status/start",
            "task": {"exitstatus": "start failed: QEMU exited with code 1"}})"};
    for (const std::string& fault : faults) {
        INFO("fault: " << fault);
        Backend backend("", {"--fault", fault});
        // A foreign VM in the range beside the run's: never touched.
        auto foreign = backend.client->run_task(
            PveMethod::kPost, pve_path({"nodes", "pve1", "qemu", "9000", "clone"}),
            PveParams().set_integer("newid", 5000).set("name", std::string(kPrefix) + "foreign"),
            kTaskTimeout);
        REQUIRE(foreign.ok());
        const auto volumes_before = backend.volumes();

        std::vector<Json> recorded;
        VmRequest request = backend.request(std::string(kPrefix) + "leak");
        request.record_handle = [&](const Json& handle) {
            // Before the clone: no VM has the id yet.
            CHECK(backend.resource_named(std::string(kPrefix) + "leak").is_null());
            recorded.push_back(handle);
            return ok_status();
        };
        Status started = backend.hypervisor->start_vm(request);
        REQUIRE_FALSE(started.ok());
        REQUIRE(recorded.size() == 1);
        CHECK(recorded[0] == Json{{"vmid", 5001}, {"node", "pve1"}});
        CHECK(backend.vm_ids() == std::vector<int>{5000});
        CHECK(backend.volumes() == volumes_before);
        // Destroying by the record again finds nothing and succeeds.
        CHECK(backend.hypervisor->destroy_recorded_vm(std::string(kPrefix) + "leak", recorded[0])
                  .ok());
    }
}

TEST_CASE("proxmox: a recorded id is destroyed tagged or not, only under the run's name",
          "[proxmox][fake]") {
    Backend backend;
    const std::string template_path = pve_path({"nodes", "pve1", "qemu", "9000"});
    // What a daemon killed after the clone leaves: named, never tagged.
    for (const auto& [vmid, name] :
         {std::pair{5000, std::string(kPrefix) + "r1"}, std::pair{5001, std::string("someone")}}) {
        REQUIRE(backend.client
                    ->run_task(PveMethod::kPost, template_path + "/clone",
                               PveParams().set_integer("newid", vmid).set("name", name),
                               kTaskTimeout)
                    .ok());
    }
    CHECK(backend.hypervisor->list_vms(kPrefix)->empty());  // untagged: not found by name
    const Json r1 = {{"vmid", 5000}, {"node", "pve1"}};
    REQUIRE(backend.hypervisor->destroy_recorded_vm(std::string(kPrefix) + "r1", r1).ok());
    // Another name at the recorded id is someone else's: left alone.
    const Json r2 = {{"vmid", 5001}, {"node", "pve1"}};
    REQUIRE(backend.hypervisor->destroy_recorded_vm(std::string(kPrefix) + "r2", r2).ok());
    CHECK(backend.vm_ids() == std::vector<int>{5001});
    // An id outside the range is never touched, whatever the record says.
    const Json outside = {{"vmid", 9000}, {"node", "pve1"}};
    auto refused = backend.hypervisor->destroy_recorded_vm("disksweep-template", outside);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == errc::kInvalidArgument);
    CHECK(backend.resource_named("disksweep-template").is_object());
    CHECK_FALSE(backend.hypervisor->destroy_recorded_vm("x", Json{{"vmid", "5001"}}).ok());
}

TEST_CASE("proxmox: a monitor that refuses leaves the QEMU level not checked, saying why",
          "[proxmox][fake]") {
    Backend backend("", {"--fault", R"json({"method": "POST", "path": "/nodes/*/qemu/*/monitor",
        "status": 403, "message": "Permission check failed (/vms/5000, VM.Monitor)"})json"});
    backend.start(std::string(kPrefix) + "run-1");
    auto applied = backend.hypervisor->applied_settings(std::string(kPrefix) + "run-1");
    REQUIRE(applied.ok());
    CHECK((*applied)["cache"] == "unsafe");
    CHECK_FALSE(applied->contains("qemu_info_block"));
    const Json& level = (*applied)["levels"]["qemu_info_block"];
    CHECK(level["checked"] == false);
    CHECK(level["forbidden"] == true);
    CHECK_THAT(level["reason"].get<std::string>(), Catch::Contains("(/vms/5000, VM.Monitor)"));
    CHECK((*applied)["levels"]["domain_xml"]["checked"] == true);
}

TEST_CASE("proxmox: ids outside the range are never used", "[proxmox][fake]") {
    Backend backend;
    backend.start(std::string(kPrefix) + "a");
    backend.start(std::string(kPrefix) + "b");
    backend.start(std::string(kPrefix) + "c");
    auto full = backend.hypervisor->start_vm(backend.request(std::string(kPrefix) + "d"));
    REQUIRE_FALSE(full.ok());
    CHECK(full.error().code == errc::kUnavailable);
    CHECK(backend.resource_named(std::string(kPrefix) + "d").is_null());
    for (const Json& resource : backend.vm_resources()) {
        const int vmid = resource["vmid"];
        CHECK((vmid == 9000 || (vmid >= 5000 && vmid <= 5002)));
    }
}

TEST_CASE("proxmox: a start that fails leaves no VM behind", "[proxmox][fake]") {
    Backend backend("", {"--fault",
                         R"({"method": "POST", "path": "/nodes/*/qemu/*/status/start",
                             "task": {"exitstatus": "start failed: out of memory"}})"});
    Status started = backend.hypervisor->start_vm(backend.request(std::string(kPrefix) + "x"));
    REQUIRE_FALSE(started.ok());
    CHECK_THAT(started.error().message, Catch::Contains("out of memory"));
    CHECK(backend.resource_named(std::string(kPrefix) + "x").is_null());
}

TEST_CASE("proxmox: a request with extra disks is refused before anything is made",
          "[proxmox][fake]") {
    Backend backend;
    VmRequest request = backend.request(std::string(kPrefix) + "c");
    request.extra_disks = {
        {FileDisk{"/var/tmp/crash-0.img", ImageFormat::kRaw}, protocol::crash_disk_serial(0)}};
    const Status started = backend.hypervisor->start_vm(request);
    REQUIRE_FALSE(started.ok());
    CHECK(started.error().code == errc::kUnsupported);
    CHECK_THAT(started.error().message, Catch::Contains("proxmox cannot attach extra disks"));
    CHECK(backend.vm_ids().empty());
}

TEST_CASE("proxmox: the agent channel runs the real agent in one-shot mode", "[proxmox][fake]") {
    Backend backend(std::string(DISKSWEEP_AGENT_BIN) + " --shutdown-wait 0");
    const std::string name = std::string(kPrefix) + "agent";
    backend.start(name);
    auto channel = backend.hypervisor->open_agent_channel(
        name, std::chrono::steady_clock::now() + 30s, nullptr);
    INFO((channel.ok() ? "" : channel.error().message));
    REQUIRE(channel.ok());
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    const Json hello = decode((*channel)->read_line(deadline));
    CHECK(hello["type"] == "hello");
    CHECK(hello["capabilities"].is_array());

    // A job the agent refuses before it needs a disk (there is none here):
    // the whole exchange, through the guest's files, with the real agent.
    const std::string job =
        protocol::encode(protocol::kJob, {{"run_id", "r1"}, {"filesystem", {{"type", "ntfs"}}}});
    REQUIRE((*channel)->write(job).ok());
    const Json error = decode((*channel)->read_line(deadline));
    CHECK(error["type"] == "error");
    CHECK(error["phase"] == "job");
    CHECK(error["run_id"] == "r1");
    CHECK(backend.guest_file(5000, "/run/disksweep-job.json") == job);
    // The shutdown after the result is not needed by a one-shot agent: dropped.
    CHECK((*channel)->write("{\"type\":\"shutdown\",\"protocol\":2}\n").ok());
    // The agent exited: exec-status said so once, the channel is closed.
    auto end = (*channel)->read_line(deadline);
    REQUIRE_FALSE(end.ok());
    CHECK(end.error().code == errc::kIo);
    CHECK_THAT(end.error().message, Catch::Contains("exited with code 0"));
}

TEST_CASE("proxmox: the channel yields hello, progress and result from the output file",
          "[proxmox][fake]") {
    test::TempDir scripts;
    write_script(scripts.file("stand-in.sh"), kStandIn);
    Backend backend("sh " + scripts.file("stand-in.sh"));
    const std::string name = std::string(kPrefix) + "standin";
    backend.start(name);
    auto channel = backend.hypervisor->open_agent_channel(
        name, std::chrono::steady_clock::now() + 30s, nullptr);
    REQUIRE(channel.ok());
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    CHECK(decode((*channel)->read_line(deadline))["type"] == "hello");
    // Nothing more until the job is there: a short deadline passes.
    auto early = (*channel)->read_line(std::chrono::steady_clock::now() + 200ms);
    REQUIRE_FALSE(early.ok());
    CHECK(early.error().code == errc::kTimeout);
    REQUIRE((*channel)->write("{\"type\":\"job\"}\n").ok());
    const Json progress = decode((*channel)->read_line(deadline));
    CHECK(progress == Json{{"type", "progress"}, {"phase", "bench"}, {"fraction", 0.5}});
    CHECK(decode((*channel)->read_line(deadline))["type"] == "result");
    auto end = (*channel)->read_line(deadline);
    REQUIRE_FALSE(end.ok());
    CHECK(end.error().code == errc::kIo);
}

TEST_CASE("proxmox: no agent answering is a timeout", "[proxmox][fake]") {
    Backend backend("", {"--agent-delay", "600"});
    const std::string name = std::string(kPrefix) + "silent";
    backend.start(name);
    std::atomic<bool> cancelled{false};
    auto channel = backend.hypervisor->open_agent_channel(
        name, std::chrono::steady_clock::now() + 1500ms, &cancelled);
    REQUIRE_FALSE(channel.ok());
    CHECK(channel.error().code == errc::kTimeout);
    CHECK_THAT(channel.error().message, Catch::Contains("agent/ping"));
}

TEST_CASE("proxmox: destroy and cleanup touch only tagged VMs with the prefix", "[proxmox][fake]") {
    Backend backend;
    backend.start(std::string(kPrefix) + "mine-1");
    backend.start(std::string(kPrefix) + "mine-2");
    // Foreign VMs beside them: one with the prefix but no tag (someone's own,
    // in the range), one tagged but named otherwise.
    const std::string template_path = pve_path({"nodes", "pve1", "qemu", "9000"});
    auto foreign = backend.client->run_task(
        PveMethod::kPost, template_path + "/clone",
        PveParams().set_integer("newid", 5002).set("name", std::string(kPrefix) + "foreign"),
        kTaskTimeout);
    REQUIRE(foreign.ok());
    auto other = backend.client->run_task(
        PveMethod::kPost, template_path + "/clone",
        PveParams().set_integer("newid", 7000).set("name", "someone-else"), kTaskTimeout);
    REQUIRE(other.ok());
    REQUIRE(backend.client
                ->put(pve_path({"nodes", "pve1", "qemu", "7000", "config"}),
                      PveParams().set("tags", "disksweep"))
                .ok());

    auto listed = backend.hypervisor->list_vms(kPrefix);
    REQUIRE(listed.ok());
    CHECK(*listed == std::vector<std::string>{std::string(kPrefix) + "mine-1",
                                              std::string(kPrefix) + "mine-2"});

    // Cleanup as the daemon does it at start: destroy what list_vms names.
    for (const auto& name : *listed) {
        Status destroyed = backend.hypervisor->destroy_vm(name);
        INFO((destroyed.ok() ? "" : destroyed.error().message));
        CHECK(destroyed.ok());
    }
    CHECK(backend.resource_named(std::string(kPrefix) + "mine-1").is_null());
    CHECK(backend.resource_named(std::string(kPrefix) + "mine-2").is_null());
    CHECK(backend.resource_named(std::string(kPrefix) + "foreign").is_object());
    CHECK(backend.resource_named("someone-else").is_object());
    CHECK(backend.resource_named("").is_null());
    CHECK(backend.hypervisor->list_vms(kPrefix)->empty());
    // Destroying a foreign or missing name does nothing and succeeds.
    CHECK(backend.hypervisor->destroy_vm(std::string(kPrefix) + "foreign").ok());
    CHECK(backend.resource_named(std::string(kPrefix) + "foreign").is_object());
}

}  // namespace ds
