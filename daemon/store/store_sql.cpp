#include "daemon/store/store_sql.h"

#include <sqlite3.h>

#include <stdexcept>
#include <unordered_map>
#include <utility>

namespace ds::store_sql {
namespace {

// As sweep_status_column (store_sql.h), for a run's status.
RunStatus run_status_column(const SQLite::Column& column) {
    const std::string text = column.getString();
    if (auto status = parse_run_status(text)) return *status;
    throw std::runtime_error("unknown run status '" + text + "' stored in the database");
}

void bind_filter(SQLite::Statement& statement, const RunFilterValue& value) {
    if (const auto* number = std::get_if<std::int64_t>(&value)) {
        statement.bind(1, *number);
    } else {
        statement.bind(1, std::get<std::string>(value));
    }
}

// A run's stored configuration or workload, decoded: a value that no longer
// decodes was written by something else, so it throws (guarded() turns that
// into errc::kInternal) naming the run and the field.
template <typename T>
T decoded_column(std::int64_t run_id, const char* field, const SQLite::Column& column,
                 Result<T> (*decode)(const Json&)) {
    Result<T> decoded = decode(json_column(column));
    if (!decoded.ok()) {
        throw std::runtime_error("run " + std::to_string(run_id) + ": stored " + field +
                                 " does not decode: " + decoded.error().message);
    }
    return std::move(decoded).value();
}

// One row of query_runs' SELECT (its columns in that order).
RunRecord read_run_row(SQLite::Statement& row) {
    RunRecord run;
    run.id = row.getColumn(0).getInt64();
    run.sweep_id = row.getColumn(1).getInt64();
    run.sequence = row.getColumn(2).getInt();
    run.repetition = row.getColumn(3).getInt();
    run.config_id = row.getColumn(4).getString();
    run.config = decoded_column(run.id, "config", row.getColumn(5), &storage_config_from_json);
    run.workload_name = row.getColumn(6).getString();
    run.workload = decoded_column(run.id, "workload", row.getColumn(7), &workload_from_json);
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

}  // namespace

SweepStatus sweep_status_column(const SQLite::Column& column) {
    const std::string text = column.getString();
    if (auto status = parse_sweep_status(text)) return *status;
    throw std::runtime_error("unknown sweep status '" + text + "' stored in the database");
}

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

std::string dump_json(const Json& value) {
    return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

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

Error run_transition_error(SQLite::Database& db, std::int64_t run_id, std::string_view wanted) {
    SQLite::Statement query(db, "SELECT status FROM runs WHERE id = ?");
    query.bind(1, run_id);
    if (!query.executeStep()) return run_not_found(run_id);
    return make_error(errc::kConflict, "run " + std::to_string(run_id) + " is " +
                                           query.getColumn(0).getString() + ", cannot become " +
                                           std::string(wanted));
}

std::vector<RunRecord> query_runs(SQLite::Database& db, const std::string& where,
                                  const RunFilterValue& value, RawOutput raw_output,
                                  const std::string& page_clause) {
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

RunRecord read_run(SQLite::Database& db, std::int64_t run_id) {
    std::vector<RunRecord> runs = query_runs(db, "r.id = ?", run_id, RawOutput::kOmit);
    return runs.empty() ? RunRecord{} : std::move(runs.front());
}

}  // namespace ds::store_sql
