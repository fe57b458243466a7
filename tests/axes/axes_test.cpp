// The axes tier: every bus and every value of every disk axis in real TCG
// guests (libvirt's embedded QEMU driver, the real disksweepd and hostctl,
// real fio), each run's settings read back at three levels (the live domain
// XML, QEMU: QMP and its process, the guest) and stored with the run; and
// faults injected into the libvirt backend (fault_injection.h) that must
// fail their runs with the difference named.
//
// Budget (CI): under 6 minutes for the tier, one guest per configuration, a
// 1-second fio job each; measured wall times are in docs/verification.md.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/settings.h"
#include "support/daemon_fixture.h"
#include "support/run_rows.h"

namespace ds {
namespace {

using test::DaemonFixture;
using test::RunRow;

// One configuration of the covering design; unset limits and queues are
// left at their defaults (unthrottled, QEMU's queue count).
struct AxesConfiguration {
    std::string_view bus;
    std::string_view cache;
    std::string_view aio;
    bool discard;
    std::string_view detect_zeroes;
    bool ssd;
    bool iothread;
    std::optional<int> iops_limit{};
    std::optional<std::string_view> bandwidth_limit{};
    std::optional<int> queues{};
};

// The covering design: together these cover every value of every disk axis
// at least once (CoverageOf below checks it, so dropping a row fails the
// tier), within what libvirt and QEMU can run (impossible_reason: no ssd on
// virtio-blk, no IO thread or queues on sata, aio native only with cache
// none or directsync, detect_zeroes unmap only with discard).
//
//  bus         cache         aio       discard dz     ssd iothread iops bw  queues
//  virtio-blk  none          native    on      unmap  off on       -    -   2
//  scsi        writeback     threads   off     on     on  on       500  -   2
//  scsi-single writethrough  io_uring  on      off    on  off      -    16m 2
//  sata        directsync    native    off     off    on  off      1000 32m -
//  sata        unsafe        io_uring  on      unmap  off off      -    -   -
//  scsi-single none          default   off     on     off on       -    -   -
//
// Coverage: bus 4/4, cache 5/5, aio 4/4 (default = QEMU's thread pool),
// discard on/off, detect_zeroes off/on/unmap, ssd on/off, iothread on/off,
// throttled by IOPS (2, 4), by bandwidth (3, 4) and not (1, 5, 6), queues
// on every bus that has them (virtio-blk, scsi, scsi-single). The guest's
// write cache is "write through" in rows 3 and 4, "write back" elsewhere.
// clang-format off
const std::vector<AxesConfiguration> kCoveringDesign = {
    {"virtio-blk",  "none",         "native",   true,  "unmap", false, true,  {},   {},      2},
    {"scsi",        "writeback",    "threads",  false, "on",    true,  true,  500,  {},      2},
    {"scsi-single", "writethrough", "io_uring", true,  "off",   true,  false, {},   "16m",   2},
    {"sata",        "directsync",   "native",   false, "off",   true,  false, 1000, "32m",   {}},
    {"sata",        "unsafe",       "io_uring", true,  "unmap", false, false, {},   {},      {}},
    {"scsi-single", "none",         "default",  false, "on",    false, true,  {},   {},      {}},
};
// clang-format on

// The injected mismatches: each configuration triggers exactly one fault
// of the injecting daemon (fault_injection.h), and its run must fail with
// this text in its reason; `silent_level` must not complain (the fault is
// invisible there, which is why the level below it exists).
struct InjectedCase {
    std::string_view fault;
    AxesConfiguration configuration;
    std::vector<std::string_view> reason_names;
    std::string_view silent_level;
};
const std::vector<InjectedCase> kInjectedCases = {
    {"cache",
     {"virtio-blk", "writethrough", "default", false, "off", false, false},
     {"cache: requested writethrough, QEMU has writeback (query-block",
      "cache writethrough: expected write_cache write through, guest has write back"},
     "domain XML has"},
    {"discard",
     {"sata", "none", "default", true, "off", false, false},
     {"discard: requested on, domain XML has off",
      "discard: requested on, QEMU process has off (-blockdev"},
     ""},
    {"bus",
     {"scsi-single", "none", "default", false, "off", false, false},
     {"bus: requested scsi-single, QEMU has scsi (qom-get parent_bus"},
     "domain XML has"},
};

std::string toml_bool(bool value) {
    return value ? "true" : "false";
}

// A sweep of one configuration: the spec's matrix is a cross product, so a
// covering design is one single-valued sweep per row (one daemon runs them
// all, one at a time).
std::string spec_of(const AxesConfiguration& c, const std::string& name) {
    std::string spec = "name = \"" + name + "\"\n[matrix]\n";
    spec += "bus = \"" + std::string(c.bus) + "\"\ncache = \"" + std::string(c.cache) + "\"\n";
    spec += "aio = \"" + std::string(c.aio) + "\"\ndiscard = " + toml_bool(c.discard) + "\n";
    spec += "detect_zeroes = \"" + std::string(c.detect_zeroes) + "\"\n";
    spec += "ssd = " + toml_bool(c.ssd) + "\niothread = " + toml_bool(c.iothread) + "\n";
    if (c.iops_limit) spec += "iops_limit = " + std::to_string(*c.iops_limit) + "\n";
    if (c.bandwidth_limit)
        spec += "bandwidth_limit = \"" + std::string(*c.bandwidth_limit) + "\"\n";
    if (c.queues) spec += "queues = " + std::to_string(*c.queues) + "\n";
    spec += "filesystem = \"ext4\"\ndisk_size = \"256m\"\n";
    spec += R"([[workload]]
name = "short"
kind = "fio"
rw = "randrw"
bs = "4k"
direct = true
ioengine = "libaio"
iodepth = 4
size = "16m"
runtime = "1s"
time_based = true
)";
    return spec;
}

// Every value each disk axis takes in `design`, as the spec writes it.
std::map<std::string, std::set<std::string>> coverage_of(
    const std::vector<AxesConfiguration>& design) {
    std::map<std::string, std::set<std::string>> seen;
    for (const AxesConfiguration& c : design) {
        seen["bus"].insert(std::string(c.bus));
        seen["cache"].insert(std::string(c.cache));
        seen["aio"].insert(std::string(c.aio));
        seen["discard"].insert(toml_bool(c.discard));
        seen["detect_zeroes"].insert(std::string(c.detect_zeroes));
        seen["ssd"].insert(toml_bool(c.ssd));
        seen["iothread"].insert(toml_bool(c.iothread));
        seen["iops_limit"].insert(c.iops_limit ? "set" : "none");
        seen["bandwidth_limit"].insert(c.bandwidth_limit ? "set" : "none");
        if (c.queues) seen["queues on"].insert(std::string(c.bus));
    }
    return seen;
}

// What the design must cover: every value of the axis table's enum axes
// (common/settings.cpp), both values of the boolean ones, throttled and not,
// and queues on each bus that has them.
std::map<std::string, std::set<std::string>> required_coverage() {
    std::map<std::string, std::set<std::string>> required;
    for (const char* axis : {"bus", "cache", "aio", "detect_zeroes"}) {
        const AxisDef* definition = find_axis(axis);
        REQUIRE(definition != nullptr);
        for (std::string_view value : definition->values) required[axis].emplace(value);
    }
    for (const char* axis : {"discard", "ssd", "iothread"}) required[axis] = {"true", "false"};
    for (const char* axis : {"iops_limit", "bandwidth_limit"}) required[axis] = {"set", "none"};
    required["queues on"] = {"virtio-blk", "scsi", "scsi-single"};
    return required;
}

std::vector<std::string> daemon_args() {
    return {
        "--image-dir", test::test_image_dir(), "--accel", "tcg", "--boot-timeout", "120", "--vcpus",
        "2",           "--max-parallel-runs",  "1"};
}

// Submits one sweep per configuration and waits for each; returns the runs.
std::vector<RunRow> run_sweeps(DaemonFixture& daemon,
                               const std::vector<AxesConfiguration>& configurations,
                               const std::string& prefix) {
    std::vector<RunRow> runs;
    for (std::size_t i = 0; i < configurations.size(); ++i) {
        const std::string name = prefix + "-" + std::to_string(i + 1);
        const std::string spec =
            test::write_temp_file(name + ".toml", spec_of(configurations[i], name));
        const auto submitted =
            daemon.hostctl({"sweep", "submit", spec, "--wait"}, std::chrono::seconds(300));
        INFO(name << ": " << submitted.out << submitted.err);
        CHECK((submitted.exit_code == 0 || submitted.exit_code == 1));
        const auto rows = test::runs_of_sweep(daemon.database(), static_cast<int>(i + 1));
        REQUIRE(rows.size() == 1);
        runs.push_back(rows.front());
    }
    return runs;
}

// The guest driver and write cache each bus and cache mode must show
// (measured on QEMU 7.2 with a Linux 6.1 guest, settings_verify.cpp).
std::string guest_driver(std::string_view bus) {
    if (bus == "virtio-blk") return "virtio_blk";
    if (bus == "sata") return "ahci";
    return "virtio_scsi";
}

void check_domain_xml(const Json& config, const Json& xml) {
    for (const char* axis :
         {"bus", "cache", "aio", "discard", "detect_zeroes", "ssd", "iothread"}) {
        INFO("domain XML: " << axis);
        CHECK(xml.at(axis) == config.at(axis));
    }
    for (const char* axis : {"iops_limit", "bandwidth_limit", "queues"}) {
        INFO("domain XML: " << axis);
        CHECK(xml.value(axis, Json()) == config.value(axis, Json()));
    }
}

void check_qemu(const Json& config, const Json& qmp, const Json& process) {
    for (const char* axis : {"bus", "cache", "detect_zeroes", "ssd", "iothread"}) {
        INFO("QMP: " << axis << " (" << qmp.at("sources").value(axis, "") << ")");
        CHECK(qmp.at(axis) == config.at(axis));
    }
    for (const char* axis : {"iops_limit", "bandwidth_limit"}) {
        INFO("QMP: " << axis);
        CHECK(qmp.value(axis, Json()) == config.value(axis, Json()));
    }
    if (config.contains("queues")) CHECK(qmp.at("queues") == config.at("queues"));
    if (config.at("detect_zeroes") == "unmap") CHECK(qmp.at("discard") == true);
    for (const char* axis : {"aio", "discard"}) {
        INFO("QEMU process: " << axis << " (" << process.at("sources").value(axis, "") << ")");
        CHECK(process.at(axis) == config.at(axis));
    }
}

void check_guest(const Json& config, const Json& guest) {
    CHECK(guest.at("driver") == guest_driver(config.at("bus").get<std::string>()));
    const std::string cache = config.at("cache");
    const bool write_through = cache == "writethrough" || cache == "directsync";
    CHECK(guest.at("write_cache") == (write_through ? "write through" : "write back"));
    CHECK(guest.at("rotational") == (config.at("ssd") == true ? 0 : 1));
    if (config.at("discard") == true) CHECK(guest.at("discard_max_bytes").get<long long>() > 0);
    if (config.contains("queues")) {
        const long long cpus = guest.at("online_cpus");
        CHECK(guest.at("hw_queues") == std::min(config.at("queues").get<long long>(), cpus));
    }
}

}  // namespace

TEST_CASE("axes: the covering design covers every value of every disk axis", "[axes]") {
    CHECK(coverage_of(kCoveringDesign) == required_coverage());
}

TEST_CASE("axes: every bus and disk axis in real guests, read back at three levels", "[axes]") {
    REQUIRE(coverage_of(kCoveringDesign) == required_coverage());
    DaemonFixture daemon(daemon_args());
    REQUIRE(daemon.ready());
    const std::vector<RunRow> runs = run_sweeps(daemon, kCoveringDesign, "axes");
    for (const RunRow& run : runs) {
        INFO(run.config.dump() << "\n" << run.failure_reason << "\n" << run.applied.dump(1));
        REQUIRE(run.status == "succeeded");
        CHECK(run.applied.at("verified") == true);
        const Json& hypervisor = run.applied.at("hypervisor");
        check_domain_xml(run.config, hypervisor);
        check_qemu(run.config, hypervisor.at("qemu"), hypervisor.at("qemu_process"));
        check_guest(run.config, run.applied.at("guest"));
        // Acceleration as QEMU reports it, not as the daemon chose it.
        CHECK(run.applied.at("accel").at("in_force") == "tcg");
        CHECK_THAT(run.applied.at("accel").at("source").get<std::string>(),
                   Catch::Contains("query-kvm"));
        CHECK(run.metrics.count("read_iops") == 1);
    }
    CHECK(test::qemu_processes_mentioning(daemon.state_dir()).empty());
}

TEST_CASE("axes: a setting made wrong in QEMU fails its run with the difference named", "[axes]") {
    ::setenv("DISKSWEEP_TEST_INJECT", "cache,discard,bus", 1);
    DaemonFixture daemon(daemon_args(), INJECTING_DAEMON_BIN);
    ::unsetenv("DISKSWEEP_TEST_INJECT");
    REQUIRE(daemon.ready());
    std::vector<AxesConfiguration> configurations;
    for (const InjectedCase& injected : kInjectedCases)
        configurations.push_back(injected.configuration);
    const std::vector<RunRow> runs = run_sweeps(daemon, configurations, "injected");
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const InjectedCase& injected = kInjectedCases[i];
        const RunRow& run = runs[i];
        INFO(injected.fault << " fault: " << run.failure_reason);
        CHECK(run.status == "failed");
        CHECK(run.applied.at("verified") == false);
        for (std::string_view name : injected.reason_names)
            CHECK_THAT(run.failure_reason, Catch::Contains(std::string(name)));
        if (!injected.silent_level.empty())
            CHECK_THAT(run.failure_reason, !Catch::Contains(std::string(injected.silent_level)));
        CHECK_THAT(daemon.log(), Catch::Contains("injected " + std::string(injected.fault)));
    }
    CHECK(test::qemu_processes_mentioning(daemon.state_dir()).empty());
}

namespace {

// Submits the one-configuration sweep in the spec file `spec` and waits;
// its one run, with hostctl's output and the daemon's log on a failure.
std::vector<RunRow> one_run_of(const DaemonFixture& daemon, const std::string& spec) {
    const auto submitted =
        daemon.hostctl({"sweep", "submit", spec, "--wait"}, std::chrono::seconds(300));
    INFO(submitted.out << submitted.err << daemon.log());
    auto runs = test::runs_of_sweep(daemon.database(), 1);
    REQUIRE(runs.size() == 1);
    return runs;
}

}  // namespace

TEST_CASE("axes: a golden volume's clone holding another file system fails its run, naming both",
          "[axes][golden]") {
    ::setenv("DISKSWEEP_TEST_INJECT", "golden_fs", 1);
    DaemonFixture daemon(daemon_args(), INJECTING_DAEMON_BIN);
    ::unsetenv("DISKSWEEP_TEST_INJECT");
    REQUIRE(daemon.ready());
    const std::string spec = test::write_temp_file("golden-fs.toml", R"(name = "golden-fs"
repetitions = 1
[matrix]
storage = "file"
filesystem = "ext4"
disk_size = "256m"
[[workload]]
name = "read"
kind = "fio"
dataset = "golden"
rw = "randread"
bs = "4k"
size = "8m"
runtime = "1s"
time_based = true
)");
    const auto runs = one_run_of(daemon, spec);
    INFO(runs.front().failure_reason);
    CHECK(runs.front().status == "failed");
    CHECK(runs.front().applied.at("dataset").at("source") == "golden");
    CHECK_THAT(runs.front().failure_reason,
               Catch::Contains("holds a btrfs file system, not the configured ext4"));
    CHECK_THAT(daemon.log(), Catch::Contains("injected golden_fs"));
    CHECK(test::qemu_processes_mentioning(daemon.state_dir()).empty());
}

TEST_CASE("axes: a logged disk whose volume node drops flushes fails its run, naming the cache",
          "[axes][durability]") {
    ::setenv("DISKSWEEP_TEST_INJECT", "logged_no_flush", 1);
    DaemonFixture daemon(daemon_args(), INJECTING_DAEMON_BIN);
    ::unsetenv("DISKSWEEP_TEST_INJECT");
    REQUIRE(daemon.ready());
    const std::string spec = test::write_temp_file("logged-no-flush.toml", R"(name = "logged"
durability = { crash_points = 2 }
[matrix]
storage = "file"
cache = "none"
filesystem = "ext4"
disk_size = "256m"
[[workload]]
name = "ledger"
kind = "ledger"
records = 20
)");
    const auto runs = one_run_of(daemon, spec);
    INFO(runs.front().failure_reason);
    CHECK(runs.front().status == "failed");
    CHECK_THAT(runs.front().failure_reason,
               Catch::Contains("cache: requested none, QEMU has direct=on,writeback=on,no-flush=on "
                               "(query-block cache.writeback (the device) and "
                               "query-named-block-nodes disksweep-data-volume"));
    CHECK_THAT(daemon.log(), Catch::Contains("injected logged_no_flush"));
    CHECK(test::qemu_processes_mentioning(daemon.state_dir()).empty());
    CHECK(std::filesystem::is_empty(daemon.state_dir() + "/durability"));
}

namespace {

// The iothread pair: the same short 4k random write on scsi-single with
// and without an IO thread (aio=native, so the I/O is submitted by the
// thread that runs the disk's AioContext, not by thread-pool workers).
constexpr const char* kIothreadPairSpec = R"(name = "iothread-cpu"
[matrix]
bus = "scsi-single"
cache = "none"
aio = "native"
iothread = [true, false]
filesystem = "ext4"
disk_size = "256m"
[[workload]]
name = "randwrite"
kind = "fio"
rw = "randwrite"
bs = "4k"
direct = true
ioengine = "libaio"
iodepth = 8
size = "32m"
runtime = "3s"
time_based = true
)";

const RunRow& run_with_iothread(const std::vector<RunRow>& runs, bool iothread) {
    const auto found = std::find_if(runs.begin(), runs.end(), [&](const RunRow& run) {
        return run.config.at("iothread") == iothread;
    });
    REQUIRE(found != runs.end());
    return *found;
}

double qemu_seconds(const RunRow& run, const char* role) {
    return run.applied.at("cpu_cost").at("qemu").at(role).get<double>();
}

}  // namespace

TEST_CASE(
    "axes: with an IO thread the data disk's I/O costs CPU there, without it the main "
    "loop's",
    "[axes][cpu]") {
    DaemonFixture daemon(daemon_args());
    REQUIRE(daemon.ready());
    const auto submitted =
        daemon.hostctl({"sweep", "submit",
                        test::write_temp_file("iothread-cpu.toml", kIothreadPairSpec), "--wait"},
                       std::chrono::seconds(300));
    INFO(submitted.out << submitted.err);
    const std::vector<RunRow> runs = test::runs_of_sweep(daemon.database(), 1);
    REQUIRE(runs.size() == 2);
    for (const RunRow& run : runs) {
        INFO(run.failure_reason << "\n" << run.applied.dump(1));
        REQUIRE(run.status == "succeeded");
        const Json& cost = run.applied.at("cpu_cost");
        CHECK(cost.at("window") == "job");
        CHECK(cost.at("ios").get<double>() > 1000);  // 3 s of 4k writes, even under TCG
        CHECK(cost.at("qemu").at("vcpu_threads") == 2);
        // The guest's busy time and QEMU's whole are there, per I/O too.
        CHECK(cost.at("guest").at("system_s").get<double>() > 0);
        for (const char* metric : {"host_cpu_us_per_io", "guest_cpu_us_per_io",
                                   "host_vcpu_cpu_us_per_io", "host_main_loop_cpu_us_per_io"})
            CHECK(run.metrics.at(metric) > 0);
        if (std::filesystem::exists("/proc/pressure/io"))
            CHECK(cost.at("host_counters").contains("psi_io_some_us"));
        WARN("iothread=" << run.config.at("iothread") << ": " << cost.at("qemu").dump() << " ios "
                         << cost.at("ios") << " guest " << cost.at("guest").dump());
    }
    const RunRow& with = run_with_iothread(runs, true);
    const RunRow& without = run_with_iothread(runs, false);
    // With one, the IO thread exists and does a clear share of what QEMU
    // spends besides emulating the guest (measured under TCG: 28 to 29% in
    // three runs, e.g. 0.39 s of 1.33 s). The main loop keeps work of its own (the root disk, the
    // agent's channel, the console, QMP): about as much as the IO thread
    // here, so neither is asserted to exceed the other.
    const double with_iothread_s = qemu_seconds(with, "iothread_s");
    CHECK(with.applied.at("cpu_cost").at("qemu").at("iothreads") == 1);
    CHECK(with_iothread_s > 0.15 * (qemu_seconds(with, "total_s") - qemu_seconds(with, "vcpu_s")));
    CHECK(with.metrics.at("host_iothread_cpu_us_per_io") > 0);
    // Without one, no IO thread, and the main loop does the disk's work: it
    // spends more over the same job (measured in four pairs: 0.59, 0.54,
    // 0.72, 0.86 s against 0.40, 0.41, 0.47, 0.42 s). Per I/O it did too
    // (1.4 to 3.5 times), but the guest's I/O rate under TCG on a busy
    // 2-core host swings too much (1852 to 5092 I/Os in the same 4 s of fio) for a
    // per-I/O bound to hold every time.
    CHECK(without.applied.at("cpu_cost").at("qemu").at("iothreads") == 0);
    CHECK(qemu_seconds(without, "iothread_s") == 0);
    CHECK(without.metrics.at("host_iothread_cpu_us_per_io") == 0);
    CHECK(qemu_seconds(without, "main_loop_s") > qemu_seconds(with, "main_loop_s"));
    // What a user reads: the columns of the comparison, ranked lowest first.
    const auto csv = daemon.hostctl({"results", "compare", "1", "--csv"});
    CHECK(csv.exit_code == 0);
    for (const char* metric : {"host_cpu_us_per_io", "guest_cpu_us_per_io",
                               "host_iothread_cpu_us_per_io", "host_main_loop_cpu_us_per_io"})
        CHECK_THAT(csv.out, Catch::Contains(std::string(metric) + "_median"));
    const auto ranked =
        daemon.hostctl({"results", "compare", "1", "--metric", "host_main_loop_cpu_us_per_io"});
    CHECK(ranked.exit_code == 0);
    CHECK_THAT(ranked.out, Catch::Contains("host_main_loop_cpu_us_per_io (lower is better)"));
    WARN(ranked.out);
    CHECK(test::qemu_processes_mentioning(daemon.state_dir()).empty());
}

}  // namespace ds
