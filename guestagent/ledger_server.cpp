#include "guestagent/ledger_server.h"

#include <charconv>
#include <fstream>

#include "guestagent/mariadb_workload.h"

namespace ds::agent {

Status check_server_ledger_records(const LedgerPlan& plan) {
    if (plan.records <= kMaxServerLedgerRecords) return ok_status();
    return mariadb::invalid_param("ledger", "records",
                                  "is above " + std::to_string(kMaxServerLedgerRecords) +
                                      " for the " + plan.variant + " variant");
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

Status write_ledger_script(const std::string& path, long long records, std::string_view prologue,
                           std::string_view record) {
    std::ofstream script(path, std::ios::binary | std::ios::trunc);
    script << prologue;
    for (long long id = 1; id <= records; ++id) {
        const std::string text = std::to_string(id);
        std::size_t from = 0;
        for (std::size_t at = record.find("{id}"); at != std::string_view::npos;
             from = at + 4, at = record.find("{id}", from)) {
            script << record.substr(from, at - from) << text;
        }
        script << record.substr(from);
    }
    if (!script.flush()) return make_error(errc::kIo, "cannot write the ledger script " + path);
    return ok_status();
}

Json recover_ledger_ids(ToolSession& session, const std::function<Status()>& start,
                        const std::vector<std::string>& select, const std::string& step,
                        const std::function<Status()>& stop) {
    const auto failed = [](const Error& error) {
        return Json{{"recovered", false}, {"recovery_error", error.message}};
    };
    if (auto started = start(); !started.ok()) return failed(started.error());
    auto selected = session.run_checked(select, step);
    if (!selected.ok()) return failed(selected.error());
    auto ids = ledger_ids(selected->stdout_text);
    if (!ids.ok()) return failed(ids.error());
    Json report = {{"recovered", true}, {"present", ranges_json(*ids)}};
    if (auto stopped = stop(); !stopped.ok()) report["shutdown_error"] = stopped.error().message;
    return report;
}

Result<Json> stream_acknowledged_ids(ToolSession& session, const LedgerPlan& plan,
                                     WorkloadContext& ctx, const std::vector<std::string>& client,
                                     const std::string& step) {
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
    DS_ASSIGN_OR_RETURN(auto ran, session.stream(client, step, plan.time, on_line, stopped));
    DS_TRY(acknowledged);
    if (!stopped && ran.exit_code != 0) {
        return session.failure("the ledger's inserts (exit " + std::to_string(ran.exit_code) + ")",
                               ran.stderr_text);
    }
    return tally.output();
}

}  // namespace ds::agent
