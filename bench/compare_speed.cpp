// compare_sweep over a sweep of 100,000 runs (issue 10: under 200 ms).
// Fills a temporary database through the Store API (12 configurations,
// rounds until N runs, fio-like metrics), then times compare_sweep.
// Usage: compare_speed [RUNS]   (not a timed test; prints the figures)
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/settings.h"
#include "common/spec.h"
#include "daemon/store/compare.h"
#include "daemon/store/store.h"

namespace {

constexpr const char* kSpec = R"(name = "speed"
repetitions = 1
[matrix]
cache = ["none", "unsafe"]
filesystem = ["ext4", "ext4:barrier=0,data=writeback", "btrfs", "btrfs:nodatacow",
              "btrfs+single", "btrfs+single:nodatacow"]
[[workload]]
kind = "fio"
name = "randrw"
rw = "randrw"
)";

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int fail(const std::string& what) {
    std::fprintf(stderr, "compare_speed: %s\n", what.c_str());
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    const int runs = argc > 1 ? std::atoi(argv[1]) : 100000;
    const auto directory =
        std::filesystem::temp_directory_path() / ("compare_speed." + std::to_string(::getpid()));
    std::filesystem::create_directories(directory);
    auto opened = ds::Store::open((directory / "results.db").string());
    if (!opened.ok()) return fail(opened.error().message);
    ds::Store& store = *opened.value();

    auto spec = ds::parse_sweep_spec(kSpec, "speed.toml");
    if (!spec.ok()) return fail(spec.error().message);
    spec.value().repetitions = spec.value().max_repetitions = 1;
    auto plan = ds::expand_sweep(spec.value());
    if (!plan.ok()) return fail(plan.error().message);
    const int configs = static_cast<int>(plan->configs.size());
    std::vector<ds::RunRecord> planned;
    for (int i = 0; i < runs; ++i) {
        ds::RunRecord run;
        const auto& config = plan->configs[static_cast<std::size_t>(i % configs)];
        run.sequence = i;
        run.repetition = i / configs;
        run.config_id = ds::config_id(config);
        run.config = ds::to_json(config);
        run.workload_name = plan->workloads[0].name;
        run.workload = ds::to_json(plan->workloads[0]);
        planned.push_back(std::move(run));
    }
    ds::SweepRecord sweep;
    sweep.name = "speed";
    sweep.spec_toml = kSpec;
    sweep.spec_source = "speed.toml";
    sweep.created_at = "t0";
    sweep.varying_axes = plan->varying_axes;
    auto fill_start = std::chrono::steady_clock::now();
    auto id = store.create_sweep(sweep, planned);
    if (!id.ok()) return fail(id.error().message);
    auto stored = store.list_runs(id.value(), ds::RawOutput::kOmit);
    if (!stored.ok()) return fail(stored.error().message);
    unsigned seed = 1;
    for (ds::RunRecord run : stored.value()) {
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
    std::printf("filled %d runs in %.1f s\n", runs, seconds_since(fill_start));

    double best = 1e9;
    for (int attempt = 0; attempt < 5; ++attempt) {
        auto start = std::chrono::steady_clock::now();
        auto compared = ds::compare_sweep(store, id.value());
        const double elapsed = seconds_since(start);
        if (!compared.ok()) return fail(compared.error().message);
        best = std::min(best, elapsed);
        std::printf("compare_sweep: %.1f ms (%zu rows)\n", elapsed * 1000,
                    compared.value()["rows"].size());
    }
    auto page_start = std::chrono::steady_clock::now();
    auto page = store.list_runs_page(id.value(), 50000, 1000);
    std::printf("one page of 1000 runs: %.1f ms\n", seconds_since(page_start) * 1000);
    std::printf("best compare_sweep of %d runs: %.1f ms (goal: 200 ms)\n", runs, best * 1000);
    std::filesystem::remove_all(directory);
    return page.ok() ? 0 : 1;
}
