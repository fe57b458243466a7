// A sweep for the report's tests, stored through the Store API as the daemon
// would store it: a spec expanded by plan_submission, each run marked
// running and finished with real fio output (tests/data/fio's recorded
// randrw job, its rates scaled per configuration and round, with per-second
// samples added in the shape of common/workload_output.h), the metrics
// derived from that output by the daemon's own parser, versions and the
// settings as read back.
#pragma once

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/settings.h"
#include "common/workload_output.h"
#include "daemon/api/api.h"
#include "daemon/store/store.h"
#include "support/test_data.h"

namespace ds::test {

// cache × filesystem: six configurations, the first (none, ext4) the baseline.
inline constexpr const char* kReportSpec = R"(name = "report-fixture"
# Markup in the spec is text: <script>alert("x")</script> & co
repetitions = 3

[matrix]
cache = ["none", "unsafe"]
filesystem = ["ext4", "btrfs", "btrfs:nodatacow"]

[[workload]]
kind = "fio"
name = "randrw"
rw = "randrw"
bs = "4k"
iodepth = 4
size = "16m"
runtime = "2s"
)";

struct ReportFixtureOptions {
    std::string spec = kReportSpec;
    // Which runs (by sequence) fail instead of succeeding.
    std::function<bool(const RunRecord&)> fails = [](const RunRecord&) { return false; };
    // Which succeeded runs carry per-second samples.
    std::function<bool(const RunRecord&)> has_samples = [](const RunRecord&) { return true; };
    // How many runs finish; the rest stay pending (-1: all).
    int finished_runs = -1;
    // The raw output of a succeeded run that is `speed` times as fast as the
    // baseline; empty: fixture_fio_output.
    std::function<Json(const RunRecord&, double speed)> output;
    // Metrics a succeeded run has besides those of its output (e.g. the
    // executor's host_cpu_us_per_io); empty: none.
    std::function<std::map<std::string, double>(const RunRecord&, double speed)> extra_metrics;
    // A succeeded run's applied_settings.verification (docs/verification.md);
    // empty or null: none.
    std::function<Json(const RunRecord&)> verification;
};

// The configuration's speed relative to the baseline: btrfs a third
// faster, nodatacow faster still, cache=unsafe another half on top.
inline double fixture_speed(const Json& settings) {
    const std::string filesystem = filesystem_shorthand(settings.value("filesystem", Json()));
    double speed = filesystem.find("nodatacow") != std::string::npos ? 1.6
                   : filesystem.rfind("btrfs", 0) == 0               ? 1.3
                                                                     : 1.0;
    if (settings.value("cache", "") == "unsafe") speed *= 1.5;
    return speed;
}

// The recorded fio job with its rates times `factor` (latencies divided by
// it) and `seconds` per-second samples per direction.
inline Json fixture_fio_output(double factor, int seconds, unsigned seed) {
    Json output = Json::parse(test_data_text("fio/randrw_4k_numjobs1.json"));
    for (Json& job : output["jobs"]) {
        for (const char* direction : {"read", "write"}) {
            Json& section = job[direction];
            const double iops = section["iops"].get<double>() * factor;
            section["iops"] = iops;
            section["bw_bytes"] = std::llround(section["bw_bytes"].get<double>() * factor);
            for (auto& [percent, ns] : section["clat_ns"]["percentile"].items())
                ns = std::llround(ns.get<double>() / factor);
            if (seconds <= 0) continue;
            Json per_second = Json::array(), bytes_per_second = Json::array();
            for (int s = 0; s < seconds; ++s) {
                seed = seed * 1103515245u + 12345u;
                // A warm-up second, then a steady rate with noise.
                const double shape = (s == 0 ? 0.6 : 1.0) * (0.92 + (seed % 1000) / 6250.0);
                per_second.push_back(std::llround(iops * shape));
                bytes_per_second.push_back(std::llround(iops * shape * 4096));
            }
            section["iops_per_second"] = per_second;
            section["bw_bytes_per_second"] = bytes_per_second;
        }
    }
    return output;
}

// sql-bench's test-ATIS output (the shape of tests/data/mariadb's recordings),
// its times divided by `speed`.
inline Json fixture_atis_output(double speed) {
    const std::pair<const char*, double> phases[] = {{"Time for create_table (28): ", 0.94},
                                                     {"Time to insert (9768): ", 25.1},
                                                     {"Time for select_simple_join (100): ", 0.028},
                                                     {"Time for select_group (560): ", 0.51},
                                                     {"Time to drop_table (28): ", 1.1}};
    std::string text =
        "Testing server '10.11.6 MariaDB' at 2026-11-29 22:35:10\n\nATIS table test\n\n";
    double total = 0;
    for (const auto& [line, seconds] : phases) {
        text += line + std::to_string(seconds / speed) + " wallclock secs ( 0.01 usr  0.00 sys)\n";
        total += seconds / speed;
    }
    text += "Total time: " + std::to_string(total) + " wallclock secs ( 0.35 usr  0.27 sys)\n";
    return Json{{"stdout", text}, {"server_version", "10.11.6-MariaDB-0+deb12u1"}};
}

inline Json fixture_versions() {
    return Json{{"qemu", "7.2.0"},          {"libvirt", "9.0.0"},   {"kernel", "6.1.0-28-amd64"},
                {"accel", "kvm"},           {"host", "local"},      {"fio_version", "fio-3.33"},
                {"agent_version", "0.1.0"}, {"disksweepd", "0.1.0"}};
}

// The settings as the daemon reads them back (a subset of the real keys).
inline Json fixture_readback(const Json& settings) {
    const Json& filesystem = settings.value("filesystem", Json::object());
    const std::string type = filesystem.value("type", "ext4");
    Json guest = {
        {"fs_type", type},
        {"mount_options", "rw,relatime" + std::string(type == "btrfs" ? ",space_cache=v2" : "")},
        {"rotational", 1},
        {"driver", "virtio_scsi"},
        {"write_cache", "write back"},
        {"scheduler", "mq-deadline"}};
    if (type == "btrfs") guest["btrfs"] = {{"data", "single"}, {"metadata", "dup"}};
    return Json{
        {"hypervisor",
         {{"bus", settings.value("bus", "")},
          {"cache", settings.value("cache", "")},
          {"discard", settings.value("discard", false)},
          {"qemu",
           {{"cache", settings.value("cache", "")}, {"sources", {{"cache", "query-block"}}}}}}},
        {"guest", guest},
        {"storage", {{"backend", "file"}, {"before", {{"used_bytes", 1}}}}},
        {"verified", true}};
}

// Stores the fixture sweep in `store`; returns its id.
inline std::int64_t store_report_fixture(Store& store, const ReportFixtureOptions& options = {}) {
    Result<SweepSubmission> submission = plan_submission(options.spec, "fixture.toml", {});
    if (!submission.ok()) throw std::runtime_error(submission.error().message);
    submission->sweep.created_at = "2026-11-30T10:00:00Z";
    Result<std::int64_t> id = store.create_sweep(submission->sweep, submission->runs);
    if (!id.ok()) throw std::runtime_error(id.error().message);
    Result<std::vector<RunRecord>> runs = store.list_runs(id.value(), RawOutput::kOmit);
    if (!runs.ok()) throw std::runtime_error(runs.error().message);
    if (!store.set_sweep_status(id.value(), SweepStatus::kRunning, "2026-11-30T10:00:30Z").ok())
        throw std::runtime_error("cannot start the sweep");
    int finished = 0;
    for (RunRecord run : runs.value()) {
        if (options.finished_runs >= 0 && finished++ >= options.finished_runs) break;
        if (!store.mark_run_running(run.id, "vm", "vol", "", "kvm", "2026-11-30T10:01:00Z").ok())
            throw std::runtime_error("cannot mark run running");
        run.finished_at = "2026-11-30T10:02:00Z";
        run.versions = fixture_versions();
        if (options.fails(run)) {
            run.status = RunStatus::kFailed;
            run.failure_reason =
                "agent did not connect within 60 s <guest> & co\n--- console tail ---\nboot log";
        } else {
            const double speed =
                fixture_speed(to_json(run.config)) * (1 + 0.03 * std::sin(run.sequence * 1.7));
            const Json output = options.output
                                    ? options.output(run, speed)
                                    : fixture_fio_output(speed, options.has_samples(run) ? 10 : 0,
                                                         static_cast<unsigned>(run.id));
            auto metrics = metrics_from_workload_output(run.workload.kind, output);
            if (!metrics.ok()) throw std::runtime_error(metrics.error().message);
            run.status = RunStatus::kSucceeded;
            run.metrics = metrics.value();
            if (options.extra_metrics) {
                for (const auto& [name, value] : options.extra_metrics(run, speed))
                    run.metrics[name] = value;
            }
            run.raw_output = output.dump();
            run.applied_settings = fixture_readback(to_json(run.config));
            if (options.verification) {
                Json record = options.verification(run);
                if (!record.is_null()) run.applied_settings["verification"] = std::move(record);
            }
        }
        if (!store.finish_run(run).ok()) throw std::runtime_error("cannot finish run");
    }
    if (!store.set_sweep_status(id.value(), SweepStatus::kSucceeded, "2026-11-30T11:00:00Z").ok())
        throw std::runtime_error("cannot set the sweep's status");
    return id.value();
}

}  // namespace ds::test
