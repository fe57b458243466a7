// compare_sweep over a sweep of 100,000 runs (issue 10: under 200 ms).
// Fills a temporary database through the Store API (12 configurations,
// rounds until N runs, fio-like metrics), then times compare_sweep.
// Usage: compare_speed [RUNS]   (not a timed test; prints the figures)

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "bench/bench_sweep.h"
#include "common/settings.h"
#include "common/spec.h"
#include "daemon/store/compare.h"
#include "daemon/store/store.h"

namespace {

int fail(const std::string& what) {
    std::fprintf(stderr, "compare_speed: %s\n", what.c_str());
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    const int runs = argc > 1 ? std::atoi(argv[1]) : 100000;
    const auto fill_start = std::chrono::steady_clock::now();
    auto bench = ds::bench::make_bench_sweep("compare_speed", ds::bench::kBenchSpec, runs);
    if (!bench.ok()) return fail(bench.error().message);
    const std::filesystem::path directory = bench->directory;
    ds::Store& store = *bench->store;
    const std::int64_t sweep_id = bench->sweep_id;
    const int configs = bench->configs;
    unsigned seed = 1;
    for (ds::RunRecord run : bench->pending) {
        if (!store.mark_run_running(run.id, "vm", "vol", "", "kvm", "t").ok()) return fail("mark");
        seed = seed * 1103515245u + 12345u;
        const double noise = 1 + static_cast<double>(seed % 1000) / 10000.0;
        const double base = 1000 + 50.0 * (run.sequence % configs);
        run.status = ds::run_status::kSucceeded;
        run.versions = {{"qemu", "7.2.0"}, {"kernel", "6.1.0"}};
        run.metrics = {
            {"read_iops", base * noise},           {"write_iops", base * noise / 3},
            {"read_bw_mib_s", base * noise / 256}, {"write_bw_mib_s", base * noise / 768},
            {"read_clat_p99_us", 900 / noise},     {"write_clat_p99_us", 1500 / noise}};
        if (!store.finish_run(run).ok()) return fail("finish");
    }
    std::printf("filled %d runs in %.1f s\n", runs, ds::bench::seconds_since(fill_start));

    double best = 1e9;
    for (int attempt = 0; attempt < 5; ++attempt) {
        auto start = std::chrono::steady_clock::now();
        auto compared = ds::compare_sweep(store, sweep_id);
        const double elapsed = ds::bench::seconds_since(start);
        if (!compared.ok()) return fail(compared.error().message);
        best = std::min(best, elapsed);
        std::printf("compare_sweep: %.1f ms (%zu rows)\n", elapsed * 1000,
                    compared.value()["rows"].size());
    }
    auto page_start = std::chrono::steady_clock::now();
    auto page = store.list_runs_page(sweep_id, 50000, 1000);
    std::printf("one page of 1000 runs: %.1f ms\n", ds::bench::seconds_since(page_start) * 1000);
    std::printf("best compare_sweep of %d runs: %.1f ms (goal: 200 ms)\n", runs, best * 1000);
    std::filesystem::remove_all(directory);
    return page.ok() ? 0 : 1;
}
