#include "daemon/compare/compare.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "common/settings.h"
#include "daemon/store/store.h"
#include "support/disk_settings.h"
#include "support/fakes/daemon_fakes.h"
#include "support/report_fixture.h"
#include "support/temp_dir.h"

namespace ds {
namespace {

using ds::test::TempDir;

using test::cache_and_filesystem;

// A fio run named after its rw pattern.
RunRecord planned_run(const StorageConfig& config, const std::string& workload, int sequence,
                      int repetition) {
    return testing::planned_run(
        config, Workload{workload, "fio", Json{{"rw", workload}, {"bs", "4k"}}, {}, 0}, sequence,
        repetition);
}

// Records the outcome of the run with the given sequence.
void finish(Store& store, std::int64_t sweep_id, int sequence, RunStatus status,
            std::map<std::string, double> metrics, const std::string& accel = "tcg") {
    auto runs = store.list_runs(sweep_id, RawOutput::kOmit);
    REQUIRE(runs.ok());
    RunRecord run = runs.value().at(sequence);
    REQUIRE(run.sequence == sequence);
    REQUIRE(store.mark_run_running(run.id, "vm", "vol", "log", accel, "t").ok());
    run.status = status;
    if (status == RunStatus::kFailed) run.failure_reason = "agent: guest went silent";
    run.metrics = std::move(metrics);
    auto finished = store.finish_run(run);
    INFO((finished.ok() ? "" : finished.error().message));
    REQUIRE(finished.ok());
}

std::int64_t create(Store& store, const std::string& name, const std::vector<RunRecord>& runs) {
    SweepRecord sweep;
    sweep.name = name;
    sweep.spec_toml = "name = \"" + name + "\"";
    sweep.spec_source = "api";
    sweep.created_at = "2024-05-01T10:00:00Z";
    sweep.varying_axes = Json::array({"filesystem", "cache"});
    auto id = store.create_sweep(sweep, runs);
    INFO((id.ok() ? "" : id.error().message));
    REQUIRE(id.ok());
    return id.value();
}

const StorageConfig kSafeExt4 = cache_and_filesystem(CacheMode::kNone, "ext4");
const StorageConfig kUnsafeBtrfs = cache_and_filesystem(CacheMode::kUnsafe, "btrfs");
const StorageConfig kNoBarrierExt4 = cache_and_filesystem(CacheMode::kNone, "ext4", "barrier=0");

// Sequence: 0 btrfs, 1 ext4, 2 ext4, 3 btrfs, 4 ext4, 5 btrfs, 6 ext4-nobarrier.
std::vector<RunRecord> interleaved_runs() {
    return {planned_run(kUnsafeBtrfs, "randrw", 0, 0),  planned_run(kSafeExt4, "randrw", 1, 0),
            planned_run(kSafeExt4, "randrw", 2, 1),     planned_run(kUnsafeBtrfs, "randrw", 3, 1),
            planned_run(kSafeExt4, "randrw", 4, 2),     planned_run(kUnsafeBtrfs, "randrw", 5, 2),
            planned_run(kNoBarrierExt4, "randrw", 6, 0)};
}

const Json& row_for(const Json& report, const std::string& config_id) {
    for (const Json& row : report["rows"]) {
        if (row["config_id"] == config_id) return row;
    }
    FAIL("no row for " << config_id);
    static const Json kNone;
    return kNone;
}

TEST_CASE("compare: statistics per configuration with known numbers", "[compare]") {
    TempDir dir;
    auto opened = Store::open(dir.file("results.db"));
    REQUIRE(opened.ok());
    Store& store = *opened.value();
    const std::int64_t sweep_id = create(store, "seed", interleaved_runs());

    // ext4: read_iops 10, 12, 14 -> mean 12, sd 2, CI 12 ± 4.303·2/√3.
    finish(store, sweep_id, 1, RunStatus::kSucceeded,
           {{"read_iops", 10}, {"write_iops", 20}, {"zz_custom", 1}, {"elapsed_s", 3}});
    finish(store, sweep_id, 2, RunStatus::kSucceeded,
           {{"read_iops", 12}, {"write_iops", 20}, {"zz_custom", 2}, {"elapsed_s", 3}});
    finish(store, sweep_id, 4, RunStatus::kSucceeded,
           {{"read_iops", 14}, {"write_iops", 20}, {"zz_custom", 3}, {"elapsed_s", 3}});
    // btrfs: 100 and 200 succeed; the failed run's 999 must not count.
    finish(store, sweep_id, 0, RunStatus::kSucceeded, {{"read_iops", 100}, {"write_iops", 50}});
    finish(store, sweep_id, 3, RunStatus::kFailed, {{"read_iops", 999}, {"write_iops", 999}});
    finish(store, sweep_id, 5, RunStatus::kSucceeded, {{"read_iops", 200}, {"write_iops", 70}});
    // The ext4 barrier=0 run stays pending.

    auto compared = compare_sweep(store, sweep_id);
    INFO((compared.ok() ? "" : compared.error().message));
    REQUIRE(compared.ok());
    const Json& report = compared.value();

    CHECK(report["sweep_id"] == sweep_id);
    CHECK(report["varying_axes"] == Json::array({"filesystem", "cache"}));
    CHECK(report["metrics"] == Json::array({"read_iops", "write_iops", "elapsed_s", "zz_custom"}));

    // Rows in the order of their first run.
    REQUIRE(report["rows"].size() == 3);
    CHECK(report["rows"][0]["config_id"] == config_id(kUnsafeBtrfs));
    CHECK(report["rows"][1]["config_id"] == config_id(kSafeExt4));
    CHECK(report["rows"][2]["config_id"] == config_id(kNoBarrierExt4));

    const Json& ext4 = row_for(report, config_id(kSafeExt4));
    CHECK(ext4["workload"] == "randrw");
    CHECK(ext4["settings"] == to_json(kSafeExt4));
    CHECK(ext4["durability_risks"] == Json::array());
    CHECK(ext4["runs"] == Json{{"pending", 0},
                               {"running", 0},
                               {"succeeded", 3},
                               {"failed", 0},
                               {"timed_out", 0},
                               {"cancelled", 0}});
    const Json& read_iops = ext4["metrics"]["read_iops"];
    const double half_width = 4.303 * 2.0 / std::sqrt(3.0);
    CHECK(read_iops["n"] == 3);
    CHECK(read_iops["mean"].get<double>() == Approx(12.0));
    CHECK(read_iops["stddev"].get<double>() == Approx(2.0));
    CHECK(read_iops["ci95_low"].get<double>() == Approx(12.0 - half_width).epsilon(1e-4));
    CHECK(read_iops["ci95_high"].get<double>() == Approx(12.0 + half_width).epsilon(1e-4));
    CHECK(read_iops["min"] == 10.0);
    CHECK(read_iops["max"] == 14.0);
    CHECK(ext4["metrics"]["write_iops"]["stddev"] == 0.0);
    CHECK(ext4["metrics"]["zz_custom"]["mean"].get<double>() == Approx(2.0));

    const Json& btrfs = row_for(report, config_id(kUnsafeBtrfs));
    CHECK(btrfs["durability_risks"] == Json::array({"cache=unsafe"}));
    CHECK(btrfs["runs"]["succeeded"] == 2);
    CHECK(btrfs["runs"]["failed"] == 1);
    const Json& btrfs_read = btrfs["metrics"]["read_iops"];
    CHECK(btrfs_read["n"] == 2);
    CHECK(btrfs_read["mean"].get<double>() == Approx(150.0));
    CHECK(btrfs_read["max"] == 200.0);
    // sd of {100, 200} = 70.71; CI 150 ± 12.706 · 70.71 / √2 = 150 ± 635.3.
    CHECK(btrfs_read["stddev"].get<double>() == Approx(std::sqrt(5000.0)));
    CHECK(btrfs_read["ci95_high"].get<double>() == Approx(150.0 + 12.706 * 50.0).epsilon(1e-4));
    CHECK_FALSE(btrfs["metrics"].contains("elapsed_s"));

    const Json& pending = row_for(report, config_id(kNoBarrierExt4));
    CHECK(pending["durability_risks"] == Json::array({"barrier=0"}));
    CHECK(pending["runs"]["pending"] == 1);
    CHECK(pending["metrics"] == Json::object());
}

TEST_CASE("compare: one succeeded run has no spread", "[compare]") {
    TempDir dir;
    auto store = std::move(Store::open(dir.file("results.db")).value());
    const std::int64_t sweep_id =
        create(*store, "single", {planned_run(kSafeExt4, "seqread", 0, 0)});
    finish(*store, sweep_id, 0, RunStatus::kSucceeded, {{"read_bw_mib_s", 3.3}});

    const Json report = compare_sweep(*store, sweep_id).value();
    const Json& bandwidth = report["rows"][0]["metrics"]["read_bw_mib_s"];
    CHECK(bandwidth["n"] == 1);
    CHECK(bandwidth["mean"] == 3.3);
    CHECK(bandwidth["stddev"].is_null());
    CHECK(bandwidth["ci95_low"].is_null());
    CHECK(bandwidth["ci95_high"].is_null());
    CHECK(report["rows"][0]["workload"] == "seqread");
}

TEST_CASE("compare: one row per configuration and workload", "[compare]") {
    TempDir dir;
    auto store = std::move(Store::open(dir.file("results.db")).value());
    const std::int64_t sweep_id =
        create(*store, "two-workloads",
               {planned_run(kSafeExt4, "randrw", 0, 0), planned_run(kSafeExt4, "seqwrite", 1, 0),
                planned_run(kSafeExt4, "randrw", 2, 1)});
    finish(*store, sweep_id, 0, RunStatus::kSucceeded,
           {{"write_clat_p99_us", 800}, {"read_iops", 5}});
    finish(*store, sweep_id, 1, RunStatus::kSucceeded, {{"write_bw_mib_s", 90}});
    finish(*store, sweep_id, 2, RunStatus::kSucceeded,
           {{"write_clat_p99_us", 1200}, {"read_iops", 7}});

    const Json report = compare_sweep(*store, sweep_id).value();
    REQUIRE(report["rows"].size() == 2);
    CHECK(report["rows"][0]["workload"] == "randrw");
    CHECK(report["rows"][0]["metrics"]["write_clat_p99_us"]["mean"].get<double>() ==
          Approx(1000.0));
    CHECK(report["rows"][1]["workload"] == "seqwrite");
    CHECK(report["metrics"] == Json::array({"read_iops", "write_bw_mib_s", "write_clat_p99_us"}));
}

TEST_CASE("compare: an unknown sweep is not found", "[compare]") {
    TempDir dir;
    auto store = std::move(Store::open(dir.file("results.db")).value());
    auto report = compare_sweep(*store, 42);
    REQUIRE_FALSE(report.ok());
    CHECK(report.error().code == errc::kNotFound);
    CHECK(report.error().message == "sweep 42 not found");
}

// One configuration in three sweeps: the first and third under KVM, the
// second under TCG (plus another configuration and a failed workload).
struct ThreeSweeps {
    std::int64_t kvm = 0, tcg = 0, kvm_again = 0;
};

ThreeSweeps config_in_three_sweeps(Store& store) {
    ThreeSweeps sweeps;
    sweeps.kvm =
        create(store, "kvm",
               {planned_run(kUnsafeBtrfs, "randrw", 0, 0), planned_run(kSafeExt4, "randrw", 1, 0),
                planned_run(kUnsafeBtrfs, "randrw", 2, 1)});
    sweeps.tcg = create(
        store, "tcg",
        {planned_run(kUnsafeBtrfs, "randrw", 0, 0), planned_run(kUnsafeBtrfs, "randrw", 1, 1),
         planned_run(kUnsafeBtrfs, "seqread", 2, 0)});
    sweeps.kvm_again = create(store, "kvm-again", {planned_run(kUnsafeBtrfs, "randrw", 0, 0)});
    finish(store, sweeps.kvm, 0, RunStatus::kSucceeded, {{"read_iops", 10}}, "kvm");
    finish(store, sweeps.kvm, 1, RunStatus::kSucceeded, {{"read_iops", 1000}}, "kvm");
    finish(store, sweeps.kvm, 2, RunStatus::kSucceeded, {{"read_iops", 12}}, "kvm");
    finish(store, sweeps.tcg, 0, RunStatus::kSucceeded, {{"read_iops", 1}}, "tcg");
    finish(store, sweeps.tcg, 1, RunStatus::kSucceeded, {{"read_iops", 3}}, "tcg");
    finish(store, sweeps.tcg, 2, RunStatus::kFailed, {}, "tcg");
    finish(store, sweeps.kvm_again, 0, RunStatus::kSucceeded, {{"read_iops", 14}}, "kvm");
    return sweeps;
}

TEST_CASE("results_for_config: sweeps and accelerations are never pooled", "[compare]") {
    TempDir dir;
    auto store = std::move(Store::open(dir.file("results.db")).value());
    const ThreeSweeps sweeps = config_in_three_sweeps(*store);

    auto results = results_for_config(*store, config_id(kUnsafeBtrfs));
    INFO((results.ok() ? "" : results.error().message));
    REQUIRE(results.ok());
    const Json& report = results.value();
    CHECK(report["config_id"] == config_id(kUnsafeBtrfs));
    CHECK(report["settings"] == to_json(kUnsafeBtrfs));
    CHECK(report["durability_risks"] == Json::array({"cache=unsafe"}));
    CHECK(report["metrics"] == Json::array({"read_iops"}));
    CHECK(report["sweeps_pooled"] == false);
    REQUIRE(report["partitions"].size() == 2);
    CHECK(report["partitions"][0]["accel"] == "kvm");
    CHECK(report["partitions"][1]["accel"] == "tcg");
    // A row per workload, sweep and partition, by first finished run.
    REQUIRE(report["rows"].size() == 4);
    const Json& kvm = report["rows"][0];
    CHECK(kvm["workload"] == "randrw");
    CHECK(kvm["workload_params"]["params"]["rw"] == "randrw");
    CHECK(kvm["sweep_ids"] == Json::array({sweeps.kvm}));
    CHECK(kvm["partition"] == 0);
    CHECK(kvm["runs"]["succeeded"] == 2);
    CHECK(kvm["metrics"]["read_iops"]["mean"].get<double>() == Approx(11.0));
    const Json& tcg = report["rows"][1];
    CHECK(tcg["sweep_ids"] == Json::array({sweeps.tcg}));
    CHECK(tcg["partition"] == 1);
    CHECK(tcg["metrics"]["read_iops"]["mean"].get<double>() == Approx(2.0));
    const Json& seqread = report["rows"][2];
    CHECK(seqread["workload"] == "seqread");
    CHECK(seqread["runs"]["failed"] == 1);
    CHECK(seqread["metrics"] == Json::object());
    CHECK(report["rows"][3]["sweep_ids"] == Json::array({sweeps.kvm_again}));
    CHECK(report["rows"][3]["metrics"]["read_iops"]["n"] == 1);

    auto unknown = results_for_config(*store, "ffffffffffffffff");
    REQUIRE_FALSE(unknown.ok());
    CHECK(unknown.error().code == errc::kNotFound);
}

TEST_CASE("results_for_config: pooled sweeps still keep accelerations apart", "[compare]") {
    TempDir dir;
    auto store = std::move(Store::open(dir.file("results.db")).value());
    const ThreeSweeps sweeps = config_in_three_sweeps(*store);

    const Json report =
        results_for_config(*store, config_id(kUnsafeBtrfs), SweepPooling::kPooled).value();
    CHECK(report["sweeps_pooled"] == true);
    REQUIRE(report["rows"].size() == 3);
    // The two KVM sweeps pool; the TCG sweep stays apart.
    const Json& kvm = report["rows"][0];
    CHECK(kvm["sweep_ids"] == Json::array({sweeps.kvm, sweeps.kvm_again}));
    CHECK(report["partitions"][kvm["partition"].get<int>()]["accel"] == "kvm");
    CHECK(kvm["metrics"]["read_iops"]["n"] == 3);
    CHECK(kvm["metrics"]["read_iops"]["mean"].get<double>() == Approx(12.0));
    const Json& tcg = report["rows"][1];
    CHECK(tcg["workload"] == "randrw");
    CHECK(tcg["sweep_ids"] == Json::array({sweeps.tcg}));
    CHECK(report["partitions"][tcg["partition"].get<int>()]["accel"] == "tcg");
    CHECK(tcg["metrics"]["read_iops"]["n"] == 2);
    CHECK(report["rows"][2]["workload"] == "seqread");
}

TEST_CASE("results_for_config: runs that never finished join their sweep's row", "[compare]") {
    TempDir dir;
    auto store = std::move(Store::open(dir.file("results.db")).value());
    const std::int64_t sweep =
        create(*store, "pending",
               {planned_run(kSafeExt4, "randrw", 0, 0), planned_run(kSafeExt4, "randrw", 1, 1),
                planned_run(kSafeExt4, "seqread", 2, 0)});
    finish(*store, sweep, 1, RunStatus::kSucceeded, {{"read_iops", 5}});
    const Json report = results_for_config(*store, config_id(kSafeExt4)).value();
    REQUIRE(report["rows"].size() == 2);
    CHECK(report["rows"][0]["runs"]["succeeded"] == 1);
    CHECK(report["rows"][0]["runs"]["pending"] == 1);
    CHECK(report["rows"][0]["partition"] == 0);
    CHECK(report["rows"][1]["workload"] == "seqread");
    CHECK(report["rows"][1]["partition"].is_null());
}

}  // namespace
}  // namespace ds

namespace ds {
namespace {

RunRecord atis_run(const StorageConfig& config, const std::string& name, Json server,
                   int sequence) {
    RunRecord run;
    run.sequence = sequence;
    run.repetition = sequence;  // one run per (configuration, workload, repetition)
    run.config_id = config_id(config);
    run.config = config;
    run.workload_name = name;
    Json params = Json{{"loop_count", 10}};
    if (!server.empty()) params["server"] = std::move(server);
    run.workload = Workload{name, "mariadb-atis", params, {}, 0};
    return run;
}

}  // namespace

TEST_CASE("compare: a mariadb-atis sweep ranks by total time, lowest first, with options",
          "[compare]") {
    TempDir dir;
    auto opened = Store::open(dir.file("results.db"));
    REQUIRE(opened.ok());
    Store& store = *opened.value();
    StorageConfig ext4 = cache_and_filesystem(CacheMode::kUnsafe, "ext4");
    StorageConfig btrfs_nocow = cache_and_filesystem(CacheMode::kUnsafe, "btrfs");
    btrfs_nocow.filesystem.post_format = {"nocow"};
    btrfs_nocow.filesystem.mount_options = "nobarrier";
    btrfs_nocow.scheduler = IoScheduler::kNone;
    const Json nosync = {{"innodb_doublewrite", 0}, {"innodb_flush_method", "nosync"}};
    // Sequences: defaults ext4 0,1; defaults btrfs 2,3; nosync ext4 4,5.
    const std::int64_t sweep =
        create(store, "atis",
               {atis_run(ext4, "defaults", {}, 0), atis_run(ext4, "defaults", {}, 1),
                atis_run(btrfs_nocow, "defaults", {}, 2), atis_run(btrfs_nocow, "defaults", {}, 3),
                atis_run(ext4, "dw0-nosync", nosync, 4), atis_run(ext4, "dw0-nosync", nosync, 5)});
    finish(store, sweep, 0, RunStatus::kSucceeded, {{"total_s", 22}});
    finish(store, sweep, 1, RunStatus::kSucceeded, {{"total_s", 24}});
    finish(store, sweep, 2, RunStatus::kSucceeded, {{"total_s", 28}});
    finish(store, sweep, 3, RunStatus::kTimedOut, {});
    finish(store, sweep, 4, RunStatus::kSucceeded, {{"total_s", 15}});
    finish(store, sweep, 5, RunStatus::kSucceeded, {{"total_s", 16}});

    auto report = compare_sweep(store, sweep);
    REQUIRE(report.ok());
    const Json& json = report.value();
    CHECK(json.at("workload_kinds") == Json{"mariadb-atis"});
    CHECK(json.at("primary_metric") == Json{{"name", "total_s"}, {"lower_is_better", true}});
    const Json& ranking = json.at("ranking");
    REQUIRE(ranking.size() == 3);
    CHECK(ranking[0].at("workload") == "dw0-nosync");
    CHECK(ranking[0].at("filesystem") == "ext4");
    CHECK(ranking[0].at("options") == "innodb_doublewrite=0 innodb_flush_method=nosync");
    CHECK(ranking[0].at("mean") == 15.5);
    CHECK(ranking[0].at("stddev").get<double>() == Approx(std::sqrt(0.5)));
    CHECK(ranking[0].at("n") == 2);
    CHECK(ranking[0].at("durability_risks") ==
          Json{"cache=unsafe", "innodb_doublewrite=0", "innodb_flush_method=nosync"});
    CHECK(ranking[1].at("options") == "defaults");
    CHECK(ranking[1].at("mean") == 23);
    CHECK(ranking[2].at("filesystem") == "btrfs+nocow:nobarrier scheduler=none");
    CHECK(ranking[2].at("n") == 1);
    CHECK(ranking[2].at("stddev").is_null());
    CHECK(ranking[2].at("durability_risks") == Json{"cache=unsafe", "nobarrier"});
    // Rows keep first-sequence order and count the timed-out run.
    const Json& btrfs_row = json.at("rows").at(ranking[2].at("row").get<std::size_t>());
    CHECK(btrfs_row.at("runs").at("timed_out") == 1);
    CHECK(btrfs_row.at("workload_kind") == "mariadb-atis");
    CHECK(btrfs_row.at("server_variables") == Json::object());

    // Another metric on request: higher-is-better unless its unit says time.
    auto by_phase = compare_sweep(store, sweep, CompareOptions{"phase_insert_s"});
    REQUIRE(by_phase.ok());
    CHECK(by_phase->at("primary_metric").at("lower_is_better") == true);
    CHECK(by_phase->at("ranking").empty());  // no run reported it
}

TEST_CASE("compare: fio sweeps rank by read_iops, highest first", "[compare]") {
    TempDir dir;
    auto opened = Store::open(dir.file("results.db"));
    REQUIRE(opened.ok());
    Store& store = *opened.value();
    const std::int64_t sweep = create(store, "fio", interleaved_runs());
    finish(store, sweep, 0, RunStatus::kSucceeded, {{"read_iops", 100}});
    finish(store, sweep, 1, RunStatus::kSucceeded, {{"read_iops", 300}});
    auto report = compare_sweep(store, sweep);
    REQUIRE(report.ok());
    CHECK(report->at("primary_metric") == Json{{"name", "read_iops"}, {"lower_is_better", false}});
    REQUIRE(report->at("ranking").size() == 2);
    CHECK(report->at("ranking")[0].at("config_id") == config_id(kSafeExt4));
    CHECK(report->at("ranking")[0].at("options") == "defaults");
}

TEST_CASE("compare: each configuration as a share of its storage's host baseline", "[compare]") {
    TempDir dir;
    auto opened = Store::open(dir.file("results.db"));
    REQUIRE(opened.ok());
    Store& store = *opened.value();
    StorageConfig rbd_ext4 = kSafeExt4;
    rbd_ext4.storage = "rbd";
    rbd_ext4.storage_pool = "pool1";
    const StorageConfig file_baseline = host_baseline_for(kSafeExt4);
    const StorageConfig rbd_baseline = host_baseline_for(rbd_ext4);
    const std::int64_t sweep = create(
        store, "baseline",
        {planned_run(kSafeExt4, "randrw", 0, 0), planned_run(rbd_ext4, "randrw", 1, 0),
         planned_run(file_baseline, "randrw", 2, 0), planned_run(rbd_baseline, "randrw", 3, 0),
         planned_run(kSafeExt4, "randread", 4, 0)});
    finish(store, sweep, 0, RunStatus::kSucceeded, {{"read_iops", 300}, {"write_iops", 100}});
    finish(store, sweep, 1, RunStatus::kSucceeded, {{"read_iops", 50}});
    finish(store, sweep, 2, RunStatus::kSucceeded, {{"read_iops", 1200}, {"write_iops", 400}});
    finish(store, sweep, 3, RunStatus::kSucceeded, {{"read_iops", 200}});
    finish(store, sweep, 4, RunStatus::kSucceeded, {{"read_iops", 900}});
    auto report = compare_sweep(store, sweep);
    REQUIRE(report.ok());
    const Json& rows = report->at("rows");
    // Each guest row against the baseline of its own storage (rows 2 and 3).
    CHECK(rows[0].at("vs_host") ==
          Json{{"baseline_row", 2}, {"ratios", {{"read_iops", 0.25}, {"write_iops", 0.25}}}});
    CHECK(rows[1].at("vs_host") == Json{{"baseline_row", 3}, {"ratios", {{"read_iops", 0.25}}}});
    CHECK(rows[2].at("host_baseline") == true);
    CHECK(rows[2].at("filesystem") == "none (host, raw volume)");
    CHECK_FALSE(rows[2].contains("vs_host"));
    CHECK(rows[0].at("host_baseline") == false);
    // Another workload has no baseline: no ratio is made up for it.
    CHECK_FALSE(rows[4].contains("vs_host"));
}

TEST_CASE("compare: which way each metric counts as better", "[compare]") {
    CHECK_FALSE(metric_lower_is_better("read_iops", {"fio"}));
    CHECK_FALSE(metric_lower_is_better("read_bw_mib_s", {"fio"}));  // a rate, not a time
    CHECK(metric_lower_is_better("read_clat_p99_us", {"fio"}));
    // CPU cost per I/O (docs/host-cpu.md), though it does not end like a time.
    CHECK(metric_lower_is_better("host_cpu_us_per_io", {"fio"}));
    CHECK(metric_lower_is_better("host_iothread_cpu_us_per_io", {"fio"}));
    CHECK(metric_lower_is_better("guest_cpu_us_per_io", {"sysbench-oltp"}));
    CHECK(metric_lower_is_better("total_s", {"mariadb-atis"}));
    CHECK(metric_lower_is_better("phase_select_s", {"mariadb-atis"}));
    CHECK_FALSE(metric_lower_is_better("tps", {"sysbench-oltp"}));
    CHECK(metric_lower_is_better("latency_p95_ms", {"sysbench-oltp"}));
    CHECK(metric_lower_is_better("errors_per_s", {"sysbench-oltp"}));
}

TEST_CASE("compare: each row lists what its runs did not check, counted",
          "[compare][not_checked]") {
    TempDir dir;
    auto store = Store::open(dir.file("results.db"));
    REQUIRE(store.ok());
    test::ReportFixtureOptions options;
    const Json remote = {{"level", "QEMU process"},
                         {"reason", "out of reach"},
                         {"forbidden", true},
                         {"fails_run", false}};
    // Every unsafe run misses the process level; one of them also a key.
    options.verification = [&](const RunRecord& run) {
        Json record = {{"policy", "fail-unless-forbidden"}, {"not_checked", Json::array()}};
        if (run.config.cache != CacheMode::kUnsafe) return record;
        record["not_checked"].push_back(remote);
        if (run.repetition == 0) {
            record["not_checked"].push_back({{"level", "QEMU"},
                                             {"setting", "iops_limit"},
                                             {"reason", "unseen"},
                                             {"forbidden", false},
                                             {"fails_run", false}});
        }
        return record;
    };
    const std::int64_t id = test::store_report_fixture(*store.value(), options);
    Result<Json> compare = compare_sweep(*store.value(), id);
    REQUIRE(compare.ok());
    int unsafe_rows = 0;
    for (const Json& row : compare->at("rows")) {
        INFO(row.dump());
        if (row.at("settings").value("cache", "") != "unsafe") {
            CHECK(row.at("not_checked") == Json::array());
            continue;
        }
        ++unsafe_rows;
        Json counted = remote;
        counted["runs"] = row.at("runs").at("succeeded");
        REQUIRE(row.at("not_checked").size() == 2);
        CHECK(row.at("not_checked")[0] == counted);
        CHECK(row.at("not_checked")[1].at("runs") == 1);
    }
    CHECK(unsafe_rows > 0);
}

}  // namespace ds
