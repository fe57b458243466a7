// `hostctl results apply` and `hostctl sweep plan` for real: the libvirt
// snippet against libvirt's own schema (virt-xml-validate), the qm line
// against Proxmox VE's API schema (the fake PVE API's validator), and both
// commands through a real disksweepd and hostctl over the socket.
#include <SQLiteCpp/SQLiteCpp.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/process.h"
#include "daemon/apply/apply_snippets.h"
#include "support/daemon_fixture.h"
#include "support/skip.h"

namespace ds {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

bool on_path(const std::string& tool) {
    RealProcessRunner runner;
    auto found = runner.run({"sh", "-c", "command -v " + tool}, 10s);
    return found.ok() && found->exit_code == 0;
}

// Every bus, with what each can carry: IO thread, SSD, queues, limits.
std::vector<StorageConfig> sample_configs() {
    std::vector<StorageConfig> configs;
    for (Bus bus : {Bus::kVirtioBlk, Bus::kScsi, Bus::kScsiSingle, Bus::kSata}) {
        for (CacheMode cache : {CacheMode::kNone, CacheMode::kUnsafe, CacheMode::kWriteback}) {
            StorageConfig config;
            config.bus = bus;
            config.cache = cache;
            config.discard = cache != CacheMode::kWriteback;
            config.detect_zeroes = config.discard ? DetectZeroes::kUnmap : DetectZeroes::kOn;
            config.ssd = bus != Bus::kVirtioBlk;
            config.iothread = bus == Bus::kVirtioBlk || bus == Bus::kScsiSingle;
            config.aio = cache == CacheMode::kNone ? AioMode::kNative : AioMode::kIoUring;
            if (bus == Bus::kScsiSingle || bus == Bus::kScsi) config.queues = 4;
            config.iops_limit = 2000;
            config.bandwidth_limit = 3ull << 19;  // 1.5 MiB/s: mbps=1.5
            config.image_format = cache == CacheMode::kWriteback && bus == Bus::kSata
                                      ? ImageFormat::kQcow2
                                      : ImageFormat::kRaw;
            config.filesystem.type = "ext4";
            config.filesystem.mount_options = cache == CacheMode::kUnsafe ? "barrier=0" : "";
            configs.push_back(config);
        }
    }
    return configs;
}

ApplyRequest request_for(ApplyFormat format) {
    ApplyRequest request;
    request.format = format;
    return request;
}

// The snippet, comments and all, inside the smallest domain libvirt's schema
// accepts, with the IO thread a snippet's note asks for.
std::string domain_around(const StorageConfig& config, const std::string& snippet) {
    return "<domain type='kvm'>\n<name>apply-check</name>\n<memory unit='MiB'>256</memory>\n"
           "<vcpu>1</vcpu>\n" +
           std::string(config.iothread ? "<iothreads>1</iothreads>\n" : "") +
           "<os><type arch='x86_64' machine='q35'>hvm</type></os>\n<devices>\n" + snippet +
           "</devices>\n</domain>\n";
}

const char* kSweep = R"(
name = "apply-plan"
[matrix]
cache = ["none", "unsafe"]
bus = ["virtio-blk", "scsi-single"]
ssd = true
discard = true
[[workload]]
name = "randread"
kind = "fio"
rw = "randread"
bs = "4k"
size = "8m"
runtime = "1s"
)";

// The test driver boots nothing, so any files will do as the guest image.
std::string fake_image_dir() {
    std::string dir = test::test_temp_dir() + "/fake-image";
    fs::create_directories(dir);
    for (const char* name : {"vmlinuz", "initrd.img", "root.img"})
        std::ofstream(dir + "/" + name) << "not a real image\n";
    return dir;
}

Json hostctl_json(const test::DaemonFixture& daemon, const std::vector<std::string>& args) {
    std::vector<std::string> with_json = {"--json"};
    with_json.insert(with_json.end(), args.begin(), args.end());
    const test::HostctlResult result = daemon.hostctl(with_json);
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    return Json::parse(result.out);
}

// Waits until the sweep has no run pending or running.
void wait_until_finished(const test::DaemonFixture& daemon, int sweep_id) {
    for (int i = 0; i < 120; ++i) {
        const Json shown = hostctl_json(daemon, {"sweep", "show", std::to_string(sweep_id)});
        const std::string status = shown["sweep"]["status"];
        if (status != "queued" && status != "running") return;
        std::this_thread::sleep_for(500ms);
    }
    FAIL("sweep " << sweep_id << " did not finish");
}

}  // namespace

TEST_CASE("apply: every libvirt snippet passes virt-xml-validate", "[apply][integration]") {
    if (!on_path("virt-xml-validate"))
        test::skip_test("virt-xml-validate not installed (package libvirt-clients)");
    const std::string dir = test::test_temp_dir();
    RealProcessRunner runner;
    int index = 0;
    for (const StorageConfig& config : sample_configs()) {
        auto snippet = render_apply_snippet(config, request_for(ApplyFormat::kLibvirt));
        REQUIRE(snippet.ok());
        const std::string file = dir + "/apply-" + std::to_string(index++) + ".xml";
        std::ofstream(file) << domain_around(config, snippet->text);
        auto validated = runner.run({"virt-xml-validate", file, "domain"}, 60s);
        REQUIRE(validated.ok());
        INFO(snippet->text << validated->stdout_text << validated->stderr_text);
        CHECK(validated->exit_code == 0);
    }
    // The check can fail: a driver attribute libvirt does not know.
    std::ofstream(dir + "/broken.xml")
        << domain_around(StorageConfig(),
                         "<disk type='file' device='disk'><driver name='qemu' cache='fast'/>"
                         "<source file='/x'/><target dev='sda' bus='scsi'/></disk>\n");
    auto broken = runner.run({"virt-xml-validate", dir + "/broken.xml", "domain"}, 60s);
    REQUIRE(broken.ok());
    CHECK(broken->exit_code != 0);
}

TEST_CASE("apply: every qm line parses against PVE's API schema", "[apply][integration]") {
    if (!on_path("python3")) test::skip_test("python3 not installed (package python3)");
    const std::string source = DISKSWEEP_SOURCE_DIR;
    const std::string schema = source + "/tests/data/pve/pve-api-schema.json.gz";
    if (!fs::exists(schema)) test::skip_test("no PVE schema at " + schema);
    std::string lines;
    for (const StorageConfig& config : sample_configs()) {
        for (const bool named : {false, true}) {
            ApplyRequest request = request_for(ApplyFormat::kQm);
            // The VMID placeholder is not a VM id, so it is always named here;
            // the STORAGE placeholder is a valid storage id and is checked too.
            request.vmid = 100;
            if (named) request.pve_storage = "local-lvm";
            auto snippet = render_apply_snippet(config, request);
            if (!snippet.ok()) {
                // Only a shared SCSI controller with an IO thread is refused.
                CHECK(config.bus == Bus::kScsi);
                continue;
            }
            lines += snippet->text;
        }
    }
    const std::string file = test::write_temp_file("qm-lines.txt", lines);
    RealProcessRunner runner;
    auto checked = runner.run({"python3", source + "/tests/integration/check_qm_lines.py",
                               source + "/tests/support/pve_fake", schema, file},
                              120s);
    REQUIRE(checked.ok());
    INFO(lines << checked->stdout_text << checked->stderr_text);
    CHECK(checked->exit_code == 0);
    CHECK(checked->stdout_text.find(" 0 problems") != std::string::npos);
}

TEST_CASE("hostctl results apply and sweep plan against a real daemon",
          "[apply][integration][hostctl]") {
    test::DaemonFixture daemon({"--hypervisor-uri", "test:///default", "--image-dir",
                                fake_image_dir(), "--accel", "tcg", "--boot-timeout", "1"});
    REQUIRE(daemon.ready());
    const std::string spec = test::write_temp_file("apply-plan.toml", kSweep);

    // Before any run: the plan, with nothing to estimate from.
    const Json before = hostctl_json(daemon, {"sweep", "plan", spec});
    CHECK(before["total_runs"] == 2);
    CHECK(before["dropped"].size() == 2);
    CHECK(before["estimate"]["runs_unknown"] == 2);
    const test::HostctlResult plan_text = daemon.hostctl({"sweep", "plan", spec});
    REQUIRE(plan_text.exit_code == 0);
    CHECK(plan_text.out.find("would run 2 runs") != std::string::npos);
    CHECK(plan_text.out.find("estimated duration: unknown") != std::string::npos);
    CHECK(plan_text.out.find("bus=virtio-blk cache=none: virtio-blk has no rotation rate") !=
          std::string::npos);
    // Nothing was stored or run.
    CHECK(hostctl_json(daemon, {"sweep", "list"})["sweeps"].empty());

    const Json submitted = hostctl_json(daemon, {"sweep", "submit", spec});
    const int sweep_id = submitted["sweep"]["id"];
    wait_until_finished(daemon, sweep_id);

    // The test driver's guests never answer, so the runs failed; record one
    // as a 40 s success, as a real run would have been.
    const Json runs = hostctl_json(daemon, {"sweep", "show", std::to_string(sweep_id)})["runs"];
    REQUIRE(runs.size() == 2);
    std::string unsafe_id;
    for (const auto& run : runs)
        if (run["config"]["cache"] == "unsafe") unsafe_id = run["config_id"];
    REQUIRE(unsafe_id.size() == 16);
    {
        SQLite::Database db(daemon.database(), SQLite::OPEN_READWRITE);
        SQLite::Statement update(db,
                                 "UPDATE runs SET status = 'succeeded', timings_json = "
                                 "'{\"total_s\":40}' WHERE sweep_id = ? AND config_id = ?");
        update.bind(1, sweep_id);
        update.bind(2, unsafe_id);
        REQUIRE(update.exec() == 1);
    }

    SECTION("the plan estimates from the recorded run") {
        const Json plan = hostctl_json(daemon, {"sweep", "plan", spec});
        CHECK(plan["estimate"]["runs_unknown"] == 0);
        CHECK(plan["estimate"]["run_seconds"] == 80.0);   // both from the one 40 s run
        CHECK(plan["estimate"]["wall_seconds"] == 80.0);  // one run at a time by default
        CHECK(plan["estimate"]["based_on_runs"] == 1);
        const test::HostctlResult text = daemon.hostctl({"sweep", "plan", spec});
        CHECK(text.out.find("estimated duration: 1m20s (1 run at a time)") != std::string::npos);
        CHECK(text.out.find("median durations of 1 past run: 1 planned runs by the same "
                            "configuration and workload, 1 by the same workload") !=
              std::string::npos);
    }
    SECTION("apply by a prefix, in each format") {
        const std::string prefix = unsafe_id.substr(0, 12);
        const test::HostctlResult qm = daemon.hostctl(
            {"results", "apply", prefix, "--format", "qm", "--vmid", "105", "--storage", "ceph"});
        INFO(qm.err);
        REQUIRE(qm.exit_code == 0);
        CHECK(qm.out.rfind("# WARNING: trades durability for speed", 0) == 0);
        CHECK(qm.out.find("\nqm set 105 --scsihw virtio-scsi-single --scsi1 ceph:1,format=raw,"
                          "cache=unsafe,discard=on,ssd=1,iothread=0,detect_zeroes=0,"
                          "serial=disksweep-data\n") != std::string::npos);

        const Json libvirt =
            hostctl_json(daemon, {"results", "apply", prefix, "--format", "libvirt"});
        CHECK(libvirt["config_id"] == unsafe_id);
        CHECK(libvirt["durability_risks"] == Json{"cache=unsafe"});
        CHECK(libvirt["body"].get<std::string>().find("cache='unsafe'") != std::string::npos);

        const test::HostctlResult fstab =
            daemon.hostctl({"results", "apply", unsafe_id, "--format", "fstab"});
        CHECK(fstab.out.find("/dev/DEVICE  /mnt/POINT  ext4  defaults  0  2\n") !=
              std::string::npos);

        const test::HostctlResult mycnf =
            daemon.hostctl({"results", "apply", prefix, "--format", "mycnf"});
        CHECK(mycnf.exit_code == 1);
        CHECK(mycnf.err.find("ran no MariaDB workload") != std::string::npos);
    }
    SECTION("wrong requests say what is wrong") {
        const test::HostctlResult no_format = daemon.hostctl({"results", "apply", unsafe_id});
        CHECK(no_format.exit_code == 2);
        CHECK(no_format.err.find("--format is required") != std::string::npos);
        const test::HostctlResult unknown =
            daemon.hostctl({"results", "apply", "abcdef", "--format", "qm"});
        CHECK(unknown.exit_code == 1);
        CHECK(unknown.err.find("no configuration id starts with abcdef") != std::string::npos);
        const test::HostctlResult bad_vmid =
            daemon.hostctl({"results", "apply", unsafe_id, "--format", "qm", "--vmid", "7"});
        CHECK(bad_vmid.exit_code == 1);
        CHECK(bad_vmid.err.find("vmid must be a Proxmox VE VM id") != std::string::npos);
    }
}

}  // namespace ds
