// The `ledger` workload kind (docs/spec.md, docs/durability.md): records
// 1, 2, 3, ... written one at a time, each acknowledged before the next
// (file: pwrite + fsync; database: INSERT + COMMIT in MariaDB, in
// ledger_database.cpp; postgresql: the same in PostgreSQL, in
// ledger_postgresql.cpp). The moment a record is acknowledged, its id goes to
// the host (WorkloadContext::acknowledge), which notes how far the write log
// was then: a crash state past that point must still hold the record.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "common/settings.h"
#include "guestagent/workload.h"

namespace ds::agent {

// What a ledger run was asked for (params checked by check_ledger_params).
struct LedgerPlan {
    std::string variant = "file";  // "file" | "database" | "postgresql"
    long long records = 1000;
    std::optional<std::chrono::seconds> time;  // stop after this long
    std::uint64_t record_size = 4096;          // file variant
};

// Checks params against the kind's options (common/workload_kind.cpp) and
// the variant's own rules; errc::kInvalidArgument naming the param.
Result<LedgerPlan> parse_ledger_plan(const Json& params);
Status check_ledger_params(const Json& params);

// The text of record `id` in the file variant: "ledger <id>\n" padded with
// '.' to `size` - 1 bytes and a final '\n'; a checker finds record k at
// offset (k - 1) * size.
std::string ledger_record(long long id, std::uint64_t size);

// Counts acknowledgements as they happen: ids must come 1, 2, 3, ...; each
// is forwarded to the host at once, and its latency (since the previous
// acknowledgement, or since start()) and second are kept for the output.
class LedgerTally {
  public:
    LedgerTally(WorkloadContext& ctx, const LedgerPlan& plan);
    // The measured window begins (WorkloadContext::begin_measurement), then
    // the clock starts. Its error ends the run.
    Status start();
    // errc::kAgent when `id` is not the next one (the tool lied or lost
    // one): the run must not report acknowledgements it cannot vouch for.
    Status acknowledge(long long id);
    long long acknowledged() const { return acknowledged_; }
    // Whether the plan's `time` has run out.
    bool out_of_time() const;
    // Whether the workload's own time limit has passed (errc::kTimeout).
    bool past_time_limit() const;
    // result.output (common/ledger_output.h).
    Json output() const;

  private:
    WorkloadContext& ctx_;
    const LedgerPlan& plan_;
    Clock::time_point start_{};
    Clock::time_point last_{};
    Clock::time_point last_report_{};
    long long acknowledged_ = 0;
    std::vector<double> latencies_us_;
    std::vector<long long> per_second_;
};

// Both variants' runner: dispatches on params.variant.
Result<WorkloadOutput> run_ledger(const Workload& workload, WorkloadContext& ctx);
// A variant of the ledger as data: its runner, and the crash checker's
// reading of what a crash state kept (crash_check.h: {"present": ranges},
// or the server's {"recovered": false, "recovery_error": ..}).
struct LedgerVariant {
    std::string_view name;
    Result<WorkloadOutput> (*run)(const Workload& workload, const LedgerPlan& plan,
                                  WorkloadContext& ctx);
    Json (*scan)(const Workload& ledger, const LedgerPlan& plan, WorkloadContext& ctx);
};
// The variants, in the order of the kind's `variant` option
// (common/workload_kind.cpp): file, database, postgresql. nullptr for
// another name.
const LedgerVariant* find_ledger_variant(std::string_view name);

// The database variant (ledger_database.cpp): MariaDB.
Result<WorkloadOutput> run_ledger_database(const Workload& workload, const LedgerPlan& plan,
                                           WorkloadContext& ctx);
// The postgresql variant (ledger_postgresql.cpp).
Result<WorkloadOutput> run_ledger_postgresql(const Workload& workload, const LedgerPlan& plan,
                                             WorkloadContext& ctx);

}  // namespace ds::agent
