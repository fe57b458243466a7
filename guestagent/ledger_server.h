// What the ledger's server variants share (ledger_workload.h): `database`
// (MariaDB, ledger_database.cpp) and `postgresql` (ledger_postgresql.cpp).
// Each inserts records 1, 2, 3, ... one transaction each from a script its
// client runs, and the client prints a record's id once its COMMIT has
// returned, so a printed id is an acknowledged one. The crash checker reads
// the ids a crash state's table kept.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "guestagent/crash_check.h"
#include "guestagent/ledger_workload.h"
#include "guestagent/tool_session.h"

namespace ds::agent {

// Most records a server variant's script holds (about 50 bytes each, on the
// guest's tmpfs).
inline constexpr long long kMaxServerLedgerRecords = 1'000'000;

// errc::kInvalidArgument when plan.records is above kMaxServerLedgerRecords.
Status check_server_ledger_records(const LedgerPlan& plan);

// The whole line as an id; nullopt for anything else.
std::optional<long long> acknowledged_id(std::string_view line);

// The ids of `SELECT id ... ORDER BY id` (one per line), as ranges; an
// Error naming the first line that is not an id.
Result<IdRanges> ledger_ids(const std::string& text);

// The client's script: `prologue`, then for each id `record` with every
// "{id}" replaced by it.
Status write_ledger_script(const std::string& path, long long records, std::string_view prologue,
                           std::string_view record);

// The crash checker's reading of a server variant's table: `start` (the
// server on what the crash state kept, recovering as it starts), `select`
// (its ids, one per line, ordered), `stop`. {"recovered": true, "present":
// ranges} (and "shutdown_error" when the stop failed), or {"recovered":
// false, "recovery_error": ..} naming the step that failed.
Json recover_ledger_ids(ToolSession& session, const std::function<Status()>& start,
                        const std::vector<std::string>& select, const std::string& step,
                        const std::function<Status()>& stop);

// The measured window: the tally starts, `client` runs the script and each
// line it prints acknowledges the next id, until it ends or plan.time
// passes. The tally's output, or the client's failure (`step` names it).
Result<Json> stream_acknowledged_ids(ToolSession& session, const LedgerPlan& plan,
                                     WorkloadContext& ctx, const std::vector<std::string>& client,
                                     const std::string& step);

}  // namespace ds::agent
