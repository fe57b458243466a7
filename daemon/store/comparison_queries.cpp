// The store's comparison queries (daemon/compare/compare.h): a sweep's run
// groups, its metrics' aggregates and series, and its workloads.
#include <SQLiteCpp/SQLiteCpp.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "daemon/store/store.h"
#include "daemon/store/store_sql.h"

namespace ds {
using namespace store_sql;
namespace {

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

}  // namespace ds
