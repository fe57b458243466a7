// What the store's files share (internal to daemon/store/): the one seam
// that turns SQLite's and nlohmann::json's exceptions into Errors
// (guarded), the conventions of its columns (JSON text, "" as NULL, the
// status columns read back), its common errors, and the one reader of runs
// (query_runs). Every call here runs under Store's mutex, inside guarded().
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>

#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/result.h"
#include "common/status.h"
#include "daemon/store/store.h"

namespace ds::store_sql {

// Turns an exception from SQLite into an Error whose code says what the caller
// can do about it: kIo for the file system (full disk, I/O error, cannot open,
// not a database), kUnavailable for a lock held past the busy timeout,
// kConflict for a violated constraint. The message keeps SQLite's own words.
Error sqlite_error(const std::string& context, const SQLite::Exception& exception);

// The seam: runs `body` (which returns a Result) and turns any exception from
// SQLiteCpp or nlohmann::json into an Error, so none escapes the store.
template <class Body>
auto guarded(const std::string& context, Body&& body) -> decltype(body()) {
    try {
        return body();
    } catch (const SQLite::Exception& exception) {
        return sqlite_error(context, exception);
    } catch (const Json::exception& exception) {
        return make_error(errc::kInternal,
                          context + ": malformed JSON stored in the database: " + exception.what());
    } catch (const std::exception& exception) {
        return make_error(errc::kInternal, context + ": " + exception.what());
    }
}

// A sweep's status column read back. The CHECK constraints keep other text
// out, so an unknown one means a database written by something else: it
// throws (guarded() turns that into errc::kInternal), never a value outside
// the enum. (Run statuses are read back so by query_runs.)
SweepStatus sweep_status_column(const SQLite::Column& column);

// JSON columns. The guest is untrusted, so invalid UTF-8 in what it reported
// is replaced rather than failing the whole write.
std::string dump_json(const Json& value);
Json json_column(const SQLite::Column& column);

// "" is stored as NULL (an unset timestamp or reason) and read back as "".
void bind_text_or_null(SQLite::Statement& statement, int index, const std::string& value);
std::string text_or_empty(const SQLite::Column& column);

Error sweep_not_found(std::int64_t sweep_id);
Error run_not_found(std::int64_t run_id);
bool sweep_exists(SQLite::Database& db, std::int64_t sweep_id);
// Why a run cannot make a transition: it does not exist, or its status.
Error run_transition_error(SQLite::Database& db, std::int64_t run_id, std::string_view wanted);

// The one place that reads runs: `where` selects them (with one parameter,
// `value`), rows come back by sweep then sequence, each with its metrics.
// `page_clause` (e.g. " AND r.sequence > 10 ORDER BY ... LIMIT 50") narrows
// both the runs and the metrics read for them; "" reads every match.
using RunFilterValue = std::variant<std::int64_t, std::string>;
std::vector<RunRecord> query_runs(SQLite::Database& db, const std::string& where,
                                  const RunFilterValue& value, RawOutput raw_output,
                                  const std::string& page_clause = "");
// One run without its raw output; an empty record when there is none.
RunRecord read_run(SQLite::Database& db, std::int64_t run_id);

}  // namespace ds::store_sql
