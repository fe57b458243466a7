// Every workload kind a sweep can name, one descriptor each: its spec
// options, the guest image it needs, whether it also runs from the host,
// how its output becomes metrics and per-second series, the metric it is
// judged by, and the columns of its ranked compare view. The spec parser,
// the daemon (runs, comparisons, reports, the API's capabilities), hostctl
// and the agent all look kinds up here; nothing else lists them.
//
// Adding a kind:
//   1. a WorkloadKind in workload_kinds() (workload_kind.cpp): its options
//      as rows, its image variant, its output parsers (common/
//      workload_output.h), its primary metric, its ranked view if any, its
//      server's settings rules if it has a server (common/server_settings.h:
//      the readback check, the risks and the `results apply` format);
//   2. a runner with the same name in the agent's workload_kind_table()
//      (guestagent/workload_kinds.cpp: its param check and its run);
//   3. its section in docs/spec.md.
// tests/unit/agent/workload_kind_registry_test.cpp fails while 1 and 2 do
// not name the same kinds.
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/server_settings.h"
#include "common/settings.h"
#include "common/workload_output.h"

namespace ds {

// The type of a [[workload]] option's value; daemon/spec/spec.cpp checks each.
enum class OptionKind {
    kEnum,             // a string from `values`
    kSize,             // fio size: "4k", "256m", a byte count, or for size a percentage
    kBlockSize,        // kSize, or "READ,WRITE[,TRIM]" sizes
    kDuration,         // fio time: "10s", "500ms", or whole seconds
    kCount,            // integer >= 1
    kNonNegative,      // integer >= 0
    kPercent,          // integer 0..100
    kFlag,             // boolean (or 0/1, as fio writes it)
    kBool,             // boolean only
    kSeconds,          // whole seconds > 0: an integer or "90s", "10m", "1h"
    kFioJobFile,       // a non-empty fio job file that passes check_fio_job_file
    kServerVariables,  // table: MariaDB variable name ([a-z0-9_]+) -> string | integer | boolean
    kFioOptions,       // table: fio option name -> string | integer | boolean
};

// One option row of a kind, as docs/spec.md lists it.
struct WorkloadOptionDef {
    std::string_view name;
    OptionKind kind;
    std::vector<std::string_view> values;  // for kEnum
    std::string_view help;
    // For a kind with a `variant` option: the variants this option belongs
    // to, '|'-separated ("" = every variant). check_variant_options refuses
    // it elsewhere.
    // Defaulted, so the rows of every other option leave it out.
    std::string_view variant = {};
};

// What the spec parser checks of a kind's options beyond each row.
enum class OptionRules {
    // The rows of WorkloadKind::options, nothing more.
    kListed,
    // The rows; each option that reaches fio's command line also passes
    // common/fio_options.h, and fio's rules between options apply (a job
    // file alone, nothing set twice, time_based with a runtime).
    kFioCommandLine,
    // No rows: the options of common/io_options.h, checked as the agent
    // checks them, with that table's rules between options.
    kIoEngine,
};

// One metric column of a ranked compare view: mean ± sd of `metric`.
struct RankedColumn {
    std::string_view metric;
    std::string_view header;
};

// hostctl's table for a comparison whose rows are all of one kind
// (hostctl/compare_format.h: format_compare_wide). No columns: the generic table.
struct RankedView {
    std::vector<RankedColumn> columns;
    std::string_view title;  // what the numbers are and how rows are ranked
};

// The step of a kind that fills the data disk before it is measured, which a
// golden volume (spec `dataset = "golden"`) does once per sweep and
// configuration instead of in every run. A kind without one (`step` "")
// cannot use a golden volume.
struct DatasetPreparation {
    // What the step does, as docs/spec.md says it: "sysbench prepare".
    std::string_view step;
    // The params the prepared data depends on: runs whose workloads agree on
    // these (and on the kind) share a golden volume. `by_name`: also the
    // workload's name (fio names its files after it).
    std::vector<std::string_view> params;
    bool by_name = false;
};

struct WorkloadKind {
    std::string_view name;
    std::vector<WorkloadOptionDef> options;
    OptionRules option_rules = OptionRules::kListed;
    // The guest image variant it needs: "" = the base image.
    std::string_view image_variant;
    // Whether its job also runs from the host on a raw volume, for a host
    // baseline (fio can; the others need the guest's filesystem).
    bool runs_on_host = false;
    // Its output (result.output, docs/agent-protocol.md) -> metrics and
    // per-second series (the shapes common/workload_output.h documents).
    // `kind` is this kind's name, for the parser's messages.
    Result<MetricsMap> (*metrics)(std::string_view kind, const Json& output) = nullptr;
    Result<SeriesMap> (*series)(const Json& output) = nullptr;
    // The members of the output `series` reads ("*": every array element),
    // so a report can skim a large output for them; empty: no series.
    std::vector<OutputMember> series_members;
    // The metric a comparison ranks by, and the one for a job whose `rw`
    // only writes (write, randwrite); an empty write_only_metric name: the
    // primary metric always.
    PrimaryMetric primary_metric;
    PrimaryMetric write_only_metric;
    RankedView ranked_view;
    // Whether the guest sends an `ack` per acknowledged record while it runs
    // (ledger; daemon/run/ack_ledger.h), and its output's "acknowledged"
    // metric counts them.
    bool acknowledges = false;
    // The rules of its server's settings (the `server` option's table): how
    // they are read back, which trade durability for speed, and the
    // `results apply` format that prints them (mariadb_server_settings() for
    // the MariaDB kinds). nullptr: it has no server settings.
    const ServerSettingsRules* server_settings = nullptr;
    // For a kind whose variants commit into different servers (ledger): the
    // rules of each such variant, which take the place of server_settings
    // when it is in effect (variant_in_effect).
    std::vector<std::pair<std::string_view, const ServerSettingsRules*>> variant_server_settings;
    // Its preparation step, for golden volumes (none: dataset = "golden" is
    // refused).
    DatasetPreparation preparation;
};

// The rule of WorkloadOptionDef::variant: an option given for another
// variant than its own is errc::kInvalidArgument "KIND param 'NAME' is for
// the VARIANT variant only". `params` holds the workload's options; a
// missing `variant` is the first value of the kind's `variant` option. The
// spec parser and the agent both check it.
Status check_variant_options(const WorkloadKind& kind, const Json& params);
// The variant `params` selects ("" for a kind without variants).
std::string variant_in_effect(const WorkloadKind& kind, const Json& params);
// Whether `option` may be given with `params` (its variant is in effect).
bool option_applies(const WorkloadOptionDef& option, const WorkloadKind& kind, const Json& params);

// The part of `workload` a golden volume's data depends on (kind, the
// preparation's params, the name where it counts), as a canonical string;
// "" when its kind has no preparation step.
std::string prepared_dataset_key(const Workload& workload);

// In the order specs' error messages list them: fio, io, mariadb-atis,
// sysbench-oltp, ledger, pgbench.
std::span<const WorkloadKind> workload_kinds();
// nullptr for an unknown kind.
const WorkloadKind* find_workload_kind(std::string_view name);
std::vector<std::string_view> workload_kind_names();

// Whether a workload of kind `name` acknowledges its records as it runs (its
// descriptor's `acknowledges`); false for an unknown kind.
bool kind_acknowledges(std::string_view name);
// The kind a durability run measures with when a spec names no workload of
// its own: the first kind that acknowledges (ledger).
const WorkloadKind& durability_ledger_kind();
// The server settings rules of a workload of kind `name` with `params`: its
// variant's (variant_server_settings) when it has them, else its
// descriptor's server_settings; nullptr for an unknown kind or a workload
// without them.
const ServerSettingsRules* kind_server_settings(std::string_view name, const Json& params);
// The distinct rule sets the kinds point at, in the kinds' order: the
// server settings formats of `results apply`.
std::vector<const ServerSettingsRules*> server_settings_rule_sets();
// The rule set whose format is `format`; nullptr when no kind's is.
const ServerSettingsRules* find_server_settings_format(std::string_view format);
// The kinds whose rules are `rules`, in workload_kinds() order.
std::vector<std::string_view> kinds_with_server_settings(const ServerSettingsRules& rules);
// Whether a workload of kind `name` with `params` has its server settings
// printed by the apply format `format` (its rules' format); false for an
// unknown kind or a workload without server settings.
bool kind_applies_server_settings(std::string_view name, const Json& params,
                                  std::string_view format);
// Whether some kind's rules print in `format`.
bool is_server_settings_format(std::string_view format);
// The durability risks of params.server (a workload's `server` table) by the
// rules of a workload of kind `name` with `params`; none without rules.
std::vector<std::string> server_settings_risks(std::string_view name, const Json& params);
// The rule set whose risks `risk` (a durability risk label, "name=value")
// is one of; nullptr for a risk no rules name.
const ServerSettingsRules* rules_of_server_settings_risk(std::string_view risk);

// The metric a workload of `kind` with `params` is judged by: the kind's
// write_only_metric when it has one and params' rw is write or randwrite,
// else its primary metric.
PrimaryMetric judged_metric(const WorkloadKind& kind, const Json& params);

}  // namespace ds
