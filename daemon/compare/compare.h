// Comparison reports: the runs of a sweep grouped by configuration and
// workload, every metric as mean, spread and 95% confidence interval (never a
// single number without its spread).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/workload_output.h"
#include "daemon/store/store.h"

namespace ds {

class SweepSpecs;

struct CompareOptions {
    // The metric rankings, ratios and verdicts use; "" = each workload's
    // primary metric (primary_metric_of_workload).
    std::string metric;
    // Full summaries (with median) of every metric, not only the analysed
    // one: reads every value of the sweep, so its cost grows with the runs.
    bool all_metrics = false;
    // Where the sweep's parsed spec comes from (the daemon's one owner);
    // unset: its stored text is parsed for this comparison (tests, bench).
    SweepSpecs* specs = nullptr;
};

// The metric a workload is judged by and whether lower is better:
// ds::judged_metric of its kind (common/workload_kind.h): the kind's primary
// metric (fio/io read_iops, mariadb-atis total_s, sysbench-oltp tps), except
// that a fio/io workload that only writes (rw = write or randwrite) is
// judged by write_iops. Unknown kinds: ds::primary_metric_for_kind.
PrimaryMetric primary_metric_of_workload(const Json& workload);

// Whether a smaller value of `metric` is better, for rows of the workload
// `kinds`: what a kind's primary metric says (ds::primary_metric_for_kind),
// else rates of work (ds::is_rate_metric: IOPS, MiB/s, tps, qps) are better
// larger, times, latencies and other rates per second (names ending in _s,
// _ms, _us, _ns: errors_per_s) smaller, and everything else larger.
bool metric_lower_is_better(const std::string& metric, const std::vector<std::string>& kinds);

// A comparison partition as compare_sweep shows it, {"accel","host","qemu",
// "libvirt","kernel"} ("" for what was not recorded), from the partition key
// the store keeps with a run (RunGroup::partition_key, RunRecord::partition_key).
Json partition_from_key(const std::string& partition_key);

// The comparison of one sweep:
//   {"sweep_id":1,
//    "varying_axes":["filesystem","cache"],
//    "metrics":["read_iops","write_iops",...],
//    "partitions":[{"accel":"kvm","host":"","qemu":"7.2.0","libvirt":"9.0.0","kernel":".."}],
//    "baseline":{"config_id":"..","chosen_by":"spec"|"first configuration",
//                "tuning":"defaults"},
//    "practical_difference":0.02,"min_runs_for_verdict":3,
//    "significance_level":0.05,"comparisons":11,
//    "rows":[{"config_id":"..","workload":"randrw","settings":{..config JSON..},
//             "partition":0,   (index into "partitions"; null before any run finished)
//             "durability_risks":["cache=unsafe"],
//             "durability":{"verdict":"not measured","safe":false,"runs":0,..},
//             "workload_kind":"fio","server_variables":{..},
//             "filesystem":"btrfs+nocow:nobarrier","options":"defaults",
//             "runs":{"pending":0,"running":0,"succeeded":3,"failed":0,
//                     "timed_out":0,"cancelled":0},
//             "metrics":{"read_iops":{"n":3,"mean":..,"median":..,"stddev":..,"cv":..,
//                                     "ci95_low":..,"ci95_high":..,"min":..,"max":..,
//                                     "geomean":..}},
//             "primary_metric":{"name":"read_iops","lower_is_better":false},
//             "is_baseline":false,
//             "vs_baseline":{"baseline_row":0,"metric":"read_iops","ratio":1.09,
//                            "ci95_low":1.02,"ci95_high":1.17,"method":"paired",
//                            "pairs":4,"n":4,"baseline_n":4,"p_value":0.004,
//                            "p_adjusted":0.04,"verdict":"faster"}}],
//    "workload_kinds":["fio"],
//    "primary_metric":{"name":"read_iops","lower_is_better":false},
//    "ranking":[{"row":2,"config_id":..,"workload":..,"filesystem":..,"options":..,
//                "partition":0,"metric":"read_iops","n":3,"geomean":..,"mean":..,"stddev":..,
//                "ci95_low":..,"ci95_high":..,"ratio":..,"verdict":..,
//                "durability_risks":[..]}]}
// Contract:
//  * One row per (config_id, workload name, partition), in the order of each
//    one's first run by sequence. A partition is what may be pooled: runs
//    with the same acceleration and host and the same QEMU, libvirt and
//    kernel versions (as recorded with the run; "" when not recorded). Runs
//    that never ran (pending, or cancelled before starting) join their
//    configuration's first row.
//  * Only succeeded runs contribute to the statistics; every current attempt
//    is counted in "runs" (every status is a key).
//  * "metrics": per metric a ds::to_json(Summary) (rates with "geomean").
//    "median" is given for the analysed metric of the row (its primary one,
//    or options.metric), and for every metric with options.all_metrics;
//    otherwise null, since the other metrics come from the store's running
//    aggregates. The top-level "metrics" lists every metric of any row: the
//    preferred ones first (read_iops, write_iops, read_bw_mib_s,
//    write_bw_mib_s, read_clat_p99_us, write_clat_p99_us), then the rest
//    alphabetically.
//  * The baseline: the configuration the spec's `baseline` selects, else the
//    first configuration of the spec's expansion (else, when the stored spec
//    no longer expands, the configuration of the sweep's first run), under
//    the plan's baseline tuning (SweepPlan::baseline_tuning; "defaults"
//    without a tuning axis). In every (partition, spec workload) the
//    baseline's row is the reference of the others ("is_baseline": true, no
//    "vs_baseline"): the row of the baseline configuration and the spec
//    workload's variant under the baseline tuning, so every tuning of a
//    workload on every configuration is compared with that one row.
//    Host-baseline rows are never compared. A row whose partition or workload has no baseline row
//    gets "vs_baseline":{"verdict":"no baseline","reason":".."}.
//  * "vs_baseline": ds::estimate_ratio of the row's analysed metric against
//    the baseline row's, by round (paired when both succeeded in exactly the
//    same rounds, Welch otherwise); p_adjusted is Holm's adjustment over all
//    the sweep's comparisons that have a p-value ("comparisons" counts
//    them; a comparison with fewer runs on a side than the spec's
//    min_runs_for_verdict is none of them); "verdict" is ds::decide_verdict
//    with the spec's VerdictRules (practical_difference, default 2%;
//    min_runs_for_verdict, default 3: below it "not enough runs"). Undefined
//    numbers are null.
//  * "durability_risks" comes from ds::durability_risks() of the settings
//    followed by ds::server_settings_risks() of the workload's
//    params.server by its kind's rules; if the stored settings no longer parse it is null and
//    "settings_error" says why.
//  * "durability" is ds::DurabilityResult::to_json (durability_results.h)
//    of the row's durability runs (succeeded runs with
//    applied_settings.durability); a row whose kind is not ledger and that
//    has none gets those of the ledger rows of the same configuration and
//    partition whose server variables are the row's ("measured_by" names
//    their workloads). Without any: {"verdict":"not measured",
//    "safe":false,"runs":0,"unreadable_runs":0}.
//  * "host_baseline" is true for the rows of host baselines
//    (ds::is_host_baseline settings: fio from the host on the raw volume).
//    Every other row with a baseline of the same storage, pool, disk size
//    and workload has "vs_host":{"baseline_row":R,"ratios":{metric: its mean
//    / the baseline's mean}} (metrics both have, baseline mean not 0).
//  * "filesystem" is filesystem_shorthand() of the settings plus their
//    non-default block settings (block_settings_shorthand); "options" the
//    workload's server variables as "k=v k=v" (sorted by name) or "defaults".
//  * "primary_metric" (top level) is options.metric if given, else the
//    primary metric of the rows' workloads when they all have the same one,
//    else null. "ranking" lists every row that has its analysed metric,
//    ordered by partition, then analysed metric (first appearance), then
//    best first by "geomean" (ds::log_scale_centre of the analysed values:
//    the scale of the ratios, so the order agrees with theirs; ascending
//    when lower_is_better; rows without one last); ties in row order. "row"
//    indexes "rows".
//  * "golden_datasets" is ds::golden_savings of the runs'
//    applied_settings.dataset: null unless runs cloned golden volumes.
//  * "not_checked" (every row): the distinct entries of its runs'
//    applied_settings.verification.not_checked (docs/verification.md), each
//    with "runs": how many of the row's runs listed it; [] when none did.
// Cost: independent of the number of runs (the store's aggregates) except
// for the analysed metric's values, one per succeeded run, and the runs'
// applied settings for "golden_datasets" and "durability".
// Errors: kNotFound for an unknown sweep; the store's errors otherwise.
Result<Json> compare_sweep(Store& store, std::int64_t sweep_id, const CompareOptions& options = {});

// Whether results_for_config keeps each sweep's runs apart (the default,
// as compare_sweep does) or pools the runs of every sweep.
enum class SweepPooling { kBySweep, kPooled };

// Every result of one configuration across all sweeps, partitioned as
// compare_sweep partitions a sweep:
//   {"config_id":"..","settings":{..},"durability_risks":[..],
//    "sweeps_pooled":false,
//    "partitions":[{"accel":"tcg","host":"","qemu":"7.2.0","libvirt":"9.0.0","kernel":".."}],
//    "metrics":[..as above..],
//    "rows":[{"workload":"randrw","workload_params":{..ds::to_json(Workload)..},
//             "sweep_ids":[4],"partition":0,"runs":{..counts..},
//             "metrics":{..summaries (ds::to_json(Summary))..}}]}
// Contract:
//  * One row per workload (name and parameters: a name reused with other
//    parameters measured something else), sweep (unless `pooling` is
//    kPooled: then "sweep_ids" lists every sweep of the row) and partition
//    (acceleration, host and QEMU, libvirt and kernel versions: the store's
//    partition key of the run, the one compare_sweep uses). Runs of
//    different partitions are never pooled, not even with kPooled.
//  * Rows come in the order of their first finished run (by sweep, then
//    sequence). Runs that never finished have no partition yet: they join
//    the first row of their workload and sweep, or get a row of their own
//    ("partition": null) after the others.
//  * "partition" indexes "partitions" (in the order first seen).
// Errors: kNotFound for an unknown configuration.
Result<Json> results_for_config(Store& store, const std::string& config_id,
                                SweepPooling pooling = SweepPooling::kBySweep);

}  // namespace ds
