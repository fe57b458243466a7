// compare_sweep against a baseline (issue 10): ratios with CIs by round,
// Holm-adjusted verdicts, partitions that are never pooled, a missing
// baseline; and the store's aggregates agreeing with the values.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <utility>

#include "daemon/compare/compare.h"
#include "daemon/compare/comparison.h"
#include "daemon/plan/expand.h"
#include "daemon/spec/spec.h"
#include "daemon/store/store.h"
#include "support/fakes/daemon_fakes.h"
#include "support/temp_dir.h"
#include "unit/daemon/compare/sweep_from_spec.h"

namespace ds {
namespace {

using testing::row_of;

using ds::test::TempDir;

constexpr const char* kSpec = R"(name = "cmp"
repetitions = 3
baseline = { cache = "none", filesystem = "ext4" }
[matrix]
cache = ["unsafe", "none"]
filesystem = ["ext4", "btrfs"]
[[workload]]
kind = "fio"
name = "randrw"
rw = "randrw"
)";

using Sweep = testing::SweepFromSpec;

// The sweep as the API plans it: spec text stored, runs from expand_sweep.
Sweep create_from_spec(Store& store, const std::string& spec_text) {
    return testing::create_sweep_from_spec(store, spec_text);
}

// Finishes the run of configuration `config` in round `round`.
void finish(Store& store, const Sweep& sweep, int config, int round, RunStatus status,
            std::map<std::string, double> metrics, const Json& versions = Json::object(),
            const std::string& accel = "kvm") {
    const std::string id = config_id(sweep.plan.configs[static_cast<std::size_t>(config)]);
    Result<std::vector<RunRecord>> runs = store.list_runs(sweep.id, RawOutput::kOmit);
    REQUIRE(runs.ok());
    for (RunRecord run : runs.value()) {
        if (run.config_id != id || run.repetition != round) continue;
        REQUIRE(store.mark_run_running(run.id, "vm", "vol", "log", accel, "t").ok());
        run.status = status;
        run.versions = versions;
        run.metrics = std::move(metrics);
        REQUIRE(store.finish_run(run).ok());
        return;
    }
    FAIL("no run of config " << config << " in round " << round);
}

int config_index(const SweepPlan& plan, CacheMode cache, const std::string& filesystem) {
    for (std::size_t c = 0; c < plan.configs.size(); ++c) {
        if (plan.configs[c].cache == cache && plan.configs[c].filesystem.label == filesystem)
            return static_cast<int>(c);
    }
    FAIL("no such configuration");
    return -1;
}

TEST_CASE("compare: ratios to the spec's baseline, paired by round, Holm-adjusted",
          "[compare][baseline]") {
    TempDir dir;
    auto store = testing::open_store(dir.file("r.db"));
    Sweep sweep = create_from_spec(*store, kSpec);
    const int baseline = config_index(sweep.plan, CacheMode::kNone, "ext4");
    const int unsafe_ext4 = config_index(sweep.plan, CacheMode::kUnsafe, "ext4");
    const int unsafe_btrfs = config_index(sweep.plan, CacheMode::kUnsafe, "btrfs");
    const int none_btrfs = config_index(sweep.plan, CacheMode::kNone, "btrfs");
    // Baseline 100, 110, 90; unsafe ext4 about twice as fast in each round;
    // unsafe btrfs 1% faster in each round (significant, below 2%); none
    // btrfs noisy around the baseline.
    const std::vector<double> base = {100, 110, 90};
    const std::vector<double> fast = {201, 218, 182};
    const std::vector<double> tiny = {101, 111.1, 90.9};
    const std::vector<double> noisy = {80, 140, 95};
    for (int round = 0; round < 3; ++round) {
        finish(*store, sweep, baseline, round, RunStatus::kSucceeded, {{"read_iops", base[round]}});
        finish(*store, sweep, unsafe_ext4, round, RunStatus::kSucceeded,
               {{"read_iops", fast[round]}});
        finish(*store, sweep, unsafe_btrfs, round, RunStatus::kSucceeded,
               {{"read_iops", tiny[round]}});
        finish(*store, sweep, none_btrfs, round, RunStatus::kSucceeded,
               {{"read_iops", noisy[round]}});
    }
    auto compared = compare_sweep(*store, sweep.id);
    REQUIRE(compared.ok());
    const Json& report = compared.value();
    const std::string baseline_id = config_id(sweep.plan.configs[baseline]);
    CHECK(report["baseline"] ==
          Json{{"config_id", baseline_id}, {"chosen_by", "spec"}, {"tuning", "defaults"}});
    CHECK(report["practical_difference"] == 0.02);
    CHECK(report["comparisons"] == 3);
    CHECK(row_of(report, baseline_id)["is_baseline"] == true);
    CHECK_FALSE(row_of(report, baseline_id).contains("vs_baseline"));

    // Recomputed here from the same values: the store and compare add
    // nothing of their own.
    auto rounds = [](const std::vector<double>& values) {
        std::vector<RoundValue> out;
        for (int r = 0; r < 3; ++r) out.push_back({r, values[r]});
        return out;
    };
    const RatioEstimate fast_estimate = estimate_ratio(rounds(fast), rounds(base));
    const RatioEstimate tiny_estimate = estimate_ratio(rounds(tiny), rounds(base));
    const RatioEstimate noisy_estimate = estimate_ratio(rounds(noisy), rounds(base));
    const std::vector<double> adjusted =
        holm_adjust({fast_estimate.p_value, tiny_estimate.p_value, noisy_estimate.p_value});

    const Json& fast_row = row_of(report, config_id(sweep.plan.configs[unsafe_ext4]));
    const Json& versus = fast_row["vs_baseline"];
    CHECK(versus["method"] == "paired");
    CHECK(versus["pairs"] == 3);
    CHECK(versus["ratio"].get<double>() == Approx(fast_estimate.ratio));
    CHECK(versus["ratio"].get<double>() == Approx(std::cbrt(2.01 * 218.0 / 110 * 182.0 / 90)));
    CHECK(versus["ci95_low"].get<double>() == Approx(fast_estimate.ci95_low));
    CHECK(versus["p_adjusted"].get<double>() == Approx(adjusted[0]));
    CHECK(versus["verdict"] == "faster");
    CHECK(fast_row["durability_risks"] == Json::array({"cache=unsafe"}));

    const Json& tiny_row = row_of(report, config_id(sweep.plan.configs[unsafe_btrfs]));
    CHECK(tiny_row["vs_baseline"]["ratio"].get<double>() == Approx(1.01));
    CHECK(tiny_row["vs_baseline"]["p_value"].get<double>() < 0.001);
    CHECK(tiny_row["vs_baseline"]["verdict"] == "no significant difference");

    const Json& noisy_row = row_of(report, config_id(sweep.plan.configs[none_btrfs]));
    CHECK(noisy_row["vs_baseline"]["p_adjusted"].get<double>() == Approx(adjusted[2]));
    CHECK(noisy_row["vs_baseline"]["verdict"] == "no significant difference");

    // Ranking: best first; the baseline is marked as such.
    const Json& ranking = report["ranking"];
    REQUIRE(ranking.size() == 4);
    CHECK(ranking[0]["config_id"] == fast_row["config_id"]);
    CHECK(ranking[0]["verdict"] == "faster");
    for (const Json& entry : ranking)
        if (entry["config_id"] == baseline_id) CHECK(entry["verdict"] == "baseline");

    // Summaries: the analysed metric with median and geometric mean.
    const Json& summary = row_of(report, baseline_id)["metrics"]["read_iops"];
    CHECK(summary["median"] == 100.0);
    CHECK(summary["geomean"].get<double>() == Approx(std::cbrt(100.0 * 110 * 90)));
    CHECK(summary["cv"].get<double>() == Approx(10.0 / 100));
}

TEST_CASE("compare: a failed round makes the comparison Welch's", "[compare][baseline]") {
    TempDir dir;
    auto store = testing::open_store(dir.file("r.db"));
    Sweep sweep = create_from_spec(*store, kSpec);
    const int baseline = config_index(sweep.plan, CacheMode::kNone, "ext4");
    const int other = config_index(sweep.plan, CacheMode::kUnsafe, "ext4");
    finish(*store, sweep, baseline, 0, RunStatus::kSucceeded, {{"read_iops", 100}});
    finish(*store, sweep, baseline, 1, RunStatus::kSucceeded, {{"read_iops", 104}});
    finish(*store, sweep, baseline, 2, RunStatus::kSucceeded, {{"read_iops", 98}});
    finish(*store, sweep, other, 0, RunStatus::kSucceeded, {{"read_iops", 150}});
    finish(*store, sweep, other, 1, RunStatus::kFailed, {});
    finish(*store, sweep, other, 2, RunStatus::kSucceeded, {{"read_iops", 160}});
    const Json report = compare_sweep(*store, sweep.id).value();
    const Json& versus = row_of(report, config_id(sweep.plan.configs[other]))["vs_baseline"];
    CHECK(versus["method"] == "welch");
    CHECK(versus["n"] == 2);
    CHECK(versus["baseline_n"] == 3);
    const RatioEstimate expected =
        estimate_ratio({{0, 150}, {2, 160}}, {{0, 100}, {1, 104}, {2, 98}});
    CHECK(versus["ratio"].get<double>() == Approx(expected.ratio));
    CHECK(versus["ci95_high"].get<double>() == Approx(expected.ci95_high));
    CHECK(row_of(report, config_id(sweep.plan.configs[other]))["runs"]["failed"] == 1);
}

TEST_CASE("compare: a baseline without a succeeded run, and n = 1", "[compare][baseline]") {
    TempDir dir;
    auto store = testing::open_store(dir.file("r.db"));
    Sweep sweep = create_from_spec(*store, kSpec);
    const int baseline = config_index(sweep.plan, CacheMode::kNone, "ext4");
    const int other = config_index(sweep.plan, CacheMode::kUnsafe, "ext4");
    const int single = config_index(sweep.plan, CacheMode::kUnsafe, "btrfs");
    finish(*store, sweep, baseline, 0, RunStatus::kFailed, {});
    finish(*store, sweep, other, 0, RunStatus::kSucceeded, {{"read_iops", 150}});
    finish(*store, sweep, other, 1, RunStatus::kSucceeded, {{"read_iops", 155}});
    const Json missing = compare_sweep(*store, sweep.id).value();
    const Json& versus = row_of(missing, config_id(sweep.plan.configs[other]))["vs_baseline"];
    CHECK(versus["ratio"].is_null());
    CHECK(versus["p_adjusted"].is_null());
    CHECK(versus["verdict"] == "not enough runs");
    CHECK(missing["comparisons"] == 0);

    finish(*store, sweep, baseline, 1, RunStatus::kSucceeded, {{"read_iops", 100}});
    finish(*store, sweep, single, 1, RunStatus::kSucceeded, {{"read_iops", 120}});
    const Json one = compare_sweep(*store, sweep.id).value();
    const Json& single_versus = row_of(one, config_id(sweep.plan.configs[single]))["vs_baseline"];
    CHECK(single_versus["ratio"].get<double>() == Approx(1.2));
    CHECK(single_versus["method"] == "none");
    CHECK(single_versus["ci95_low"].is_null());
    CHECK(single_versus["verdict"] == "not enough runs");
    const Json& summary =
        row_of(one, config_id(sweep.plan.configs[single]))["metrics"]["read_iops"];
    CHECK(summary["n"] == 1);
    CHECK(summary["stddev"].is_null());
    CHECK(summary["median"] == 120.0);
}

TEST_CASE("compare: partitions are never pooled, each has its own baseline",
          "[compare][baseline]") {
    TempDir dir;
    auto store = testing::open_store(dir.file("r.db"));
    Sweep sweep = create_from_spec(*store, kSpec);
    const int baseline = config_index(sweep.plan, CacheMode::kNone, "ext4");
    const int other = config_index(sweep.plan, CacheMode::kUnsafe, "ext4");
    const Json qemu7 = {{"qemu", "7.2.0"}, {"kernel", "6.1"}};
    // Round 0 under KVM, rounds 1 and 2 under TCG.
    finish(*store, sweep, baseline, 0, RunStatus::kSucceeded, {{"read_iops", 1000}}, qemu7, "kvm");
    finish(*store, sweep, other, 0, RunStatus::kSucceeded, {{"read_iops", 2000}}, qemu7, "kvm");
    for (int round = 1; round < 3; ++round) {
        finish(*store, sweep, baseline, round, RunStatus::kSucceeded, {{"read_iops", 10.0 + round}},
               qemu7, "tcg");
        finish(*store, sweep, other, round, RunStatus::kSucceeded, {{"read_iops", 11.0 + round}},
               qemu7, "tcg");
    }
    const Json report = compare_sweep(*store, sweep.id).value();
    REQUIRE(report["partitions"].size() == 2);
    CHECK(report["partitions"][0] == Json{{"accel", "kvm"},
                                          {"host", ""},
                                          {"qemu", "7.2.0"},
                                          {"libvirt", ""},
                                          {"kernel", "6.1"},
                                          {"proxmox", ""}});
    CHECK(report["partitions"][1]["accel"] == "tcg");
    int kvm_rows = 0;
    for (const Json& row : report["rows"]) {
        if (row["runs"]["succeeded"] == 0) continue;  // pending rows of the other configs
        const bool kvm = row["partition"] == 0;
        kvm_rows += kvm ? 1 : 0;
        const Json& summary = row["metrics"]["read_iops"];
        // Never the mean of KVM and TCG runs together.
        CHECK(summary["n"] == (kvm ? 1 : 2));
        if (row["is_baseline"] == true) continue;
        const double expected = kvm ? 2.0 : std::sqrt(12.0 / 11 * 13.0 / 12);
        CHECK(row["vs_baseline"]["ratio"].get<double>() == Approx(expected));
    }
    CHECK(kvm_rows == 2);
}

TEST_CASE("compare: runs on two Proxmox VE releases are never pooled", "[compare][baseline]") {
    TempDir dir;
    auto store = testing::open_store(dir.file("r.db"));
    Sweep sweep = create_from_spec(*store, kSpec);
    const int baseline = config_index(sweep.plan, CacheMode::kNone, "ext4");
    // The same QEMU and kernel: only the release differs (a node upgraded
    // from 8.4 to 9.1 between rounds).
    for (const char* release : {"8.4.1", "9.1.2"}) {
        const Json versions = {{"qemu", "9.2.0"}, {"kernel", "6.1"}, {"proxmox", release}};
        finish(*store, sweep, baseline, release[0] == '8' ? 0 : 1, RunStatus::kSucceeded,
               {{"read_iops", 100}}, versions, "kvm");
    }
    const Json report = compare_sweep(*store, sweep.id).value();
    REQUIRE(report["partitions"].size() == 2);
    CHECK(report["partitions"][0]["proxmox"] == "8.4.1");
    CHECK(report["partitions"][1]["proxmox"] == "9.1.2");
}

TEST_CASE("compare: the first configuration is the baseline when the spec names none",
          "[compare][baseline]") {
    TempDir dir;
    auto store = testing::open_store(dir.file("r.db"));
    std::string spec = kSpec;
    spec.erase(spec.find("baseline = "), spec.find("[matrix]") - spec.find("baseline = "));
    Sweep sweep = create_from_spec(*store, spec);
    finish(*store, sweep, 1, 0, RunStatus::kSucceeded, {{"read_iops", 5}});
    const Json report = compare_sweep(*store, sweep.id).value();
    CHECK(report["baseline"]["chosen_by"] == "first configuration");
    CHECK(report["baseline"]["config_id"] == config_id(sweep.plan.configs[0]));
    // Config 0 has no finished run: config 1 has no baseline row to compare with.
    CHECK(row_of(report, config_id(sweep.plan.configs[1]))["vs_baseline"]["verdict"] ==
          "no baseline");
}

TEST_CASE("compare: ranking orders by the geometric mean, as the ratios do",
          "[compare][baseline]") {
    TempDir dir;
    auto store = testing::open_store(dir.file("r.db"));
    Sweep sweep = create_from_spec(*store, kSpec);
    const int baseline = config_index(sweep.plan, CacheMode::kNone, "ext4");
    const int steady = config_index(sweep.plan, CacheMode::kUnsafe, "ext4");
    const int spiky = config_index(sweep.plan, CacheMode::kUnsafe, "btrfs");
    // steady: mean 10, geomean 10. spiky: mean 14 (higher), geomean 40^(1/3)
    // = 3.42 (lower). The arithmetic mean ranks spiky first; its ratio to
    // the baseline (0.68) is below steady's (2).
    const std::vector<double> base = {5, 5, 5};
    const std::vector<double> steady_values = {10, 10, 10};
    const std::vector<double> spiky_values = {1, 1, 40};
    for (int round = 0; round < 3; ++round) {
        finish(*store, sweep, baseline, round, RunStatus::kSucceeded, {{"read_iops", base[round]}});
        finish(*store, sweep, steady, round, RunStatus::kSucceeded,
               {{"read_iops", steady_values[round]}});
        finish(*store, sweep, spiky, round, RunStatus::kSucceeded,
               {{"read_iops", spiky_values[round]}});
    }
    const Json report = compare_sweep(*store, sweep.id).value();
    const Json& ranking = report["ranking"];
    REQUIRE(ranking.size() == 3);
    CHECK(ranking[0]["config_id"] == config_id(sweep.plan.configs[steady]));
    CHECK(ranking[1]["config_id"] == config_id(sweep.plan.configs[baseline]));
    CHECK(ranking[2]["config_id"] == config_id(sweep.plan.configs[spiky]));
    CHECK(ranking[2]["mean"].get<double>() > ranking[0]["mean"].get<double>());
    CHECK(ranking[2]["geomean"].get<double>() == Approx(std::cbrt(40.0)));
    // Best first means ratio to the baseline (1 for itself) never rising.
    double previous = std::numeric_limits<double>::infinity();
    for (const Json& entry : ranking) {
        const double ratio = entry["verdict"] == "baseline" ? 1.0 : entry["ratio"].get<double>();
        CHECK(ratio <= previous);
        previous = ratio;
    }
}

TEST_CASE("compare: a verdict needs min_runs_for_verdict runs a side, as the spec sets",
          "[compare][baseline]") {
    TempDir dir;
    auto store = testing::open_store(dir.file("r.db"));
    // Two rounds of identical values: zero spread, p = 0.
    auto two_rounds = [&](const std::string& spec_text) {
        Sweep sweep = create_from_spec(*store, spec_text);
        const int baseline = config_index(sweep.plan, CacheMode::kNone, "ext4");
        const int other = config_index(sweep.plan, CacheMode::kUnsafe, "ext4");
        for (int round = 0; round < 2; ++round) {
            finish(*store, sweep, baseline, round, RunStatus::kSucceeded, {{"read_iops", 100}});
            finish(*store, sweep, other, round, RunStatus::kSucceeded, {{"read_iops", 150}});
        }
        const Json report = compare_sweep(*store, sweep.id).value();
        return std::make_pair(report,
                              row_of(report, config_id(sweep.plan.configs[other]))["vs_baseline"]);
    };
    const auto [by_default, versus] = two_rounds(kSpec);
    CHECK(by_default["min_runs_for_verdict"] == 3);
    CHECK(versus["p_value"] == 0.0);
    CHECK(versus["p_adjusted"].is_null());
    CHECK(versus["verdict"] == "not enough runs");
    CHECK(by_default["comparisons"] == 0);

    const auto [lowered, lowered_versus] =
        two_rounds(std::string("min_runs_for_verdict = 2\n") + kSpec);
    CHECK(lowered["min_runs_for_verdict"] == 2);
    CHECK(lowered_versus["verdict"] == "faster");
    CHECK(lowered["comparisons"] == 1);
}

TEST_CASE("store: incremental aggregates equal summaries of the values", "[compare][store]") {
    TempDir dir;
    auto store = testing::open_store(dir.file("r.db"));
    Sweep sweep = create_from_spec(*store, kSpec);
    const std::vector<double> values = {1e5 + 3, 1e5 - 7, 1e5 + 1};
    for (int round = 0; round < 3; ++round)
        finish(*store, sweep, 0, round, RunStatus::kSucceeded,
               {{"read_iops", values[round]}, {"write_clat_p99_us", -1.0 * round}});
    auto aggregates = store->metric_aggregates(sweep.id);
    REQUIRE(aggregates.ok());
    REQUIRE(aggregates->size() == 2);
    const Summary from_values = summarize(values);
    const Summary folded = summarize_moments(aggregates->at(0).moments);
    CHECK(aggregates->at(0).metric == "read_iops");
    CHECK(folded.mean == Approx(from_values.mean).epsilon(1e-12));
    CHECK(folded.stddev == Approx(from_values.stddev).epsilon(1e-9));
    CHECK(folded.geomean == Approx(from_values.geomean).epsilon(1e-12));
    CHECK(folded.min == 1e5 - 7);
    // Values <= 0 have no logarithm: no geometric mean.
    CHECK(std::isnan(summarize_moments(aggregates->at(1).moments).geomean));
}

TEST_CASE("store: runs come in pages", "[store][paging]") {
    TempDir dir;
    auto store = testing::open_store(dir.file("r.db"));
    Sweep sweep = create_from_spec(*store, kSpec);  // 12 runs
    finish(*store, sweep, 0, 0, RunStatus::kSucceeded, {{"read_iops", 5}});
    auto first = store->list_runs_page(sweep.id, -1, 5);
    REQUIRE(first.ok());
    REQUIRE(first->runs.size() == 5);
    CHECK(first->runs.front().sequence == 0);
    CHECK(first->next_after == 4);
    auto last = store->list_runs_page(sweep.id, 9, 5);
    REQUIRE(last.ok());
    REQUIRE(last->runs.size() == 2);
    CHECK(last->next_after == -1);
    // Metrics come with the page's runs.
    std::size_t with_metrics = 0;
    for (int after = -1; after >= -1;) {
        auto page = store->list_runs_page(sweep.id, after, 4).value();
        for (const RunRecord& run : page.runs) with_metrics += run.metrics.size();
        after = page.next_after;
        if (after < 0) break;
    }
    CHECK(with_metrics == 1);
    CHECK(store->list_runs_page(sweep.id + 100, -1, 5).error().code == errc::kNotFound);
}

}  // namespace
}  // namespace ds
