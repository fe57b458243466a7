// The tuning axis in compare (issue 18 §4): config/sweeps/seed-atis.toml as
// shipped, its runs recorded with known times (no guests), compares every
// tuning of the workload on every filesystem with ONE baseline, ext4 with
// InnoDB's defaults, each with a ratio, its 95% CI and a verdict.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>

#include "daemon/compare/compare.h"
#include "daemon/plan/expand.h"
#include "daemon/spec/spec.h"
#include "daemon/store/store.h"
#include "support/fakes/daemon_fakes.h"
#include "support/temp_dir.h"
#include "unit/daemon/compare/sweep_from_spec.h"
#include "unit/doc_tables.h"

namespace ds {
namespace {

using testing::row_of;

using ds::test::TempDir;

// The shipped seed-atis sweep, stored as the API stores it, every run
// succeeded with total_s = the mean for its (configuration, workload) times
// a per-round factor shared by every run of the round (paired rounds), and
// for the tunings a little noise of their own (so their intervals have width).
testing::SweepFromSpec record_seed_atis(
    Store& store, const std::map<std::pair<std::string, std::string>, double>& means) {
    const testing::SweepFromSpec sweep = testing::create_sweep_from_spec(
        store, test::repository_text("config/sweeps/seed-atis.toml"), "seed-atis.toml");
    const double round_factor[] = {1.0, 1.03, 0.98};
    const double tuning_noise[] = {1.0, 1.01, 0.995};
    const std::vector<RunRecord> runs = store.list_runs(sweep.id, RawOutput::kOmit).value();
    for (RunRecord run : runs) {
        const auto mean = means.find({run.config_id, run.workload_name});
        INFO(run.workload_name << " on " << run.config_id);
        REQUIRE(mean != means.end());
        REQUIRE(store.mark_run_running(run.id, "vm", "vol", "log", "tcg", "t").ok());
        run.status = RunStatus::kSucceeded;
        const double noise = !run.workload.tuning.empty() ? tuning_noise[run.repetition] : 1.0;
        run.metrics = {{"total_s", mean->second * round_factor[run.repetition] * noise}};
        REQUIRE(store.finish_run(run).ok());
    }
    return sweep;
}

std::string config_with_filesystem(const SweepPlan& plan, const std::string& label) {
    for (const StorageConfig& config : plan.configs)
        if (config.filesystem.label == label) return config_id(config);
    FAIL("no configuration with filesystem " << label);
    return "";
}

TEST_CASE("compare: seed-atis's tunings are compared with one baseline, ext4 defaults",
          "[compare][tuning]") {
    TempDir dir;
    auto store = testing::open_store(dir.file("r.db"));
    // The study's numbers (seconds): ext4 23, btrfs 32, btrfs nocow 28;
    // doublewrite=0 + O_DSYNC 34; nosync ext4 15, btrfs 14.
    const std::string text = test::repository_text("config/sweeps/seed-atis.toml");
    const SweepPlan plan = expand_sweep(parse_sweep_spec(text, "seed-atis.toml").value()).value();
    const std::string ext4 = config_with_filesystem(plan, "ext4");
    const std::string btrfs = config_with_filesystem(plan, "btrfs");
    std::map<std::pair<std::string, std::string>, double> means;
    for (const StorageConfig& config : plan.configs) means[{config_id(config), "atis"}] = 30;
    means[{ext4, "atis"}] = 23;
    means[{btrfs, "atis"}] = 32;
    means[{ext4, "atis.dw0-odsync"}] = 34;
    means[{btrfs, "atis.dw0-odsync"}] = 34;
    means[{ext4, "atis.dw0-nosync"}] = 15;
    means[{btrfs, "atis.dw0-nosync"}] = 14;
    const testing::SweepFromSpec sweep = record_seed_atis(*store, means);

    auto compared = compare_sweep(*store, sweep.id);
    INFO((compared.ok() ? "" : compared.error().message));
    REQUIRE(compared.ok());
    const Json& report = compared.value();
    CHECK(report["baseline"]["config_id"] == ext4);
    CHECK(report["baseline"]["chosen_by"] == "spec");
    CHECK(report["baseline"]["tuning"] == "defaults");
    // 5 filesystems with the defaults, ext4 and btrfs with each tuning.
    REQUIRE(report["rows"].size() == 9);

    const Json& baseline = row_of(report, ext4, "atis");
    CHECK(baseline["is_baseline"] == true);
    CHECK(baseline["options"] == "defaults");
    // "ext4 defaults + innodb nosync" against "ext4 defaults": the question
    // the first study asked, in the same table.
    const Json& nosync = row_of(report, ext4, "atis.dw0-nosync");
    CHECK(nosync["is_baseline"] == false);
    CHECK(nosync["options"] == "innodb_doublewrite=0 innodb_flush_method=nosync");
    CHECK(nosync["durability_risks"] ==
          Json::array({"cache=unsafe", "innodb_doublewrite=0", "innodb_flush_method=nosync"}));
    const Json& versus = nosync["vs_baseline"];
    const Json& baseline_row = report["rows"][versus["baseline_row"].get<std::size_t>()];
    CHECK(baseline_row["config_id"] == ext4);
    CHECK(baseline_row["workload"] == "atis");
    CHECK(versus["method"] == "paired");
    CHECK(versus["n"] == 3);
    const double ratio = versus["ratio"].get<double>();
    CHECK(ratio == Approx(15.0 / 23).epsilon(0.01));
    CHECK(versus["ci95_low"].get<double>() < ratio);
    CHECK(versus["ci95_high"].get<double>() > ratio);
    CHECK(versus["ci95_high"].get<double>() < 0.98);
    CHECK(versus["p_adjusted"].get<double>() < 0.05);
    CHECK(versus["verdict"] == "faster");  // total_s: lower is better

    // Every other row, tuned or not, is compared with the same one row.
    for (const Json& row : report["rows"]) {
        if (row["is_baseline"] == true) continue;
        INFO(row["workload"] << " on " << row["filesystem"]);
        CHECK(report["rows"][row["vs_baseline"]["baseline_row"].get<std::size_t>()] == baseline);
    }
    CHECK(row_of(report, ext4, "atis.dw0-odsync")["vs_baseline"]["verdict"] == "slower");
    CHECK(row_of(report, btrfs, "atis")["vs_baseline"]["verdict"] == "slower");
    CHECK(row_of(report, btrfs, "atis.dw0-nosync")["vs_baseline"]["ratio"].get<double>() ==
          Approx(14.0 / 23).epsilon(0.01));
    CHECK(report["comparisons"] == 8);
    // Best first: btrfs nosync, ext4 nosync, then the baseline.
    CHECK(report["ranking"][0]["workload"] == "atis.dw0-nosync");
    CHECK(report["ranking"][0]["config_id"] == btrfs);
    CHECK(report["ranking"][1]["config_id"] == ext4);
    CHECK(report["ranking"][2]["verdict"] == "baseline");
}

TEST_CASE("compare: baseline.tuning picks the tuning every variant is compared under",
          "[compare][tuning]") {
    TempDir dir;
    auto store = testing::open_store(dir.file("r.db"));
    const std::string text = R"(name = "tuned"
repetitions = 3
baseline = { tuning = "nosync" }
[matrix]
filesystem = ["ext4", "btrfs"]
tuning = ["defaults", "nosync"]
[tunings.nosync]
server = { innodb_flush_method = "nosync" }
[[workload]]
name = "atis"
kind = "mariadb-atis"
[[workload]]
name = "randrw"
kind = "fio"
rw = "randrw"
)";
    const testing::SweepFromSpec sweep = testing::create_sweep_from_spec(*store, text);
    const SweepPlan& plan = sweep.plan;
    CHECK(plan.baseline_tuning == "nosync");
    const Json report = compare_sweep(*store, sweep.id).value();
    CHECK(report["baseline"]["tuning"] == "nosync");
    const std::string ext4 = config_id(plan.configs[0]);
    for (const Json& row : report["rows"]) {
        const bool expected = row["config_id"] == ext4 &&
                              (row["workload"] == "atis.nosync" || row["workload"] == "randrw");
        INFO(row["workload"] << " on " << row["config_id"]);
        // fio has no tuning: its baseline is the baseline configuration's fio row.
        CHECK(row["is_baseline"] == expected);
    }
}

}  // namespace
}  // namespace ds
