// run_overhead_table: the per-phase medians of a sweep's runs, read from
// `hostctl --json sweep show ID` on stdin (bench/run_overhead/run.sh).
// Usage: hostctl --json sweep show ID --limit 10000 | run_overhead_table [--json]
//
// A run's time is split into the daemon's phases (provision, boot, job,
// verify, teardown; docs/schema.md "timings") and, inside the job, the
// agent's steps (tune, format, mount, post_format, bench). "job_other" is
// the job's time outside those steps (the discard check's trim, result
// transfer). "overhead" is total minus bench: what a run costs besides its
// workload, issue 21's figure. "unaccounted" is total minus the daemon's
// phases: between phases, and recording the result.

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "common/json_fields.h"

namespace {

using ds::Json;

// Rows of the table, in the order a run passes through them.
constexpr const char* kRows[] = {"provision_s",   "boot_s",      "vm_start_s", "guest_boot_s",
                                 "tune_s",        "format_s",    "mount_s",    "post_format_s",
                                 "bench_s",       "job_other_s", "verify_s",   "teardown_s",
                                 "unaccounted_s", "total_s",     "overhead_s"};

double timing(const Json& timings, const char* key) {
    const auto value = timings.find(key);
    return value != timings.end() && value->is_number() ? value->get<double>() : 0.0;
}

// The derived rows (job_other_s, overhead_s) added to a run's timings.
std::map<std::string, double> phases_of(const Json& timings) {
    std::map<std::string, double> phases;
    for (const char* row : kRows) phases[row] = timing(timings, row);
    double steps = 0;
    for (const char* step : {"tune_s", "format_s", "mount_s", "post_format_s", "bench_s"})
        steps += timing(timings, step);
    phases["job_other_s"] = std::max(0.0, timing(timings, "job_s") - steps);
    double daemon_phases = 0;
    for (const char* phase :
         {"provision_s", "boot_s", "vm_start_s", "guest_boot_s", "job_s", "verify_s", "teardown_s"})
        daemon_phases += timing(timings, phase);
    phases["unaccounted_s"] = std::max(0.0, timing(timings, "total_s") - daemon_phases);
    phases["overhead_s"] = timing(timings, "total_s") - timing(timings, "bench_s");
    return phases;
}

double quantile(std::vector<double> values, double q) {
    std::sort(values.begin(), values.end());
    const double position = q * static_cast<double>(values.size() - 1);
    const auto below = static_cast<std::size_t>(position);
    const std::size_t above = std::min(below + 1, values.size() - 1);
    return values[below] +
           (position - static_cast<double>(below)) * (values[above] - values[below]);
}

// A group's name: the run's filesystem type ("all" is every run).
std::string group_of(const Json& run) {
    const Json& config = run.value("config", Json::object());
    const Json& filesystem = config.value("filesystem", Json::object());
    return filesystem.is_object() ? filesystem.value("type", std::string("?")) : "?";
}

using Samples = std::map<std::string, std::map<std::string, std::vector<double>>>;

Samples collect(const Json& sweep) {
    Samples samples;
    for (const Json& run : sweep.value("runs", Json::array())) {
        if (run.value("status", std::string()) != "succeeded") continue;
        const auto phases = phases_of(run.value("timings", Json::object()));
        for (const std::string& group : {std::string("all"), group_of(run)})
            for (const auto& [phase, seconds] : phases) samples[group][phase].push_back(seconds);
    }
    return samples;
}

Json as_json(const Samples& samples) {
    Json out = Json::object();
    for (const auto& [group, phases] : samples)
        for (const auto& [phase, values] : phases)
            out[group][phase] = {{"median", quantile(values, 0.5)},
                                 {"min", quantile(values, 0)},
                                 {"max", quantile(values, 1)},
                                 {"n", values.size()}};
    return out;
}

void print_table(const Samples& samples) {
    std::printf("%-14s", "phase (s)");
    for (const auto& [group, phases] : samples)
        std::printf(" %18s", (group + " n=" + std::to_string(phases.at("total_s").size())).c_str());
    std::printf("\n%-14s", "");
    for (std::size_t i = 0; i < samples.size(); ++i) std::printf(" %18s", "median [min-max]");
    std::printf("\n");
    for (const char* row : kRows) {
        std::printf("%-14.*s", static_cast<int>(std::string(row).size() - 2), row);
        for (const auto& [group, phases] : samples) {
            const std::vector<double>& values = phases.at(row);
            char cell[64];
            std::snprintf(cell, sizeof cell, "%.2f [%.1f-%.1f]", quantile(values, 0.5),
                          quantile(values, 0), quantile(values, 1));
            std::printf(" %18s", cell);
        }
        std::printf("\n");
    }
}

}  // namespace

int main(int argc, char** argv) {
    const bool json = argc > 1 && std::string(argv[1]) == "--json";
    const std::string input((std::istreambuf_iterator<char>(std::cin)), {});
    const Json sweep = Json::parse(input, nullptr, false);
    if (!sweep.is_object()) {
        std::fprintf(stderr, "run_overhead_table: stdin is not hostctl's sweep JSON\n");
        return 1;
    }
    const Samples samples = collect(sweep);
    if (samples.empty()) {
        std::fprintf(stderr, "run_overhead_table: the sweep has no succeeded run\n");
        return 1;
    }
    if (json)
        std::cout << as_json(samples).dump() << '\n';
    else
        print_table(samples);
    return 0;
}
