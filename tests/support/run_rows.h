// A sweep's runs as its database holds them, for tests that check what a
// real daemon stored (read-only, straight from SQLite, not through the API).
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>

#include <map>
#include <string>
#include <vector>

#include "common/result.h"

namespace ds::test {

struct RunRow {
    std::string config_id;
    std::string status;
    std::string failure_reason;
    std::string workload;
    std::string volume_name;
    Json config;   // the configuration's canonical JSON
    Json applied;  // applied_settings_json
    Json timings;
    std::map<std::string, double> metrics;
};

// Every run of the sweep, in execution order.
inline std::vector<RunRow> runs_of_sweep(const std::string& database, int sweep_id) {
    SQLite::Database db(database, SQLite::OPEN_READONLY);
    SQLite::Statement query(db,
                            "SELECT r.id, r.status, COALESCE(r.failure_reason, ''), "
                            "r.workload_name, COALESCE(r.volume_name, ''), c.canonical_json, "
                            "r.applied_settings_json, r.timings_json, r.config_id "
                            "FROM runs r JOIN configurations c USING (config_id) "
                            "WHERE r.sweep_id = ? ORDER BY r.sequence");
    query.bind(1, sweep_id);
    std::vector<RunRow> rows;
    while (query.executeStep()) {
        RunRow row;
        const auto run_id = query.getColumn(0).getInt64();
        row.status = query.getColumn(1).getString();
        row.failure_reason = query.getColumn(2).getString();
        row.workload = query.getColumn(3).getString();
        row.volume_name = query.getColumn(4).getString();
        row.config = Json::parse(query.getColumn(5).getString());
        row.applied = Json::parse(query.getColumn(6).getString());
        row.timings = Json::parse(query.getColumn(7).getString());
        row.config_id = query.getColumn(8).getString();
        SQLite::Statement metrics(db, "SELECT name, value FROM metrics WHERE run_id = ?");
        metrics.bind(1, run_id);
        while (metrics.executeStep())
            row.metrics[metrics.getColumn(0).getString()] = metrics.getColumn(1).getDouble();
        rows.push_back(std::move(row));
    }
    return rows;
}

}  // namespace ds::test
