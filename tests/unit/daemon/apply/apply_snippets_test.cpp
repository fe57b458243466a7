// The apply formats (daemon/apply/apply_snippets.h): exact text for each,
// the warnings as the format's comments, what a format cannot carry, and the
// request's query. The libvirt snippet against libvirt's schema and the qm
// line against PVE's are checked in tests/integration/apply_snippet_test.cpp.
#include "daemon/apply/apply_snippets.h"

#include <catch2/catch.hpp>

#include "common/server_settings.h"
#include "daemon/apply/configuration_apply.h"
#include "daemon/backends/hypervisor/libvirt/domain_xml.h"
#include "daemon/backends/hypervisor/proxmox/pve_encoding.h"

namespace ds {
namespace {

// The reference fio study's disk: scsi-single, IO thread, SSD, discard.
StorageConfig rbd_study_config() {
    StorageConfig config;
    config.storage = "rbd";
    config.storage_pool = "rbd";
    config.disk_size_bytes = 4ull << 30;
    config.bus = Bus::kScsiSingle;
    config.cache = CacheMode::kUnsafe;
    config.discard = true;
    config.ssd = true;
    config.iothread = true;
    config.filesystem.type = "ext4";
    config.filesystem.mount_options = "barrier=0,data=writeback";
    return config;
}

// mycnf: the format of the MariaDB kinds' server settings rules.
ApplyFormat mycnf_format() {
    return ApplyFormat{ApplyTarget::kServerSettings, &mariadb_server_settings()};
}

ApplyRequest request_for(ApplyFormat format) {
    ApplyRequest request;
    request.format = format;
    return request;
}

Workload mariadb_workload(const std::string& name, Json server) {
    Workload workload;
    workload.name = name;
    workload.kind = "mariadb-atis";
    workload.params = Json::object();
    if (!server.is_null()) workload.params["server"] = std::move(server);
    return workload;
}

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

// The lines of `text` that are not comments of the given kind.
std::string uncommented(const std::string& text, const std::string& open) {
    std::string kept;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        const std::string line = text.substr(start, end - start);
        if (line.rfind(open, 0) != 0) kept += line + "\n";
        start = end + 1;
    }
    return kept;
}

}  // namespace

TEST_CASE("apply formats: names, and unknown ones refused with the valid ones", "[apply]") {
    for (const auto& def : apply_formats()) {
        auto parsed = parse_apply_format(def.name);
        REQUIRE(parsed.ok());
        CHECK(parsed.value() == def.format);
        CHECK(format_def(def.format).name == def.name);
    }
    auto unknown = parse_apply_format("virsh");
    REQUIRE_FALSE(unknown.ok());
    CHECK(unknown.error().code == errc::kInvalidArgument);
    CHECK(unknown.error().message ==
          "unknown format 'virsh'; valid formats: qm, libvirt, fstab, mycnf, pgconf");
}

TEST_CASE("apply query: format required, vmid and storage in PVE's formats", "[apply]") {
    auto full = apply_request_from_query(
        {{"format", "qm"}, {"vmid", "101"}, {"storage", "local-lvm"}, {"workload", "atis"}});
    REQUIRE(full.ok());
    CHECK(full->format == ApplyFormat::kQm);
    CHECK(full->vmid == 101);
    CHECK(full->pve_storage == "local-lvm");
    CHECK(full->workload_name == "atis");

    const std::vector<std::pair<std::map<std::string, std::string>, std::string>> refused = {
        {{}, "parameter 'format' is required"},
        {{{"format", "qm"}, {"vmid", "99"}}, "vmid must be a Proxmox VE VM id (100 to 999999999)"},
        {{{"format", "qm"}, {"vmid", "1e3"}}, "not '1e3'"},
        {{{"format", "qm"}, {"storage", "local,cache=none"}}, "storage must be a Proxmox VE"},
        {{{"format", "qm"}, {"storage", "9lives"}}, "storage must be a Proxmox VE"},
        {{{"format", "qm"}, {"vm", "101"}}, "unknown parameter 'vm'"},
    };
    for (const auto& [query, message] : refused) {
        auto request = apply_request_from_query(query);
        INFO(message);
        REQUIRE_FALSE(request.ok());
        CHECK(request.error().code == errc::kInvalidArgument);
        CHECK(contains(request.error().message, message));
    }
}

TEST_CASE("PVE's value formats: VM ids and storage ids", "[apply][qm]") {
    CHECK_FALSE(is_pve_vmid(99));
    CHECK(is_pve_vmid(100));
    CHECK(is_pve_vmid(999999999));
    CHECK_FALSE(is_pve_vmid(1000000000));
    for (const char* id : {"local-lvm", "Local_LVM.2", "ceph", "nfs-2"})
        CHECK(is_pve_storage_id(id));
    for (const char* id : {"", "a", "9lives", "local-", "my storage", "a,b", "a=b", "a:b"})
        CHECK_FALSE(is_pve_storage_id(id));
}

TEST_CASE("qm: the Proxmox backend's drive string, with the risks as shell comments",
          "[apply][qm]") {
    ApplyRequest request = request_for(ApplyFormat::kQm);
    request.vmid = 101;
    request.pve_storage = "ceph-vm";
    auto snippet = render_apply_snippet(rbd_study_config(), request);
    REQUIRE(snippet.ok());
    CHECK(snippet->body ==
          "qm set 101 --scsihw virtio-scsi-single --scsi1 "
          "ceph-vm:4,format=raw,cache=unsafe,discard=on,ssd=1,iothread=1,detect_zeroes=0,"
          "serial=disksweep-data\n");
    CHECK(snippet->durability_risks ==
          std::vector<std::string>{"cache=unsafe", "barrier=0", "data=writeback"});
    CHECK(snippet->text.rfind("# WARNING: trades durability for speed", 0) == 0);
    CHECK(contains(snippet->text, "cache=unsafe, barrier=0, data=writeback\n"));
    // Everything above the line is a comment: the snippet runs as a script.
    CHECK(uncommented(snippet->text, "#") == snippet->body);
    // The guest's side is named, not dropped.
    CHECK(contains(snippet->text, "# inside the guest: ext4:barrier=0,data=writeback"));
}

TEST_CASE("qm: placeholders when no VM or storage is named", "[apply][qm]") {
    StorageConfig config;
    config.bus = Bus::kVirtioBlk;
    config.disk_size_bytes = 512ull << 20;
    config.iothread = true;
    auto snippet = render_apply_snippet(config, request_for(ApplyFormat::kQm));
    REQUIRE(snippet.ok());
    CHECK(snippet->body ==
          "qm set VMID --virtio1 STORAGE:0.5,format=raw,cache=none,discard=ignore,iothread=1,"
          "detect_zeroes=0,serial=disksweep-data\n");
    CHECK(snippet->durability_risks.empty());
    CHECK_FALSE(contains(snippet->text, "WARNING"));
    CHECK(contains(snippet->text,
                   "# replace VMID with the VM's id and STORAGE with a PVE storage "
                   "of the kind it was measured on (file)"));
}

TEST_CASE("qm: what PVE cannot express is refused with the backend's reason", "[apply][qm]") {
    StorageConfig shared_controller_iothread;
    shared_controller_iothread.bus = Bus::kScsi;
    shared_controller_iothread.iothread = true;
    auto refused = render_apply_snippet(shared_controller_iothread, request_for(ApplyFormat::kQm));
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == errc::kInvalidArgument);
    CHECK(refused.error().message ==
          "no qm line for this configuration: proxmox cannot apply iothread (bus scsi): PVE "
          "8.4's drive has no such setting");

    StorageConfig odd_size;
    odd_size.disk_size_bytes = (1ull << 30) + 1;
    CHECK_FALSE(render_apply_snippet(odd_size, request_for(ApplyFormat::kQm)).ok());
}

TEST_CASE("libvirt: the backend's own <disk> element, warnings as XML comments",
          "[apply][libvirt]") {
    StorageConfig config = rbd_study_config();
    config.filesystem.mount_options = "";  // a comment may not hold "--": see below
    auto snippet = render_apply_snippet(config, request_for(ApplyFormat::kLibvirt));
    REQUIRE(snippet.ok());
    const std::string path = "/var/lib/libvirt/images/DISK.raw";
    CHECK(snippet->body ==
          data_disk_xml(config, FileDisk{path, ImageFormat::kRaw}) + scsi_controller_xml(config));
    CHECK(snippet->body ==
          "<disk type='file' device='disk'>\n"
          "  <driver name='qemu' type='raw' cache='unsafe' discard='unmap' detect_zeroes='off'/>\n"
          "  <source file='/var/lib/libvirt/images/DISK.raw'/>\n"
          "  <target dev='sda' bus='scsi' rotation_rate='1'/>\n"
          "  <serial>disksweep-data</serial>\n"
          "  <address type='drive' controller='0' bus='0' target='0' unit='0'/>\n"
          "</disk>\n"
          "<controller type='scsi' index='0' model='virtio-scsi'>\n"
          "  <driver iothread='1'/>\n"
          "  <alias name='ua-disksweep-scsi-data'/>\n"
          "</controller>\n");
    CHECK(snippet->text.rfind("<!-- WARNING: trades durability for speed (a crash or power cut "
                              "can lose or corrupt data): cache=unsafe -->\n",
                              0) == 0);
    CHECK(contains(snippet->text, "<!-- the domain needs <iothreads>1</iothreads> -->\n"));
    CHECK(uncommented(snippet->text, "<!--") == snippet->body);
}

TEST_CASE("libvirt: no '--' inside a comment, whatever a note holds", "[apply][libvirt]") {
    StorageConfig config;
    config.filesystem.type = "ext4";
    config.filesystem.mkfs_options = {"-O", "^has_journal"};
    config.filesystem.mount_options = "commit=60";
    auto snippet = render_apply_snippet(config, request_for(ApplyFormat::kLibvirt));
    REQUIRE(snippet.ok());
    for (std::size_t at = snippet->text.find("<!--"); at != std::string::npos;
         at = snippet->text.find("<!--", at + 1)) {
        const std::size_t end = snippet->text.find("-->", at);
        REQUIRE(end != std::string::npos);
        CHECK_FALSE(contains(snippet->text.substr(at + 4, end - at - 4), "--"));
    }
    CHECK(contains(snippet->text, "no journal (mkfs -O ^has_journal)"));
}

TEST_CASE("libvirt: the extracted <disk> is the one in the whole domain", "[apply][libvirt]") {
    // Behaviour kept: build_domain_xml writes exactly data_disk_xml's lines
    // (indented into <devices>) and scsi_controller_xml's.
    for (Bus bus : {Bus::kVirtioBlk, Bus::kScsi, Bus::kScsiSingle, Bus::kSata}) {
        StorageConfig config;
        config.bus = bus;
        config.iothread = bus != Bus::kSata;
        config.iops_limit = 500;
        VmRequest request;
        request.name = "disksweep-apply";
        request.config = config;
        request.data_disk = FileDisk{"/images/data.qcow2", ImageFormat::kQcow2};
        const std::string domain = build_domain_xml(request, LocalGuestFiles{"/run/x"});
        const std::string disk = data_disk_xml(config, request.data_disk);
        std::string indented;
        for (std::size_t start = 0; start < disk.size();) {
            const std::size_t end = disk.find('\n', start);
            indented += "    " + disk.substr(start, end - start + 1);
            start = end + 1;
        }
        INFO(to_string(bus));
        CHECK(contains(domain, indented));
        CHECK(contains(disk, "<total_iops_sec>500</total_iops_sec>"));
        CHECK(scsi_controller_xml(config).empty() == (bus == Bus::kVirtioBlk || bus == Bus::kSata));
    }
}

TEST_CASE("fstab: the mount line with the agent's options, mkfs and the rest as comments",
          "[apply][fstab]") {
    auto ext4 = render_apply_snippet(rbd_study_config(), request_for(ApplyFormat::kFstab));
    REQUIRE(ext4.ok());
    CHECK(ext4->body ==
          "# format: mkfs.ext4 /dev/DEVICE\n"
          "/dev/DEVICE  /mnt/POINT  ext4  barrier=0,data=writeback  0  2\n");

    StorageConfig btrfs;
    btrfs.filesystem.type = "btrfs";
    btrfs.filesystem.mkfs_options = {"--label", "bench data"};
    btrfs.filesystem.post_format = {"single"};
    btrfs.scheduler = IoScheduler::kBfq;
    btrfs.read_ahead_kb = 512;
    auto snippet = render_apply_snippet(btrfs, request_for(ApplyFormat::kFstab));
    REQUIRE(snippet.ok());
    CHECK(snippet->body ==
          "# format: mkfs.btrfs --label 'bench data' /dev/DEVICE\n"
          "# after mounting, single: convert metadata and system chunks to the single profile "
          "(btrfs balance start -f -mconvert=single -sconvert=single), as in the reference "
          "study\n"
          "# before mkfs: echo 512 > /sys/block/DEVICE/queue/read_ahead_kb (e.g. from a udev "
          "rule)\n"
          "# before mkfs: echo bfq > /sys/block/DEVICE/queue/scheduler (e.g. from a udev rule)\n"
          "/dev/DEVICE  /mnt/POINT  btrfs  defaults  0  0\n");
    CHECK(snippet->durability_risks.empty());
}

TEST_CASE("mycnf: the workload's server variables as the agent writes them", "[apply][mycnf]") {
    ApplyRequest request = request_for(mycnf_format());
    request.workload =
        mariadb_workload("atis-nosync", Json{{"innodb_flush_method", "nosync"},
                                             {"innodb_doublewrite", false},
                                             {"innodb_buffer_pool_size", 134217728}});
    auto snippet = render_apply_snippet(rbd_study_config(), request);
    REQUIRE(snippet.ok());
    CHECK(snippet->body ==
          "[mysqld]\n"
          "innodb_buffer_pool_size=134217728\n"
          "innodb_doublewrite=OFF\n"
          "innodb_flush_method=nosync\n");
    // The configuration's risks, then the workload's.
    REQUIRE(snippet->durability_risks.size() == 5);
    CHECK(snippet->durability_risks[0] == "cache=unsafe");
    CHECK(snippet->durability_risks[3] == "innodb_doublewrite=0");
    CHECK(snippet->durability_risks[4] == "innodb_flush_method=nosync");
    CHECK(uncommented(snippet->text, "#") == snippet->body);
    CHECK(contains(snippet->text, "# server variables of workload 'atis-nosync' (mariadb-atis)"));

    request.workload = mariadb_workload("atis", Json());
    auto defaults = render_apply_snippet(StorageConfig(), request);
    REQUIRE(defaults.ok());
    CHECK(defaults->body == "[mysqld]\n");
    CHECK(contains(defaults->text, "none, it ran on MariaDB's defaults"));

    request.workload.reset();
    CHECK_FALSE(render_apply_snippet(StorageConfig(), request).ok());
}

TEST_CASE("pgconf: the pgbench workload's settings as postgresql.conf lines", "[apply][pgconf]") {
    ApplyRequest request =
        request_for(ApplyFormat{ApplyTarget::kServerSettings, &postgresql_server_settings()});
    Workload pgbench;
    pgbench.name = "pgbench-async";
    pgbench.kind = "pgbench";
    pgbench.params = {{"server", {{"synchronous_commit", "off"}, {"shared_buffers", "256MB"}}}};
    request.workload = pgbench;
    auto snippet = render_apply_snippet(StorageConfig(), request);
    REQUIRE(snippet.ok());
    CHECK(snippet->body ==
          "shared_buffers = '256MB'\n"
          "synchronous_commit = 'off'\n");
    CHECK(snippet->durability_risks.back() == "synchronous_commit=off");
    CHECK(snippet->notes ==
          std::vector<std::string>{"server variables of workload 'pgbench-async' (pgbench)",
                                   std::string(postgresql_server_settings().agent_settings_note)});
    CHECK(uncommented(snippet->text, "#") == snippet->body);

    request.workload.reset();
    auto refused = render_apply_snippet(StorageConfig(), request);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message ==
          "the pgconf format needs the PostgreSQL workload whose server variables to print");
}

TEST_CASE("a host baseline has nothing to apply", "[apply]") {
    auto refused =
        render_apply_snippet(host_baseline_for(StorageConfig()), request_for(ApplyFormat::kFstab));
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == errc::kInvalidArgument);
}

TEST_CASE("configuration ids: whole, or a unique prefix", "[apply]") {
    const std::vector<std::string> ids = {"0123456789abcdef", "0123ffff00000000",
                                          "fedcba9876543210"};
    CHECK(unique_config_id("fedc", ids).value() == "fedcba9876543210");
    CHECK(unique_config_id("0123456789abcdef", ids).value() == "0123456789abcdef");
    auto ambiguous = unique_config_id("0123", ids);
    REQUIRE_FALSE(ambiguous.ok());
    CHECK(ambiguous.error().code == errc::kInvalidArgument);
    CHECK(contains(ambiguous.error().message,
                   "matches 2 configurations (0123456789abcdef, "
                   "0123ffff00000000): give more digits"));
    auto none = unique_config_id("aaaa", ids);
    REQUIRE_FALSE(none.ok());
    CHECK(none.error().code == errc::kNotFound);
    for (const std::string bad : {"", "ABCD", "01234567890abcdef0", "../x"}) {
        auto refused = unique_config_id(bad, ids);
        REQUIRE_FALSE(refused.ok());
        CHECK(refused.error().code == errc::kInvalidArgument);
    }
}

TEST_CASE("mycnf's workload: the configuration's MariaDB workloads, one chosen", "[apply][mycnf]") {
    auto run_of = [](const Workload& workload) {
        RunRecord run;
        run.workload_name = workload.name;
        run.workload = workload;
        return run;
    };
    Workload fio;
    fio.name = "randrw";
    fio.kind = "fio";
    fio.params = {{"rw", "randrw"}};
    const Workload safe = mariadb_workload("atis", Json{{"innodb_doublewrite", true}});
    const Workload nosync =
        mariadb_workload("atis-nosync", Json{{"innodb_flush_method", "nosync"}});
    const std::vector<Workload> found = server_settings_workloads(
        {run_of(fio), run_of(safe), run_of(safe), run_of(nosync)}, "mycnf");
    REQUIRE(found.size() == 2);
    CHECK(found[0] == safe);
    CHECK(found[1] == nosync);

    CHECK(
        choose_server_settings_workload(mariadb_server_settings(), found, "atis-nosync").value() ==
        nosync);
    auto differing = choose_server_settings_workload(mariadb_server_settings(), found, "");
    REQUIRE_FALSE(differing.ok());
    CHECK(contains(differing.error().message,
                   "choose one with workload=NAME (--workload): atis, "
                   "atis-nosync"));
    CHECK(choose_server_settings_workload(mariadb_server_settings(), {safe}, "").value() == safe);
    auto unknown = choose_server_settings_workload(mariadb_server_settings(), found, "sysbench");
    REQUIRE_FALSE(unknown.ok());
    CHECK(contains(unknown.error().message, "it ran: atis, atis-nosync"));
    auto none = choose_server_settings_workload(
        mariadb_server_settings(), server_settings_workloads({run_of(fio)}, "mycnf"), "");
    REQUIRE_FALSE(none.ok());
    CHECK(contains(none.error().message, "ran no MariaDB workload"));
}

}  // namespace ds
