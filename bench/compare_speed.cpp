// compare_sweep over a sweep of 100,000 runs (issue 10: under 200 ms).
// Fills a temporary database through the Store API (12 configurations,
// rounds until N runs, fio-like metrics), then times compare_sweep.
// Usage: compare_speed [RUNS [KEEP_DIR]]   (not a timed test; prints the figures)
// With KEEP_DIR, the filled database is kept there as results.db, and a later
// call with the same KEEP_DIR times it again without filling (about 2 min).

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "bench/bench_sweep.h"
#include "common/settings.h"
#include "daemon/compare/compare.h"
#include "daemon/spec/spec.h"
#include "daemon/store/store.h"

namespace {

namespace fs = std::filesystem;

int fail(const std::string& what) {
    std::fprintf(stderr, "compare_speed: %s\n", what.c_str());
    return 1;
}

// Finishes every pending run with fio-like metrics: configuration c's IOPS
// about 1000 + 50c, with up to 10% noise.
ds::Status finish_runs(ds::bench::BenchSweep& bench) {
    unsigned seed = 1;
    for (ds::RunRecord run : bench.pending) {
        DS_TRY(bench.store->mark_run_running(run.id, "vm", "vol", "", "kvm", "t"));
        seed = seed * 1103515245u + 12345u;
        const double noise = 1 + static_cast<double>(seed % 1000) / 10000.0;
        const double base = 1000 + 50.0 * (run.sequence % bench.configs);
        run.status = ds::RunStatus::kSucceeded;
        run.versions = {{"qemu", "7.2.0"}, {"kernel", "6.1.0"}};
        run.metrics = {
            {"read_iops", base * noise},           {"write_iops", base * noise / 3},
            {"read_bw_mib_s", base * noise / 256}, {"write_bw_mib_s", base * noise / 768},
            {"read_clat_p99_us", 900 / noise},     {"write_clat_p99_us", 1500 / noise}};
        DS_TRY(bench.store->finish_run(run));
    }
    return ds::ok_status();
}

// The database to time: KEEP_DIR's when it has one, else a freshly filled one
// (copied to KEEP_DIR when given).
ds::Result<std::unique_ptr<ds::Store>> filled_store(int runs, const std::string& keep_dir) {
    const fs::path kept = keep_dir.empty() ? fs::path() : fs::path(keep_dir) / "results.db";
    if (!kept.empty() && fs::exists(kept)) {
        std::printf("timing the database kept in %s\n", kept.c_str());
        return ds::Store::open(kept.string());
    }
    const auto fill_start = std::chrono::steady_clock::now();
    auto bench = ds::bench::make_bench_sweep("compare_speed", ds::bench::kBenchSpec, runs);
    DS_TRY(bench);
    DS_TRY(finish_runs(bench.value()));
    std::printf("filled %d runs in %.1f s\n", runs, ds::bench::seconds_since(fill_start));
    if (kept.empty()) return std::move(bench->store);
    bench->store.reset();
    fs::create_directories(kept.parent_path());
    fs::copy_file(bench->directory / "results.db", kept, fs::copy_options::overwrite_existing);
    fs::remove_all(bench->directory);
    return ds::Store::open(kept.string());
}

}  // namespace

int main(int argc, char** argv) {
    const int runs = argc > 1 ? std::atoi(argv[1]) : 100000;
    const std::string keep_dir = argc > 2 ? argv[2] : "";
    auto opened = filled_store(runs, keep_dir);
    if (!opened.ok()) return fail(opened.error().message);
    ds::Store& store = *opened.value();
    const std::int64_t sweep_id = 1;  // the bench database's only sweep

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
    if (keep_dir.empty())
        fs::remove_all(fs::temp_directory_path() / ("compare_speed." + std::to_string(::getpid())));
    return page.ok() ? 0 : 1;
}
