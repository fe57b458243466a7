// The HTML report of a sweep of 1,000 runs (issue 10: under 1 s). Fills a
// temporary database through the Store API (12 configurations, rounds until
// N runs), each run with fio-shaped json+ output as the agent records it
// (4 jobs, latency histograms of several hundred bins per direction,
// per-second samples: about 70 kB a run as stored, as a real 10 s randrw
// run with numjobs=4 gives), then times gathering the report's data from
// the store and rendering the page.
// Usage: report_speed [RUNS]   (not a timed test; prints the figures)

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "bench/bench_sweep.h"
#include "common/settings.h"
#include "common/workload_output.h"
#include "daemon/report/html_report.h"
#include "daemon/spec/spec.h"
#include "daemon/store/store.h"

namespace {

constexpr int kJobs = 4;
constexpr int kSeconds = 10;
constexpr int kBins = 650;  // non-empty latency bins per job and direction

int fail(const std::string& what) {
    std::fprintf(stderr, "report_speed: %s\n", what.c_str());
    return 1;
}

// One direction of one fio job as json+ prints it, at `iops`.
ds::Json direction(double iops, unsigned& seed) {
    ds::Json bins = ds::Json::object();
    std::uint64_t total = 0;
    for (int b = 0; b < kBins; ++b) {
        seed = seed * 1103515245u + 12345u;
        const std::uint64_t count = 1 + seed % 97;
        bins[std::to_string(20000 + b * 512)] = count;
        total += count;
    }
    ds::Json percentiles = ds::Json::object();
    for (const char* percent :
         {"1.000000", "5.000000", "10.000000", "20.000000", "30.000000", "40.000000", "50.000000",
          "60.000000", "70.000000", "80.000000", "90.000000", "95.000000", "99.000000", "99.500000",
          "99.900000", "99.950000", "99.990000"})
        percentiles[percent] = 20000 + std::atof(percent) * 2800;
    ds::Json per_second = ds::Json::array(), bytes_per_second = ds::Json::array();
    for (int s = 0; s < kSeconds; ++s) {
        per_second.push_back(std::llround(iops * (0.95 + 0.01 * (s % 7))));
        bytes_per_second.push_back(std::llround(iops * 4096 * (0.95 + 0.01 * (s % 7))));
    }
    const ds::Json moments = {
        {"min", 4000}, {"max", 3600000}, {"mean", 130000.5}, {"stddev", 62000.25}, {"N", total}};
    ds::Json clat = moments;
    clat["percentile"] = percentiles;
    clat["bins"] = bins;
    return {{"io_bytes", std::llround(iops * 4096 * kSeconds)},
            {"io_kbytes", std::llround(iops * 4 * kSeconds)},
            {"bw_bytes", std::llround(iops * 4096)},
            {"bw", std::llround(iops * 4)},
            {"iops", iops},
            {"runtime", kSeconds * 1000},
            {"total_ios", total},
            {"short_ios", 0},
            {"drop_ios", 0},
            {"slat_ns", moments},
            {"clat_ns", clat},
            {"lat_ns", moments},
            {"bw_min", 40000},
            {"bw_max", 60000},
            {"bw_agg", 25.0},
            {"bw_mean", 50000.5},
            {"bw_dev", 5000.5},
            {"bw_samples", 40},
            {"iops_min", 10000},
            {"iops_max", 15000},
            {"iops_mean", 12500.5},
            {"iops_stddev", 1200.5},
            {"iops_samples", 40},
            {"iops_per_second", per_second},
            {"bw_bytes_per_second", bytes_per_second}};
}

// fio's json+ output of a 4-job randrw run at `iops` per job and direction.
ds::Json fio_output(double iops, unsigned seed) {
    ds::Json jobs = ds::Json::array();
    for (int j = 0; j < kJobs; ++j) {
        jobs.push_back(
            {{"jobname", "randrw"},
             {"groupid", 0},
             {"error", 0},
             {"job options", {{"rw", "randrw"}, {"bs", "4k"}, {"iodepth", "64"}, {"numjobs", "4"}}},
             {"read", direction(iops, seed)},
             {"write", direction(iops, seed)},
             {"usr_cpu", 5.5},
             {"sys_cpu", 20.25},
             {"ctx", 123456}});
    }
    return {{"fio version", "fio-3.33"}, {"timestamp", 1795981407}, {"jobs", jobs}};
}

}  // namespace

int main(int argc, char** argv) {
    const int runs = argc > 1 ? std::atoi(argv[1]) : 1000;
    const auto fill_start = std::chrono::steady_clock::now();
    auto bench = ds::bench::make_bench_sweep("report_speed", ds::bench::kBenchSpec, runs);
    if (!bench.ok()) return fail(bench.error().message);
    const std::filesystem::path directory = bench->directory;
    ds::Store& store = *bench->store;
    const std::int64_t sweep_id = bench->sweep_id;
    const int configs = bench->configs;
    std::size_t raw_bytes = 0;
    for (ds::RunRecord run : bench->pending) {
        if (!store.mark_run_running(run.id, "vm", "vol", "", "kvm", "t").ok()) return fail("mark");
        const double speed = 1 + 0.1 * (run.sequence % configs) + 0.01 * (run.sequence % 5);
        const ds::Json output = fio_output(3000 * speed, static_cast<unsigned>(run.id));
        auto metrics = ds::metrics_from_workload_output("fio", output);
        if (!metrics.ok()) return fail(metrics.error().message);
        run.status = ds::RunStatus::kSucceeded;
        run.metrics = metrics.value();
        run.raw_output = output.dump();
        raw_bytes += run.raw_output.size();
        run.versions = {{"qemu", "7.2.0"}, {"kernel", "6.1.0"}, {"fio_version", "fio-3.33"}};
        run.applied_settings = {{"hypervisor", {{"cache", ds::to_string(run.config.cache)}}},
                                {"guest", {{"fs_type", run.config.filesystem.type}}},
                                {"verified", true}};
        if (!store.finish_run(run).ok()) return fail("finish");
    }
    std::printf("filled %d runs (%.0f kB of raw output each) in %.1f s\n", runs,
                static_cast<double>(raw_bytes) / runs / 1000, ds::bench::seconds_since(fill_start));

    double best_gather = 1e9, best_total = 1e9;
    std::size_t page_bytes = 0;
    for (int attempt = 0; attempt < 5; ++attempt) {
        const auto start = std::chrono::steady_clock::now();
        auto data = ds::report::gather_report_data(store, sweep_id);
        if (!data.ok()) return fail(data.error().message);
        const double gathered = ds::bench::seconds_since(start);
        const std::string page = ds::report::render_report_html(data.value());
        const double total = ds::bench::seconds_since(start);
        page_bytes = page.size();
        best_gather = std::min(best_gather, gathered);
        best_total = std::min(best_total, total);
        std::printf("report: %.0f ms (gather %.0f ms, render %.0f ms), %zu kB\n", total * 1000,
                    gathered * 1000, (total - gathered) * 1000, page.size() / 1000);
    }
    std::printf("best report of %d runs: %.0f ms (gather %.0f ms), %zu kB page (goal: 1000 ms)\n",
                runs, best_total * 1000, best_gather * 1000, page_bytes / 1000);
    std::filesystem::remove_all(directory);
    return 0;
}
