// The benchmarks' common start: a Store in a fresh temporary directory with
// one sweep of N pending runs of a spec's configurations, stored through the
// Store API as the daemon stores them (run i: configuration i % configs,
// round i / configs, the spec's first workload).
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/settings.h"
#include "daemon/plan/expand.h"
#include "daemon/spec/spec.h"
#include "daemon/store/store.h"

namespace ds::bench {

// The sweep both benches store: 12 configurations (cache × 6 filesystems),
// one fio randrw workload of 4 jobs.
inline constexpr const char* kBenchSpec = R"(name = "speed"
repetitions = 1
[matrix]
cache = ["none", "unsafe"]
filesystem = ["ext4", "ext4:barrier=0,data=writeback", "btrfs", "btrfs:nodatacow",
              "btrfs+single", "btrfs+single:nodatacow"]
[[workload]]
kind = "fio"
name = "randrw"
rw = "randrw"
bs = "4k"
iodepth = 64
numjobs = 4
runtime = "10s"
)";

inline double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct BenchSweep {
    std::filesystem::path directory;  // remove_all it when done
    std::unique_ptr<Store> store;
    std::int64_t sweep_id = 0;
    int configs = 0;                 // configurations of the spec
    std::vector<RunRecord> pending;  // as stored, by sequence
};

inline Result<BenchSweep> make_bench_sweep(const std::string& name, const std::string& spec_text,
                                           int runs) {
    BenchSweep bench;
    bench.directory =
        std::filesystem::temp_directory_path() / (name + "." + std::to_string(::getpid()));
    std::filesystem::create_directories(bench.directory);
    auto opened = Store::open((bench.directory / "results.db").string());
    if (!opened.ok()) return opened.error();
    bench.store = std::move(opened).value();

    auto spec = parse_sweep_spec(spec_text, name + ".toml");
    if (!spec.ok()) return spec.error();
    spec->repetitions = spec->max_repetitions = 1;
    auto plan = expand_sweep(spec.value());
    if (!plan.ok()) return plan.error();
    bench.configs = static_cast<int>(plan->configs.size());
    std::vector<RunRecord> planned;
    for (int i = 0; i < runs; ++i) {
        RunRecord run;
        const StorageConfig& config = plan->configs[static_cast<std::size_t>(i % bench.configs)];
        run.sequence = i;
        run.repetition = i / bench.configs;
        run.config_id = config_id(config);
        run.config = config;
        run.workload_name = plan->workloads[0].name;
        run.workload = plan->workloads[0];
        planned.push_back(std::move(run));
    }
    SweepRecord sweep;
    sweep.name = name;
    sweep.spec_toml = spec_text;
    sweep.spec_source = name + ".toml";
    sweep.created_at = "t0";
    sweep.varying_axes = plan->varying_axes;
    auto id = bench.store->create_sweep(sweep, planned);
    if (!id.ok()) return id.error();
    bench.sweep_id = id.value();
    auto stored = bench.store->list_runs(bench.sweep_id, RawOutput::kOmit);
    if (!stored.ok()) return stored.error();
    bench.pending = std::move(stored).value();
    return bench;
}

}  // namespace ds::bench
