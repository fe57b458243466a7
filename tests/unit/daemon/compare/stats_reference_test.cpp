// Statistics against values computed independently: tests/data/stats/
// reference.py (plain formulas and its own Student's t, no Boost, no scipy)
// wrote tests/data/stats/expected.json; the C++ must agree with it.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <vector>

#include "daemon/compare/comparison.h"
#include "daemon/model/stats.h"
#include "support/test_data.h"

namespace ds {
namespace {

const std::filesystem::path kExpectedPath = test::test_data_dir() / "stats" / "expected.json";

const Json& expected() {
    static const Json document = [] {
        std::ifstream in(kExpectedPath);
        REQUIRE(in.good());
        return Json::parse(in);
    }();
    return document;
}

// A JSON number matches `actual` to 1e-9 relative; null matches NaN.
void check_value(const Json& want, double actual, const std::string& what) {
    INFO(what << ": expected " << want.dump() << ", got " << actual);
    if (want.is_null()) {
        CHECK(std::isnan(actual));
    } else {
        CHECK(actual == Approx(want.get<double>()).epsilon(1e-9).margin(1e-12));
    }
}

std::vector<RoundValue> round_values(const Json& pairs) {
    std::vector<RoundValue> values;
    for (const Json& pair : pairs) values.push_back({pair[0].get<int>(), pair[1].get<double>()});
    return values;
}

TEST_CASE("reference: Student's t and normal quantiles", "[stats][reference]") {
    for (const auto& [df, value] : expected()["t975"].items())
        check_value(value, student_t_975(std::stoi(df)), "t(0.975, " + df + ")");
    const Json& fractional = expected()["t_quantile_fractional"];
    check_value(fractional["value"],
                student_t_quantile(fractional["q"].get<double>(), fractional["df"].get<double>()),
                "t(0.975, 7.5)");
    const Json& p = expected()["t_two_sided_p"];
    check_value(p["value"], student_t_two_sided_p(p["t"].get<double>(), p["df"].get<double>()),
                "P(|T6| >= 2.5)");
    check_value(expected()["normal975"], normal_quantile(0.975), "z(0.975)");
    CHECK(std::isnan(student_t_quantile(0.975, 0)));
    CHECK(std::isnan(normal_quantile(1.0)));
}

TEST_CASE("reference: summaries, including n = 1 and zero variance", "[stats][reference]") {
    for (const auto& [name, item] : expected()["summaries"].items()) {
        const std::vector<double> values = item["values"].get<std::vector<double>>();
        const Summary summary = summarize(values);
        const Json& want = item["expected"];
        INFO(name);
        CHECK(summary.n == want["n"].get<int>());
        check_value(want["mean"], summary.mean, name + " mean");
        check_value(want["median"], summary.median, name + " median");
        check_value(want["stddev"], summary.stddev, name + " stddev");
        check_value(want["cv"], summary.cv, name + " cv");
        check_value(want["ci95_low"], summary.ci95_low, name + " ci95_low");
        check_value(want["ci95_high"], summary.ci95_high, name + " ci95_high");
        check_value(want["min"], summary.min, name + " min");
        check_value(want["max"], summary.max, name + " max");
        check_value(want["geomean"], summary.geomean, name + " geomean");
    }
}

TEST_CASE("reference: summaries from moments equal those from the values", "[stats][reference]") {
    for (const auto& [name, item] : expected()["summaries"].items()) {
        const std::vector<double> values = item["values"].get<std::vector<double>>();
        // Welford's update, as the store keeps it.
        Moments moments;
        for (double value : values) {
            const double delta = value - moments.mean;
            moments.n += 1;
            moments.mean += delta / moments.n;
            moments.m2 += delta * (value - moments.mean);
            moments.min = moments.n == 1 ? value : std::min(moments.min, value);
            moments.max = moments.n == 1 ? value : std::max(moments.max, value);
            if (value > 0) {
                moments.log_sum += std::log(value);
                moments.log_n += 1;
            }
        }
        const Summary summary = summarize_moments(moments);
        const Json& want = item["expected"];
        INFO(name);
        check_value(want["mean"], summary.mean, name + " mean");
        check_value(want["stddev"], summary.stddev, name + " stddev");
        check_value(want["ci95_high"], summary.ci95_high, name + " ci95_high");
        check_value(want["geomean"], summary.geomean, name + " geomean");
        CHECK(std::isnan(summary.median));
    }
}

TEST_CASE("reference: ratios to a baseline, paired, Welch and n = 1", "[stats][reference]") {
    for (const auto& [name, item] : expected()["ratios"].items()) {
        const RatioEstimate estimate =
            estimate_ratio(round_values(item["candidate"]), round_values(item["baseline"]));
        const Json& want = item["expected"];
        INFO(name);
        CHECK(to_string(estimate.method) == want["method"].get<std::string>());
        check_value(want["ratio"], estimate.ratio, name + " ratio");
        check_value(want["ci95_low"], estimate.ci95_low, name + " ci95_low");
        check_value(want["ci95_high"], estimate.ci95_high, name + " ci95_high");
        check_value(want["p_value"], estimate.p_value, name + " p");
        if (want.contains("df")) check_value(want["df"], estimate.degrees_of_freedom, name + " df");
    }
}

TEST_CASE("reference: Holm adjustment, checked by hand", "[stats][reference]") {
    // Sorted: 0.005 x 4 = 0.02, 0.01 x 3 = 0.03, 0.03 x 2 = 0.06,
    // 0.04 x 1 = 0.04 -> raised to 0.06 (step-down never decreases).
    const Json& holm = expected()["holm"];
    const std::vector<double> adjusted = holm_adjust(holm["p"].get<std::vector<double>>());
    const std::vector<double> want = holm["adjusted"].get<std::vector<double>>();
    REQUIRE(adjusted.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) CHECK(adjusted[i] == Approx(want[i]));
}

TEST_CASE("Holm: NaN entries are no comparison and do not count", "[stats]") {
    const double nan = std::nan("");
    const std::vector<double> adjusted = holm_adjust({0.02, nan, 0.04});
    CHECK(adjusted[0] == Approx(0.04));
    CHECK(std::isnan(adjusted[1]));
    CHECK(adjusted[2] == Approx(0.04));
    CHECK(holm_adjust({0.6, 0.7}) == std::vector<double>{1.0, 1.0});
}

// An estimate of `ratio` from `runs` paired rounds (decide_verdict reads
// only the ratio and how many runs it rests on).
RatioEstimate estimate_of(double ratio, int runs = 3) {
    RatioEstimate estimate;
    estimate.method = RatioMethod::kPaired;
    estimate.ratio = ratio;
    estimate.pairs = estimate.n_candidate = estimate.n_baseline = runs;
    return estimate;
}

TEST_CASE("verdicts: significance, direction and the practical threshold", "[stats]") {
    const VerdictRules two_percent;
    VerdictRules one_percent;
    one_percent.practical_difference = 0.01;
    // IOPS: higher is better.
    CHECK(decide_verdict(estimate_of(1.10), 0.001, false, two_percent) == Verdict::kBetter);
    CHECK(decide_verdict(estimate_of(0.90), 0.001, false, two_percent) == Verdict::kWorse);
    // Time: lower is better.
    CHECK(decide_verdict(estimate_of(0.90), 0.001, true, two_percent) == Verdict::kBetter);
    CHECK(decide_verdict(estimate_of(1.10), 0.001, true, two_percent) == Verdict::kWorse);
    // Significant but smaller than the threshold: never a difference.
    CHECK(decide_verdict(estimate_of(1.015), 1e-9, false, two_percent) == Verdict::kNoDifference);
    CHECK(decide_verdict(estimate_of(1.015), 1e-9, false, one_percent) == Verdict::kBetter);
    // Large but not significant.
    CHECK(decide_verdict(estimate_of(1.5), 0.2, false, two_percent) == Verdict::kNoDifference);
    CHECK(decide_verdict(estimate_of(1.5), std::nan(""), false, two_percent) ==
          Verdict::kNotEnoughData);
    CHECK(to_string(Verdict::kNoDifference) == "no significant difference");
}

TEST_CASE("verdicts: two runs that agree exactly are not enough runs", "[stats]") {
    // n = 2 per side with zero spread: t is infinite, so p = 0 ...
    const RatioEstimate two = estimate_ratio({{0, 150}, {1, 150}}, {{0, 100}, {1, 100}});
    CHECK(two.method == RatioMethod::kPaired);
    CHECK(two.p_value == 0);
    // ... which is no evidence: below the default 3 runs there is no verdict.
    const VerdictRules rules;
    CHECK(rules.min_runs == 3);
    CHECK_FALSE(has_enough_runs(two, rules));
    CHECK(decide_verdict(two, two.p_value, false, rules) == Verdict::kNotEnoughData);
    CHECK(to_string(Verdict::kNotEnoughData) == "not enough runs");

    // n = 3 per side: a verdict.
    const RatioEstimate three =
        estimate_ratio({{0, 150}, {1, 152}, {2, 149}}, {{0, 100}, {1, 101}, {2, 99}});
    CHECK(has_enough_runs(three, rules));
    CHECK(decide_verdict(three, three.p_value, false, rules) == Verdict::kBetter);

    // The setting changed: with min_runs 4 three runs are not enough, with 2
    // even the two agreeing runs get one.
    VerdictRules four;
    four.min_runs = 4;
    CHECK(decide_verdict(three, three.p_value, false, four) == Verdict::kNotEnoughData);
    VerdictRules two_runs;
    two_runs.min_runs = 2;
    CHECK(decide_verdict(two, two.p_value, false, two_runs) == Verdict::kBetter);

    // Unpaired, the smaller side counts: 3 against 2 is not enough.
    const RatioEstimate welch =
        estimate_ratio({{0, 150}, {2, 151}, {3, 152}}, {{0, 100}, {1, 100}});
    CHECK(welch.method == RatioMethod::kWelch);
    CHECK_FALSE(has_enough_runs(welch, rules));
}

TEST_CASE("log_scale_centre: the geometric mean of the positive values", "[stats]") {
    CHECK(log_scale_centre({{0, 1}, {1, 100}}) == Approx(10.0));
    CHECK(log_scale_centre({{0, 4}, {1, -3}, {2, 0}}) == Approx(4.0));
    CHECK(std::isnan(log_scale_centre({})));
    // The ratio of two centres is the ratio estimate_ratio gives unpaired.
    const std::vector<RoundValue> a = {{0, 10}, {1, 40}, {2, 20}};
    const std::vector<RoundValue> b = {{3, 5}, {4, 9}};
    CHECK(estimate_ratio(a, b).ratio == Approx(log_scale_centre(a) / log_scale_centre(b)));
}

TEST_CASE("rate metrics are known by name", "[stats]") {
    CHECK(is_rate_metric("read_iops"));
    CHECK(is_rate_metric("write_bw_mib_s"));
    CHECK(is_rate_metric("tps"));
    CHECK(is_rate_metric("errors_per_s"));
    CHECK_FALSE(is_rate_metric("total_s"));
    CHECK_FALSE(is_rate_metric("read_clat_p99_us"));
    CHECK_FALSE(is_rate_metric("latency_p95_ms"));
    CHECK_FALSE(is_rate_metric("fiops"));
}

}  // namespace
}  // namespace ds
