// The store's sweeps: creating one with its planned runs, its status, its
// adaptive rounds and its runs' counts.
#include <SQLiteCpp/SQLiteCpp.h>

#include <set>

#include "daemon/store/store.h"
#include "daemon/store/store_sql.h"

namespace ds {
using namespace store_sql;
namespace {

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

// The one statement that stores a planned run as pending, for a new sweep's
// runs and an adaptive round's alike.
SQLite::Statement pending_run_insert(SQLite::Database& db) {
    return SQLite::Statement(
        db,
        "INSERT INTO runs (sweep_id, sequence, repetition, config_id, workload_name, "
        "workload_json, status) VALUES (?, ?, ?, ?, ?, ?, 'pending')");
}

void insert_pending_run(SQLite::Statement& insert, std::int64_t sweep_id, int sequence,
                        const RunRecord& run) {
    insert.bind(1, sweep_id);
    insert.bind(2, sequence);
    insert.bind(3, run.repetition);
    insert.bind(4, run.config_id);
    insert.bind(5, run.workload_name);
    insert.bind(6, dump_json(to_json(run.workload)));
    insert.exec();
    insert.reset();
}

constexpr const char* kSelectSweep =
    "SELECT id, name, spec_toml, spec_source, status, created_at, started_at, finished_at, "
    "total_runs, dropped_json, varying_axes_json, round_decisions_json FROM sweeps";

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
        SQLite::Statement insert_run = pending_run_insert(*db_);

        std::set<std::string> checked_config_ids;
        for (const RunRecord& run : planned_runs) {
            if (run.config_id.empty()) {
                return make_error(
                    errc::kInvalidArgument,
                    "planned run " + std::to_string(run.sequence) + " has no config_id");
            }
            const std::string canonical = dump_json(to_json(run.config));
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

            insert_pending_run(insert_run, sweep_id, run.sequence, run);
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
        SQLite::Statement insert_run = pending_run_insert(*db_);
        for (const RunRecord& run : runs) {
            insert_pending_run(insert_run, sweep_id, sequence++, run);
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

}  // namespace ds
