// A sweep's comparison (docs/api.md "Comparison"):
// GET /v1/sweeps/ID/compare, as daemon/compare/compare.h compare_sweep
// builds it and hostctl's `results compare` prints it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/api/json_codec.h"

namespace ds::api {

// The metric a row is ranked and compared by.
struct ComparedMetric {
    std::optional<std::string> name;
    std::optional<bool> lower_is_better;

    static Result<ComparedMetric> from_json(const Json& json, std::string_view path = "");
    bool operator==(const ComparedMetric&) const = default;
};
Json to_json(const ComparedMetric& metric);

// The configuration the rows are compared with, and why that one.
struct CompareBaseline {
    std::optional<std::string> config_id;  // null when the sweep has no row
    std::optional<std::string> chosen_by;  // "spec" or "first configuration"
    std::optional<std::string> tuning;     // the workloads' baseline tuning

    static Result<CompareBaseline> from_json(const Json& json, std::string_view path = "");
    bool operator==(const CompareBaseline&) const = default;
};
Json to_json(const CompareBaseline& baseline);

// What the sweep's golden datasets saved: its runs that cloned a golden
// volume, and the seconds avoided, spent preparing and cloning, and saved.
struct GoldenDatasetSavings {
    std::optional<std::int64_t> runs;
    std::optional<std::int64_t> golden_volumes;
    std::optional<double> avoided_s;
    std::optional<double> preparation_s;
    std::optional<double> clone_s;
    std::optional<double> saved_s;

    static Result<GoldenDatasetSavings> from_json(const Json& json, std::string_view path = "");
    bool operator==(const GoldenDatasetSavings&) const = default;
};
Json to_json(const GoldenDatasetSavings& savings);

// One row: a configuration and workload in one partition. The settings,
// run counts, metric summaries, server variables, the comparisons with the
// baseline and the host baseline, the durability and the settings not
// checked are kept as JSON: hostctl prints them through the texts it shares
// with the daemon's HTML report (common/compare_text.h,
// common/verification_text.h), which read them generically.
struct CompareRow {
    std::optional<std::string> config_id;
    std::optional<std::string> workload;  // its name
    Json settings;
    std::optional<std::int64_t> partition;  // indexes the partitions; null before any run finished
    Json runs;                              // {status: count}
    Json metrics;                           // {name: summary}
    std::optional<std::string> workload_kind;
    Json server_variables;
    std::optional<std::string> filesystem;  // the filesystem and block settings, short
    std::optional<std::string> options;     // the server variables, short; "defaults"
    std::optional<ComparedMetric> primary_metric;
    // Null (encoded) when the settings no longer parse: settings_error says why.
    std::vector<std::string> durability_risks;
    std::optional<std::string> settings_error;  // encoded only when set
    std::optional<bool> host_baseline;
    std::optional<bool> is_baseline;
    std::optional<Json> vs_host;      // {baseline_row, ratios}; encoded only when set
    std::optional<Json> vs_baseline;  // ratio, CI, p-values, verdict; encoded only when set
    Json durability;                  // DurabilityResult's
    Json not_checked;                 // [{..., "runs": N}]

    static Result<CompareRow> from_json(const Json& json, std::string_view path = "");
    bool operator==(const CompareRow&) const = default;
};
Json to_json(const CompareRow& row);

// The whole reply. The partitions and the ranking are kept as JSON: the
// shared texts read them (partition_text, ranked_rows of
// common/compare_text.h).
struct CompareReply {
    std::optional<std::int64_t> sweep_id;
    std::vector<std::string> varying_axes;
    std::vector<std::string> metrics;
    Json partitions;  // [{"accel", "host", "qemu", "libvirt", "kernel", "proxmox"}]
    std::optional<CompareBaseline> baseline;
    std::optional<double> practical_difference;
    std::optional<std::int64_t> min_runs_for_verdict;
    std::optional<double> significance_level;
    std::optional<std::int64_t> comparisons;  // how many have a p-value
    std::vector<CompareRow> rows;
    std::vector<std::string> workload_kinds;
    std::optional<ComparedMetric> primary_metric;  // null when the rows analyse different ones
    Json ranking;                                  // [{"row": index, ...}], best first
    std::optional<GoldenDatasetSavings> golden_datasets;  // null when no run cloned one

    static Result<CompareReply> from_json(const Json& json, std::string_view path = "");
    bool operator==(const CompareReply&) const = default;
};
Json to_json(const CompareReply& reply);

}  // namespace ds::api
