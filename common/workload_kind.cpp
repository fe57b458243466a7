#include "common/workload_kind.h"

#include <algorithm>

#include "common/fio_metrics.h"
#include "common/fio_options.h"
#include "common/ledger_output.h"
#include "common/pgbench_output.h"
#include "common/text.h"

namespace ds {
namespace {

// The fio kind's ioengine values: the engines common/fio_options.h allows.
std::vector<std::string_view> fio_engine_names() {
    const auto engines = fio_allowed_engines();
    return {engines.begin(), engines.end()};
}

Result<MetricsMap> fio_output_metrics(std::string_view, const Json& output) {
    return metrics_from_fio_json(output);
}

const std::vector<std::string_view> kSysbenchTests = {
    "oltp_read_write", "oltp_read_only",    "oltp_write_only",       "oltp_point_select",
    "oltp_insert",     "oltp_update_index", "oltp_update_non_index", "oltp_delete"};

const WorkloadOptionDef kServerVariablesOption = {
    "server", OptionKind::kServerVariables, {}, "MariaDB server variables ([mysqld])"};

// fio and io: the same report (fio's JSON, which the native engine writes
// too), so the same parsers and metrics.
WorkloadKind fio_report_kind(std::string_view name) {
    WorkloadKind kind;
    kind.name = name;
    kind.metrics = &fio_output_metrics;
    kind.series = &fio_output_series;
    kind.series_members = fio_series_members();
    kind.primary_metric = {"read_iops", false};
    kind.write_only_metric = {"write_iops", false};
    return kind;
}

WorkloadKind fio_kind() {
    WorkloadKind kind = fio_report_kind("fio");
    kind.options = {
        {"rw",
         OptionKind::kEnum,
         {"read", "write", "randread", "randwrite", "rw", "readwrite", "randrw"},
         "I/O pattern"},
        {"bs", OptionKind::kBlockSize, {}, "block size"},
        {"size", OptionKind::kSize, {}, "bytes of file per job"},
        {"runtime", OptionKind::kDuration, {}, "run time limit"},
        {"iodepth", OptionKind::kCount, {}, "I/Os in flight per job"},
        {"numjobs", OptionKind::kCount, {}, "parallel jobs"},
        {"direct", OptionKind::kFlag, {}, "O_DIRECT"},
        {"ioengine", OptionKind::kEnum, fio_engine_names(), "I/O engine"},
        {"rwmixread", OptionKind::kPercent, {}, "read share of a mixed workload"},
        {"time_based", OptionKind::kFlag, {}, "run for runtime even if size is done"},
        {"ramp_time", OptionKind::kDuration, {}, "warm-up excluded from results"},
        {"fsync", OptionKind::kNonNegative, {}, "fsync every N writes"},
        {"end_fsync", OptionKind::kFlag, {}, "fsync when the job ends"},
        {"iodepth_batch_submit", OptionKind::kNonNegative, {}, "I/Os submitted at once"},
        {"iodepth_batch_complete", OptionKind::kNonNegative, {}, "I/Os reaped at once"},
        {"options",
         OptionKind::kFioOptions,
         {},
         "any other fio option, passed as --KEY=VALUE (within common/fio_options.h)"},
        {"job_file",
         OptionKind::kFioJobFile,
         {},
         "a whole fio job file (excludes every other option)"},
    };
    kind.option_rules = OptionRules::kFioCommandLine;
    kind.runs_on_host = true;
    // Every option may shape the files fio lays out (size, numjobs, nrfiles,
    // a job file): all of them, and the name its files are named after.
    kind.preparation = {"lay out the job's files (fio --create_only=1)", {"*"}, true};
    return kind;
}

// The agent's native engine (docs/io-engine.md): options from
// common/io_options.h.
WorkloadKind io_kind() {
    WorkloadKind kind = fio_report_kind("io");
    kind.option_rules = OptionRules::kIoEngine;
    return kind;
}

WorkloadKind mariadb_atis_kind() {
    WorkloadKind kind;
    kind.name = "mariadb-atis";
    kind.options = {
        kServerVariablesOption,
        {"loop_count", OptionKind::kCount, {}, "sql-bench --loop-count (default 5000)"},
        {"small_test", OptionKind::kBool, {}, "sql-bench --small-test"},
        {"time_limit", OptionKind::kCount, {}, "sql-bench --time-limit in seconds"},
    };
    kind.image_variant = "mariadb";
    kind.server_settings = &mariadb_server_settings();
    kind.metrics = &sqlbench_output_metrics;
    kind.series = &no_output_series;
    kind.primary_metric = {"total_s", true};
    kind.ranked_view = {
        {{"total_s", "Time (s)"}},
        "sql-bench test-ATIS total time in seconds (lower is better), fastest first"};
    return kind;
}

WorkloadKind sysbench_oltp_kind() {
    WorkloadKind kind;
    kind.name = "sysbench-oltp";
    kind.options = {
        kServerVariablesOption,
        {"test", OptionKind::kEnum, kSysbenchTests, "sysbench test (default oltp_read_write)"},
        {"tables", OptionKind::kCount, {}, "tables (default 1)"},
        {"table_size", OptionKind::kCount, {}, "rows per table (default 10000)"},
        {"threads", OptionKind::kCount, {}, "client threads (default 1)"},
        {"time", OptionKind::kSeconds, {}, "run time (default \"10s\")"},
    };
    kind.image_variant = "mariadb";
    kind.server_settings = &mariadb_server_settings();
    kind.metrics = &sysbench_output_metrics;
    kind.series = &sysbench_output_series;
    kind.series_members = {{"stdout"}};
    kind.primary_metric = {"tps", false};
    kind.ranked_view = {
        {{"tps", "TPS"}, {"latency_p95_ms", "p95 ms"}, {"latency_p99_ms", "p99 ms"}},
        "sysbench OLTP transactions per second (higher is better), highest first"};
    // The server's variables shape the datadir (page size, file per table).
    kind.preparation = {"sysbench prepare (create and load the tables)",
                        {"server", "test", "tables", "table_size"},
                        false};
    return kind;
}

// Records acknowledged one at a time (docs/durability.md): the speed half of
// a durability result, and the acknowledgements a crash state is checked
// against. One image for both variants: the file variant needs nothing the
// MariaDB image lacks.
WorkloadKind ledger_kind() {
    WorkloadKind kind;
    kind.name = "ledger";
    kind.options = {
        {"variant",
         OptionKind::kEnum,
         {"file", "database", "postgresql"},
         "file: write record k + fsync; database: INSERT id=k + COMMIT in MariaDB; postgresql: "
         "the same in PostgreSQL (default file)"},
        {"records", OptionKind::kCount, {}, "records to write (default 1000)"},
        {"time", OptionKind::kSeconds, {}, "stop after this long even if records remain"},
        {"record_size", OptionKind::kSize, {}, "bytes per record (default 4096, 32 to 1m)", "file"},
        {"server",
         OptionKind::kServerVariables,
         {},
         "the server's settings: MariaDB variables (database), PostgreSQL settings (postgresql)",
         "database|postgresql"},
    };
    kind.image_variant = "mariadb";
    kind.variant_server_settings = {{"database", &mariadb_server_settings()},
                                    {"postgresql", &postgresql_server_settings()}};
    kind.metrics = &ledger_output_metrics;
    kind.series = &ledger_output_series;
    kind.series_members = {{"per_second"}};
    kind.primary_metric = {"commits_per_s", false};
    kind.ranked_view = {{{"commits_per_s", "commits/s"}, {"commit_p99_ms", "p99 ms"}},
                        "acknowledged commits per second (higher is better), highest first"};
    kind.acknowledges = true;
    return kind;
}

// PostgreSQL's pgbench (guestagent/pgbench_workload.cpp): its builtin
// scripts against a cluster of the runner's own on the disk under test.
WorkloadKind pgbench_kind() {
    WorkloadKind kind;
    kind.name = "pgbench";
    kind.options = {
        {"server",
         OptionKind::kServerVariables,
         {},
         "PostgreSQL settings (postgresql.conf names, as SHOW spells them)"},
        {"builtin",
         OptionKind::kEnum,
         {"tpcb-like", "simple-update", "select-only"},
         "pgbench's builtin script (default tpcb-like)"},
        {"scale",
         OptionKind::kCount,
         {},
         "pgbench -i scale factor, 100,000 accounts each (default 10)"},
        {"clients", OptionKind::kCount, {}, "concurrent clients (default 4)"},
        {"jobs", OptionKind::kCount, {}, "pgbench threads, at most clients (default 1)"},
        {"time", OptionKind::kSeconds, {}, "run time (default \"60s\")"},
    };
    // Debian's postgresql is in the database image beside MariaDB.
    kind.image_variant = "mariadb";
    kind.server_settings = &postgresql_server_settings();
    kind.metrics = &pgbench_output_metrics;
    kind.series = &pgbench_output_series;
    kind.series_members = {{"progress"}};
    kind.primary_metric = {"tps", false};
    kind.ranked_view = {
        {{"tps", "TPS"}, {"latency_p95_ms", "p95 ms"}, {"latency_p99_ms", "p99 ms"}},
        "pgbench transactions per second (higher is better), highest first"};
    // The settings shape the cluster initdb makes (its WAL segments).
    kind.preparation = {"pgbench -i (create and load the tables)", {"server", "scale"}, false};
    return kind;
}

}  // namespace

std::span<const WorkloadKind> workload_kinds() {
    static const std::vector<WorkloadKind> kinds = {fio_kind(),          io_kind(),
                                                    mariadb_atis_kind(), sysbench_oltp_kind(),
                                                    ledger_kind(),       pgbench_kind()};
    return kinds;
}

std::string variant_in_effect(const WorkloadKind& kind, const Json& params) {
    const auto variant_option =
        std::find_if(kind.options.begin(), kind.options.end(),
                     [](const WorkloadOptionDef& def) { return def.name == "variant"; });
    if (variant_option == kind.options.end()) return {};
    const auto given = params.is_object() ? params.find("variant") : params.end();
    return given != params.end() && given->is_string()
               ? given->get<std::string>()
               : std::string(variant_option->values.front());
}

bool option_applies(const WorkloadOptionDef& option, const WorkloadKind& kind, const Json& params) {
    if (option.variant.empty()) return true;
    const std::string in_effect = variant_in_effect(kind, params);
    for (const std::string& variant : split_list(option.variant, '|')) {
        if (variant == in_effect) return true;
    }
    return false;
}

Status check_variant_options(const WorkloadKind& kind, const Json& params) {
    if (!params.is_object()) return ok_status();
    for (const WorkloadOptionDef& def : kind.options) {
        if (params.contains(def.name) && !option_applies(def, kind, params)) {
            return make_error(errc::kInvalidArgument,
                              std::string(kind.name) + " param '" + std::string(def.name) +
                                  "' is for the " + join(split_list(def.variant, '|'), " or ") +
                                  " variant only");
        }
    }
    return ok_status();
}

const WorkloadKind* find_workload_kind(std::string_view name) {
    const auto kinds = workload_kinds();
    const auto found = std::find_if(kinds.begin(), kinds.end(),
                                    [&](const WorkloadKind& kind) { return kind.name == name; });
    return found == kinds.end() ? nullptr : &*found;
}

std::vector<std::string_view> workload_kind_names() {
    std::vector<std::string_view> names;
    for (const WorkloadKind& kind : workload_kinds()) names.push_back(kind.name);
    return names;
}

bool kind_acknowledges(std::string_view name) {
    const WorkloadKind* kind = find_workload_kind(name);
    return kind != nullptr && kind->acknowledges;
}

const WorkloadKind& durability_ledger_kind() {
    const auto kinds = workload_kinds();
    return *std::find_if(kinds.begin(), kinds.end(),
                         [](const WorkloadKind& kind) { return kind.acknowledges; });
}

const ServerSettingsRules* kind_server_settings(std::string_view name, const Json& params) {
    const WorkloadKind* kind = find_workload_kind(name);
    if (kind == nullptr) return nullptr;
    if (kind->variant_server_settings.empty()) return kind->server_settings;
    const std::string variant = variant_in_effect(*kind, params);
    for (const auto& [name_of_variant, rules] : kind->variant_server_settings)
        if (name_of_variant == variant) return rules;
    return nullptr;
}

namespace {

// Every rule set `kind` points at: its own and its variants'.
std::vector<const ServerSettingsRules*> rules_of_kind(const WorkloadKind& kind) {
    std::vector<const ServerSettingsRules*> rules;
    if (kind.server_settings != nullptr) rules.push_back(kind.server_settings);
    for (const auto& [variant, variant_rules] : kind.variant_server_settings)
        rules.push_back(variant_rules);
    return rules;
}

}  // namespace

std::vector<const ServerSettingsRules*> server_settings_rule_sets() {
    std::vector<const ServerSettingsRules*> rule_sets;
    for (const WorkloadKind& kind : workload_kinds()) {
        for (const ServerSettingsRules* rules : rules_of_kind(kind))
            if (std::find(rule_sets.begin(), rule_sets.end(), rules) == rule_sets.end())
                rule_sets.push_back(rules);
    }
    return rule_sets;
}

const ServerSettingsRules* find_server_settings_format(std::string_view format) {
    for (const ServerSettingsRules* rules : server_settings_rule_sets())
        if (rules->format == format) return rules;
    return nullptr;
}

std::vector<std::string_view> kinds_with_server_settings(const ServerSettingsRules& rules) {
    std::vector<std::string_view> names;
    for (const WorkloadKind& kind : workload_kinds()) {
        const auto kind_rules = rules_of_kind(kind);
        if (std::find(kind_rules.begin(), kind_rules.end(), &rules) != kind_rules.end())
            names.push_back(kind.name);
    }
    return names;
}

bool kind_applies_server_settings(std::string_view name, const Json& params,
                                  std::string_view format) {
    const ServerSettingsRules* rules = kind_server_settings(name, params);
    return rules != nullptr && !format.empty() && rules->format == format;
}

bool is_server_settings_format(std::string_view format) {
    return !format.empty() && find_server_settings_format(format) != nullptr;
}

std::vector<std::string> server_settings_risks(std::string_view name, const Json& params) {
    const ServerSettingsRules* rules = kind_server_settings(name, params);
    if (rules == nullptr || !params.is_object() || !params.contains("server")) return {};
    return rules->risks(params.at("server"));
}

const ServerSettingsRules* rules_of_server_settings_risk(std::string_view risk) {
    const auto equals = risk.find('=');
    if (equals == std::string_view::npos) return nullptr;
    const Json setting = {
        {std::string(risk.substr(0, equals)), std::string(risk.substr(equals + 1))}};
    for (const ServerSettingsRules* rules : server_settings_rule_sets())
        if (!rules->risks(setting).empty()) return rules;
    return nullptr;
}

std::string prepared_dataset_key(const Workload& workload) {
    const WorkloadKind* kind = find_workload_kind(workload.kind);
    if (kind == nullptr || kind->preparation.step.empty()) return "";
    const DatasetPreparation& preparation = kind->preparation;
    Json key = {{"kind", workload.kind}};
    if (preparation.by_name) key["name"] = workload.name;
    const bool all = std::find(preparation.params.begin(), preparation.params.end(), "*") !=
                     preparation.params.end();
    Json params = Json::object();
    for (const auto& [name, value] : workload.params.items()) {
        if (all || std::find(preparation.params.begin(), preparation.params.end(), name) !=
                       preparation.params.end()) {
            params[name] = value;
        }
    }
    key["params"] = std::move(params);
    return key.dump();  // nlohmann's objects are sorted: one text per content
}

PrimaryMetric judged_metric(const WorkloadKind& kind, const Json& params) {
    if (!kind.write_only_metric.name.empty() && params.is_object()) {
        const std::string rw = params.value("rw", std::string());
        if (rw == "write" || rw == "randwrite") return kind.write_only_metric;
    }
    return kind.primary_metric;
}

}  // namespace ds
