// compare_sweep's "durability" of each row, from durability runs stored
// through the Store API: a ledger row sums its own runs; a row of another
// kind shows what the ledger measured on its configuration under the same
// server variables, and nothing else.
#include <catch2/catch.hpp>

#include "daemon/compare/compare.h"
#include "support/disk_settings.h"
#include "support/durability_records.h"
#include "support/fakes/daemon_fakes.h"
#include "support/temp_dir.h"

namespace ds {
namespace {

using test::durability_record;
using test::durability_summary;

const StorageConfig kNone = test::cache_and_filesystem(CacheMode::kNone, "ext4");
const StorageConfig kUnsafe = test::cache_and_filesystem(CacheMode::kUnsafe, "ext4");

const Workload kLedger{"ledger", "ledger", Json{{"variant", "file"}}, {}, 0};
const Workload kAtis{"atis", "mariadb-atis", Json::object(), {}, 0};
const Workload kAtisTrx2{
    "atis-trx2", "mariadb-atis", Json{{"server", {{"innodb_flush_log_at_trx_commit", 2}}}}, {}, 0};

using Outcome = test::StoredOutcome;

std::int64_t store_sweep(Store& store, const std::vector<std::pair<RunRecord, Outcome>>& plan) {
    return test::store_durability_sweep(store, plan, Json::array({"cache"}));
}

const Json& row_of(const Json& compare, const StorageConfig& config, const std::string& workload) {
    for (const Json& row : compare["rows"])
        if (row["config_id"] == config_id(config) && row["workload"] == workload) return row;
    FAIL("no row for " << workload);
    static const Json kNone;
    return kNone;
}

TEST_CASE("compare: each row shows the durability measured on its configuration",
          "[compare][durability]") {
    test::TempDir dir;
    auto store = testing::open_store(dir.file("results.db"));
    using testing::planned_run;
    const Outcome clean{RunStatus::kSucceeded,
                        {{"commits_per_s", 40}, {"acknowledged", 400}},
                        durability_record(durability_summary(50, 0, 0, 0))};
    const Outcome one_bad{RunStatus::kSucceeded,
                          {{"commits_per_s", 900}, {"acknowledged", 9000}},
                          durability_record(durability_summary(50, 1, 4, 0.08), "host-power-cut")};
    const Outcome fast_clean{RunStatus::kSucceeded,
                             {{"commits_per_s", 1100}, {"acknowledged", 9000}},
                             durability_record(durability_summary(50, 0, 0, 0), "host-power-cut")};
    // A failed attempt's record never counts, whatever it says.
    const Outcome failed{
        RunStatus::kFailed, {}, durability_record(durability_summary(50, 50, 99, 9))};
    const Outcome atis{RunStatus::kSucceeded, {{"total_s", 30}}, Json()};
    const std::int64_t id = store_sweep(*store, {{planned_run(kNone, kLedger, 0, 0), clean},
                                                 {planned_run(kUnsafe, kLedger, 1, 0), one_bad},
                                                 {planned_run(kNone, kLedger, 2, 1), clean},
                                                 {planned_run(kUnsafe, kLedger, 3, 1), fast_clean},
                                                 {planned_run(kNone, kLedger, 4, 2), failed},
                                                 {planned_run(kNone, kAtis, 5, 0), atis},
                                                 {planned_run(kUnsafe, kAtis, 6, 0), atis},
                                                 {planned_run(kNone, kAtisTrx2, 7, 0), atis}});
    auto compared = compare_sweep(*store, id);
    INFO((compared.ok() ? "" : compared.error().message));
    REQUIRE(compared.ok());
    const Json& compare = compared.value();

    const Json& safe = row_of(compare, kNone, "ledger")["durability"];
    CHECK(safe["safe"] == true);
    CHECK(safe["runs"] == 2);
    CHECK(safe["crash_states"] == 100);
    CHECK(safe["verdict"] == "kept every acknowledged commit in 100 crash states");
    CHECK(safe["commits_per_s"] == 40.0);
    CHECK(safe["measured_by"] == Json::array({"ledger"}));

    const Json& unsafe = row_of(compare, kUnsafe, "ledger")["durability"];
    CHECK(unsafe["safe"] == false);
    CHECK(unsafe["states_with_losses"] == 1);
    CHECK(unsafe["max_lost"] == 4);
    CHECK(unsafe["mean_lost"].get<double>() == Approx(0.04));
    CHECK(unsafe["verdict"] == "lost acknowledged commits in 1 of 100 crash states (up to 4)");
    CHECK(unsafe["commits_per_s"] == 1000.0);
    CHECK(unsafe["models"] == Json::array({"host-power-cut"}));

    // ATIS rows under the ledger's server variables (none) show the ledger's.
    CHECK(row_of(compare, kNone, "atis")["durability"] == safe);
    CHECK(row_of(compare, kUnsafe, "atis")["durability"] == unsafe);
    // Other server variables: the ledger did not measure them.
    CHECK(row_of(compare, kNone, "atis-trx2")["durability"] ==
          Json{{"verdict", "not measured"}, {"safe", false}, {"runs", 0}, {"unreadable_runs", 0}});
}

TEST_CASE("compare: a sweep without durability runs says so on every row",
          "[compare][durability]") {
    test::TempDir dir;
    auto store = testing::open_store(dir.file("results.db"));
    const Outcome plain{RunStatus::kSucceeded, {{"commits_per_s", 40}}, Json()};
    const std::int64_t id =
        store_sweep(*store, {{testing::planned_run(kNone, kLedger, 0, 0), plain},
                             {testing::planned_run(kNone, kAtis, 1, 0), plain}});
    const Json compare = compare_sweep(*store, id).value();
    for (const Json& row : compare["rows"]) {
        CHECK(row["durability"]["verdict"] == "not measured");
        CHECK(row["durability"]["safe"] == false);
    }
}

}  // namespace
}  // namespace ds
