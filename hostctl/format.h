// How hostctl prints the daemon's answers. Every function here is pure: the
// API's JSON in (as documented in docs/api.md), text out; nothing touches the
// terminal, so tests can check exact output. The functions tolerate missing
// or extra fields (older or newer daemons) and print "-" for what is absent.
#pragma once

#include <algorithm>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/compare_text.h"

namespace ds::hostctl {

using Json = nlohmann::json;

// Terminal columns taken by UTF-8 text: one per code point (the tables hold
// no double-width characters), so "±" counts as one, not two bytes.
std::size_t display_width(std::string_view utf8);

enum class Align { kLeft, kRight };

// A text table: a header row, then rows; columns separated by two spaces,
// padded to the widest cell, no trailing blanks.
class Table {
  public:
    struct Column {
        std::string header;
        Align align = Align::kLeft;
    };
    explicit Table(std::vector<Column> columns);
    // A row with fewer cells than columns is padded with empty cells.
    void add_row(std::vector<std::string> cells);
    bool empty() const { return rows_.empty(); }
    std::string render() const;

  private:
    std::vector<Column> columns_;
    std::vector<std::vector<std::string>> rows_;
};

// "mean ± stddev" rounded to the spread, and a setting's value as a spec
// writes it: common/compare_text.h (the daemon's HTML report shows the same).
using ds::format_mean_spread;
using ds::format_mean_stddev;
using ds::format_setting_value;
using ds::MeanSpread;

// One RFC 4180 field: quoted when it holds a comma, quote, CR or LF.
std::string csv_field(std::string_view text);

// Seconds as "45s", "2m05s", "1h02m".
std::string format_duration(double seconds);

// POST /v1/sweeps reply: id, name, run count, varying axes, dropped
// combinations with their reasons.
std::string format_submitted(const Json& reply);
// GET /v1/sweeps reply.
std::string format_sweep_list(const Json& reply);
// GET /v1/sweeps/{id} reply: summary line, then one row per run. The config
// column shows the settings that differ between the sweep's runs.
std::string format_sweep_show(const Json& reply);
// POST /v1/sweeps/{id}/cancel reply.
std::string format_cancelled(const Json& reply);
// GET /v1/sweeps/{id}/compare reply as the narrow table people read first:
// one row per configuration (and workload, when several), only the settings
// that vary, the analysed metric as mean ± 95% CI half-width, the ratio to
// the baseline with its 95% CI, the verdict, n (succeeded runs, and failed
// ones if any) and a "!" flag for durability risks (named below the table).
// Rows in the reply's ranking order: best first. Rows of different
// partitions (acceleration, host, versions) are printed as separate tables
// under a line naming the partition. Fits 120 columns for a typical sweep.
std::string format_compare_table(const Json& compare);
// The wide table (--all): one row per (configuration, workload), the varying
// settings as columns, each metric as mean ± stddev aligned on "±", "vs
// host" when host baselines ran, an n column, and a "!" column naming
// durability risks. When every row is of one workload kind with a ranked
// view (WorkloadKind::ranked_view, common/workload_kind.h): Filesystem |
// Options | that view's metric columns | n | !, in ranking order; so for
// mariadb-atis Filesystem | Options | Time (total_s mean ± sd) | n | !,
// fastest first, and for sysbench-oltp Filesystem | Options | TPS | p95 ms |
// p99 ms | n | !, highest TPS first.
std::string format_compare_wide(const Json& compare);
// The same as CSV with separate n/mean/stddev/ci95 columns per metric and
// full-precision numbers; just the header line when there are no rows.
std::string format_compare_csv(const Json& compare);
// The compare reply's "golden_datasets" as one line: how many runs cloned
// how many golden volumes and the seconds that saved (or cost); "" when no
// run of the sweep used one.
std::string format_golden_datasets(const Json& compare);
// GET /v1/runs/{id} reply: scalar fields, then each object field as an
// aligned section; raw_output only by size (it is in --json).
std::string format_run(const Json& reply);
// GET /v1/configurations/{id}/apply reply: its "snippet" as it is (the
// format's own comment lines carry the warnings and notes, so the output
// redirected into a file is a valid snippet).
std::string format_apply(const Json& reply);
// POST /v1/sweeps/plan reply: the run count, the configurations (the varying
// settings as columns, a "!" column naming durability risks), the dropped
// combinations with their reasons, and the estimated duration with how many
// past runs it rests on (or what is unknown).
std::string format_sweep_plan(const Json& reply);
// GET /v1/version reply, next to hostctl's own version.
std::string format_version(const Json& reply, std::string_view client_version);
// GET /v1/status: instance (and its names' prefix), acceleration (and why),
// hypervisor, guest image, paths.
std::string format_status(const Json& reply);

// Per-status run counts of a sweep, as the API sends them.
struct RunCounts {
    long pending = 0;
    long running = 0;
    long succeeded = 0;
    long failed = 0;
    long timed_out = 0;  // stopped at the workload's time limit
    long cancelled = 0;
    long done() const { return succeeded + failed + timed_out + cancelled; }
};
RunCounts parse_counts(const Json& counts);

// What a watcher knows about a sweep, folded from its event stream.
class SweepProgress {
  public:
    // Takes in one event; `seconds_since_start` is the watcher's own clock,
    // used to estimate the time left when the daemon sends no eta_s.
    void apply(const Json& event, double seconds_since_start);

    // The sweep's runs as last announced, or the runs done if more: adaptive
    // repetitions add rounds after the announcement.
    long total_runs() const { return std::max(total_runs_, counts_.done()); }
    const RunCounts& counts() const { return counts_; }
    // Time left; unknown before any estimate and once no run is left.
    std::optional<double> eta_seconds() const { return eta_seconds_; }
    bool finished() const { return finished_; }
    // True once finished with every run succeeded.
    bool all_succeeded() const;
    const std::string& final_status() const { return final_status_; }

  private:
    long total_runs_ = 0;
    RunCounts counts_;
    std::optional<double> eta_seconds_;
    bool finished_ = false;
    std::string final_status_;
    // First observation, for the local rate estimate.
    std::optional<double> first_seen_at_;
    long done_when_first_seen_ = 0;
    bool daemon_estimates_ = false;  // an event carried eta_s
};

// "[#########-----------]  4/8 runs  3 ok  1 failed  2 running  ETA 2m05s"
std::string format_progress_bar(const SweepProgress& progress, int bar_width = 24);
// "(3/8 done, 1 failed, ETA 2m05s)"
std::string format_tally(const SweepProgress& progress);
// A plain line for one event (non-TTY output), or "" for events not worth a
// line (progress ticks without a message, unknown types).
std::string format_event_line(const Json& event, const SweepProgress& progress);
// GET /v1/runs/{id} reply -> the metric the run is judged by (its workload
// kind's primary metric, or the write-only one for a writing fio job) as
// "read_iops 2273" (3 significant digits below 100); "" when the reply has
// no such metric (a failed run, an unknown kind, an older daemon).
std::string format_judged_metric(const Json& run_reply);
// What a watch needs of a run it first sees mid-way (it started before the
// watch began), from a GET /v1/runs/{id} reply: the run_started event's
// config_label and workload, and when it started (seconds since the epoch,
// unset when the reply has no "started_at" of the form
// "2026-11-29T20:00:00Z").
struct RunIdentity {
    std::string config_label;
    std::string workload;
    std::optional<long long> started_at;
};
RunIdentity run_identity(const Json& run_reply);
// "2026-11-29T20:00:00Z" (the daemon's times, common/clock.h) -> seconds
// since the epoch; nullopt for anything else.
std::optional<long long> parse_utc_seconds(std::string_view text);
// Closing line after sweep_finished: status and final counts.
std::string format_watch_summary(long sweep_id, const SweepProgress& progress);
// `hosts check NAME` (GET /v1/hosts/check): the host's answer; for a
// Proxmox host its release, whether the token can sweep, what it lacks and
// the pveum lines that grant it.
std::string format_host_check(const Json& reply);

}  // namespace ds::hostctl
