// The `ledger` kind's postgresql variant (ledger_workload.h): one INSERT
// per transaction (psql's autocommit) into a PostgreSQL cluster of the
// runner's own (postgresql_session.h), and the crash checker's reading of
// what such a run's cluster kept after the server replayed its WAL
// (crash_check.h). `synchronous_commit = off` acknowledges a commit before
// its WAL is flushed: the crash states measure what that costs.
#include <string>
#include <vector>

#include "guestagent/crash_check.h"
#include "guestagent/ledger_server.h"
#include "guestagent/ledger_workload.h"
#include "guestagent/postgresql_session.h"

namespace ds::agent {
namespace {

// psql prints each result as its statement returns; stdbuf makes its
// stdout line-buffered into the pipe, so an id arrives when it is printed.
std::vector<std::string> line_buffered(std::vector<std::string> argv) {
    argv.insert(argv.begin(), {"stdbuf", "-oL"});
    return argv;
}

const std::vector<std::string> kPsqlQuiet = {"-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"};

std::vector<std::string> psql_args(std::vector<std::string> more) {
    std::vector<std::string> args = kPsqlQuiet;
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

}  // namespace

Json recover_ledger_postgresql(const Workload& ledger, WorkloadContext& ctx) {
    const Json server = ledger.params.value("server", Json::object());
    postgresql::Session session(ctx, "PostgreSQL recovery of the ledger");
    return recover_ledger_ids(
        session, [&] { return session.start_existing_server(server); },
        session.client("psql", psql_args({"-c", "SELECT id FROM ledger ORDER BY id"})),
        "reading table ledger", [&] { return session.stop_server(); });
}

Result<WorkloadOutput> run_ledger_postgresql(const Workload& workload, const LedgerPlan& plan,
                                             WorkloadContext& ctx) {
    DS_TRY(check_server_ledger_records(plan));
    const Json server = workload.params.value("server", Json::object());
    postgresql::Session session(ctx, "ledger workload " + workload.name);
    WorkloadOutput result;
    std::string version;
    DS_TRY(session.start_server(server, result.readback, version));
    DS_TRY(session.run_checked(
        session.client("psql", psql_args({"-c", "CREATE TABLE ledger (id bigint PRIMARY KEY)"})),
        "creating table ledger"));
    const std::string script = session.paths().dir + "/ledger.sql";
    DS_TRY(write_ledger_script(script, plan.records, "",
                               "INSERT INTO ledger (id) VALUES ({id});\nSELECT {id};\n"));
    DS_ASSIGN_OR_RETURN(
        result.output,
        stream_acknowledged_ids(session, plan, ctx,
                                line_buffered(session.client("psql", psql_args({"-f", script}))),
                                "ledger: INSERT (autocommit)"));
    DS_TRY(session.stop_server());
    result.output["variant"] = "postgresql";
    result.output["server_version"] = version;
    return result;
}

}  // namespace ds::agent
