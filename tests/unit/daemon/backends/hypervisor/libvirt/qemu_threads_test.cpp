// QEMU's CPU time by thread role: the stat parser and the attribution.
#include "daemon/backends/hypervisor/libvirt/qemu_threads.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "support/temp_dir.h"

namespace ds {
namespace {

// A stat line as the kernel writes it, with utime/stime at fields 14/15.
std::string stat_line(long tid, const std::string& comm, int utime, int stime) {
    return std::to_string(tid) + " (" + comm + ") S 1 2 3 0 -1 4194560 100 0 0 0 " +
           std::to_string(utime) + " " + std::to_string(stime) +
           " 0 0 20 0 7 0 123 4567 89 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 "
           "0 0 0 0\n";
}

TEST_CASE("qemu threads: utime and stime are read after the last parenthesis", "[qemu_threads]") {
    const Result<TaskCpuTicks> plain = parse_task_stat(stat_line(4242, "qemu-system-x86", 70, 30));
    REQUIRE(plain.ok());
    CHECK(plain->user == 70);
    CHECK(plain->system == 30);
    CHECK(plain->total() == 100);
    // A command name with spaces and parentheses (QEMU names its threads
    // "CPU 0/TCG"; a name may hold ") S 9 9" too) does not shift the fields.
    const Result<TaskCpuTicks> tricky = parse_task_stat(stat_line(7, "CPU 0/TCG) S 9 9 (x", 5, 6));
    REQUIRE(tricky.ok());
    CHECK(tricky->user == 5);
    CHECK(tricky->system == 6);
}

TEST_CASE("qemu threads: a stat text without its fields is an error", "[qemu_threads]") {
    CHECK(parse_task_stat("").error().code == errc::kInvalidArgument);
    CHECK(parse_task_stat("12 (qemu) S 1 2 3").error().code == errc::kInvalidArgument);
    CHECK(parse_task_stat("12 qemu S 1 2 3 4 5 6 7 8 9 10 11 12 13 14").error().code ==
          errc::kInvalidArgument);
    CHECK(parse_task_stat(stat_line(1, "q", -5, 1)).error().code == errc::kInvalidArgument);
}

TEST_CASE("qemu threads: roles come from query-cpus-fast and query-iothreads", "[qemu_threads]") {
    const Json cpus = Json::parse(
        R"([{"thread-id":2201,"cpu-index":0,"qom-path":"/machine/unattached/device[0]"},
            {"thread-id":2202,"cpu-index":1,"qom-path":"/machine/unattached/device[1]"}])");
    const Json iothreads = Json::parse(R"([{"id":"iothread1","thread-id":2185,"poll-max-ns":0}])");
    const Result<QemuThreadRoles> roles = thread_roles_from_qmp(cpus, iothreads);
    REQUIRE(roles.ok());
    CHECK(roles->vcpus == std::vector<long>{2201, 2202});
    CHECK(roles->iothreads == std::vector<long>{2185});
    CHECK(thread_roles_from_qmp(cpus, Json::array())->iothreads.empty());
    // Single-threaded TCG: two vCPUs on one thread, counted once.
    const Json shared = Json::parse(R"([{"thread-id":2201,"cpu-index":0},
                                        {"thread-id":2201,"cpu-index":1}])");
    CHECK(thread_roles_from_qmp(shared, iothreads)->vcpus == std::vector<long>{2201});
    CHECK_FALSE(thread_roles_from_qmp(Json::object(), iothreads).ok());
    CHECK_FALSE(thread_roles_from_qmp(Json::parse(R"([{"cpu-index":0}])"), iothreads).ok());
}

TEST_CASE("qemu threads: the process's time is split by role, the rest is other",
          "[qemu_threads]") {
    QemuCpuReading reading;
    reading.pid = 100;
    // 1000 ticks for the process: live threads 100 (main), 101 (vCPU), 102
    // (IO thread), 103 (a pool worker); 40 ticks of workers that exited.
    reading.process = {600, 400};
    reading.threads = {{100, {50, 50}}, {101, {500, 100}}, {102, {20, 80}}, {103, {10, 50}}};
    const Json times = cpu_times_by_role(reading, {{101}, {102}}, 100);
    CHECK(times.at("total_s") == 10.0);
    CHECK(times.at("main_loop_s") == 1.0);
    CHECK(times.at("vcpu_s") == 6.0);
    CHECK(times.at("iothread_s") == 1.0);
    CHECK(times.at("other_s") == 2.0);
    CHECK(times.at("vcpu_threads") == 1);
    CHECK(times.at("iothreads") == 1);
    // Without an IO thread its figure is 0; a process read before its
    // threads never makes "other" negative.
    reading.process = {100, 0};
    const Json without = cpu_times_by_role(reading, {{101}, {}}, 100);
    CHECK(without.at("iothread_s") == 0.0);
    CHECK(without.at("other_s") == 0.0);
}

TEST_CASE("qemu threads: a process is read from its stat files", "[qemu_threads]") {
    test::TempDir proc;
    const std::string root = proc.path().string();
    const auto write = [&](const std::string& path, const std::string& text) {
        std::filesystem::create_directories(std::filesystem::path(root + path).parent_path());
        std::ofstream(root + path) << text;
    };
    write("/55/stat", stat_line(55, "qemu-system-x86", 300, 100));
    write("/55/task/55/stat", stat_line(55, "qemu-system-x86", 30, 10));
    write("/55/task/56/stat", stat_line(56, "CPU 0/TCG", 200, 20));
    std::filesystem::create_directories(root + "/55/task/57");  // ended meanwhile
    const Result<QemuCpuReading> reading = read_qemu_cpu(55, root);
    REQUIRE(reading.ok());
    CHECK(reading->process.total() == 400);
    CHECK(reading->threads.size() == 2);
    CHECK(reading->threads.at(56).user == 200);
    CHECK(read_qemu_cpu(99, root).error().code == errc::kNotFound);
    // The real thing: this test process itself.
    const Result<QemuCpuReading> self = read_qemu_cpu(::getpid());
    REQUIRE(self.ok());
    CHECK(self->threads.contains(::getpid()));
}

}  // namespace
}  // namespace ds
