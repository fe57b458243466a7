// Normalised metrics of every workload kind, from the raw output the guest
// agent sent (result.output, docs/agent-protocol.md). Both the agent and the
// daemon call this: the daemon re-derives the metrics because the guest is
// untrusted. Also: whether a MariaDB server variable shown by SHOW VARIABLES
// is the value a workload asked for.
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/settings.h"

namespace ds {

// The image variant a workload kind needs (WorkloadKind::image_variant,
// common/workload_kind.h): "" = the base image (fio, io), "mariadb" for
// mariadb-atis and sysbench-oltp. Unknown kinds: "".
std::string_view image_variant_for_kind(std::string_view kind);

// One phase line of sql-bench's output, e.g.
//   "Time for select_simple_join (500): 3.1 wallclock secs (...)"
//   "Estimated time for select_key_prefix_join (100): 21 wallclock secs (...)"
struct SqlBenchPhase {
    std::string name;        // "insert", "select_simple_join", "create_table", ...
    long long count = 0;     // the number in parentheses
    double wall_s = 0;       // wallclock seconds
    bool estimated = false;  // sql-bench printed an estimate, not a measurement
};
struct SqlBenchReport {
    std::string test;                   // e.g. "ATIS table test"
    std::vector<SqlBenchPhase> phases;  // in output order
    double total_s = 0;                 // "Total time: N wallclock secs"
    bool total_estimated = false;       // "Estimated total time: ..."
};
// errc::kInvalidArgument naming the line (1-based) when a line that starts
// like a time line does not parse, or when there is no total line.
Result<SqlBenchReport> parse_sqlbench_output(std::string_view text);

using MetricsMap = std::map<std::string, double>;

// Metrics by kind (WorkloadKind::metrics); names in the units their suffix
// says.
//   fio, io:        metrics_from_fio_json(output) (fio_metrics.h)
//   mariadb-atis:   output {"stdout": sql-bench's output, ...}
//                   total_s, phase_<name>_s for each measured phase (summed
//                   when a name repeats), estimated_phases (count of
//                   estimate lines; their times are NOT in any metric)
//   sysbench-oltp:  output {"stdout": sysbench run's output, ...}
//                   tps, qps, latency_avg_ms, latency_max_ms,
//                   latency_p50_ms, latency_p95_ms, latency_p99_ms (those
//                   sysbench reported), errors_per_s, reconnects_per_s
// errc::kInvalidArgument for an unknown kind or malformed output, naming
// what is wrong.
Result<MetricsMap> metrics_from_workload_output(std::string_view kind, const Json& output);

// Per-second samples of a run (WorkloadKind::series), for plots of
// throughput over time: series name -> one value per second of the measured
// window.
//   fio, io:        read_iops, write_iops, read_bw_mib_s, write_bw_mib_s,
//                   summed over jobs index by index (over the seconds every
//                   job has), from each job's direction sections'
//                   "iops_per_second" and "bw_bytes_per_second" arrays (the
//                   native engine writes them; the agent adds them to fio's
//                   report from fio's per-second logs). A direction without
//                   I/O has no series.
//   sysbench-oltp:  tps and qps, from the "[ Ns ] ... tps: X qps: Y" lines
//                   of --report-interval=1.
//   mariadb-atis:   none (an empty map).
// At most kMaxSeriesSeconds values per series (later ones are dropped).
// errc::kInvalidArgument naming the element when a series is not an array
// of finite non-negative numbers (the output is the guest's, untrusted).
inline constexpr std::size_t kMaxSeriesSeconds = 86400;
using SeriesMap = std::map<std::string, std::vector<double>>;
Result<SeriesMap> per_second_series(std::string_view kind, const Json& output);
// The per-second array `key` of the object `section` (absent: empty), each
// value a finite non-negative number, at most kMaxSeriesSeconds kept;
// errc::kInvalidArgument naming `where`.KEY[i] otherwise.
Result<std::vector<double>> per_second_array(const Json& section, const char* key,
                                             const std::string& where);

// The parsers of each kind's output, which the kinds' descriptors
// (common/workload_kind.h) point at. `kind` names the kind in messages.
Result<MetricsMap> sqlbench_output_metrics(std::string_view kind, const Json& output);
Result<MetricsMap> sysbench_output_metrics(std::string_view kind, const Json& output);
Result<SeriesMap> fio_output_series(const Json& output);
Result<SeriesMap> sysbench_output_series(const Json& output);
Result<SeriesMap> no_output_series(const Json& output);

// A member of an output, by key or array index ("*": every element).
using OutputMember = std::vector<std::string>;
// What fio_output_series reads: each job's direction's per-second arrays.
std::vector<OutputMember> fio_series_members();

// The metric a comparison ranks by default, and whether lower is better
// (WorkloadKind::primary_metric): fio/io "read_iops" (higher), mariadb-atis
// "total_s" (lower), sysbench-oltp "tps" (higher); unknown kinds
// "read_iops".
struct PrimaryMetric {
    std::string_view name;
    bool lower_is_better = false;
};
PrimaryMetric primary_metric_for_kind(std::string_view kind);

// Whether SHOW VARIABLES' `shown` value is what `requested` (as written in a
// spec: string, integer or boolean JSON) asks for variable `name`. Handles
// MariaDB's spellings: booleans 0/1/true/false/on/off -> ON/OFF, sizes with
// K/M/G suffixes -> bytes, enum values case-insensitively.
bool server_variable_matches(std::string_view name, const Json& requested, std::string_view shown);

// ---- what a requested server variable does on the guest's MariaDB --------
// MariaDB 11.0 deprecated innodb_flush_method (MDEV-30136): at start-up it
// maps the value onto the Booleans innodb_{data,log}_file_{buffering,
// write_through}; MDEV-33545 made innodb_doublewrite OFF | ON | fast. A
// value can then be shown back as requested and still not do what it did on
// 10.x. The table is measured (docs/spec.md, "MariaDB versions";
// tests/data/mariadb/innodb_flush_settings_*.txt).

// A server's MAJOR.MINOR, from SELECT VERSION(): "10.11.19-MariaDB-0+deb12u1"
// -> {10, 11}, "11.8.9-MariaDB-0+deb13u1 from Debian" -> {11, 8}; nullopt
// when the text does not start with two dot-separated numbers.
struct MariadbVersion {
    int major = 0;
    int minor = 0;
    auto operator<=>(const MariadbVersion&) const = default;
};
std::optional<MariadbVersion> parse_mariadb_version(std::string_view server_version);

// A variable and the value SHOW VARIABLES shows for it.
struct ShownServerVariable {
    std::string_view name;
    std::string_view shown;
};

// One requested (variable, value) whose meaning on servers in [since, until)
// is more than "SHOW VARIABLES shows it back".
struct VersionedServerVariable {
    std::string_view variable;  // as SHOW VARIABLES spells it
    std::string_view value;     // as requested, compared case-insensitively
    MariadbVersion since;
    MariadbVersion until;
    // Non-empty: such a server takes the value (and may show it back) but
    // does not do what 10.x did with it; why. It is never in force there.
    std::string_view refused;
    // What else SHOW VARIABLES shows when the value is in force there; a
    // variable the workload requests itself is checked against that request
    // instead. Unused entries have an empty name.
    std::array<ShownServerVariable, 4> implies{};
};
std::span<const VersionedServerVariable> versioned_server_variables();

// Every way the workload's `server` table (`requested`: name as the spec
// spells it -> string | integer | boolean) is not in force on the server that
// showed `shown` (SHOW VARIABLES name -> value, the guest's untrusted
// readback) and reported `server_version`; one line each, "server variable
// NAME: requested VALUE, ...": a variable not shown, or shown otherwise
// (server_variable_matches); a refused row of the server's version, with its
// reason; an implied variable not shown as the row says; a variable with
// versioned rows on a server whose version cannot be read. Never throws.
std::vector<std::string> server_variable_mismatches(const Json& requested, const Json& shown,
                                                    std::string_view server_version);

// Variables a workload's `server` table sets that trade durability for
// speed: innodb_flush_method=nosync or O_DIRECT_NO_FSYNC (no sync of the data
// files; 11.x spells it innodb_doublewrite=fast),
// innodb_flush_log_at_trx_commit=0|2, innodb_doublewrite=0|fast;
// sync_binlog=0 is NOT listed (default). Each as "name=value".
std::vector<std::string> server_variable_risks(const Json& server_variables);

}  // namespace ds
