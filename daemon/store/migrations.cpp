// The store's schema as its migrations (Store::open applies them; the
// schema is written down in docs/schema.md).
#include <array>

#include "daemon/store/store.h"

namespace ds {
namespace {

// Schema history. Append only: a released migration is never edited, a change
// is a new migration (see docs/schema.md).
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
    // DS_RUN_PARTITION_SQL (runs.cpp) was when this migration was released: released
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

}  // namespace

std::span<const Migration> schema_migrations() {
    return kMigrations;
}

}  // namespace ds
