// Comparison reports: the runs of a sweep grouped by configuration and
// workload, every metric as mean, spread and 95% confidence interval (never a
// single number without its spread).
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "daemon/store/store.h"

namespace ds {

struct CompareOptions {
    // The metric the ranking sorts by; "" = the workload kinds' primary
    // metric (ds::primary_metric_for_kind) when they agree on one.
    std::string metric;
};

// The comparison of one sweep:
//   {"sweep_id":1,
//    "varying_axes":["filesystem","cache"],
//    "metrics":["read_iops","write_iops",...],
//    "rows":[{"config_id":"..","workload":"randrw","settings":{..config JSON..},
//             "durability_risks":["cache=unsafe"],
//             "workload_kind":"fio","server_variables":{..},
//             "filesystem":"btrfs+nocow:nobarrier","options":"defaults",
//             "runs":{"pending":0,"running":0,"succeeded":3,"failed":0,
//                     "timed_out":0,"cancelled":0},
//             "metrics":{"read_iops":{"n":3,"mean":..,"stddev":..,"ci95_low":..,
//                                     "ci95_high":..,"min":..,"max":..}}}],
//    "workload_kinds":["mariadb-atis"],
//    "primary_metric":{"name":"total_s","lower_is_better":true},
//    "ranking":[{"row":2,"config_id":..,"workload":..,"filesystem":..,"options":..,
//                "metric":"total_s","n":3,"mean":..,"stddev":..,"durability_risks":[..]}]}
// Contract:
//  * One row per (config_id, workload name), in the order of each pair's
//    first run by sequence.
//  * Only succeeded runs contribute to the statistics; every run is counted
//    in "runs" (every status is a key).
//  * A row's "metrics" holds the metrics its succeeded runs reported (none
//    when no run succeeded); the top-level "metrics" lists every metric that
//    occurs in any row: the preferred ones first (read_iops, write_iops,
//    read_bw_mib_s, write_bw_mib_s, read_clat_p99_us, write_clat_p99_us),
//    then the rest alphabetically. Summaries follow ds::to_json(Summary):
//    undefined values (the spread of one run) are null.
//  * "durability_risks" comes from ds::durability_risks() of the settings
//    followed by ds::server_variable_risks() of the workload's
//    params.server; if the stored settings no longer parse it is null and
//    "settings_error" says why.
//  * "host_baseline" is true for the rows of host baselines
//    (ds::is_host_baseline settings: fio from the host on the raw volume).
//    Every other row with a baseline of the same storage, pool, disk size
//    and workload has "vs_host":{"baseline_row":R,"ratios":{metric: its mean
//    / the baseline's mean}} (metrics both have, baseline mean not 0): the
//    share of bare storage's figure the configuration reached through the
//    hypervisor and guest.
//  * "filesystem" is filesystem_shorthand() of the settings plus their
//    non-default block settings (block_settings_shorthand); "options" the
//    workload's server variables as "k=v k=v" (sorted by name) or "defaults".
//  * "primary_metric" is options.metric if given, else the primary metric of
//    the rows' workload kinds when they all have the same one, else null.
//    "ranking" lists every row that has it (mean over n succeeded runs,
//    stddev = the sample standard deviation, null for n = 1), best first
//    (ascending when lower_is_better), ties in row order; without a primary
//    metric it is empty. "row" indexes "rows".
// Errors: kNotFound for an unknown sweep; the store's errors otherwise.
Result<Json> compare_sweep(Store& store, std::int64_t sweep_id, const CompareOptions& options = {});

// Every result of one configuration across all sweeps:
//   {"config_id":"..","settings":{..},"durability_risks":[..],
//    "metrics":[..as above..],
//    "rows":[{"workload":"randrw","workload_params":{..ds::to_json(Workload)..},
//             "sweep_ids":[1,4],"runs":{..counts..},"metrics":{..summaries..}}]}
// One row per distinct workload (name and parameters: a name reused with other
// parameters is another row), in the order of first appearance (by sweep, then
// sequence). Errors: kNotFound for an unknown configuration.
Result<Json> results_for_config(Store& store, const std::string& config_id);

}  // namespace ds
