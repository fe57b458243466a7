// CPU cost per I/O: the host counters' parsers and the per-I/O derivation.
#include "daemon/run/host_cpu.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "support/temp_dir.h"

namespace ds {
namespace {

const char* const kDiskstats =
    "   7       0 loop0 6152057 249 50751427 120492 5477274 291238 60127767 252174 0 199516 "
    "449133 757 138 247242958 179 395988 76288\n"
    "   8       1 sda1 100 2 800 40 300 5 2400 90 0 120 130\n";

TEST_CASE("host cpu: a diskstats line becomes named counters", "[host_cpu]") {
    const std::optional<Json> sda1 = parse_diskstats(kDiskstats, 8, 1);
    REQUIRE(sda1);
    CHECK(sda1->at("device") == "sda1");
    CHECK(sda1->at("reads") == 100);
    CHECK(sda1->at("read_sectors") == 800);
    CHECK(sda1->at("writes") == 300);
    CHECK(sda1->at("write_sectors") == 2400);
    CHECK(sda1->at("io_ms") == 120);
    CHECK(sda1->at("weighted_io_ms") == 130);
    CHECK(parse_diskstats(kDiskstats, 7, 0)->at("writes") == 5477274);
    CHECK_FALSE(parse_diskstats(kDiskstats, 8, 2));
    CHECK_FALSE(parse_diskstats("   8       1 sda1 100 2\n", 8, 1));
}

TEST_CASE("host cpu: pressure totals are read in µs", "[host_cpu]") {
    const std::optional<Json> io = parse_pressure(
        "some avg10=0.80 avg60=1.53 avg300=1.61 total=556795812\n"
        "full avg10=0.00 avg60=0.29 avg300=0.94 total=258478144\n");
    REQUIRE(io);
    CHECK(*io == Json{{"some_us", 556795812.0}, {"full_us", 258478144.0}});
    CHECK(parse_pressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=12\n")->size() == 1);
    CHECK_FALSE(parse_pressure(""));
    CHECK_FALSE(parse_pressure("some avg10=0.00 total=x\n"));
}

TEST_CASE("host cpu: a file volume's counters are its file system's device's", "[host_cpu]") {
    test::TempDir dir;
    const std::string volume = dir.file("volume.raw");
    { std::ofstream(volume) << "x"; }
    // A /proc of our own: the device of the temp dir's file system, whatever it is.
    struct stat status {};
    REQUIRE(::stat(volume.c_str(), &status) == 0);
    const std::string proc = dir.file("proc");
    std::filesystem::create_directories(proc + "/pressure");
    std::ofstream(proc + "/diskstats") << "   " << major(status.st_dev) << " "
                                       << minor(status.st_dev) << " vdz 1 0 8 1 2 0 16 2 0 3 4\n";
    std::ofstream(proc + "/pressure/io") << "some avg10=0 avg60=0 avg300=0 total=5\n";
    const Json counters = read_host_io_counters(FileDisk{volume}, proc);
    CHECK(counters.at("disk_writes") == 2);
    CHECK(counters.at("disk_io_ms") == 3);
    CHECK(counters.at("backing_device").get<std::string>().starts_with("vdz ("));
    CHECK(counters.at("psi_io_some_us") == 5);
    CHECK_FALSE(counters.contains("psi_cpu_some_us"));  // no such file
    // An RBD image has no device here; a missing file none either.
    CHECK_FALSE(read_host_io_counters(RbdDisk{}, proc).contains("disk_writes"));
    CHECK_FALSE(read_host_io_counters(FileDisk{dir.file("gone")}, proc).contains("disk_writes"));
}

const Json kDiskCounters = {{"rd_operations", 100.0},
                            {"wr_operations", 300.0},
                            {"flush_operations", 100.0},
                            {"discard_operations", 0.0},
                            {"wr_bytes", 1228800.0}};
const Json kEmulator = {{"vcpu_s", 0.5},  {"iothread_s", 0.1}, {"main_loop_s", 0.05},
                        {"other_s", 0.0}, {"total_s", 0.65},   {"vcpu_threads", 1}};
const Json kGuest = {{"user_s", 0.1},   {"nice_s", 0.0}, {"system_s", 0.2},   {"idle_s", 4.0},
                     {"iowait_s", 1.0}, {"irq_s", 0.05}, {"softirq_s", 0.05}, {"steal_s", 0.3}};

TEST_CASE("host cpu: CPU per I/O is the window's CPU over the data disk's I/Os", "[host_cpu]") {
    const auto metrics = cpu_per_io_metrics(kEmulator, kGuest, kDiskCounters);
    // 500 I/Os (reads, writes and flushes).
    CHECK(metrics.at("host_cpu_us_per_io") == Approx(1300));
    CHECK(metrics.at("host_vcpu_cpu_us_per_io") == Approx(1000));
    CHECK(metrics.at("host_iothread_cpu_us_per_io") == Approx(200));
    CHECK(metrics.at("host_main_loop_cpu_us_per_io") == Approx(100));
    CHECK(metrics.at("host_other_cpu_us_per_io") == 0);
    // The guest's busy time: not idle, not iowait, not steal.
    CHECK(metrics.at("guest_cpu_us_per_io") == Approx(800));
}

TEST_CASE("host cpu: without I/O or CPU figures the metrics are absent, never inf", "[host_cpu]") {
    Json no_io = kDiskCounters;
    for (const char* key : {"rd_operations", "wr_operations", "flush_operations"}) no_io[key] = 0;
    CHECK(cpu_per_io_metrics(kEmulator, kGuest, no_io).empty());
    CHECK(cpu_per_io_metrics(kEmulator, kGuest, Json::object()).empty());
    // Proxmox: no emulator figures; an older agent: no guest figures.
    const auto guest_only = cpu_per_io_metrics(Json(), kGuest, kDiskCounters);
    CHECK(guest_only.size() == 1);
    CHECK(guest_only.contains("guest_cpu_us_per_io"));
    CHECK_FALSE(cpu_per_io_metrics(kEmulator, Json::object(), kDiskCounters)
                    .contains("guest_cpu_us_per_io"));
    for (const auto& [name, value] : cpu_per_io_metrics(kEmulator, kGuest, kDiskCounters))
        CHECK(std::isfinite(value));
}

TEST_CASE("host cpu: the record holds the window's changes and why parts are missing",
          "[host_cpu]") {
    const Json before = {{"qemu", {{"vcpu_s", 1.0}, {"total_s", 2.0}, {"vcpu_threads", 1}}},
                         {"host", {{"disk_writes", 10}, {"backing_device", "sda1 (8:1)"}}}};
    const Json after = {{"qemu", {{"vcpu_s", 1.5}, {"total_s", 3.0}, {"vcpu_threads", 1}}},
                        {"host", {{"disk_writes", 25}, {"backing_device", "sda1 (8:1)"}}}};
    const Json record = cpu_cost_record(before, after, kGuest, kDiskCounters);
    CHECK(record.at("window") == "job");
    CHECK(record.at("ios") == 500);
    CHECK(record.at("qemu") == Json{{"vcpu_s", 0.5}, {"total_s", 1.0}, {"vcpu_threads", 1}});
    CHECK(record.at("host_counters") ==
          Json{{"disk_writes", 15.0}, {"backing_device", "sda1 (8:1)"}});
    CHECK(record.at("guest") == kGuest);
    const Json unsupported = {{"not_measured", "proxmox does not report its emulator's CPU"}};
    const Json remote = cpu_cost_record(unsupported, unsupported, Json::object(), Json::object());
    CHECK(remote == Json{{"window", "job"}, {"not_measured", unsupported.at("not_measured")}});
}

}  // namespace
}  // namespace ds
