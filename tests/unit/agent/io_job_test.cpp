// The native I/O engine end to end: the null engine through the runner,
// psync and libaio on real temporary files, the per-I/O error path, and the
// report's shape (fio's, read back by ds::metrics_from_fio_json).
#include "guestagent/io_job.h"

#include <sys/mount.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "common/fio_metrics.h"
#include "guestagent/io_report.h"
#include "support/cpu_time.h"
#include "support/skip.h"
#include "support/temp_dir.h"

using ds::Json;
namespace fs = std::filesystem;

namespace {

using ds::test::TempDir;

double total_ios(const Json& report) {
    double total = 0;
    for (const auto& job : report["jobs"]) {
        total += job["read"]["total_ios"].get<double>() + job["write"]["total_ios"].get<double>();
    }
    return total;
}

// Checks one direction's latency section: percentiles present, monotone,
// within [min, max], mean within [min, max].
void check_latencies(const Json& direction) {
    const Json& clat = direction["clat_ns"];
    REQUIRE(clat["N"].get<double>() > 0);
    const double low = clat["min"].get<double>();
    const double high = clat["max"].get<double>();
    CHECK(low > 0);
    CHECK(low <= clat["mean"].get<double>());
    CHECK(clat["mean"].get<double>() <= high);
    double previous = 0;
    std::size_t seen = 0;
    for (double percent : ds::io::kReportedPercentiles) {
        char key[32];
        std::snprintf(key, sizeof key, "%f", percent);
        INFO(key);
        REQUIRE(clat["percentile"].contains(key));
        const double value = clat["percentile"][key].get<double>();
        CHECK(value >= previous);
        CHECK(value >= low);
        CHECK(value <= high);
        previous = value;
        ++seen;
    }
    CHECK(seen == 17);
}

Json run_ok(const Json& params) {
    auto report = ds::io::run_io_job(params, nullptr);
    if (!report) FAIL(report.error().message);
    return *report;
}

std::string run_error(const Json& params, const char* code) {
    auto report = ds::io::run_io_job(params, nullptr);
    REQUIRE_FALSE(report.ok());
    INFO(report.error().message);
    CHECK(report.error().code == code);
    return report.error().message;
}

}  // namespace

TEST_CASE("io job: the null engine does exactly size/bs I/Os and reports them as fio would",
          "[io_job]") {
    const Json report = run_ok({{"ioengine", "null"},
                                {"rw", "randrw"},
                                {"bs", "4k"},
                                {"size", "8m"},
                                {"iodepth", 16},
                                {"iodepth_batch_submit", 4},
                                {"name", "nulltest"}});
    REQUIRE(report["jobs"].size() == 1);
    const Json& job = report["jobs"][0];
    CHECK(job["jobname"] == "nulltest");
    CHECK(job["error"] == 0);
    CHECK(total_ios(report) == 2048);
    const double reads = job["read"]["total_ios"].get<double>();
    CHECK(reads > 2048 * 0.4);  // rwmixread=50 by default
    CHECK(reads < 2048 * 0.6);
    CHECK(job["read"]["io_bytes"].get<double>() == reads * 4096);
    CHECK(job["job options"]["iodepth"] == "16");
    CHECK(report["resolved options"]["ioengine"] == "null");
    CHECK(report["engine"]["ops_version"] == ds::io::kIoEngineOpsVersion);

    auto metrics = ds::metrics_from_fio_json(report);
    REQUIRE(metrics.ok());
    CHECK(metrics->at("read_iops") > 10000);  // nothing limits the null engine but the runner
    CHECK(metrics->at("write_iops") > 10000);
    CHECK(metrics->at("read_bw_mib_s") == Approx(metrics->at("read_iops") * 4096 / 1048576.0));
    CHECK(metrics->count("read_clat_p99_us") == 1);
    CHECK(metrics->at("read_clat_p50_us") <= metrics->at("read_clat_p99_us"));
}

TEST_CASE("io job: numjobs, group_reporting and the merged section", "[io_job]") {
    const Json params = {{"ioengine", "null"}, {"rw", "randread"}, {"bs", "4k"},
                         {"size", "1m"},       {"iodepth", 4},     {"numjobs", 3}};
    const Json separate = run_ok(params);
    REQUIRE(separate["jobs"].size() == 3);
    for (const auto& job : separate["jobs"]) {
        CHECK(job["read"]["total_ios"] == 256);
        CHECK(job["write"]["total_ios"] == 0);
    }
    CHECK(separate["all jobs"]["read"]["total_ios"] == 768);
    CHECK(separate["all jobs"]["read"]["clat_ns"]["N"] == 768);
    // Without group_reporting the pooled percentiles are the merged section's
    // (its histograms added over the jobs), not the worst job's.
    auto pooled = ds::metrics_from_fio_json(separate);
    REQUIRE(pooled.ok());
    const Json& merged_percentiles = separate["all jobs"]["read"]["clat_ns"]["percentile"];
    CHECK(pooled->at("read_clat_p90_us") ==
          Approx(merged_percentiles["90.000000"].get<double>() / 1000));
    CHECK(pooled->at("read_clat_p99_us") ==
          Approx(merged_percentiles["99.000000"].get<double>() / 1000));
    CHECK(pooled->count("read_clat_jobmax_p99_us") == 0);

    Json grouped_params = params;
    grouped_params["group_reporting"] = true;
    const Json grouped = run_ok(grouped_params);
    REQUIRE(grouped["jobs"].size() == 1);
    CHECK(grouped["jobs"][0]["read"]["total_ios"] == 768);
    auto metrics = ds::metrics_from_fio_json(grouped);
    REQUIRE(metrics.ok());
    CHECK(metrics->count("write_iops") == 0);  // a read-only job has no write metrics
}

TEST_CASE("io job: time_based runs for the runtime and samples every second", "[io_job]") {
    const auto started = std::chrono::steady_clock::now();
    const Json report = run_ok({{"ioengine", "null"},
                                {"rw", "randwrite"},
                                {"size", "1m"},
                                {"iodepth", 8},
                                {"runtime", "1200ms"},
                                {"time_based", 1},
                                {"ramp_time", "100ms"}});
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    CHECK(elapsed >= 1.3);  // the ramp, then the runtime
    // Stopped by the runtime, not running on: the job's own measured runtime.
    const Json& write = report["jobs"][0]["write"];
    CHECK(write["runtime"].get<double>() >= 1150);
    CHECK(write["runtime"].get<double>() <= 1400);
    CHECK(write["total_ios"].get<double>() > 256);  // wrapped around the 1 MiB file many times
    REQUIRE(write["iops_samples"] == 1);
    CHECK(write["iops_per_second"][0].get<double>() > 0);
    CHECK(write["iops_min"].get<double>() <= write["iops_max"].get<double>());
}

TEST_CASE("io job: the stop flag cancels a running job", "[io_job]") {
    std::atomic<bool> stop{false};
    std::thread stopper([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the job is running
        stop = true;
    });
    // A stop not seen would leave the job running for an hour: returning at
    // all, cancelled, proves that the stop ended it.
    auto report = ds::io::run_io_job({{"ioengine", "null"},
                                      {"size", "1m"},
                                      {"runtime", "1h"},
                                      {"time_based", 1},
                                      {"numjobs", 2}},
                                     &stop);
    stopper.join();
    REQUIRE_FALSE(report.ok());
    CHECK(report.error().code == ds::errc::kCancelled);
}

TEST_CASE("io job: the stop flag also ends a synchronous size-bound job", "[io_job]") {
    // 100 TiB of /dev/zero would take hours; the stop must be seen between
    // single I/Os. Returning at all, cancelled, proves that it was.
    std::atomic<bool> stop{false};
    std::thread stopper([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the job is running
        stop = true;
    });
    auto report = ds::io::run_io_job(
        {{"ioengine", "psync"}, {"filename", "/dev/zero"}, {"size", "100t"}, {"bs", "4k"}}, &stop);
    stopper.join();
    REQUIRE_FALSE(report.ok());
    CHECK(report.error().code == ds::errc::kCancelled);
}

TEST_CASE("io job: psync reads a laid-out file sequentially, exactly once", "[io_job]") {
    TempDir dir;
    const Json report = run_ok({{"ioengine", "psync"},
                                {"rw", "read"},
                                {"bs", "64k"},
                                {"size", "1m"},
                                {"directory", dir.path().string()},
                                {"name", "seq"}});
    // fio's file naming, laid out to the full size first.
    CHECK(fs::file_size(dir.path() / "seq.0.0") == 1u << 20);
    const Json& read = report["jobs"][0]["read"];
    CHECK(read["total_ios"] == 16);
    CHECK(read["io_bytes"] == 1u << 20);
    check_latencies(read);
}

TEST_CASE("io job: psync and libaio on a temporary file give plausible numbers", "[io_job]") {
    TempDir dir;
    for (const char* engine : {"psync", "libaio"}) {
        INFO(engine);
        Json params = {{"ioengine", engine}, {"rw", "randrw"},
                       {"bs", "4k"},         {"size", "8m"},
                       {"iodepth", 16},      {"runtime", "1100ms"},
                       {"time_based", true}, {"directory", dir.path().string()},
                       {"rwmixread", 70},    {"direct", 1}};
        auto report = ds::io::run_io_job(params, nullptr);
        if (!report && report.error().message.find("O_DIRECT") != std::string::npos) {
            WARN("no O_DIRECT on " << dir.path() << ", running buffered");
            params["direct"] = 0;
            report = ds::io::run_io_job(params, nullptr);
        }
        REQUIRE(report.ok());
        const Json& job = (*report)["jobs"][0];
        const double reads = job["read"]["total_ios"].get<double>();
        const double writes = job["write"]["total_ios"].get<double>();
        CHECK(reads + writes > 1000);  // any disk or page cache does 1000 4k I/Os a second
        CHECK(reads / (reads + writes) == Approx(0.7).margin(0.05));
        check_latencies(job["read"]);
        check_latencies(job["write"]);
        // Bandwidth and IOPS agree; latency is below the whole runtime.
        CHECK(job["read"]["bw_bytes"].get<double>() ==
              Approx(job["read"]["iops"].get<double>() * 4096).epsilon(0.01));
        CHECK(job["read"]["clat_ns"]["max"].get<double>() < 1.1e9);
        CHECK(job["usr_cpu"].get<double>() + job["sys_cpu"].get<double>() > 0);
        auto metrics = ds::metrics_from_fio_json(*report);
        REQUIRE(metrics.ok());
        CHECK(metrics->at("read_iops") > 0);
        CHECK(metrics->at("write_clat_p99_9_us") >= metrics->at("write_clat_p50_us"));
    }
}

TEST_CASE("io job: a failing write fails the job with the errno's text", "[io_job]") {
    // /dev/full: every write is ENOSPC.
    const auto psync = run_error(
        {{"ioengine", "psync"}, {"rw", "write"}, {"size", "1m"}, {"filename", "/dev/full"}},
        ds::errc::kIo);
    CHECK(psync.find("No space left on device") != std::string::npos);
    CHECK(psync.find("job 0: write of 4096 bytes at offset 0 on /dev/full") != std::string::npos);
    // /dev/full has no AIO write: io_submit's EINVAL is fatal, with a reason.
    const auto libaio = run_error({{"ioengine", "libaio"},
                                   {"rw", "write"},
                                   {"size", "1m"},
                                   {"iodepth", 4},
                                   {"filename", "/dev/full"}},
                                  ds::errc::kIo);
    CHECK(libaio.find("io_submit failed with EINVAL") != std::string::npos);
    CHECK(libaio.find("does not support AIO") != std::string::npos);
}

TEST_CASE("io job: libaio reports a per-I/O ENOSPC from a full file system", "[io_job]") {
    // A 64 KiB tmpfs holding a sparse 8 MiB file: writes into the holes
    // fail one by one with -ENOSPC in their completion events.
    if (geteuid() != 0) ds::test::skip_test("needs root to mount a small tmpfs");
    TempDir dir;
    REQUIRE(mount("ds-io-test", dir.path().c_str(), "tmpfs", 0, "size=64k") == 0);
    struct Unmount {
        const fs::path& path;
        ~Unmount() { umount2(path.c_str(), MNT_DETACH); }
    } unmount{dir.path()};
    const auto file = dir.path() / "sparse";
    { std::ofstream(file).close(); }
    fs::resize_file(file, 8u << 20);
    for (const char* engine : {"libaio", "psync"}) {
        INFO(engine);
        const auto message = run_error({{"ioengine", engine},
                                        {"rw", "randwrite"},
                                        {"size", "8m"},
                                        {"iodepth", 8},
                                        {"filename", file.string()},
                                        {"runtime", "5s"},
                                        {"numjobs", 2}},
                                       ds::errc::kIo);
        CHECK(message.find("No space left on device") != std::string::npos);
        CHECK(message.find("ENOSPC") != std::string::npos);
    }
}

TEST_CASE("io job: targets that cannot work are refused before any I/O", "[io_job]") {
    TempDir dir;
    CHECK(run_error({{"directory", dir.path().string()}}, ds::errc::kInvalidArgument)
              .find("'size' is required") != std::string::npos);
    CHECK(run_error({{"filename", (dir.path() / "absent").string()}}, ds::errc::kInvalidArgument)
              .find("does not exist") != std::string::npos);
    CHECK(run_error({{"filename", dir.path().string()}, {"size", "1m"}}, ds::errc::kInvalidArgument)
              .find("neither a regular file") != std::string::npos);
    CHECK(run_error({{"rw", "randrw"}, {"verify", 1}}, ds::errc::kInvalidArgument)
              .find("unsupported io job option 'verify'") != std::string::npos);
    CHECK(
        run_error({{"directory", (dir.path() / "missing").string()}, {"size", "1m"}}, ds::errc::kIo)
            .find("No such file or directory") != std::string::npos);
}

namespace {

// The children of this process that are alive now: pid -> session id,
// from /proc/<pid>/stat ("pid (comm) state ppid pgrp session ...").
std::map<int, int> child_sessions() {
    std::map<int, int> out;
    const int self = static_cast<int>(getpid());
    std::error_code error;
    for (const auto& entry : fs::directory_iterator("/proc", error)) {
        const std::string name = entry.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream file(entry.path() / "stat");
        std::string line;
        if (!std::getline(file, line)) continue;
        const auto close = line.rfind(')');
        if (close == std::string::npos) continue;
        std::istringstream fields(line.substr(close + 2));
        char state = 0;
        int parent = 0, group = 0, session = 0;
        if (!(fields >> state >> parent >> group >> session) || parent != self) continue;
        out[std::stoi(name)] = session;
    }
    return out;
}

}  // namespace

TEST_CASE("io job: jobs are processes in their own sessions, or threads with thread=1",
          "[io_job]") {
    const Json params = {{"ioengine", "null"}, {"size", "1m"}, {"runtime", "1s"},
                         {"time_based", 1},    {"numjobs", 3}, {"iodepth", 8}};
    SECTION("processes (fio's default)") {
        std::map<int, int> seen;
        std::atomic<bool> done{false};
        std::thread watcher([&] {
            while (!done) {
                for (const auto& [pid, session] : child_sessions()) seen[pid] = session;
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
            }
        });
        const double cpu_before = ds::test::children_cpu_seconds();
        const Json report = run_ok(params);
        done = true;
        watcher.join();
        // Three job processes, each the leader of its own session (so each
        // is its own autogroup), none in ours.
        REQUIRE(seen.size() == 3);
        for (const auto& [pid, session] : seen) {
            CHECK(session == pid);
            CHECK(session != getsid(0));
        }
        // The children's CPU (the null engine spins for the runtime) was
        // waited for, and their statistics reached the report.
        CHECK(ds::test::children_cpu_seconds() - cpu_before > 0.05);
        REQUIRE(report["jobs"].size() == 3);
        for (const auto& job : report["jobs"]) {
            CHECK(job["read"]["total_ios"].get<double>() > 1000);
            CHECK(job["read"]["iops_samples"] == 1);
            // Only "reported at all": the share a spinning job gets depends
            // on what else the machine runs (it was 2 % beside two guests).
            CHECK(job["usr_cpu"].get<double>() + job["sys_cpu"].get<double>() > 0);
        }
        CHECK(report["resolved options"]["thread"] == false);
    }
    SECTION("threads") {
        Json threaded = params;
        threaded["thread"] = true;
        const double cpu_before = ds::test::children_cpu_seconds();
        const Json report = run_ok(threaded);
        CHECK(ds::test::children_cpu_seconds() - cpu_before < 0.1);  // no child did the work
        REQUIRE(report["jobs"].size() == 3);
        for (const auto& job : report["jobs"]) CHECK(job["read"]["total_ios"].get<double>() > 1000);
        CHECK(report["resolved options"]["thread"] == true);
    }
}

TEST_CASE("io job: the stop flag reaches job threads and job processes alike", "[io_job]") {
    for (const bool thread : {false, true}) {
        INFO("thread=" << thread);
        std::atomic<bool> stop{false};
        std::thread stopper([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the jobs are running
            stop = true;
        });
        // Unstopped, the jobs would run for an hour: cancelled proves the
        // stop reached every one of them.
        auto report = ds::io::run_io_job({{"ioengine", "null"},
                                          {"size", "1m"},
                                          {"runtime", "1h"},
                                          {"time_based", 1},
                                          {"numjobs", 4},
                                          {"thread", thread}},
                                         &stop);
        stopper.join();
        REQUIRE_FALSE(report.ok());
        CHECK(report.error().code == ds::errc::kCancelled);
    }
}

TEST_CASE("io job: a job process that cannot set up stops the others before any I/O", "[io_job]") {
    // 20 AIO contexts of 4096 events need 81920 of fs.aio-max-nr (65536 by
    // default): some job process's io_setup fails with EAGAIN after others
    // succeeded. The job fails with that reason and nothing is written.
    std::ifstream limit_file("/proc/sys/fs/aio-max-nr");
    unsigned long limit = 0;
    if (!(limit_file >> limit) || limit >= 20ul * 4096) {
        ds::test::skip_test("fs.aio-max-nr is " + std::to_string(limit) +
                            ": io_setup cannot be made to fail here");
    }
    TempDir dir;
    const std::string file = dir.file("target");
    {
        std::ofstream out(file);
        out << std::string(1 << 20, 'a');
    }
    for (const bool thread : {false, true}) {
        INFO("thread=" << thread);
        const auto message = run_error({{"ioengine", "libaio"},
                                        {"rw", "write"},
                                        {"bs", "512"},
                                        {"iodepth", 4096},
                                        {"numjobs", 20},
                                        {"size", "1m"},
                                        {"filename", file},
                                        {"thread", thread}},
                                       ds::errc::kIo);
        CHECK(message.find("io_setup failed with EAGAIN") != std::string::npos);
        CHECK(message.find("aio-max-nr") != std::string::npos);
        CHECK(message.rfind("job ", 0) == 0);
        std::ifstream in(file);
        const std::string contents((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
        CHECK(contents == std::string(1 << 20, 'a'));  // no write happened
    }
}
