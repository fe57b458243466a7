// Kind `pgbench` (docs/spec.md): PostgreSQL's pgbench against a cluster of
// the runner's own on the disk under test (postgresql_session.h); `pgbench
// -i` is the kind's preparation step (golden volumes). The output carries
// pgbench's summary and progress lines as it printed them, and the latency
// percentiles the runner reads from pgbench's per-transaction log
// (common/pgbench_output.h parses and checks both on the host).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "guestagent/mariadb_workload.h"
#include "guestagent/postgresql_session.h"
#include "guestagent/workload.h"

namespace ds::agent {
namespace {

namespace fs = std::filesystem;

constexpr const char* kKind = "pgbench";
constexpr std::string_view kBuiltins[] = {"tpcb-like", "simple-update", "select-only"};
constexpr const char* kLogPrefix = "pgbench_log";

struct PgbenchPlan {
    long long scale = 10;
    long long clients = 4;
    long long jobs = 1;
    long long time_s = 60;
    std::string builtin = "tpcb-like";
};

Result<PgbenchPlan> pgbench_plan(const Json& params) {
    PgbenchPlan plan;
    DS_ASSIGN_OR_RETURN(plan.scale, mariadb::integer_param(kKind, params, "scale", 1, plan.scale));
    DS_ASSIGN_OR_RETURN(plan.clients,
                        mariadb::integer_param(kKind, params, "clients", 1, plan.clients));
    DS_ASSIGN_OR_RETURN(plan.jobs, mariadb::integer_param(kKind, params, "jobs", 1, plan.jobs));
    if (plan.jobs > plan.clients) {
        return mariadb::invalid_param(kKind, "jobs",
                                      "is " + std::to_string(plan.jobs) + ", more than clients (" +
                                          std::to_string(plan.clients) +
                                          "): pgbench gives each thread at least one client");
    }
    if (params.contains("time")) {
        const auto seconds = mariadb::whole_seconds(params["time"]);
        if (!seconds) {
            return mariadb::invalid_param(kKind, "time",
                                          "is " + params["time"].dump() +
                                              ", expected a duration of at least 1 s (\"10s\", "
                                              "\"2m\" or an integer of seconds)");
        }
        plan.time_s = *seconds;
    }
    if (params.contains("builtin")) {
        const Json& builtin = params["builtin"];
        if (!builtin.is_string() || std::find(std::begin(kBuiltins), std::end(kBuiltins),
                                              builtin.get<std::string>()) == std::end(kBuiltins)) {
            return mariadb::invalid_param(
                kKind, "builtin",
                "is " + builtin.dump() + ", expected tpcb-like, simple-update or select-only");
        }
        plan.builtin = builtin.get<std::string>();
    }
    return plan;
}

// `pgbench -i` (the tables, loaded, vacuumed, keyed); its seconds.
Result<double> pgbench_initialize(postgresql::Session& session, const PgbenchPlan& plan) {
    const auto start = session.now();
    const std::string out = session.paths().dir + "/pgbench-init.out";
    auto ran = session.run(
        to_file(session.paths().dir, out,
                session.client("pgbench", {"-i", "-q", "-s", std::to_string(plan.scale)})),
        "pgbench -i (scale " + std::to_string(plan.scale) + ")");
    if (!ran) return ran.error();
    if (ran->exit_code != 0) return session.tool_failure("pgbench -i", *ran, read_file(out));
    return seconds_between(start, session.now());
}

// The value at fraction `q` of sorted `values` (nearest rank).
double percentile(const std::vector<double>& sorted, double q) {
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
    return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

// Latencies (µs, the third field of each line) of pgbench's per-transaction
// logs DIR/pgbench_log.PID[.THREAD] -> {"count", "p50", "p95", "p99",
// "max"} in µs; {"count": 0} without lines.
Json latency_percentiles(const std::string& dir) {
    std::vector<double> latencies;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        if (entry.path().filename().string().rfind(std::string(kLogPrefix) + ".", 0) != 0) continue;
        std::ifstream log(entry.path());
        long long client = 0, transaction = 0;
        double latency_us = 0;
        std::string rest;
        while (log >> client >> transaction >> latency_us && std::getline(log, rest)) {
            latencies.push_back(latency_us);
        }
    }
    if (latencies.empty()) return Json{{"count", 0}};
    std::sort(latencies.begin(), latencies.end());
    return Json{{"count", latencies.size()},
                {"p50", percentile(latencies, 0.50)},
                {"p95", percentile(latencies, 0.95)},
                {"p99", percentile(latencies, 0.99)},
                {"max", latencies.back()}};
}

// pgbench's progress lines ("progress: 1.0 s, 1667.6 tps, lat 2.151 ms
// ..."), which it prints on stderr.
std::string progress_lines(const std::string& stderr_text) {
    std::string lines;
    std::size_t start = 0;
    while (start < stderr_text.size()) {
        std::size_t end = stderr_text.find('\n', start);
        if (end == std::string::npos) end = stderr_text.size();
        if (stderr_text.compare(start, 9, "progress:") == 0)
            lines += stderr_text.substr(start, end - start) + "\n";
        start = end + 1;
    }
    return lines;
}

}  // namespace

Status check_pgbench_params(const Json& params) {
    // check_param_names also holds `server` to the common shape of a
    // server's settings; PostgreSQL's own rules follow.
    DS_TRY(mariadb::check_param_names(kKind, params,
                                      {"server", "scale", "clients", "jobs", "time", "builtin"}));
    if (params.contains("server"))
        DS_TRY(postgresql::check_server_settings(kKind, params["server"]));
    auto plan = pgbench_plan(params);
    if (!plan) return plan.error();
    return ok_status();
}

Result<WorkloadOutput> run_pgbench(const Workload& workload, WorkloadContext& ctx) {
    DS_TRY(check_pgbench_params(workload.params));
    DS_ASSIGN_OR_RETURN(const PgbenchPlan plan, pgbench_plan(workload.params));
    const Json server = workload.params.value("server", Json::object());
    postgresql::Session session(ctx, "pgbench workload " + workload.name);

    WorkloadOutput result;
    std::string version;
    DS_TRY(session.start_server(server, result.readback, version));
    double prepare_s = 0;
    if (ctx.dataset != DatasetMode::kPrepared) {
        DS_ASSIGN_OR_RETURN(prepare_s, pgbench_initialize(session, plan));
    }
    if (ctx.dataset == DatasetMode::kPrepareOnly) {
        DS_TRY(session.stop_server());
        result.output = Json{{"server_version", version}, {"prepare_s", prepare_s}};
        return result;
    }

    const std::string dir = session.paths().dir;
    const std::string out = dir + "/pgbench-run.out";
    const auto run_argv =
        session.client("pgbench", {"-b", plan.builtin, "-c", std::to_string(plan.clients), "-j",
                                   std::to_string(plan.jobs), "-T", std::to_string(plan.time_s),
                                   "-P", "1", "--log", "--log-prefix=" + dir + "/" + kLogPrefix});
    auto ran = session.run(to_file(dir, out, run_argv), "pgbench run", "",
                           static_cast<double>(plan.time_s));
    if (!ran) return ran.error();
    const std::string summary = read_file(out);
    if (ran->exit_code != 0) return session.tool_failure("pgbench", *ran, summary);
    DS_TRY(session.stop_server());
    result.output = Json{{"stdout", summary},
                         {"progress", progress_lines(ran->stderr_text)},
                         {"latency_us", latency_percentiles(dir)},
                         {"server_version", version},
                         {"prepare_s", prepare_s},
                         {"builtin", plan.builtin}};
    if (ctx.dataset == DatasetMode::kPrepared) result.output["dataset"] = "prepared";
    session.report("pgbench run finished", 1.0);
    return result;
}

}  // namespace ds::agent
