// Start-up recovery of the runs a stopped daemon interrupted
// (Store::recover_interrupted_runs).
#include <SQLiteCpp/SQLiteCpp.h>

#include "daemon/store/store.h"
#include "daemon/store/store_sql.h"

namespace ds {
using namespace store_sql;
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

}  // namespace ds
