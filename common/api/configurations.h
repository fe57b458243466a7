// One configuration across every sweep (docs/api.md):
// GET /v1/configurations/ID/results and GET /v1/configurations/ID/apply.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/api/json_codec.h"

namespace ds::api {

// One row of a configuration's results: a workload in one sweep (or every
// sweep, pooled) and one partition. Its counts and metric summaries are
// kept as JSON, in compare's shapes (docs/api.md "Comparison").
struct ConfigResultRow {
    std::optional<std::string> workload;  // its name
    Json workload_params;
    std::vector<std::int64_t> sweep_ids;
    std::optional<std::int64_t> partition;  // indexes the partitions; null before any run finished
    Json runs;                              // {status: count}
    Json metrics;                           // {name: summary}

    static Result<ConfigResultRow> from_json(const Json& json, std::string_view path = "");
    bool operator==(const ConfigResultRow&) const = default;
};
Json to_json(const ConfigResultRow& row);

// GET /v1/configurations/ID/results (daemon/compare/compare.h
// results_for_config). Settings that no longer parse have no durability
// risks (null) and say why in settings_error.
struct ConfigResultsReply {
    std::optional<std::string> config_id;
    Json settings;  // canonical
    std::vector<std::string> durability_risks;
    std::optional<std::string> settings_error;  // encoded only when set
    std::optional<bool> sweeps_pooled;
    Json partitions;  // [{"accel", "host", "qemu", "libvirt", "kernel"}]
    std::vector<std::string> metrics;
    std::vector<ConfigResultRow> rows;

    static Result<ConfigResultsReply> from_json(const Json& json, std::string_view path = "");
    bool operator==(const ConfigResultsReply&) const = default;
};
Json to_json(const ConfigResultsReply& reply);

// GET /v1/configurations/ID/apply?format=F (daemon/apply/configuration_apply.h):
// the snippet that applies the configuration outside disksweep, and what it
// rests on. The measured durability is kept as JSON (DurabilityResult's,
// with the risks it "covers"): hostctl prints the snippet alone.
struct ApplyReply {
    std::optional<std::string> config_id;  // the full id
    std::optional<std::string> format;
    Json settings;  // canonical
    std::vector<std::string> durability_risks;
    std::vector<std::string> notes;
    std::optional<std::string> body;
    std::optional<std::string> snippet;  // the body with its comment lines
    Json measured_durability;
    std::optional<std::string> workload;  // a server settings format's; encoded only when set

    static Result<ApplyReply> from_json(const Json& json, std::string_view path = "");
    bool operator==(const ApplyReply&) const = default;
};
Json to_json(const ApplyReply& reply);

}  // namespace ds::api
