// The result store: one SQLite database (WAL) holding every sweep, every run,
// the exact configuration that produced it and its results. The schema is
// written down in docs/schema.md and versioned with PRAGMA user_version;
// migrations are append-only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/settings.h"
#include "common/status.h"
#include "daemon/model/stats.h"

namespace SQLite {
class Database;
}

namespace ds {

using Json = nlohmann::json;

// A failed run whose failure_reason starts with this was cut short by
// disksweepd stopping (crash, kill or orderly shutdown), not by its
// configuration or workload: recover_interrupted_runs() runs it again.
inline constexpr std::string_view kInterruptedReason =
    "interrupted: disksweepd stopped during this run";

// Every run status's spelling, in lifecycle order (the keys of run_counts()).
std::span<const std::string_view> all_run_statuses();

// Timestamps are ISO-8601 UTC strings chosen by the caller (the clock is the
// caller's); "" means "not yet" and is stored as NULL.
struct SweepRecord {
    std::int64_t id = 0;  // assigned by create_sweep
    std::string name;
    std::string spec_toml;    // the spec exactly as submitted
    std::string spec_source;  // where it came from (file name, "api")
    SweepStatus status = SweepStatus::kQueued;
    std::string created_at;
    std::string started_at;
    std::string finished_at;
    int total_runs = 0;                 // set by create_sweep to the number of planned runs
    Json dropped = Json::array();       // [{"settings":{..},"reason":".."}]
    Json varying_axes = Json::array();  // ["filesystem","cache"]
    // Adaptive repetitions: one entry per decision after a round, oldest
    // first: {"after_round":3,"decision":"add_round"|"stop","reason":".."}.
    Json round_decisions = Json::array();
};

struct RunRecord {
    std::int64_t id = 0;        // assigned by create_sweep
    std::int64_t sweep_id = 0;  // assigned by create_sweep
    int sequence = 0;           // execution order within the sweep (unique per sweep)
    int repetition = 0;         // 0-based
    // 1 for the planned run; n+1 for the run that repeats attempt n after
    // disksweepd stopped during it (recover_interrupted_runs).
    int attempt = 1;
    // The id of the attempt that repeats this one; 0 while this attempt is
    // the current one of its planned run (sweep, config, workload, repetition).
    std::int64_t superseded_by = 0;
    std::string config_id;  // ds::config_id(config)
    // Decoded once by the store when it reads the run (a stored value that no
    // longer decodes fails the read, errc::kInternal), encoded by ds::to_json
    // when it writes one and in the API's replies (daemon/api/record_messages.cpp).
    // Stored configurations carry no filesystem label (to_json leaves it out).
    StorageConfig config;
    std::string workload_name;
    Workload workload;
    RunStatus status = RunStatus::kPending;
    std::string failure_reason;
    std::string accel;  // "kvm" | "tcg" | "none" (a host baseline: no guest)
    std::string vm_name;
    std::string volume_name;
    std::string console_log;  // path of the guest's console log
    std::string started_at;
    std::string finished_at;
    Json timings = Json::object();  // {provision_s, boot_s, format_s, bench_s, teardown_s, total_s}
    Json versions = Json::object();          // {"qemu":"7.2.0","kernel":..,"fio":..}
    Json applied_settings = Json::object();  // {"hypervisor":{..},"guest":{..}} as read back
    std::string raw_output;                  // the benchmark's own output (fio JSON text)
    std::map<std::string, double> metrics;   // normalised, e.g. "read_iops" -> 251.3
    // Read only: the comparison partition the store derived when the run
    // finished (see RunGroup); "" while it has not finished.
    std::string partition_key;
};

// The runs of a sweep that compare_sweep pools: one configuration, one
// workload, one partition (see below), with how many runs are in each status
// (current attempts only; every status is a key).
struct RunGroup {
    std::string config_id;
    std::string workload_name;
    // The comparison partition: a JSON array [accel, host, qemu, libvirt,
    // kernel, proxmox] as text ("" for a value not recorded), set when a run
    // finishes; "" for runs that never finished (pending).
    std::string partition_key;
    std::map<std::string, int> counts;
    int first_sequence = 0;  // the group's first run in execution order
};

// One metric of one RunGroup's succeeded runs, folded as they finished.
struct MetricAggregate {
    std::string config_id;
    std::string workload_name;
    std::string partition_key;
    std::string metric;
    Moments moments;
};

// The values of one metric of one RunGroup's succeeded runs, with their
// rounds, in round order.
struct MetricSeries {
    std::string config_id;
    std::string workload_name;
    std::string partition_key;
    std::string metric;
    std::vector<RoundValue> values;
};

// A page of a sweep's runs: those with sequence > after_sequence, at most
// `limit` (0 = no limit), by sequence. next_after is the last one's sequence
// when more follow, else -1.
struct RunPage {
    std::vector<RunRecord> runs;
    int next_after = -1;
};

// A run's guest as recorded before its backend created it
// (Store::record_vm_handle), still there to destroy.
struct RecordedVm {
    std::int64_t run_id = 0;
    std::string vm_name;
    std::string host;              // the host the run was placed on (daemon/backends/hosts.h)
    Json handle = Json::object();  // the backend's handle (VmRequest::record_handle)
};

// One schema migration: `sql` (one or more statements) takes a database at
// version-1 to `version`. Applied in one transaction together with the
// user_version bump, so a failing step leaves the database at version-1.
struct Migration {
    int version;
    std::string_view description;
    std::string_view sql;
};

// The migrations this build knows, in order (versions 1, 2, ...). Append
// only: never edit a migration that has been released.
std::span<const Migration> schema_migrations();

// Whether RunRecord::raw_output is read back (it can be large; listings that
// only need metrics skip it).
enum class RawOutput { kInclude, kOmit };

// Thread-safe: one mutex guards the connection; every public method takes it
// for its whole duration, so each call sees and leaves a consistent state.
// Several Store objects (or processes) may open the same file: SQLite's
// locking plus a busy timeout serialise their writes.
//
// Errors: errc::kNotFound ("sweep 12 not found", "run 7 not found"),
// errc::kInvalidArgument (finishing a run with a status that is not final,
// a non-finite metric), errc::kConflict (a state transition that is not
// allowed, a database newer than this build), errc::kIo (cannot open, disk
// full, I/O error, not a database: with SQLite's message),
// errc::kUnavailable (still locked by another process after the busy
// timeout), errc::kInternal (a status text read back that no enum value
// spells; anything else).
class Store {
  public:
    // Opens (creating if needed) the database at `path`, switches it to WAL,
    // enables foreign keys and brings the schema up to date. A database whose
    // schema version is newer than the code knows is refused (kConflict).
    static Result<std::unique_ptr<Store>> open(const std::string& path);
    // As above with an explicit migration list (tests exercise the migration
    // runner with it). The list must be numbered 1..N without gaps.
    static Result<std::unique_ptr<Store>> open(const std::string& path,
                                               std::span<const Migration> migrations);

    ~Store();
    Store(const Store&) = delete;
    Store& operator=(const Store&) = delete;

    // The schema version of the open database.
    Result<int> schema_version();

    // The instance id of this database's daemon: 8 lowercase hex digits,
    // generated from getrandom(2) by the first call and kept, so the daemon
    // names its guests and volumes alike across restarts (unless its config
    // names the instance). kIo when the kernel gives no random bytes.
    Result<std::string> instance_id();

    // In one transaction: the sweep (total_runs = planned_runs.size()), one
    // `configurations` row per distinct config_id, and every planned run as
    // pending (their id, sweep_id and status fields are ignored). A config_id
    // already stored with different canonical JSON is a kConflict (the
    // identity of a configuration must never change meaning).
    Result<std::int64_t> create_sweep(const SweepRecord& sweep,
                                      const std::vector<RunRecord>& planned_runs);
    Result<SweepRecord> get_sweep(std::int64_t sweep_id);
    Result<std::vector<SweepRecord>> list_sweeps();  // by id, oldest first
    // Sets the status; `at` becomes started_at for "running" (kept if already
    // set, e.g. when a restarted daemon resumes) and finished_at for
    // succeeded/failed/cancelled. For "queued", `at` is unused.
    Status set_sweep_status(std::int64_t sweep_id, SweepStatus status, const std::string& at);

    // Runs of a sweep ordered by sequence, with their metrics.
    Result<std::vector<RunRecord>> list_runs(std::int64_t sweep_id,
                                             RawOutput raw_output = RawOutput::kInclude);
    // One page of them (RunPage); the page's cost does not grow with the sweep.
    Result<RunPage> list_runs_page(std::int64_t sweep_id, int after_sequence, int limit,
                                   RawOutput raw_output = RawOutput::kOmit);

    // Comparison queries (daemon/compare/compare.h). Cost grows with the
    // number of groups and metrics, not with the runs (metric_series: with
    // the succeeded runs of the metrics asked for, read from an index).
    // The sweep's run groups, by first sequence. kNotFound for an unknown sweep.
    Result<std::vector<RunGroup>> run_groups(std::int64_t sweep_id);
    // The aggregates of every metric of every group with a succeeded run.
    Result<std::vector<MetricAggregate>> metric_aggregates(std::int64_t sweep_id);
    // The values of the named metrics (every metric when `metrics` is empty)
    // of the sweep's succeeded runs: a series per metric of each group.
    Result<std::vector<MetricSeries>> metric_series(std::int64_t sweep_id,
                                                    const std::vector<std::string>& metrics);
    // The workload JSON (ds::to_json(Workload)) of each workload name of the sweep.
    Result<std::map<std::string, Json>> sweep_workloads(std::int64_t sweep_id);

    // Adaptive repetitions: in one transaction, appends `decision` to the
    // sweep's round_decisions and adds `runs` as pending (sequenced after the
    // sweep's last run, in the given order; their configurations must be
    // stored already), raising total_runs. With no runs it only records.
    Status add_round(std::int64_t sweep_id, const Json& decision,
                     const std::vector<RunRecord>& runs);
    Result<RunRecord> get_run(std::int64_t run_id);
    // pending -> running. kConflict when the run is not pending (e.g. it was
    // cancelled meanwhile), so the scheduler never starts a cancelled run.
    Status mark_run_running(std::int64_t run_id, const std::string& vm_name,
                            const std::string& volume_name, const std::string& console_log,
                            const std::string& accel, const std::string& started_at);
    // The guest of a running run, in its backend's terms, before the backend
    // creates it: `handle` on `host`. kConflict unless the run is running.
    Status record_vm_handle(std::int64_t run_id, const std::string& host, const Json& handle);
    // The run's guest is destroyed: nothing of it is left to find.
    Status clear_vm_handle(std::int64_t run_id);
    // Every recorded guest not cleared (a failed teardown, a daemon that
    // died), by run id: what start-up recovery destroys by its handle.
    Result<std::vector<RecordedVm>> recorded_vms();
    // Records the outcome of run.id in one transaction: status (succeeded,
    // failed, timed_out or cancelled), failure_reason, accel (when not ""),
    // timings, versions,
    // applied_settings, raw_output, finished_at, and replaces its metrics.
    // The run must be pending or running (kConflict once finished); metric
    // values must be finite (kInvalidArgument; SQLite cannot store NaN).
    Status finish_run(const RunRecord& run);
    // Runs in `status` across all sweeps, by sweep then sequence. With
    // "running" at start-up: the runs a crashed daemon left behind.
    Result<std::vector<RunRecord>> runs_with_status(RunStatus status,
                                                    RawOutput raw_output = RawOutput::kOmit);
    // Number of runs of the sweep in each status; every status is a key.
    // Only current attempts count (superseded ones are history), so the
    // counts add up to the sweep's total_runs.
    Result<std::map<std::string, int>> run_counts(std::int64_t sweep_id);
    // Every pending run of the sweep becomes cancelled (running ones are left
    // to the scheduler, which finishes them with finish_run).
    Status cancel_pending_runs(std::int64_t sweep_id);

    // At start-up, before any run starts, in one transaction:
    //  1. every run left 'running' (its daemon died) becomes failed with
    //     kInterruptedReason + " (cleaned up at the next start)";
    //  2. every current attempt that failed with kInterruptedReason (from 1,
    //     or recorded by the executor at an orderly shutdown) in a sweep that
    //     is still queued or running and that the user did not cancel (no
    //     cancelled run) gets a new pending attempt: same sweep,
    //     configuration, workload and repetition, attempt + 1, sequenced
    //     after the sweep's last run. The interrupted attempt stays, with
    //     superseded_by set.
    //  3. an interrupted attempt number `max_attempts` gets no successor: its
    //     reason says so, and its sweep ends failed.
    struct InterruptedRuns {
        std::vector<RunRecord> marked_failed;  // step 1, as stored afterwards
        std::vector<RunRecord> new_attempts;   // step 2, pending
        std::vector<RunRecord> given_up;       // step 3, newly given up
    };
    Result<InterruptedRuns> recover_interrupted_runs(int max_attempts, const std::string& at);

    // Cross-sweep queries.
    // The canonical settings stored for config_id (kNotFound if none).
    Result<Json> get_configuration(const std::string& config_id);
    // Every run of that configuration in any sweep, by sweep then sequence.
    Result<std::vector<RunRecord>> runs_for_config(const std::string& config_id,
                                                   RawOutput raw_output = RawOutput::kOmit);

  private:
    Store(std::string path, std::unique_ptr<SQLite::Database> db);

    const std::string path_;
    std::mutex mutex_;                      // guards db_ (and every statement on it)
    std::unique_ptr<SQLite::Database> db_;  // GUARDED_BY(mutex_)
};

}  // namespace ds
