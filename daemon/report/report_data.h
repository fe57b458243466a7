// What the HTML report of a sweep shows, gathered from the store in one
// pass: the comparison (daemon/compare/compare.h) with every metric, and what
// only the runs themselves hold: per-second samples, settings as read back,
// versions, failure reasons. Rendering (html_report.h) is a pure function of
// this, so tests can render without a store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "daemon/plan/sweep_specs.h"
#include "daemon/store/store.h"

namespace ds::report {

// The per-second samples of one comparison row's succeeded runs.
struct RowSeries {
    // Series name (ds::per_second_series: read_iops, write_iops, tps, ...)
    // -> the mean over the row's runs that have that series, second by
    // second, over the seconds every one of those runs has.
    std::map<std::string, std::vector<double>> mean_per_second;
    // Runs that had at least one series.
    int runs_with_samples = 0;
};

// The settings of one comparison row as they were read back.
struct RowReadback {
    std::int64_t run_id = 0;        // the run shown: the row's first succeeded one; 0 = none
    Json applied = Json::object();  // that run's applied_settings
    int succeeded_runs = 0;
    int verified_runs = 0;  // succeeded runs whose readback matched ("verified": true)
};

// A run that ended without a result.
struct FailedRun {
    std::int64_t run_id = 0;
    std::string config_id;
    std::string workload;
    RunStatus status = RunStatus::kFailed;  // failed | timed_out
    std::string reason;
};

struct ReportData {
    SweepRecord sweep;
    // The sweep's parsed spec; null when its stored text no longer parses,
    // and spec_error says why.
    std::shared_ptr<const SweepSpec> spec;
    std::string spec_error;
    std::map<std::string, int> run_counts;  // Store::run_counts
    Json compare;                           // compare_sweep with all_metrics
    std::map<std::string, Json> workloads;  // Store::sweep_workloads
    std::vector<RowSeries> series;          // one per compare row
    std::vector<RowReadback> readback;      // one per compare row
    // Every key of the runs' recorded versions (qemu, kernel, fio_version,
    // agent_version, host, ...) -> each value it took -> how many finished
    // runs recorded it.
    std::map<std::string, std::map<std::string, int>> versions;
    std::vector<FailedRun> failures;  // the first kMaxFailuresListed, by sequence
    int failures_total = 0;
    std::string generator;  // "disksweepd 0.1.0"
};

inline constexpr std::size_t kMaxFailuresListed = 50;

// The report's data for one sweep. Reads the runs a page at a time (their
// raw output only to extract per-second samples: a run whose output has
// none, or does not parse, simply has none). Current attempts only (as in
// the comparison). The spec comes from `specs` (the daemon's one owner);
// null: it is parsed for this report (tests, bench). Errors: kNotFound for
// an unknown sweep; the store's.
Result<ReportData> gather_report_data(Store& store, std::int64_t sweep_id,
                                      SweepSpecs* specs = nullptr);

}  // namespace ds::report
