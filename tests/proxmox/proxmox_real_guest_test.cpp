// Whole Proxmox sweeps through disksweepd against the fake PVE with REAL
// guests behind it (tests/support/pve_fake/real_backend.py): the fake holds
// the template that `scripts/pve-make-template.sh --from-image IMAGE_DIR`
// makes (replayed from the script's --dry-run output), `status/start` boots
// a real QEMU (TCG here) with the command line qemu-server would build from
// the run's VM config, `agent/*` goes to the real qemu-guest-agent in the
// guest, `monitor` to QEMU's own HMP, and the data disk is a real sparse
// file that the guest formats and real fio measures. So each of the three
// levels the daemon verifies (PVE config, QEMU `info block`, the guest's own
// view) is read from what really runs.
//
// Skips without qemu-system-x86_64 or without the base guest image in
// $DISKSWEEP_TEST_IMAGE_DIR (default /var/lib/disksweep/images). Budget:
// about 6 minutes on a 2-core machine for both cases (ctest TIMEOUT in
// tests/proxmox/CMakeLists.txt); each prints its per-run overhead on the
// simulated PVE (clone, config, start, agent ready, teardown).
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include "proxmox/pve_fake_fixture.h"
#include "support/daemon_fixture.h"
#include "support/run_rows.h"
#include "support/skip.h"

using namespace ds;
using ds::test::DaemonFixture;
using ds::test::PveFake;

namespace {

namespace fs = std::filesystem;
using Steady = std::chrono::steady_clock;

constexpr const char* kInstance = "prg";
constexpr const char* kPrefix = "disksweep-prg-";
constexpr int kForeignVmid = 5000;
constexpr int kTemplateVmid = 9000;
constexpr auto kSweepTimeout = std::chrono::seconds(420);

std::string image_dir() {
    const char* from_environment = std::getenv("DISKSWEEP_TEST_IMAGE_DIR");
    return from_environment != nullptr ? from_environment : "/var/lib/disksweep/images";
}

bool on_path(const std::string& program) {
    return std::system(("command -v " + program + " >/dev/null 2>&1").c_str()) == 0;
}

// Called before anything is created (support/skip.h's contract).
void skip_without_real_guests() {
    if (!on_path("qemu-system-x86_64"))
        test::skip_test("no qemu-system-x86_64 to boot real guests");
    const std::string dir = image_dir();
    const bool kernel = fs::exists(dir + "/vmlinux") || fs::exists(dir + "/vmlinuz");
    if (!kernel || !fs::exists(dir + "/initrd.img") || !fs::exists(dir + "/root.img") ||
        !fs::exists(dir + "/manifest.json")) {
        test::skip_test("no base guest image in " + dir +
                        " (vmlinux|vmlinuz, initrd.img, root.img, manifest.json; "
                        "set DISKSWEEP_TEST_IMAGE_DIR)");
    }
}

// The qm commands that make the template, as the script prints them.
std::string template_commands() {
    const std::string out = test::test_temp_dir() + "/template-commands.txt";
    const std::string command = std::string("bash ") + PVE_MAKE_TEMPLATE_SCRIPT + " --from-image " +
                                image_dir() + " --dry-run > " + out + " 2>&1";
    INFO("pve-make-template.sh --dry-run: " << command);
    REQUIRE(std::system(command.c_str()) == 0);
    return out;
}

// One node, PVE's two default storages, and a VM that is not the daemon's:
// in its id range and named with its prefix, but never tagged by it. The
// template (9000) comes from the script.
constexpr const char* kClusterState = R"({
  "nodes": ["pve1"],
  "storages": [{"id": "local", "type": "dir", "content": ["iso", "vztmpl", "snippets", "images"]},
               {"id": "local-lvm", "type": "lvmthin", "content": ["images", "rootdir"]}],
  "vms": [{"vmid": 5000, "node": "pve1", "status": "stopped",
           "config": {"name": "disksweep-prg-r999", "memory": "512", "cores": "1",
                      "ostype": "l26", "scsihw": "virtio-scsi-single",
                      "scsi0": "local-lvm:vm-5000-disk-0,size=64M"}}]
})";

struct RealFakeDirs {
    std::string work;  // the real backend's volumes and QEMU sockets
};

std::vector<std::string> fake_args(const RealFakeDirs& dirs,
                                   const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"--real-guests",
                                     image_dir(),
                                     "--real-work-dir",
                                     dirs.work,
                                     "--template-from-script",
                                     template_commands(),
                                     "--state",
                                     test::write_temp_file("pve-real-state.json", kClusterState),
                                     "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
}

std::vector<std::string> daemon_args(const PveFake& fake) {
    const std::string line = "proxmox:pve-real,host=127.0.0.1,port=" + std::to_string(fake.port()) +
                             ",token=" + PveFake::kTokenId + ",token_file=" + fake.secret_file() +
                             ",fingerprint=" + fake.fingerprint() +
                             ",node=pve1,template_vmid=9000,vmid_min=5000,vmid_max=5099,parallel=2";
    return {"--accel",    "tcg",           "--host",      line,
            "--storage",  "pve:local-lvm", "--image-dir", test::test_temp_dir() + "/no-images",
            "--instance", kInstance};
}

// The first reference study's shape, shortened: scsi-single, ssd, discard,
// iothread, cache none and unsafe, ext4 and btrfs; one repetition of a
// short fio job. `matrix` replaces the cache and filesystem axes.
std::string spec(const std::string& name, const std::string& matrix) {
    return "name = \"" + name + R"("
repetitions = 1
boot_timeout = "300s"
run_timeout = "10m"
[hypervisor]
backend = "proxmox"
[matrix]
storage = "pve:local-lvm"
bus = "scsi-single"
iothread = true
ssd = true
discard = true
)" + matrix +
           R"(
[[workload]]
kind = "fio"
name = "randrw"
rw = "randrw"
bs = "4k"
size = "8m"
runtime = "1s"
)";
}

std::string submit(const DaemonFixture& daemon, const std::string& file_name,
                   const std::string& text) {
    auto submitted = daemon.hostctl({"sweep", "submit", test::write_temp_file(file_name, text)});
    INFO("hostctl: " << submitted.out << submitted.err);
    REQUIRE(submitted.exit_code == 0);
    return submitted.out;
}

// Polls `sweep show` until the sweep is neither queued nor running.
Json wait_for_sweep(const DaemonFixture& daemon, int sweep_id, Steady::time_point deadline) {
    Json sweep;
    while (Steady::now() < deadline) {
        auto shown = daemon.hostctl({"--json", "sweep", "show", std::to_string(sweep_id)});
        REQUIRE(shown.exit_code == 0);
        sweep = Json::parse(shown.out);
        const Json status = sweep["sweep"]["status"];
        if (status != "running" && status != "queued") return sweep;
        std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    FAIL("sweep " << sweep_id << " did not end in time: " << sweep.dump());
    return sweep;
}

// A control endpoint's `data` (PveFake::control gives the data, or the
// whole {"data": ...} answer, depending on the fixture's version).
Json control_data(const PveFake& fake, const std::string& what) {
    Json answer = Json::parse(fake.control("GET", what));
    if (answer.is_object() && answer.size() == 1 && answer.contains("data")) return answer["data"];
    return answer;
}

struct FakeView {
    std::set<int> vms;
    std::set<std::string> volumes;
    std::map<std::string, int> processes;  // vmid -> QEMU pid
};

FakeView fake_view(const PveFake& fake) {
    const Json state = control_data(fake, "state");
    FakeView view;
    for (const auto& [vmid, vm] : state["vms"].items()) view.vms.insert(std::stoi(vmid));
    for (const auto& volume : state["volumes"]) view.volumes.insert(volume.get<std::string>());
    for (const auto& [vmid, pid] : state["processes"].items()) view.processes[vmid] = pid;
    return view;
}

bool process_alive(int pid) {
    return fs::exists("/proc/" + std::to_string(pid));
}

// After a sweep: the template and the foreign VM, their volumes, nothing
// else; no QEMU of any run's VM runs, by the fake's account and by the
// pids it reported while the runs ran.
// The volumes' files too: only the foreign VM's disk is left in the real
// backend's local-lvm directory (the template's is root.img itself).
void check_nothing_left(const PveFake& fake, const FakeView& before, const std::set<int>& pids,
                        const std::string& work_dir) {
    const FakeView after = fake_view(fake);
    CHECK(after.vms == std::set<int>{kForeignVmid, kTemplateVmid});
    CHECK(after.volumes == before.volumes);
    CHECK(after.processes.empty());
    std::set<std::string> files;
    for (const auto& entry : fs::directory_iterator(work_dir + "/volumes/local-lvm")) {
        files.insert(entry.path().filename().string());
    }
    CHECK(files == std::set<std::string>{"vm-5000-disk-0.raw"});
    for (int pid : pids) {
        INFO("QEMU pid " << pid);
        CHECK_FALSE(process_alive(pid));
    }
}

// Collects the QEMU pids the fake reports while sweeps run, to check that
// each one is gone afterwards.
class PidWatch {
  public:
    explicit PidWatch(const PveFake& fake) : fake_(fake) {}
    void poll() {
        for (const auto& [vmid, pid] : fake_view(fake_).processes) pids_.insert(pid);
    }
    const std::set<int>& pids() const { return pids_; }

  private:
    const PveFake& fake_;
    std::set<int> pids_;
};

Json wait_watching(const DaemonFixture& daemon, int sweep_id, PidWatch& watch,
                   Steady::time_point deadline) {
    while (Steady::now() < deadline) {
        watch.poll();
        auto shown = daemon.hostctl({"--json", "sweep", "show", std::to_string(sweep_id)});
        REQUIRE(shown.exit_code == 0);
        Json sweep = Json::parse(shown.out);
        const Json status = sweep["sweep"]["status"];
        if (status != "running" && status != "queued") return sweep;
        std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    return wait_for_sweep(daemon, sweep_id, deadline);
}

// ---- per-run overhead on the simulated PVE, from the fake's request log ----

// One run's VM, from its clone call to its last request (ids are reused
// by later runs, so each clone call starts a new timeline).
struct VmTimeline {
    int vmid = 0;
    double clone = -1, config = -1, start = -1, first_agent = -1, agent_ready = -1, exec = -1,
           stop = -1, last = -1;
};

int vmid_of_path(const std::string& path) {
    // /nodes/pve1/qemu/VMID/...
    const std::string marker = "/qemu/";
    const auto at = path.find(marker);
    if (at == std::string::npos) return 0;
    return std::atoi(path.c_str() + at + marker.size());
}

std::vector<VmTimeline> timelines(const PveFake& fake) {
    std::vector<VmTimeline> lives;
    std::map<int, std::size_t> current;  // vmid -> its timeline in `lives`
    for (const Json& request : control_data(fake, "requests")) {
        const std::string path = request.value("path", "");
        const std::string method = request.value("method", "");
        const double at = request.value("at", 0.0);
        int vmid = vmid_of_path(path);
        if (path.ends_with("/clone") && request["params"].contains("newid")) {
            const Json& newid = request["params"]["newid"];
            vmid = newid.is_string() ? std::stoi(newid.get<std::string>()) : newid.get<int>();
            current[vmid] = lives.size();
            lives.push_back(VmTimeline{.vmid = vmid, .clone = at});
            continue;
        }
        if (vmid == 0 || vmid == kTemplateVmid || !current.contains(vmid)) continue;
        VmTimeline& vm = lives[current[vmid]];
        const bool ok = request.value("status", 0) == 200;
        if (method == "POST" && path.ends_with("/config") && vm.config < 0) vm.config = at;
        if (path.ends_with("/status/start") && vm.start < 0) vm.start = at;
        if (path.find("/agent/") != std::string::npos && vm.first_agent < 0) vm.first_agent = at;
        if (path.ends_with("/agent/ping") && ok && vm.agent_ready < 0) {
            vm.agent_ready = at + request.value("seconds", 0.0);
        }
        if (path.ends_with("/agent/exec") && ok && vm.exec < 0) vm.exec = at;
        if (path.ends_with("/status/stop") && vm.stop < 0) vm.stop = at;
        vm.last = at + request.value("seconds", 0.0);
    }
    return lives;
}

// Prints, per run's VM, the seconds of each step PVE-side: clone (clone
// call to config call), config (to the start call), start to the guest
// agent's first answer, and teardown (stop call to the last request).
void report_overhead(const PveFake& fake, const std::string& title) {
    std::cout << "real-guest overhead (" << title << "), seconds per run's VM:\n"
              << "  vmid  clone  config  start->agent  agent->exec  teardown\n";
    for (const VmTimeline& vm : timelines(fake)) {
        auto span = [](double from, double to) { return from < 0 || to < 0 ? -1.0 : to - from; };
        std::printf("  %4d  %5.2f  %6.2f  %12.2f  %11.2f  %8.2f\n", vm.vmid,
                    span(vm.clone, vm.config), span(vm.config, vm.start),
                    span(vm.start, vm.agent_ready), span(vm.agent_ready, vm.exec),
                    span(vm.stop, vm.last));
    }
    std::cout.flush();
}

void print_phase_timings(const std::vector<test::RunRow>& runs) {
    for (const auto& run : runs) {
        std::cout << "  run " << run.config.value("cache", "") << "/"
                  << run.config.value("filesystem", Json()).dump() << " " << run.status
                  << " timings " << run.timings.dump() << "\n";
        if (!run.failure_reason.empty()) std::cout << "    failure: " << run.failure_reason << "\n";
    }
    std::cout.flush();
}

// What a successful run must show: the disk formatted (the guest's own
// read-back names the filesystem), real fio numbers, and each setting read
// back at all three levels.
void check_succeeded_run(const test::RunRow& run) {
    INFO("run " << run.config.dump() << "\nfailure: " << run.failure_reason
                << "\napplied: " << run.applied.dump());
    REQUIRE(run.status == "succeeded");
    Json applied = run.applied;  // a copy: operator[] may add what is missing
    Json config = run.config;
    CHECK(applied["verified"] == true);
    // PVE config level.
    Json& hypervisor = applied["hypervisor"];
    CHECK(hypervisor["pve"]["drive"] == "scsi1");
    CHECK(hypervisor["pve"]["scsihw"] == "virtio-scsi-single");
    const std::string drive = hypervisor["pve"]["value"];
    CHECK_THAT(drive, Catch::Contains("cache=" + config["cache"].get<std::string>()));
    CHECK_THAT(drive, Catch::Contains("discard=on"));
    CHECK_THAT(drive, Catch::Contains("iothread=1"));
    CHECK_THAT(drive, Catch::Contains("ssd=1"));
    // QEMU level: the real QEMU's `info block` through the monitor relay.
    CHECK(hypervisor["levels"]["qemu_info_block"]["checked"] == true);
    CHECK(hypervisor["qemu_info_block"]["cache"] == config["cache"]);
    CHECK(hypervisor["qemu_info_block"]["detect_zeroes"] == config["detect_zeroes"]);
    // Guest level: what the real guest's kernel reports of its disk.
    Json& guest = applied["guest"];
    const std::string filesystem = config["filesystem"].is_object()
                                       ? config["filesystem"].value("type", "")
                                       : config["filesystem"].get<std::string>();
    CHECK(guest["fs_type"] == filesystem.substr(0, filesystem.find(':')));
    CHECK(guest["serial"] == "disksweep-data");
    CHECK(guest["rotational"] == 0);
    CHECK(guest["discard_max_bytes"].get<std::int64_t>() > 0);
    CHECK(guest["write_cache"] == "write back");
    // Real fio ran on it.
    CHECK(run.metrics.at("read_iops") > 0);
    CHECK(run.metrics.at("write_iops") > 0);
}

}  // namespace

TEST_CASE("Proxmox sweeps with real guests behind the fake succeed and verify at all three levels",
          "[proxmox][real-guest]") {
    skip_without_real_guests();
    const auto test_started = Steady::now();
    const RealFakeDirs dirs{test::test_temp_dir() + "/pve-real"};
    fs::create_directories(dirs.work);
    {
        PveFake fake(fake_args(dirs));
        const FakeView before = fake_view(fake);
        REQUIRE(before.vms == std::set<int>{kForeignVmid, kTemplateVmid});
        DaemonFixture daemon(daemon_args(fake));
        INFO("daemon log: " << daemon.log());
        REQUIRE(daemon.ready());

        submit(daemon, "study.toml",
               spec("pve-real-study",
                    "cache = [\"none\", \"unsafe\"]\nfilesystem = [\"ext4\", "
                    "\"btrfs\"]"));
        submit(daemon, "throttled.toml",
               spec("pve-real-throttled",
                    "cache = \"none\"\nfilesystem = \"ext4\"\n"
                    "iops_limit = 500\nbandwidth_limit = \"8m\""));
        submit(daemon, "queues.toml",
               spec("pve-real-queues", "cache = \"none\"\nfilesystem = \"ext4\"\nqueues = 2"));
        PidWatch watch(fake);
        const auto deadline = Steady::now() + kSweepTimeout;
        for (int sweep_id = 1; sweep_id <= 3; ++sweep_id) {
            const Json sweep = wait_watching(daemon, sweep_id, watch, deadline);
            INFO("sweep " << sweep_id << ": " << sweep.dump() << "\nfake PVE log: " << fake.log());
            CHECK(sweep["sweep"]["status"] == "succeeded");
        }
        report_overhead(fake, "three sweeps, 6 runs, parallel=2");

        const auto study = test::runs_of_sweep(daemon.database(), 1);
        print_phase_timings(study);
        REQUIRE(study.size() == 4);
        for (const auto& run : study) check_succeeded_run(run);

        const auto throttled = test::runs_of_sweep(daemon.database(), 2);
        print_phase_timings(throttled);
        REQUIRE(throttled.size() == 1);
        check_succeeded_run(throttled[0]);
        {
            Json hypervisor = throttled[0].applied["hypervisor"];
            CHECK(hypervisor["iops_limit"] == 500);
            CHECK(hypervisor["bandwidth_limit"] == 8 << 20);
            CHECK(hypervisor["qemu_info_block"]["iops_limit"] == 500);
            CHECK(hypervisor["qemu_info_block"]["bandwidth_limit"] == 8 << 20);
        }

        const auto queues = test::runs_of_sweep(daemon.database(), 3);
        print_phase_timings(queues);
        REQUIRE(queues.size() == 1);
        check_succeeded_run(queues[0]);
        {
            Json hypervisor = queues[0].applied["hypervisor"];
            CHECK(hypervisor["queues"] == 2);
            CHECK_THAT(hypervisor["pve"]["value"].get<std::string>(), Catch::Contains("queues=2"));
        }

        // Every request was one PVE accepts, and nothing of the runs is left.
        CHECK(fake.log().find("pve_fake BUG") == std::string::npos);
        const Json requests = control_data(fake, "requests");
        for (const Json& request : requests) {
            INFO(request.dump());
            CHECK(request.value("status", 0) != 400);
        }
        REQUIRE_FALSE(watch.pids().empty());
        check_nothing_left(fake, before, watch.pids(), dirs.work);
    }
    // The fake is gone (SIGTERM): no QEMU of its work directory is left.
    CHECK(test::qemu_processes_mentioning(dirs.work).empty());
    std::cout
        << "real-guest sweeps: whole test "
        << std::chrono::duration_cast<std::chrono::seconds>(Steady::now() - test_started).count()
        << " s\n";
}

TEST_CASE("Proxmox with real guests: QEMU started with another cache mode fails its run",
          "[proxmox][real-guest]") {
    skip_without_real_guests();
    const auto test_started = Steady::now();
    const RealFakeDirs dirs{test::test_temp_dir() + "/pve-real-inject"};
    fs::create_directories(dirs.work);
    {
        // The simulated PVE starts QEMU with cache=writeback whatever the
        // config says; the config says unsafe.
        PveFake fake(fake_args(dirs, {"--inject-qemu", R"({"cache": "writeback"})"}));
        const FakeView before = fake_view(fake);
        DaemonFixture daemon(daemon_args(fake));
        INFO("daemon log: " << daemon.log());
        REQUIRE(daemon.ready());
        submit(daemon, "inject.toml",
               spec("pve-real-inject", "cache = \"unsafe\"\nfilesystem = \"ext4\""));
        PidWatch watch(fake);
        const Json sweep = wait_watching(daemon, 1, watch, Steady::now() + kSweepTimeout);
        INFO("sweep: " << sweep.dump() << "\nfake PVE log: " << fake.log());
        report_overhead(fake, "injected cache mode, 1 run");
        const auto runs = test::runs_of_sweep(daemon.database(), 1);
        print_phase_timings(runs);
        REQUIRE(runs.size() == 1);
        INFO("failure: " << runs[0].failure_reason << "\napplied: " << runs[0].applied.dump());
        CHECK(runs[0].status == "failed");
        // The QEMU level names the difference: config unsafe, QEMU writeback.
        CHECK_THAT(runs[0].failure_reason, Catch::Contains("settings not in force"));
        CHECK_THAT(runs[0].failure_reason, Catch::Contains("QEMU"));
        CHECK_THAT(runs[0].failure_reason, Catch::Contains("cache"));
        CHECK_THAT(runs[0].failure_reason, Catch::Contains("writeback"));
        Json applied = runs[0].applied;
        CHECK(applied["hypervisor"]["qemu_info_block"]["cache"] == "writeback");
        CHECK_THAT(applied["hypervisor"]["pve"]["value"].get<std::string>(),
                   Catch::Contains("cache=unsafe"));
        REQUIRE_FALSE(watch.pids().empty());
        check_nothing_left(fake, before, watch.pids(), dirs.work);
    }
    CHECK(test::qemu_processes_mentioning(dirs.work).empty());
    std::cout
        << "real-guest injection: whole test "
        << std::chrono::duration_cast<std::chrono::seconds>(Steady::now() - test_started).count()
        << " s\n";
}
