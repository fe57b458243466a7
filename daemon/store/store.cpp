#include "daemon/store/store.h"

#include <SQLiteCpp/SQLiteCpp.h>
#include <sqlite3.h>
#include <sys/random.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <variant>

namespace ds {
namespace {

// How long a statement waits for another connection's lock before giving up
// with SQLITE_BUSY (-> errc::kUnavailable). Writes here are small; a lock held
// this long means something is wrong elsewhere.
constexpr int kBusyTimeoutMs = 5000;
// At most this much of the database file is memory-mapped for reading (address
// space, not memory: the pages are the kernel's page cache).
constexpr std::int64_t kMmapBytes = std::int64_t{1} << 30;

// Schema history. Append only: a released migration is never edited, a change
// is a new migration (see docs/schema.md).
// The comparison partition of a run (docs/schema.md): a JSON array of its
// acceleration, host (versions.partition_host in its place when the sweep
// says its hosts are identical), QEMU, libvirt and kernel versions and the
// Proxmox VE release, "" for each one not recorded. Runs of different
// partitions are never pooled. The live rule, used by finish_run; migration
// 4 keeps its own frozen copy (of five members: a run finished before the
// sixth was added reads it as not recorded).
#define DS_RUN_PARTITION_SQL                                                   \
    "json_array(coalesce(accel, json_extract(versions_json, '$.accel'), ''), " \
    "coalesce(json_extract(versions_json, '$.partition_host'), "               \
    "json_extract(versions_json, '$.host'), ''), "                             \
    "coalesce(json_extract(versions_json, '$.qemu'), ''), "                    \
    "coalesce(json_extract(versions_json, '$.libvirt'), ''), "                 \
    "coalesce(json_extract(versions_json, '$.kernel'), ''), "                  \
    "coalesce(json_extract(versions_json, '$.proxmox'), ''))"

constexpr std::array<Migration, 7> kMigrations = {{
    {1, "initial schema: sweeps, configurations, runs, metrics",
     R"sql(
CREATE TABLE sweeps (
    id                INTEGER PRIMARY KEY,
    name              TEXT    NOT NULL,
    spec_toml         TEXT    NOT NULL,
    spec_source       TEXT    NOT NULL,
    status            TEXT    NOT NULL
                      CHECK (status IN ('queued','running','succeeded','failed','cancelled')),
    created_at        TEXT    NOT NULL,
    started_at        TEXT,
    finished_at       TEXT,
    total_runs        INTEGER NOT NULL,
    dropped_json      TEXT    NOT NULL DEFAULT '[]',
    varying_axes_json TEXT    NOT NULL DEFAULT '[]'
);

CREATE TABLE configurations (
    config_id      TEXT PRIMARY KEY,
    canonical_json TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE runs (
    id                    INTEGER PRIMARY KEY,
    sweep_id              INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
    sequence              INTEGER NOT NULL,
    repetition            INTEGER NOT NULL,
    config_id             TEXT    NOT NULL REFERENCES configurations(config_id),
    workload_name         TEXT    NOT NULL,
    workload_json         TEXT    NOT NULL,
    status                TEXT    NOT NULL
                          CHECK (status IN ('pending','running','succeeded','failed','cancelled')),
    failure_reason        TEXT,
    accel                 TEXT,
    vm_name               TEXT,
    volume_name           TEXT,
    console_log           TEXT,
    started_at            TEXT,
    finished_at           TEXT,
    timings_json          TEXT    NOT NULL DEFAULT '{}',
    versions_json         TEXT    NOT NULL DEFAULT '{}',
    applied_settings_json TEXT    NOT NULL DEFAULT '{}',
    raw_output            TEXT,
    UNIQUE (sweep_id, sequence)
);
CREATE INDEX runs_by_status ON runs(status);
CREATE INDEX runs_by_config ON runs(config_id);

CREATE TABLE metrics (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    name   TEXT    NOT NULL,
    value  REAL    NOT NULL,
    PRIMARY KEY (run_id, name)
) WITHOUT ROWID;
)sql"},
    // Rebuilds `runs` for its new CHECK. Migrations run with foreign_keys=ON
    // inside a transaction, where they cannot be switched off, and dropping
    // `runs` would cascade into `metrics`: so the metrics are set aside in a
    // table without a foreign key first and restored after the rebuild.
    {2, "run status timed_out",
     R"sql(
CREATE TABLE metrics_before_v2 AS SELECT run_id, name, value FROM metrics;
DROP TABLE metrics;

CREATE TABLE runs_v2 (
    id                    INTEGER PRIMARY KEY,
    sweep_id              INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
    sequence              INTEGER NOT NULL,
    repetition            INTEGER NOT NULL,
    config_id             TEXT    NOT NULL REFERENCES configurations(config_id),
    workload_name         TEXT    NOT NULL,
    workload_json         TEXT    NOT NULL,
    status                TEXT    NOT NULL
                          CHECK (status IN ('pending','running','succeeded','failed','cancelled',
                                            'timed_out')),
    failure_reason        TEXT,
    accel                 TEXT,
    vm_name               TEXT,
    volume_name           TEXT,
    console_log           TEXT,
    started_at            TEXT,
    finished_at           TEXT,
    timings_json          TEXT    NOT NULL DEFAULT '{}',
    versions_json         TEXT    NOT NULL DEFAULT '{}',
    applied_settings_json TEXT    NOT NULL DEFAULT '{}',
    raw_output            TEXT,
    UNIQUE (sweep_id, sequence)
);
INSERT INTO runs_v2 (id, sweep_id, sequence, repetition, config_id, workload_name, workload_json,
                     status, failure_reason, accel, vm_name, volume_name, console_log, started_at,
                     finished_at, timings_json, versions_json, applied_settings_json, raw_output)
SELECT id, sweep_id, sequence, repetition, config_id, workload_name, workload_json, status,
       failure_reason, accel, vm_name, volume_name, console_log, started_at, finished_at,
       timings_json, versions_json, applied_settings_json, raw_output FROM runs;
DROP TABLE runs;
ALTER TABLE runs_v2 RENAME TO runs;
CREATE INDEX runs_by_status ON runs(status);
CREATE INDEX runs_by_config ON runs(config_id);

CREATE TABLE metrics (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    name   TEXT    NOT NULL,
    value  REAL    NOT NULL,
    PRIMARY KEY (run_id, name)
) WITHOUT ROWID;
INSERT INTO metrics (run_id, name, value) SELECT run_id, name, value FROM metrics_before_v2;
DROP TABLE metrics_before_v2;
)sql"},
    // A run interrupted by a daemon stop is run again as a new attempt of the
    // same planned run; the interrupted attempt stays, pointing at its
    // successor. At most one attempt of a planned run is current (not
    // superseded), and attempt numbers of a planned run are distinct.
    {3, "run attempts: attempt number and superseded_by",
     R"sql(
ALTER TABLE runs ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1 CHECK (attempt >= 1);
-- Deferred: recovery points the old attempt at its successor's id before
-- inserting the successor (the one-current-attempt index forbids the order
-- the other way round).
ALTER TABLE runs ADD COLUMN superseded_by INTEGER
    REFERENCES runs(id) DEFERRABLE INITIALLY DEFERRED;
CREATE UNIQUE INDEX runs_attempt_of_planned_run
    ON runs(sweep_id, config_id, workload_name, repetition, attempt);
CREATE UNIQUE INDEX runs_one_current_attempt
    ON runs(sweep_id, config_id, workload_name, repetition) WHERE superseded_by IS NULL;
)sql"},
    // Comparisons read aggregates instead of every metric of every run:
    // each succeeded run's metrics are folded into metric_aggregates (n,
    // mean, Welford's m2, min, max, sum of logs) per (sweep, configuration,
    // workload, partition, metric) when it finishes. The partition of a run
    // is stored with it. Adaptive repetitions record why a sweep added a
    // round or stopped in sweeps.round_decisions_json.
    // The partition expression below is a frozen copy of what
    // DS_RUN_PARTITION_SQL was when this migration was released: released
    // migrations never change, so a later change to the live rule must not
    // rewrite this one (it would get a new migration).
    {4, "comparison partitions, metric aggregates, round decisions",
     R"sql(ALTER TABLE runs ADD COLUMN partition_key TEXT;
UPDATE runs SET partition_key = json_array(coalesce(accel, json_extract(versions_json, '$.accel'), ''), coalesce(json_extract(versions_json, '$.partition_host'), json_extract(versions_json, '$.host'), ''), coalesce(json_extract(versions_json, '$.qemu'), ''), coalesce(json_extract(versions_json, '$.libvirt'), ''), coalesce(json_extract(versions_json, '$.kernel'), '')) WHERE status <> 'pending';
)sql"
     R"sql(
CREATE INDEX runs_by_sweep_status ON runs(sweep_id, status);
CREATE TABLE metric_aggregates (
    sweep_id      INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
    config_id     TEXT    NOT NULL,
    workload_name TEXT    NOT NULL,
    partition_key TEXT    NOT NULL,
    name          TEXT    NOT NULL,
    n             INTEGER NOT NULL,
    mean          REAL    NOT NULL,
    m2            REAL    NOT NULL,
    min           REAL    NOT NULL,
    max           REAL    NOT NULL,
    log_sum       REAL    NOT NULL,
    log_n         INTEGER NOT NULL,
    PRIMARY KEY (sweep_id, config_id, workload_name, partition_key, name)
) WITHOUT ROWID;
INSERT INTO metric_aggregates
WITH v AS (SELECT r.sweep_id, r.config_id, r.workload_name, r.partition_key, m.name, m.value
           FROM runs r JOIN metrics m ON m.run_id = r.id
           WHERE r.status = 'succeeded' AND r.superseded_by IS NULL),
     a AS (SELECT sweep_id, config_id, workload_name, partition_key, name, COUNT(*) AS n,
                  AVG(value) AS mean FROM v GROUP BY 1, 2, 3, 4, 5)
SELECT a.sweep_id, a.config_id, a.workload_name, a.partition_key, a.name, a.n, a.mean,
       SUM((v.value - a.mean) * (v.value - a.mean)), MIN(v.value), MAX(v.value),
       TOTAL(CASE WHEN v.value > 0 THEN ln(v.value) END),
       COUNT(CASE WHEN v.value > 0 THEN 1 END)
FROM a JOIN v USING (sweep_id, config_id, workload_name, partition_key, name)
GROUP BY 1, 2, 3, 4, 5;
ALTER TABLE sweeps ADD COLUMN round_decisions_json TEXT NOT NULL DEFAULT '[]';
)sql"},
    // A comparison reads its run groups and its runs' ids and rounds from
    // this index alone, in group order, without touching the run rows (their
    // JSON columns make a scan of them cost a page read per run).
    // A metric's values are one range of metrics_by_name, read in order
    // rather than looked up run by run.
    {5, "covering indexes of a sweep's current runs and of a metric's values",
     R"sql(
CREATE INDEX runs_current_by_group
    ON runs(sweep_id, status, config_id, workload_name, partition_key, repetition, sequence)
    WHERE superseded_by IS NULL;
CREATE INDEX metrics_by_name ON metrics(name, run_id, value);
)sql"},
    // The id a daemon without a configured `instance` names its guests and
    // volumes by (Store::instance_id): at most one row, written once.
    {6, "the daemon's instance id",
     R"sql(
CREATE TABLE daemon_instance (
    singleton   INTEGER PRIMARY KEY CHECK (singleton = 1),
    instance_id TEXT    NOT NULL
);
)sql"},
    // Where a run's guest is, in its backend's terms, written before the
    // backend creates it (VmRequest::record_handle) and cleared once it is
    // destroyed: a guest that the backend cannot find by its name alone (a
    // Proxmox clone not yet tagged) is still destroyed after a failed step
    // or a daemon that died (daemon/recovery.h).
    {7, "the recorded handle of a run's guest",
     R"sql(
ALTER TABLE runs ADD COLUMN vm_host TEXT;
ALTER TABLE runs ADD COLUMN vm_handle_json TEXT;
CREATE INDEX runs_with_vm_handle ON runs(id) WHERE vm_handle_json IS NOT NULL;
)sql"},
}};

// A status column read back. The CHECK constraints keep other text out, so
// an unknown one means a database written by something else: an error for
// the caller (guarded() turns the exception into errc::kInternal), never a
// value outside the enum.
RunStatus run_status_column(const SQLite::Column& column) {
    const std::string text = column.getString();
    if (auto status = parse_run_status(text)) return *status;
    throw std::runtime_error("unknown run status '" + text + "' stored in the database");
}

SweepStatus sweep_status_column(const SQLite::Column& column) {
    const std::string text = column.getString();
    if (auto status = parse_sweep_status(text)) return *status;
    throw std::runtime_error("unknown sweep status '" + text + "' stored in the database");
}

// Turns an exception from SQLite into an Error whose code says what the caller
// can do about it: kIo for the file system (full disk, I/O error, cannot open,
// not a database), kUnavailable for a lock held past the busy timeout,
// kConflict for a violated constraint. The message keeps SQLite's own words.
Error sqlite_error(const std::string& context, const SQLite::Exception& exception) {
    const int primary_code = exception.getErrorCode() & 0xff;
    const char* code = errc::kInternal;
    switch (primary_code) {
        case SQLITE_FULL:
        case SQLITE_IOERR:
        case SQLITE_CANTOPEN:
        case SQLITE_CORRUPT:
        case SQLITE_NOTADB:
        case SQLITE_READONLY:
        case SQLITE_PERM:
        case SQLITE_NOLFS:
            code = errc::kIo;
            break;
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
            code = errc::kUnavailable;
            break;
        case SQLITE_CONSTRAINT:
            code = errc::kConflict;
            break;
        default:
            break;
    }
    return make_error(code, context + ": " + exception.what());
}

// The seam: runs `body` (which returns a Result) and turns any exception from
// SQLiteCpp or nlohmann::json into an Error, so none escapes the store.
template <class Body>
auto guarded(const std::string& context, Body&& body) -> decltype(body()) {
    try {
        return body();
    } catch (const SQLite::Exception& exception) {
        return sqlite_error(context, exception);
    } catch (const Json::exception& exception) {
        return make_error(errc::kInternal,
                          context + ": malformed JSON stored in the database: " + exception.what());
    } catch (const std::exception& exception) {
        return make_error(errc::kInternal, context + ": " + exception.what());
    }
}

// JSON columns. The guest is untrusted, so invalid UTF-8 in what it reported
// is replaced rather than failing the whole write.
std::string dump_json(const Json& value) {
    return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// "" is stored as NULL (an unset timestamp or reason) and read back as "".
void bind_text_or_null(SQLite::Statement& statement, int index, const std::string& value) {
    if (value.empty()) {
        statement.bind(index);
    } else {
        statement.bind(index, value);
    }
}

std::string text_or_empty(const SQLite::Column& column) {
    return column.isNull() ? std::string() : column.getString();
}

Json json_column(const SQLite::Column& column) {
    return Json::parse(column.getString());
}

Error sweep_not_found(std::int64_t sweep_id) {
    return make_error(errc::kNotFound, "sweep " + std::to_string(sweep_id) + " not found");
}
Error run_not_found(std::int64_t run_id) {
    return make_error(errc::kNotFound, "run " + std::to_string(run_id) + " not found");
}

bool sweep_exists(SQLite::Database& db, std::int64_t sweep_id) {
    SQLite::Statement query(db, "SELECT 1 FROM sweeps WHERE id = ?");
    query.bind(1, sweep_id);
    return query.executeStep();
}

// Why a run cannot make a transition: it does not exist, or its status.
Error run_transition_error(SQLite::Database& db, std::int64_t run_id, std::string_view wanted) {
    SQLite::Statement query(db, "SELECT status FROM runs WHERE id = ?");
    query.bind(1, run_id);
    if (!query.executeStep()) return run_not_found(run_id);
    return make_error(errc::kConflict, "run " + std::to_string(run_id) + " is " +
                                           query.getColumn(0).getString() + ", cannot become " +
                                           std::string(wanted));
}

SweepRecord read_sweep(SQLite::Statement& row) {
    SweepRecord sweep;
    sweep.id = row.getColumn(0).getInt64();
    sweep.name = row.getColumn(1).getString();
    sweep.spec_toml = row.getColumn(2).getString();
    sweep.spec_source = row.getColumn(3).getString();
    sweep.status = sweep_status_column(row.getColumn(4));
    sweep.created_at = text_or_empty(row.getColumn(5));
    sweep.started_at = text_or_empty(row.getColumn(6));
    sweep.finished_at = text_or_empty(row.getColumn(7));
    sweep.total_runs = row.getColumn(8).getInt();
    sweep.dropped = json_column(row.getColumn(9));
    sweep.varying_axes = json_column(row.getColumn(10));
    sweep.round_decisions = json_column(row.getColumn(11));
    return sweep;
}

constexpr const char* kSelectSweep =
    "SELECT id, name, spec_toml, spec_source, status, created_at, started_at, finished_at, "
    "total_runs, dropped_json, varying_axes_json, round_decisions_json FROM sweeps";

// The one place that reads runs: `where` selects them (with one parameter),
// rows come back by sweep then sequence, each with its metrics.
using RunFilterValue = std::variant<std::int64_t, std::string>;

void bind_filter(SQLite::Statement& statement, const RunFilterValue& value) {
    if (const auto* number = std::get_if<std::int64_t>(&value)) {
        statement.bind(1, *number);
    } else {
        statement.bind(1, std::get<std::string>(value));
    }
}

// One row of query_runs' SELECT (its columns in that order).
RunRecord read_run_row(SQLite::Statement& row) {
    RunRecord run;
    run.id = row.getColumn(0).getInt64();
    run.sweep_id = row.getColumn(1).getInt64();
    run.sequence = row.getColumn(2).getInt();
    run.repetition = row.getColumn(3).getInt();
    run.config_id = row.getColumn(4).getString();
    run.config = json_column(row.getColumn(5));
    run.workload_name = row.getColumn(6).getString();
    run.workload = json_column(row.getColumn(7));
    run.status = run_status_column(row.getColumn(8));
    run.failure_reason = text_or_empty(row.getColumn(9));
    run.accel = text_or_empty(row.getColumn(10));
    run.vm_name = text_or_empty(row.getColumn(11));
    run.volume_name = text_or_empty(row.getColumn(12));
    run.console_log = text_or_empty(row.getColumn(13));
    run.started_at = text_or_empty(row.getColumn(14));
    run.finished_at = text_or_empty(row.getColumn(15));
    run.timings = json_column(row.getColumn(16));
    run.versions = json_column(row.getColumn(17));
    run.applied_settings = json_column(row.getColumn(18));
    run.attempt = row.getColumn(19).getInt();
    run.superseded_by = row.getColumn(20).isNull() ? 0 : row.getColumn(20).getInt64();
    run.partition_key = row.getColumn(21).getString();
    run.raw_output = text_or_empty(row.getColumn(22));
    return run;
}

// `page_clause` (e.g. " AND r.sequence > 10 ORDER BY ... LIMIT 50") narrows
// both the runs and the metrics read for them; "" reads every match.
std::vector<RunRecord> query_runs(SQLite::Database& db, const std::string& where,
                                  const RunFilterValue& value, RawOutput raw_output,
                                  const std::string& page_clause = "") {
    const std::string raw_output_column =
        raw_output == RawOutput::kInclude ? "r.raw_output" : "NULL";
    SQLite::Statement query(
        db,
        "SELECT r.id, r.sweep_id, r.sequence, r.repetition, r.config_id, c.canonical_json, "
        "r.workload_name, r.workload_json, r.status, r.failure_reason, r.accel, r.vm_name, "
        "r.volume_name, r.console_log, r.started_at, r.finished_at, r.timings_json, "
        "r.versions_json, r.applied_settings_json, r.attempt, r.superseded_by, "
        "coalesce(r.partition_key, ''), " +
            raw_output_column +
            " FROM runs r JOIN configurations c ON c.config_id = r.config_id WHERE " + where +
            (page_clause.empty() ? " ORDER BY r.sweep_id, r.sequence" : page_clause));
    bind_filter(query, value);

    std::vector<RunRecord> runs;
    while (query.executeStep()) runs.push_back(read_run_row(query));
    if (runs.empty()) return runs;

    std::unordered_map<std::int64_t, RunRecord*> runs_by_id;
    for (RunRecord& run : runs) runs_by_id[run.id] = &run;
    const std::string run_ids =
        page_clause.empty()
            ? std::string()
            : " AND r.id IN (SELECT r.id FROM runs r WHERE " + where + page_clause + ")";
    SQLite::Statement metrics(db,
                              "SELECT m.run_id, m.name, m.value FROM metrics m "
                              "JOIN runs r ON r.id = m.run_id WHERE " +
                                  where + run_ids);
    bind_filter(metrics, value);
    while (metrics.executeStep()) {
        auto found = runs_by_id.find(metrics.getColumn(0).getInt64());
        if (found == runs_by_id.end()) continue;
        found->second->metrics[metrics.getColumn(1).getString()] = metrics.getColumn(2).getDouble();
    }
    return runs;
}

// Folds a succeeded run's metrics into metric_aggregates (Welford's update:
// every right-hand side reads the row's old values, as SQL defines).
void fold_into_aggregates(SQLite::Database& db, const RunRecord& run) {
    SQLite::Statement upsert(
        db,
        "INSERT INTO metric_aggregates (sweep_id, config_id, workload_name, partition_key, name, "
        "n, mean, m2, min, max, log_sum, log_n) "
        "SELECT sweep_id, config_id, workload_name, partition_key, ?2, 1, ?3, 0, ?3, ?3, ?4, ?5 "
        "FROM runs WHERE id = ?1 "
        "ON CONFLICT DO UPDATE SET n = n + 1, mean = mean + (excluded.mean - mean) / (n + 1), "
        "m2 = m2 + (excluded.mean - mean) * (excluded.mean - (mean + (excluded.mean - mean) / "
        "(n + 1))), min = MIN(min, excluded.min), max = MAX(max, excluded.max), "
        "log_sum = log_sum + excluded.log_sum, log_n = log_n + excluded.log_n");
    for (const auto& [name, value] : run.metrics) {
        upsert.bind(1, run.id);
        upsert.bind(2, name);
        upsert.bind(3, value);
        upsert.bind(4, value > 0 ? std::log(value) : 0.0);
        upsert.bind(5, value > 0 ? 1 : 0);
        upsert.exec();
        upsert.reset();
    }
}

Error newer_schema_error(const std::string& path, int stored_version, int known_version) {
    return make_error(errc::kConflict,
                      "database " + path + " has schema version " + std::to_string(stored_version) +
                          ", newer than the newest this disksweepd knows (" +
                          std::to_string(known_version) +
                          "): it was written by a newer disksweep; upgrade, or use another "
                          "database");
}

// Brings the schema from its stored version up to migrations.size(), one
// migration per IMMEDIATE transaction (re-reading the version inside it, so
// two processes opening a fresh file at once do not both migrate).
Status migrate(SQLite::Database& db, const std::string& path,
               std::span<const Migration> migrations) {
    const int known_version = static_cast<int>(migrations.size());
    for (;;) {
        SQLite::Transaction transaction(db, SQLite::TransactionBehavior::IMMEDIATE);
        const int current_version = db.execAndGet("PRAGMA user_version").getInt();
        if (current_version > known_version) {
            return newer_schema_error(path, current_version, known_version);
        }
        if (current_version == known_version) return ok_status();

        const Migration& migration = migrations[current_version];
        try {
            db.exec(std::string(migration.sql));
            db.exec("PRAGMA user_version = " + std::to_string(migration.version));
            transaction.commit();
        } catch (const SQLite::Exception& exception) {
            return sqlite_error("database " + path + ": migration " +
                                    std::to_string(migration.version) + " (" +
                                    std::string(migration.description) + ") failed",
                                exception);
        }
    }
}

// A new instance id: 8 lowercase hex digits from the kernel's random source.
// Unpredictable rather than derived from the host or path, so two databases
// (two daemons) get different ids even on one machine.
Result<std::string> random_instance_id() {
    std::array<unsigned char, 4> bytes{};
    if (::getrandom(bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) {
        return make_error(errc::kIo, std::string("getrandom: ") + std::strerror(errno));
    }
    static constexpr char kHexDigits[] = "0123456789abcdef";
    std::string id;
    for (const unsigned char byte : bytes) {
        id += kHexDigits[byte >> 4];
        id += kHexDigits[byte & 0x0f];
    }
    return id;
}

}  // namespace

std::span<const std::string_view> all_run_statuses() {
    return all_run_status_names();
}

std::span<const Migration> schema_migrations() {
    return kMigrations;
}

Store::Store(std::string path, std::unique_ptr<SQLite::Database> db)
    : path_(std::move(path)), db_(std::move(db)) {}

Store::~Store() = default;

Result<std::unique_ptr<Store>> Store::open(const std::string& path) {
    return open(path, schema_migrations());
}

Result<std::unique_ptr<Store>> Store::open(const std::string& path,
                                           std::span<const Migration> migrations) {
    for (std::size_t index = 0; index < migrations.size(); ++index) {
        if (migrations[index].version != static_cast<int>(index) + 1) {
            return make_error(errc::kInternal, "migration list out of order: entry " +
                                                   std::to_string(index) + " has version " +
                                                   std::to_string(migrations[index].version));
        }
    }
    return guarded("opening database " + path, [&]() -> Result<std::unique_ptr<Store>> {
        auto db = std::make_unique<SQLite::Database>(
            path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE, kBusyTimeoutMs);
        // Refuse a newer schema before touching the file (even the journal mode).
        const int stored_version = db->execAndGet("PRAGMA user_version").getInt();
        if (stored_version > static_cast<int>(migrations.size())) {
            return newer_schema_error(path, stored_version, static_cast<int>(migrations.size()));
        }
        // WAL: readers (API) do not block the writer (scheduler). The mode is
        // persistent; the pragma answers the mode in force.
        db->execAndGet("PRAGMA journal_mode = WAL");
        // Per connection, and a no-op inside a transaction: set before migrating.
        db->exec("PRAGMA foreign_keys = ON");
        // Reads map the file rather than copy every page through pread(2): a
        // comparison scans an index entry of each of a sweep's runs.
        db->execAndGet("PRAGMA mmap_size = " + std::to_string(kMmapBytes));
        DS_TRY(migrate(*db, path, migrations));
        return std::unique_ptr<Store>(new Store(path, std::move(db)));
    });
}

Result<int> Store::schema_version() {
    std::lock_guard lock(mutex_);
    return guarded("reading schema version of " + path_, [&]() -> Result<int> {
        return db_->execAndGet("PRAGMA user_version").getInt();
    });
}

Result<std::string> Store::instance_id() {
    std::lock_guard lock(mutex_);
    return guarded("reading the instance id of " + path_, [&]() -> Result<std::string> {
        // IMMEDIATE: two processes opening a new database at once store one id.
        SQLite::Transaction transaction(*db_, SQLite::TransactionBehavior::IMMEDIATE);
        SQLite::Statement stored(*db_, "SELECT instance_id FROM daemon_instance");
        if (stored.executeStep()) return stored.getColumn(0).getString();
        auto generated = random_instance_id();
        DS_TRY(generated);
        SQLite::Statement insert(
            *db_, "INSERT INTO daemon_instance (singleton, instance_id) VALUES (1, ?)");
        insert.bind(1, generated.value());
        insert.exec();
        transaction.commit();
        return generated;
    });
}

namespace {

// The sweep's row; returns its id.
std::int64_t insert_sweep_row(SQLite::Database& db, const SweepRecord& sweep,
                              std::size_t total_runs) {
    SQLite::Statement insert_sweep(
        db,
        "INSERT INTO sweeps (name, spec_toml, spec_source, status, created_at, started_at, "
        "finished_at, total_runs, dropped_json, varying_axes_json) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    insert_sweep.bind(1, sweep.name);
    insert_sweep.bind(2, sweep.spec_toml);
    insert_sweep.bind(3, sweep.spec_source);
    insert_sweep.bind(4, to_string(sweep.status));
    insert_sweep.bind(5, sweep.created_at);
    bind_text_or_null(insert_sweep, 6, sweep.started_at);
    bind_text_or_null(insert_sweep, 7, sweep.finished_at);
    insert_sweep.bind(8, static_cast<std::int64_t>(total_runs));
    insert_sweep.bind(9, dump_json(sweep.dropped.is_null() ? Json::array() : sweep.dropped));
    insert_sweep.bind(10,
                      dump_json(sweep.varying_axes.is_null() ? Json::array() : sweep.varying_axes));
    insert_sweep.exec();
    return db.getLastInsertRowid();
}

}  // namespace

Result<std::int64_t> Store::create_sweep(const SweepRecord& sweep,
                                         const std::vector<RunRecord>& planned_runs) {
    std::lock_guard lock(mutex_);
    return guarded("creating sweep '" + sweep.name + "'", [&]() -> Result<std::int64_t> {
        SQLite::Transaction transaction(*db_, SQLite::TransactionBehavior::IMMEDIATE);

        const std::int64_t sweep_id = insert_sweep_row(*db_, sweep, planned_runs.size());

        SQLite::Statement insert_config(
            *db_, "INSERT OR IGNORE INTO configurations (config_id, canonical_json) VALUES (?, ?)");
        SQLite::Statement stored_config(
            *db_, "SELECT canonical_json FROM configurations WHERE config_id = ?");
        SQLite::Statement insert_run(
            *db_,
            "INSERT INTO runs (sweep_id, sequence, repetition, config_id, workload_name, "
            "workload_json, status) VALUES (?, ?, ?, ?, ?, ?, 'pending')");

        std::set<std::string> checked_config_ids;
        for (const RunRecord& run : planned_runs) {
            if (run.config_id.empty()) {
                return make_error(
                    errc::kInvalidArgument,
                    "planned run " + std::to_string(run.sequence) + " has no config_id");
            }
            const std::string canonical = dump_json(run.config);
            // Every run's JSON is compared with the stored one, also the
            // second run of a config in this sweep: one id, one meaning.
            if (checked_config_ids.insert(run.config_id).second) {
                insert_config.bind(1, run.config_id);
                insert_config.bind(2, canonical);
                insert_config.exec();
                insert_config.reset();
            }
            stored_config.bind(1, run.config_id);
            stored_config.executeStep();
            const std::string stored = stored_config.getColumn(0).getString();
            stored_config.reset();
            if (stored != canonical) {
                return make_error(errc::kConflict,
                                  "configuration " + run.config_id +
                                      " is already stored with different settings: stored " +
                                      stored + ", planned run " + std::to_string(run.sequence) +
                                      " has " + canonical);
            }

            insert_run.bind(1, sweep_id);
            insert_run.bind(2, run.sequence);
            insert_run.bind(3, run.repetition);
            insert_run.bind(4, run.config_id);
            insert_run.bind(5, run.workload_name);
            insert_run.bind(6, dump_json(run.workload));
            insert_run.exec();
            insert_run.reset();
        }
        transaction.commit();
        return sweep_id;
    });
}

Result<SweepRecord> Store::get_sweep(std::int64_t sweep_id) {
    std::lock_guard lock(mutex_);
    return guarded("reading sweep " + std::to_string(sweep_id), [&]() -> Result<SweepRecord> {
        SQLite::Statement query(*db_, std::string(kSelectSweep) + " WHERE id = ?");
        query.bind(1, sweep_id);
        if (!query.executeStep()) return sweep_not_found(sweep_id);
        return read_sweep(query);
    });
}

Result<std::vector<SweepRecord>> Store::list_sweeps() {
    std::lock_guard lock(mutex_);
    return guarded("listing sweeps", [&]() -> Result<std::vector<SweepRecord>> {
        SQLite::Statement query(*db_, std::string(kSelectSweep) + " ORDER BY id");
        std::vector<SweepRecord> sweeps;
        while (query.executeStep()) sweeps.push_back(read_sweep(query));
        return sweeps;
    });
}

Status Store::set_sweep_status(std::int64_t sweep_id, SweepStatus status, const std::string& at) {
    std::lock_guard lock(mutex_);
    return guarded("setting status of sweep " + std::to_string(sweep_id), [&]() -> Status {
        std::string sql;
        bool binds_time = true;
        if (status == SweepStatus::kRunning) {
            sql =
                "UPDATE sweeps SET status = ?1, started_at = COALESCE(started_at, ?2) "
                "WHERE id = ?3";
        } else if (status == SweepStatus::kQueued) {
            sql = "UPDATE sweeps SET status = ?1 WHERE id = ?3";
            binds_time = false;
        } else {
            sql = "UPDATE sweeps SET status = ?1, finished_at = ?2 WHERE id = ?3";
        }
        SQLite::Statement update(*db_, sql);
        update.bind(1, to_string(status));
        if (binds_time) bind_text_or_null(update, 2, at);
        update.bind(3, sweep_id);
        if (update.exec() == 0) return sweep_not_found(sweep_id);
        return ok_status();
    });
}

Result<std::vector<RunRecord>> Store::list_runs(std::int64_t sweep_id, RawOutput raw_output) {
    std::lock_guard lock(mutex_);
    return guarded("listing runs of sweep " + std::to_string(sweep_id),
                   [&]() -> Result<std::vector<RunRecord>> {
                       if (!sweep_exists(*db_, sweep_id)) return sweep_not_found(sweep_id);
                       return query_runs(*db_, "r.sweep_id = ?", sweep_id, raw_output);
                   });
}

Result<RunRecord> Store::get_run(std::int64_t run_id) {
    std::lock_guard lock(mutex_);
    return guarded("reading run " + std::to_string(run_id), [&]() -> Result<RunRecord> {
        std::vector<RunRecord> runs = query_runs(*db_, "r.id = ?", run_id, RawOutput::kInclude);
        if (runs.empty()) return run_not_found(run_id);
        return std::move(runs.front());
    });
}

Status Store::mark_run_running(std::int64_t run_id, const std::string& vm_name,
                               const std::string& volume_name, const std::string& console_log,
                               const std::string& accel, const std::string& started_at) {
    std::lock_guard lock(mutex_);
    return guarded("marking run " + std::to_string(run_id) + " running", [&]() -> Status {
        SQLite::Statement update(*db_,
                                 "UPDATE runs SET status = 'running', vm_name = ?, "
                                 "volume_name = ?, console_log = ?, accel = ?, started_at = ? "
                                 "WHERE id = ? AND status = 'pending'");
        bind_text_or_null(update, 1, vm_name);
        bind_text_or_null(update, 2, volume_name);
        bind_text_or_null(update, 3, console_log);
        bind_text_or_null(update, 4, accel);
        bind_text_or_null(update, 5, started_at);
        update.bind(6, run_id);
        if (update.exec() == 0)
            return run_transition_error(*db_, run_id, to_string(RunStatus::kRunning));
        return ok_status();
    });
}

Status Store::finish_run(const RunRecord& run) {
    if (!is_final(run.status)) {
        return make_error(errc::kInvalidArgument,
                          "run " + std::to_string(run.id) + " cannot finish as '" +
                              to_string(run.status) +
                              "' (valid: succeeded, failed, timed_out, cancelled)");
    }
    for (const auto& [name, value] : run.metrics) {
        if (!std::isfinite(value)) {
            return make_error(
                errc::kInvalidArgument,
                "metric " + name + " of run " + std::to_string(run.id) + " is not a finite number");
        }
    }
    std::lock_guard lock(mutex_);
    return guarded("recording the outcome of run " + std::to_string(run.id), [&]() -> Status {
        SQLite::Transaction transaction(*db_, SQLite::TransactionBehavior::IMMEDIATE);
        SQLite::Statement update(
            *db_,
            "UPDATE runs SET status = ?, failure_reason = ?, timings_json = ?, versions_json = ?, "
            "applied_settings_json = ?, raw_output = ?, finished_at = ?, console_log = ?, "
            "accel = coalesce(?, accel) "
            "WHERE id = ? AND status IN ('pending', 'running')");
        update.bind(1, to_string(run.status));
        bind_text_or_null(update, 2, run.failure_reason);
        update.bind(3, dump_json(run.timings.is_null() ? Json::object() : run.timings));
        update.bind(4, dump_json(run.versions.is_null() ? Json::object() : run.versions));
        update.bind(
            5, dump_json(run.applied_settings.is_null() ? Json::object() : run.applied_settings));
        bind_text_or_null(update, 6, run.raw_output);
        bind_text_or_null(update, 7, run.finished_at);
        // The executor drops the console log of a clean run: keep the record true.
        bind_text_or_null(update, 8, run.console_log);
        // What the guest really ran with (the executor reads it from the
        // running guest); "" keeps what mark_run_running stored.
        bind_text_or_null(update, 9, run.accel);
        update.bind(10, run.id);
        if (update.exec() == 0) return run_transition_error(*db_, run.id, to_string(run.status));

        SQLite::Statement set_partition(
            *db_, "UPDATE runs SET partition_key = " DS_RUN_PARTITION_SQL " WHERE id = ?");
        set_partition.bind(1, run.id);
        set_partition.exec();

        SQLite::Statement clear_metrics(*db_, "DELETE FROM metrics WHERE run_id = ?");
        clear_metrics.bind(1, run.id);
        clear_metrics.exec();
        SQLite::Statement insert_metric(
            *db_, "INSERT INTO metrics (run_id, name, value) VALUES (?, ?, ?)");
        for (const auto& [name, value] : run.metrics) {
            insert_metric.bind(1, run.id);
            insert_metric.bind(2, name);
            insert_metric.bind(3, value);
            insert_metric.exec();
            insert_metric.reset();
        }
        if (run.status == RunStatus::kSucceeded) fold_into_aggregates(*db_, run);
        transaction.commit();
        return ok_status();
    });
}

Status Store::record_vm_handle(std::int64_t run_id, const std::string& host, const Json& handle) {
    std::lock_guard lock(mutex_);
    return guarded("recording the guest of run " + std::to_string(run_id), [&]() -> Status {
        SQLite::Statement update(*db_,
                                 "UPDATE runs SET vm_host = ?, vm_handle_json = ? "
                                 "WHERE id = ? AND status = 'running'");
        update.bind(1, host);
        update.bind(2, dump_json(handle));
        update.bind(3, run_id);
        if (update.exec() == 0) return run_transition_error(*db_, run_id, "given a guest");
        return ok_status();
    });
}

Status Store::clear_vm_handle(std::int64_t run_id) {
    std::lock_guard lock(mutex_);
    return guarded("clearing the guest of run " + std::to_string(run_id), [&]() -> Status {
        SQLite::Statement update(
            *db_, "UPDATE runs SET vm_host = NULL, vm_handle_json = NULL WHERE id = ?");
        update.bind(1, run_id);
        update.exec();
        return ok_status();
    });
}

Result<std::vector<RecordedVm>> Store::recorded_vms() {
    std::lock_guard lock(mutex_);
    return guarded("listing recorded guests", [&]() -> Result<std::vector<RecordedVm>> {
        SQLite::Statement query(*db_,
                                "SELECT id, coalesce(vm_name, ''), coalesce(vm_host, ''), "
                                "vm_handle_json FROM runs WHERE vm_handle_json IS NOT NULL "
                                "ORDER BY id");
        std::vector<RecordedVm> recorded;
        while (query.executeStep()) {
            recorded.push_back({query.getColumn(0).getInt64(), query.getColumn(1).getString(),
                                query.getColumn(2).getString(), json_column(query.getColumn(3))});
        }
        return recorded;
    });
}

Result<std::vector<RunRecord>> Store::runs_with_status(RunStatus status, RawOutput raw_output) {
    std::lock_guard lock(mutex_);
    return guarded("listing " + to_string(status) + " runs",
                   [&]() -> Result<std::vector<RunRecord>> {
                       return query_runs(*db_, "r.status = ?", to_string(status), raw_output);
                   });
}

Result<std::map<std::string, int>> Store::run_counts(std::int64_t sweep_id) {
    std::lock_guard lock(mutex_);
    return guarded("counting runs of sweep " + std::to_string(sweep_id),
                   [&]() -> Result<std::map<std::string, int>> {
                       if (!sweep_exists(*db_, sweep_id)) return sweep_not_found(sweep_id);
                       std::map<std::string, int> counts;
                       for (std::string_view status : all_run_status_names())
                           counts[std::string(status)] = 0;
                       SQLite::Statement query(
                           *db_,
                           "SELECT status, COUNT(*) FROM runs "
                           "WHERE sweep_id = ? AND superseded_by IS NULL GROUP BY status");
                       query.bind(1, sweep_id);
                       while (query.executeStep()) {
                           counts[query.getColumn(0).getString()] = query.getColumn(1).getInt();
                       }
                       return counts;
                   });
}

Status Store::cancel_pending_runs(std::int64_t sweep_id) {
    std::lock_guard lock(mutex_);
    return guarded("cancelling pending runs of sweep " + std::to_string(sweep_id), [&]() -> Status {
        if (!sweep_exists(*db_, sweep_id)) return sweep_not_found(sweep_id);
        SQLite::Statement update(*db_,
                                 "UPDATE runs SET status = 'cancelled', "
                                 "failure_reason = 'cancelled before it started' "
                                 "WHERE sweep_id = ? AND status = 'pending'");
        update.bind(1, sweep_id);
        update.exec();
        return ok_status();
    });
}

namespace {

// Step 1 of recover_interrupted_runs: 'running' runs become failed.
std::vector<std::int64_t> fail_runs_left_running(SQLite::Database& db, const std::string& at) {
    std::vector<std::int64_t> ids;
    SQLite::Statement running(db, "SELECT id FROM runs WHERE status = 'running' ORDER BY id");
    while (running.executeStep()) ids.push_back(running.getColumn(0).getInt64());
    SQLite::Statement update(db,
                             "UPDATE runs SET status = 'failed', failure_reason = ?, "
                             "finished_at = ? WHERE status = 'running'");
    update.bind(1, std::string(kInterruptedReason) + " (cleaned up at the next start)");
    bind_text_or_null(update, 2, at);
    update.exec();
    return ids;
}

struct InterruptedAttempt {
    std::int64_t id = 0;
    std::int64_t sweep_id = 0;
    int attempt = 1;
    std::string failure_reason;
};

// Current attempts that a stopping daemon interrupted, in sweeps that will
// be resumed and that the user did not cancel.
std::vector<InterruptedAttempt> interrupted_current_attempts(SQLite::Database& db) {
    SQLite::Statement query(db,
                            "SELECT r.id, r.sweep_id, r.attempt, r.failure_reason FROM runs r "
                            "JOIN sweeps s ON s.id = r.sweep_id "
                            "WHERE r.status = 'failed' AND r.superseded_by IS NULL "
                            "AND substr(r.failure_reason, 1, length(?1)) = ?1 "
                            "AND s.status IN ('queued', 'running') "
                            "AND NOT EXISTS (SELECT 1 FROM runs c WHERE c.sweep_id = r.sweep_id "
                            "                AND c.status = 'cancelled') "
                            "ORDER BY r.sweep_id, r.sequence");
    query.bind(1, std::string(kInterruptedReason));
    std::vector<InterruptedAttempt> found;
    while (query.executeStep()) {
        found.push_back({query.getColumn(0).getInt64(), query.getColumn(1).getInt64(),
                         query.getColumn(2).getInt(), query.getColumn(3).getString()});
    }
    return found;
}

// Step 2: the successor of `interrupted`, pending, after the sweep's last
// run. Returns its id.
std::int64_t add_next_attempt(SQLite::Database& db, const InterruptedAttempt& interrupted) {
    const std::int64_t next_id =
        db.execAndGet("SELECT COALESCE(MAX(id), 0) + 1 FROM runs").getInt64();
    SQLite::Statement supersede(db, "UPDATE runs SET superseded_by = ? WHERE id = ?");
    supersede.bind(1, next_id);
    supersede.bind(2, interrupted.id);
    supersede.exec();
    SQLite::Statement insert(
        db,
        "INSERT INTO runs (id, sweep_id, sequence, repetition, config_id, workload_name, "
        "workload_json, status, attempt) "
        "SELECT ?1, sweep_id, (SELECT MAX(sequence) + 1 FROM runs WHERE sweep_id = ?2), "
        "repetition, config_id, workload_name, workload_json, 'pending', attempt + 1 "
        "FROM runs WHERE id = ?3");
    insert.bind(1, next_id);
    insert.bind(2, interrupted.sweep_id);
    insert.bind(3, interrupted.id);
    insert.exec();
    return next_id;
}

// Step 3: says in the reason that the last allowed attempt is not repeated.
// Returns false when an earlier start already said so.
bool give_up_attempt(SQLite::Database& db, const InterruptedAttempt& interrupted,
                     int max_attempts) {
    const std::string note = "; attempt " + std::to_string(interrupted.attempt) + " of at most " +
                             std::to_string(max_attempts) + ", not run again";
    if (interrupted.failure_reason.find(note) != std::string::npos) return false;
    SQLite::Statement update(db, "UPDATE runs SET failure_reason = ? WHERE id = ?");
    update.bind(1, interrupted.failure_reason + note);
    update.bind(2, interrupted.id);
    update.exec();
    return true;
}

RunRecord read_run(SQLite::Database& db, std::int64_t run_id) {
    std::vector<RunRecord> runs = query_runs(db, "r.id = ?", run_id, RawOutput::kOmit);
    return runs.empty() ? RunRecord{} : std::move(runs.front());
}

// A sweep's succeeded current runs as their groups' series keys: run id ->
// (index into `series`, round).
struct SeriesRun {
    std::int64_t id = 0;
    std::size_t group = 0;  // index into SeriesRuns::groups
    int round = 0;
};

struct SeriesRuns {
    std::vector<MetricSeries> groups;  // one per group, metric and values empty
    std::vector<SeriesRun> by_id;      // ascending run id
};

bool same_group(const MetricSeries& series, const char* config, const char* workload,
                const char* partition) {
    return series.config_id == config && series.workload_name == workload &&
           series.partition_key == partition;
}

// Reads the runs from runs_current_by_group, where a group's runs are
// adjacent: a group's strings are copied once.
SeriesRuns read_series_runs(SQLite::Database& db, std::int64_t sweep_id) {
    SQLite::Statement query(
        db,
        "SELECT id, config_id, workload_name, coalesce(partition_key, ''), "
        "repetition FROM runs INDEXED BY runs_current_by_group "
        "WHERE sweep_id = ? AND status = 'succeeded' AND superseded_by IS NULL");
    query.bind(1, sweep_id);
    SeriesRuns runs;
    while (query.executeStep()) {
        const char* config = query.getColumn(1).getText();
        const char* workload = query.getColumn(2).getText();
        const char* partition = query.getColumn(3).getText();
        if (runs.groups.empty() || !same_group(runs.groups.back(), config, workload, partition))
            runs.groups.push_back(MetricSeries{config, workload, partition, "", {}});
        runs.by_id.push_back(
            {query.getColumn(0).getInt64(), runs.groups.size() - 1, query.getColumn(4).getInt()});
    }
    std::sort(runs.by_id.begin(), runs.by_id.end(),
              [](const SeriesRun& a, const SeriesRun& b) { return a.id < b.id; });
    return runs;
}

// Appends the (run_id, name, value) rows of `query`, which come by ascending
// run_id, that belong to `runs` to one series per (group, metric), creating
// series as they first appear: a merge of two id-ordered lists.
void add_metric_rows(SQLite::Statement& query, const SeriesRuns& runs,
                     std::vector<std::map<std::string, std::size_t, std::less<>>>& group_series,
                     std::vector<MetricSeries>& series) {
    std::size_t next = 0;
    while (query.executeStep()) {
        const std::int64_t id = query.getColumn(0).getInt64();
        while (next < runs.by_id.size() && runs.by_id[next].id < id) ++next;
        if (next == runs.by_id.size()) break;
        if (runs.by_id[next].id != id) continue;  // another sweep's, or not succeeded
        const SeriesRun& run = runs.by_id[next];
        const std::string_view metric = query.getColumn(1).getText();
        auto found = group_series[run.group].find(metric);
        if (found == group_series[run.group].end()) {
            found = group_series[run.group].emplace(std::string(metric), series.size()).first;
            series.push_back(runs.groups[run.group]);
            series.back().metric = std::string(metric);
        }
        series[found->second].values.push_back({run.round, query.getColumn(2).getDouble()});
    }
}

// The series of the named metrics (all when `metrics` is empty), each in
// round order: two range scans (the runs, then each metric's values) joined
// here, not a lookup per run.
std::vector<MetricSeries> read_metric_series(SQLite::Database& db, std::int64_t sweep_id,
                                             const std::vector<std::string>& metrics) {
    const SeriesRuns runs = read_series_runs(db, sweep_id);
    std::vector<std::map<std::string, std::size_t, std::less<>>> group_series(runs.groups.size());
    std::vector<MetricSeries> series;
    if (runs.by_id.empty()) return series;
    const std::int64_t first_id = runs.by_id.front().id;
    const std::int64_t last_id = runs.by_id.back().id;
    if (metrics.empty()) {
        SQLite::Statement query(db,
                                "SELECT run_id, name, value FROM metrics "
                                "WHERE run_id BETWEEN ? AND ? ORDER BY run_id");
        query.bind(1, first_id);
        query.bind(2, last_id);
        add_metric_rows(query, runs, group_series, series);
    }
    for (const std::string& metric : metrics) {
        SQLite::Statement query(
            db,
            "SELECT run_id, name, value FROM metrics INDEXED BY metrics_by_name "
            "WHERE name = ? AND run_id BETWEEN ? AND ? ORDER BY run_id");
        query.bind(1, metric);
        query.bind(2, first_id);
        query.bind(3, last_id);
        add_metric_rows(query, runs, group_series, series);
    }
    // By run id above; a rerun attempt has a later id than the next round's runs.
    for (MetricSeries& one : series)
        std::stable_sort(
            one.values.begin(), one.values.end(),
            [](const RoundValue& a, const RoundValue& b) { return a.round < b.round; });
    return series;
}
}  // namespace

Result<Store::InterruptedRuns> Store::recover_interrupted_runs(int max_attempts,
                                                               const std::string& at) {
    if (max_attempts < 1) {
        return make_error(errc::kInvalidArgument, "max_attempts must be at least 1");
    }
    std::lock_guard lock(mutex_);
    return guarded("recovering interrupted runs", [&]() -> Result<InterruptedRuns> {
        SQLite::Transaction transaction(*db_, SQLite::TransactionBehavior::IMMEDIATE);
        const std::vector<std::int64_t> failed_ids = fail_runs_left_running(*db_, at);
        std::vector<std::int64_t> new_ids, given_up_ids;
        for (const InterruptedAttempt& interrupted : interrupted_current_attempts(*db_)) {
            if (interrupted.attempt < max_attempts) {
                new_ids.push_back(add_next_attempt(*db_, interrupted));
            } else if (give_up_attempt(*db_, interrupted, max_attempts)) {
                given_up_ids.push_back(interrupted.id);
            }
        }
        transaction.commit();
        InterruptedRuns recovered;
        for (std::int64_t id : failed_ids) recovered.marked_failed.push_back(read_run(*db_, id));
        for (std::int64_t id : new_ids) recovered.new_attempts.push_back(read_run(*db_, id));
        for (std::int64_t id : given_up_ids) recovered.given_up.push_back(read_run(*db_, id));
        return recovered;
    });
}

Result<Json> Store::get_configuration(const std::string& config_id) {
    std::lock_guard lock(mutex_);
    return guarded("reading configuration " + config_id, [&]() -> Result<Json> {
        SQLite::Statement query(*db_,
                                "SELECT canonical_json FROM configurations WHERE config_id = ?");
        query.bind(1, config_id);
        if (!query.executeStep()) {
            return make_error(errc::kNotFound, "configuration " + config_id + " not found");
        }
        return json_column(query.getColumn(0));
    });
}

Result<std::vector<RunRecord>> Store::runs_for_config(const std::string& config_id,
                                                      RawOutput raw_output) {
    std::lock_guard lock(mutex_);
    return guarded("listing runs of configuration " + config_id,
                   [&]() -> Result<std::vector<RunRecord>> {
                       return query_runs(*db_, "r.config_id = ?", config_id, raw_output);
                   });
}

Result<RunPage> Store::list_runs_page(std::int64_t sweep_id, int after_sequence, int limit,
                                      RawOutput raw_output) {
    std::lock_guard lock(mutex_);
    return guarded("listing runs of sweep " + std::to_string(sweep_id), [&]() -> Result<RunPage> {
        if (!sweep_exists(*db_, sweep_id)) return sweep_not_found(sweep_id);
        // One more than asked for tells whether another page follows.
        std::string page = " AND r.sequence > " + std::to_string(after_sequence) +
                           " ORDER BY r.sweep_id, r.sequence";
        if (limit > 0) page += " LIMIT " + std::to_string(limit + 1);
        RunPage result;
        result.runs = query_runs(*db_, "r.sweep_id = ?1", sweep_id, raw_output, page);
        if (limit > 0 && result.runs.size() > static_cast<std::size_t>(limit)) {
            result.runs.pop_back();
            result.next_after = result.runs.back().sequence;
        }
        return result;
    });
}

Result<std::vector<RunGroup>> Store::run_groups(std::int64_t sweep_id) {
    std::lock_guard lock(mutex_);
    return guarded(
        "grouping runs of sweep " + std::to_string(sweep_id),
        [&]() -> Result<std::vector<RunGroup>> {
            if (!sweep_exists(*db_, sweep_id)) return sweep_not_found(sweep_id);
            SQLite::Statement query(
                *db_,
                "SELECT config_id, workload_name, coalesce(partition_key, ''), status, COUNT(*), "
                "MIN(sequence) FROM runs INDEXED BY runs_current_by_group "
                "WHERE sweep_id = ? AND superseded_by IS NULL "
                "GROUP BY status, config_id, workload_name, partition_key");
            query.bind(1, sweep_id);
            std::vector<RunGroup> groups;
            std::map<std::tuple<std::string, std::string, std::string>, std::size_t> index;
            while (query.executeStep()) {
                auto key =
                    std::make_tuple(query.getColumn(0).getString(), query.getColumn(1).getString(),
                                    query.getColumn(2).getString());
                auto [found, inserted] = index.try_emplace(key, groups.size());
                if (inserted) {
                    RunGroup group{std::get<0>(key), std::get<1>(key), std::get<2>(key), {}, 0};
                    for (std::string_view status : all_run_status_names())
                        group.counts[std::string(status)] = 0;
                    group.first_sequence = query.getColumn(5).getInt();
                    groups.push_back(std::move(group));
                }
                RunGroup& group = groups[found->second];
                group.counts[query.getColumn(3).getString()] += query.getColumn(4).getInt();
                group.first_sequence = std::min(group.first_sequence, query.getColumn(5).getInt());
            }
            std::stable_sort(groups.begin(), groups.end(),
                             [](const RunGroup& a, const RunGroup& b) {
                                 return a.first_sequence < b.first_sequence;
                             });
            return groups;
        });
}

Result<std::vector<MetricAggregate>> Store::metric_aggregates(std::int64_t sweep_id) {
    std::lock_guard lock(mutex_);
    return guarded("reading metric aggregates of sweep " + std::to_string(sweep_id),
                   [&]() -> Result<std::vector<MetricAggregate>> {
                       SQLite::Statement query(
                           *db_,
                           "SELECT config_id, workload_name, partition_key, name, n, mean, "
                           "m2, min, max, log_sum, log_n FROM metric_aggregates "
                           "WHERE sweep_id = ?");
                       query.bind(1, sweep_id);
                       std::vector<MetricAggregate> aggregates;
                       while (query.executeStep()) {
                           MetricAggregate aggregate;
                           aggregate.config_id = query.getColumn(0).getString();
                           aggregate.workload_name = query.getColumn(1).getString();
                           aggregate.partition_key = query.getColumn(2).getString();
                           aggregate.metric = query.getColumn(3).getString();
                           aggregate.moments = Moments{
                               query.getColumn(4).getInt(),    query.getColumn(5).getDouble(),
                               query.getColumn(6).getDouble(), query.getColumn(7).getDouble(),
                               query.getColumn(8).getDouble(), query.getColumn(9).getDouble(),
                               query.getColumn(10).getInt()};
                           aggregates.push_back(std::move(aggregate));
                       }
                       return aggregates;
                   });
}

Result<std::vector<MetricSeries>> Store::metric_series(std::int64_t sweep_id,
                                                       const std::vector<std::string>& metrics) {
    std::lock_guard lock(mutex_);
    return guarded("reading metric values of sweep " + std::to_string(sweep_id),
                   [&]() -> Result<std::vector<MetricSeries>> {
                       return read_metric_series(*db_, sweep_id, metrics);
                   });
}

Result<std::map<std::string, Json>> Store::sweep_workloads(std::int64_t sweep_id) {
    std::lock_guard lock(mutex_);
    return guarded(
        "reading workloads of sweep " + std::to_string(sweep_id),
        [&]() -> Result<std::map<std::string, Json>> {
            // A name means one workload per sweep, so any run of it will do:
            // seek the planned-run index (sweep, config, workload, ...) from
            // one (config, workload) pair to the next, a step per pair rather
            // than a row per run. (A row value "(config, workload) > (?, ?)"
            // would walk the runs between pairs; two plain seeks do not.)
            const char* const pair_columns =
                "SELECT config_id, workload_name, id FROM runs "
                "INDEXED BY runs_attempt_of_planned_run WHERE sweep_id = ? ";
            SQLite::Statement next_workload(
                *db_, std::string(pair_columns) +
                          "AND config_id = ? AND workload_name > ? ORDER BY workload_name LIMIT 1");
            SQLite::Statement next_config(
                *db_, std::string(pair_columns) +
                          "AND config_id > ? ORDER BY config_id, workload_name LIMIT 1");
            SQLite::Statement workload_of(*db_, "SELECT workload_json FROM runs WHERE id = ?");
            std::map<std::string, Json> workloads;
            std::string config;
            std::string name;
            auto step = [&](SQLite::Statement& seek, bool with_name) {
                seek.reset();
                seek.bind(1, sweep_id);
                seek.bind(2, config);
                if (with_name) seek.bind(3, name);
                return seek.executeStep();
            };
            for (;;) {
                SQLite::Statement* found = &next_workload;
                if (config.empty() || !step(next_workload, true)) {
                    if (!step(next_config, false)) break;
                    found = &next_config;
                }
                config = found->getColumn(0).getString();
                name = found->getColumn(1).getString();
                if (workloads.count(name)) continue;
                workload_of.reset();
                workload_of.bind(1, found->getColumn(2).getInt64());
                if (workload_of.executeStep())
                    workloads[name] = json_column(workload_of.getColumn(0));
            }
            return workloads;
        });
}

Status Store::add_round(std::int64_t sweep_id, const Json& decision,
                        const std::vector<RunRecord>& runs) {
    std::lock_guard lock(mutex_);
    return guarded("adding a round to sweep " + std::to_string(sweep_id), [&]() -> Status {
        SQLite::Transaction transaction(*db_, SQLite::TransactionBehavior::IMMEDIATE);
        if (!sweep_exists(*db_, sweep_id)) return sweep_not_found(sweep_id);
        SQLite::Statement last(*db_,
                               "SELECT coalesce(MAX(sequence), -1) FROM runs WHERE sweep_id = ?");
        last.bind(1, sweep_id);
        last.executeStep();
        int sequence = last.getColumn(0).getInt() + 1;
        SQLite::Statement insert_run(
            *db_,
            "INSERT INTO runs (sweep_id, sequence, repetition, config_id, workload_name, "
            "workload_json, status) VALUES (?, ?, ?, ?, ?, ?, 'pending')");
        for (const RunRecord& run : runs) {
            insert_run.bind(1, sweep_id);
            insert_run.bind(2, sequence++);
            insert_run.bind(3, run.repetition);
            insert_run.bind(4, run.config_id);
            insert_run.bind(5, run.workload_name);
            insert_run.bind(6, dump_json(run.workload));
            insert_run.exec();
            insert_run.reset();
        }
        SQLite::Statement update(
            *db_,
            "UPDATE sweeps SET total_runs = total_runs + ?, round_decisions_json = "
            "json_insert(round_decisions_json, '$[#]', json(?)) WHERE id = ?");
        update.bind(1, static_cast<std::int64_t>(runs.size()));
        update.bind(2, dump_json(decision));
        update.bind(3, sweep_id);
        update.exec();
        transaction.commit();
        return ok_status();
    });
}

namespace {
Json text_or_null(const std::string& value) {
    return value.empty() ? Json(nullptr) : Json(value);
}
}  // namespace

Json to_json(const SweepRecord& sweep) {
    return Json{
        {"id", sweep.id},
        {"name", sweep.name},
        {"status", to_string(sweep.status)},
        {"created_at", text_or_null(sweep.created_at)},
        {"started_at", text_or_null(sweep.started_at)},
        {"finished_at", text_or_null(sweep.finished_at)},
        {"total_runs", sweep.total_runs},
        {"spec_source", sweep.spec_source},
        {"spec_toml", sweep.spec_toml},
        {"dropped", sweep.dropped},
        {"varying_axes", sweep.varying_axes},
    };
}

Json to_json(const RunRecord& run, bool include_raw_output) {
    Json json{
        {"id", run.id},
        {"sweep_id", run.sweep_id},
        {"sequence", run.sequence},
        {"repetition", run.repetition},
        {"attempt", run.attempt},
        {"superseded_by", run.superseded_by == 0 ? Json(nullptr) : Json(run.superseded_by)},
        {"config_id", run.config_id},
        {"config", run.config},
        {"workload_name", run.workload_name},
        {"workload", run.workload},
        {"status", to_string(run.status)},
        {"failure_reason", text_or_null(run.failure_reason)},
        {"accel", text_or_null(run.accel)},
        {"vm_name", text_or_null(run.vm_name)},
        {"volume_name", text_or_null(run.volume_name)},
        {"console_log", text_or_null(run.console_log)},
        {"started_at", text_or_null(run.started_at)},
        {"finished_at", text_or_null(run.finished_at)},
        {"timings", run.timings},
        {"versions", run.versions},
        {"applied_settings", run.applied_settings},
        {"metrics", Json(run.metrics)},
    };
    if (include_raw_output) json["raw_output"] = run.raw_output;
    return json;
}

}  // namespace ds
