#include "daemon/model/stats.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

namespace ds {
namespace {

TEST_CASE("summarize: three runs 10, 12, 14", "[stats]") {
    const std::vector<double> values = {14, 10, 12};
    const Summary summary = summarize(values);
    CHECK(summary.n == 3);
    CHECK(summary.mean == Approx(12.0));
    // Deviations -2, 0, 2: sum of squares 8, divided by n-1 = 2 -> variance 4.
    CHECK(summary.stddev == Approx(2.0));
    // Half-width t(0.975, 2) * s / sqrt(n) = 4.303 * 2 / sqrt(3) = 4.9683.
    CHECK(summary.ci95_low == Approx(12.0 - 4.303 * 2.0 / std::sqrt(3.0)).epsilon(1e-4));
    CHECK(summary.ci95_high == Approx(12.0 + 4.303 * 2.0 / std::sqrt(3.0)).epsilon(1e-4));
    CHECK(summary.ci95_high == Approx(16.9683).epsilon(1e-5));
    CHECK(summary.min == 10.0);
    CHECK(summary.max == 14.0);
}

TEST_CASE("summarize: eight values, t with seven degrees of freedom", "[stats]") {
    const std::vector<double> values = {2, 4, 4, 4, 5, 5, 7, 9};
    const Summary summary = summarize(values);
    CHECK(summary.n == 8);
    CHECK(summary.mean == Approx(5.0));
    // Squared deviations 9+1+1+1+0+0+4+16 = 32; 32/7 = 4.571428...
    CHECK(summary.stddev == Approx(std::sqrt(32.0 / 7.0)));
    const double half_width = 2.3646 * std::sqrt(32.0 / 7.0) / std::sqrt(8.0);  // 1.78746
    CHECK(half_width == Approx(1.7875).epsilon(1e-4));
    CHECK(summary.ci95_low == Approx(5.0 - half_width));
    CHECK(summary.ci95_high == Approx(5.0 + half_width));
    CHECK(summary.min == 2.0);
    CHECK(summary.max == 9.0);
}

TEST_CASE("summarize: one value has no spread and no interval", "[stats]") {
    const std::vector<double> values = {3.5};
    const Summary summary = summarize(values);
    CHECK(summary.n == 1);
    CHECK(summary.mean == 3.5);
    CHECK(summary.min == 3.5);
    CHECK(summary.max == 3.5);
    CHECK(std::isnan(summary.stddev));
    CHECK(std::isnan(summary.ci95_low));
    CHECK(std::isnan(summary.ci95_high));
}

TEST_CASE("summarize: no values are all NaN", "[stats]") {
    const Summary summary = summarize({});
    CHECK(summary.n == 0);
    CHECK(std::isnan(summary.mean));
    CHECK(std::isnan(summary.stddev));
    CHECK(std::isnan(summary.ci95_low));
    CHECK(std::isnan(summary.ci95_high));
    CHECK(std::isnan(summary.min));
    CHECK(std::isnan(summary.max));
}

TEST_CASE("summarize: identical values have zero spread", "[stats]") {
    const std::vector<double> values = {7, 7, 7, 7};
    const Summary summary = summarize(values);
    CHECK(summary.stddev == 0.0);
    CHECK(summary.ci95_low == 7.0);
    CHECK(summary.ci95_high == 7.0);
}

TEST_CASE("summarize: small spread on a large mean keeps its precision", "[stats]") {
    const std::vector<double> values = {1e9 + 1, 1e9 + 2, 1e9 + 3};
    const Summary summary = summarize(values);
    CHECK(summary.mean == 1e9 + 2);
    CHECK(summary.stddev == Approx(1.0).epsilon(1e-12));
}

TEST_CASE("student_t_975: Student's t at every df, approaching the normal quantile", "[stats]") {
    CHECK(student_t_975(1) == Approx(12.706).epsilon(1e-4));
    CHECK(student_t_975(2) == Approx(4.303).epsilon(1e-4));
    CHECK(student_t_975(10) == Approx(2.228).epsilon(1e-4));
    CHECK(student_t_975(30) == Approx(2.0423).epsilon(1e-4));
    // Beyond 30 it is still t, not the normal quantile (the old hand table
    // jumped to 1.960 at 31).
    CHECK(student_t_975(31) == Approx(2.0395).epsilon(1e-4));
    CHECK(student_t_975(1000) == Approx(1.9623).epsilon(1e-4));
    CHECK(std::isnan(student_t_975(0)));
    for (int df = 1; df < 200; ++df) CHECK(student_t_975(df) > student_t_975(df + 1));
    CHECK(student_t_975(200) > normal_quantile(0.975));
}

TEST_CASE("summarize: 41 values use t with 40 degrees of freedom", "[stats]") {
    std::vector<double> values;
    for (int i = 0; i <= 40; ++i) values.push_back(i);  // mean 20
    const Summary summary = summarize(values);
    const double half_width = 2.021075 * summary.stddev / std::sqrt(41.0);
    CHECK(summary.mean == Approx(20.0));
    CHECK(summary.ci95_high - summary.mean == Approx(half_width).epsilon(1e-6));
}

TEST_CASE("to_json: NaN becomes null", "[stats]") {
    const std::vector<double> one = {5};
    const Json single = to_json(summarize(one));
    CHECK(single["n"] == 1);
    CHECK(single["mean"] == 5.0);
    CHECK(single["stddev"].is_null());
    CHECK(single["ci95_low"].is_null());
    CHECK(single["ci95_high"].is_null());
    CHECK(single["min"] == 5.0);
    CHECK(single["max"] == 5.0);
    CHECK(single.dump().find("NaN") == std::string::npos);

    const Json empty = to_json(summarize({}));
    CHECK(empty["n"] == 0);
    CHECK(empty["mean"].is_null());
    CHECK(empty["max"].is_null());

    const std::vector<double> three = {10, 12, 14};
    const Json full = to_json(summarize(three));
    CHECK(full["stddev"].get<double>() == Approx(2.0));
    CHECK(full["ci95_low"].is_number());
}

}  // namespace
}  // namespace ds
