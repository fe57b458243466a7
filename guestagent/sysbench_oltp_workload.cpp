// Kind `sysbench-oltp` (docs/spec.md): sysbench's OLTP tests against a
// MariaDB server of the runner's own on the disk under test; its `prepare`
// is the kind's preparation step (golden volumes).
#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "common/clock.h"
#include "guestagent/mariadb_session.h"
#include "guestagent/workload.h"

namespace ds::agent {
namespace {

using namespace mariadb;

constexpr std::string_view kSysbenchTests[] = {
    "oltp_read_write", "oltp_read_only",    "oltp_write_only",       "oltp_point_select",
    "oltp_insert",     "oltp_update_index", "oltp_update_non_index", "oltp_delete"};

// `sysbench ... prepare` (the tables, loaded); its seconds.
Result<double> sysbench_prepare(Session& session, const std::vector<std::string>& common) {
    const std::string dir = session.paths().dir;
    const std::string prepare_out = dir + "/sysbench-prepare.out";
    const auto prepare_start = session.now();
    auto prepare_argv = common;
    prepare_argv.push_back("prepare");
    auto prepared =
        session.run(to_file(dir, prepare_out, prepare_argv), "sysbench prepare", prepare_out);
    if (!prepared) return prepared.error();
    if (prepared->exit_code != 0) {
        return session.tool_failure("sysbench prepare", *prepared, read_file(prepare_out));
    }
    return seconds_between(prepare_start, session.now());
}

}  // namespace

Status check_sysbench_oltp_params(const Json& params) {
    const std::string kind = "sysbench-oltp";
    DS_TRY(check_param_names(kind, params,
                             {"server", "test", "tables", "table_size", "threads", "time"}));
    for (const char* name : {"tables", "table_size", "threads"}) {
        auto value = integer_param(kind, params, name, 1, 1);
        if (!value) return value.error();
    }
    if (params.contains("test")) {
        const Json& test = params["test"];
        if (!test.is_string() || std::find(std::begin(kSysbenchTests), std::end(kSysbenchTests),
                                           test.get<std::string>()) == std::end(kSysbenchTests)) {
            std::string list;
            for (const auto t : kSysbenchTests) list += (list.empty() ? "" : ", ") + std::string(t);
            return invalid_param(kind, "test", "is " + test.dump() + ", expected one of " + list);
        }
    }
    if (params.contains("time") && !whole_seconds(params["time"])) {
        return invalid_param(kind, "time",
                             "is " + params["time"].dump() +
                                 ", expected a duration of at least 1 s (\"10s\", \"2m\" or "
                                 "an integer of seconds)");
    }
    return ok_status();
}

Result<WorkloadOutput> run_sysbench_oltp(const Workload& workload, WorkloadContext& ctx) {
    DS_TRY(check_sysbench_oltp_params(workload.params));
    const Json& params = workload.params;
    const Json server = params.value("server", Json::object());
    const long long run_s = params.contains("time") ? *whole_seconds(params["time"]) : 10;
    Session session(ctx, "sysbench-oltp workload " + workload.name);

    WorkloadOutput result;
    std::string version;
    DS_TRY(session.start_server(server, result.readback, version));

    const std::vector<std::string> common = {
        "sysbench",
        params.value("test", std::string("oltp_read_write")),
        "--db-driver=mysql",
        "--mysql-socket=" + session.paths().socket,
        "--mysql-user=root",
        "--mysql-db=test",
        "--tables=" + std::to_string(params.value("tables", 1LL)),
        "--table-size=" + std::to_string(params.value("table_size", 10000LL))};
    const std::string dir = session.paths().dir;
    double prepare_s = 0;
    if (ctx.dataset != DatasetMode::kPrepared) {
        DS_ASSIGN_OR_RETURN(prepare_s, sysbench_prepare(session, common));
    }
    if (ctx.dataset == DatasetMode::kPrepareOnly) {
        DS_TRY(session.stop_server());
        result.output = Json{{"server_version", version}, {"prepare_s", prepare_s}};
        return result;
    }

    // --histogram=on: the report then carries the latency histogram, from
    // which the parser takes p50 and p99 (sysbench's own line is p95).
    const std::string run_out = dir + "/sysbench-run.out";
    auto run_argv = common;
    for (std::string option :
         {"--time=" + std::to_string(run_s),
          "--threads=" + std::to_string(params.value("threads", 1LL)),
          std::string("--report-interval=1"), std::string("--histogram=on"), std::string("run")}) {
        run_argv.push_back(std::move(option));
    }
    auto ran = session.run(to_file(dir, run_out, run_argv), "sysbench run", run_out,
                           static_cast<double>(run_s));
    if (!ran) return ran.error();
    const std::string stdout_text = read_file(run_out);
    if (ran->exit_code != 0) {
        return session.tool_failure("sysbench run", *ran, stdout_text);
    }
    DS_TRY(session.stop_server());
    result.output =
        Json{{"stdout", stdout_text}, {"server_version", version}, {"prepare_s", prepare_s}};
    if (ctx.dataset == DatasetMode::kPrepared) result.output["dataset"] = "prepared";
    session.report("sysbench run finished", 1.0);
    return result;
}

}  // namespace ds::agent
