// The `ledger` kind's database variant (ledger_workload.h): INSERT +
// COMMIT one record at a time into a MariaDB server of the runner's own, and
// the crash checker's reading of what such a run's datadir kept
// (crash_check.h).
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "guestagent/crash_check.h"
#include "guestagent/ledger_server.h"
#include "guestagent/ledger_workload.h"
#include "guestagent/mariadb_session.h"
#include "guestagent/workload.h"

namespace ds::agent {

using namespace mariadb;

Json recover_ledger_database(const Workload& ledger, WorkloadContext& ctx) {
    const Json server = ledger.params.value("server", Json::object());
    Session session(ctx, "MariaDB recovery of the ledger");
    return recover_ledger_ids(
        session, [&] { return session.start_existing_server(server); },
        {"mariadb", "--defaults-file=" + session.paths().config, "--batch", "--skip-column-names",
         "-e", "SELECT id FROM test.ledger ORDER BY id"},
        "reading test.ledger", [&] { return session.stop_server(); });
}

Result<WorkloadOutput> run_ledger_database(const Workload& workload, const LedgerPlan& plan,
                                           WorkloadContext& ctx) {
    DS_TRY(check_server_ledger_records(plan));
    const Json server = workload.params.value("server", Json::object());
    Session session(ctx, "ledger workload " + workload.name);
    WorkloadOutput result;
    std::string version;
    DS_TRY(session.start_server(server, result.readback, version));
    const std::string defaults = "--defaults-file=" + session.paths().config;
    DS_TRY(session.run_checked({"mariadb", defaults, "--batch", "-e",
                                "CREATE TABLE test.ledger (id BIGINT NOT NULL PRIMARY KEY) "
                                "ENGINE=InnoDB"},
                               "creating table test.ledger"));
    const std::string script = session.paths().dir + "/ledger.sql";
    DS_TRY(write_ledger_script(
        script, plan.records, "SET autocommit=0;\n",
        "INSERT INTO test.ledger (id) VALUES ({id});\nCOMMIT;\nSELECT {id};\n"));
    DS_ASSIGN_OR_RETURN(result.output, stream_acknowledged_ids(
                                           session, plan, ctx,
                                           {"mariadb", defaults, "--batch", "--skip-column-names",
                                            "--unbuffered", "-e", "source " + script},
                                           "ledger: INSERT + COMMIT"));
    DS_TRY(session.stop_server());
    result.output["variant"] = "database";
    result.output["server_version"] = version;
    return result;
}

}  // namespace ds::agent
