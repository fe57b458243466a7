// The store's runs: reading them, their lifecycle from pending to finished
// (with the comparison's aggregates folded as they finish), their guests'
// recorded handles, and the runs of a configuration across sweeps.
#include <SQLiteCpp/SQLiteCpp.h>

#include <cmath>

#include "daemon/store/store.h"
#include "daemon/store/store_sql.h"

namespace ds {
using namespace store_sql;
namespace {

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

}  // namespace

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

}  // namespace ds
