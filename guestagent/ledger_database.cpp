// The `ledger` kind's database variant (ledger_workload.h): INSERT +
// COMMIT one record at a time into a MariaDB server of the runner's own, and
// the crash checker's reading of what such a run's datadir kept
// (crash_check.h).
#include <charconv>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "guestagent/crash_check.h"
#include "guestagent/ledger_workload.h"
#include "guestagent/mariadb_session.h"
#include "guestagent/workload.h"

namespace ds::agent {
namespace {

using namespace mariadb;

// Most records the database variant's script holds (about 46 bytes each, on
// the guest's tmpfs).
constexpr long long kMaxDatabaseLedgerRecords = 1'000'000;

// One INSERT per transaction; the SELECT prints the id once its COMMIT has
// returned, so a printed id is an acknowledged one.
Status write_ledger_script(const std::string& path, long long records) {
    std::ofstream script(path, std::ios::binary | std::ios::trunc);
    script << "SET autocommit=0;\n";
    for (long long id = 1; id <= records; ++id) {
        script << "INSERT INTO test.ledger (id) VALUES (" << id << ");\nCOMMIT;\nSELECT " << id
               << ";\n";
    }
    if (!script.flush()) return make_error(errc::kIo, "cannot write the ledger script " + path);
    return ok_status();
}

std::optional<long long> acknowledged_id(std::string_view line) {
    long long id = 0;
    const auto [end, error] = std::from_chars(line.data(), line.data() + line.size(), id);
    if (error != std::errc() || end != line.data() + line.size()) return std::nullopt;
    return id;
}

// The ids of `SELECT id ... ORDER BY id` (one per line), as ranges; an
// Error naming the first line that is not an id.
Result<IdRanges> ledger_ids(const std::string& text) {
    std::vector<long long> ids;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        const std::string_view line(text.data() + start, end - start);
        start = end + 1;
        if (line.empty()) continue;
        const auto id = acknowledged_id(line);
        if (!id) {
            return make_error(errc::kAgent,
                              "SELECT id printed '" + std::string(line.substr(0, 80)) + "'");
        }
        ids.push_back(*id);
    }
    return ranges_of(ids);
}

}  // namespace

Json recover_ledger_database(const Workload& ledger, WorkloadContext& ctx) {
    const Json server = ledger.params.value("server", Json::object());
    Session session(ctx, "MariaDB recovery of the ledger");
    const auto failed = [](const Error& error) {
        return Json{{"recovered", false}, {"recovery_error", error.message}};
    };
    if (auto started = session.start_existing_server(server); !started.ok()) {
        return failed(started.error());
    }
    auto selected =
        session.run_checked({"mariadb", "--defaults-file=" + session.paths().config, "--batch",
                             "--skip-column-names", "-e", "SELECT id FROM test.ledger ORDER BY id"},
                            "reading test.ledger");
    if (!selected.ok()) return failed(selected.error());
    auto ids = ledger_ids(selected->stdout_text);
    if (!ids.ok()) return failed(ids.error());
    Json report = {{"recovered", true}, {"present", ranges_json(*ids)}};
    if (auto stopped = session.stop_server(); !stopped.ok()) {
        report["shutdown_error"] = stopped.error().message;
    }
    return report;
}

Result<WorkloadOutput> run_ledger_database(const Workload& workload, const LedgerPlan& plan,
                                           WorkloadContext& ctx) {
    if (plan.records > kMaxDatabaseLedgerRecords) {
        return invalid_param(
            "ledger", "records",
            "is above " + std::to_string(kMaxDatabaseLedgerRecords) + " for the database variant");
    }
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
    DS_TRY(write_ledger_script(script, plan.records));

    LedgerTally tally(ctx, plan);
    Status acknowledged = ok_status();
    const auto on_line = [&](std::string_view line) {
        if (!acknowledged.ok()) return;
        const auto id = acknowledged_id(line);
        acknowledged = id ? tally.acknowledge(*id)
                          : Status(make_error(errc::kAgent, "ledger: the client printed '" +
                                                                std::string(line.substr(0, 80)) +
                                                                "' where an id was expected"));
    };
    bool stopped = false;
    DS_TRY(tally.start());
    DS_ASSIGN_OR_RETURN(auto ran,
                        session.stream({"mariadb", defaults, "--batch", "--skip-column-names",
                                        "--unbuffered", "-e", "source " + script},
                                       "ledger: INSERT + COMMIT", plan.time, on_line, stopped));
    DS_TRY(acknowledged);
    if (!stopped && ran.exit_code != 0) {
        return session.failure("the ledger's inserts (exit " + std::to_string(ran.exit_code) + ")",
                               ran.stderr_text);
    }
    DS_TRY(session.stop_server());
    result.output = tally.output();
    result.output["variant"] = "database";
    result.output["server_version"] = version;
    return result;
}

}  // namespace ds::agent
