// Descriptive statistics for repeated benchmark runs. Reports never show a
// single number without its spread: every metric of a configuration is a
// Summary of its repetitions. Quantiles of Student's t and of the normal
// distribution come from Boost.Math. Below spec/ and store/ (daemon/model/):
// the store hands its samples over as Moments and RoundValues.
#pragma once

#include <nlohmann/json.hpp>
#include <span>

namespace ds {

using Json = nlohmann::json;

// Summary of a sample of measurements.
//
// Contract:
//  * n == 0: every double is NaN.
//  * n == 1: mean == median == min == max == the value; stddev, cv and the
//    confidence interval are undefined for one observation and are NaN.
//  * n >= 2: stddev is the sample standard deviation (divisor n-1); cv =
//    stddev / |mean| (NaN when the mean is 0); the 95% confidence interval of
//    the mean is mean ± t(0.975, n-1) · stddev / √n.
//  * median: the middle value, or the mean of the two middle values; NaN
//    when the summary was built from moments (summarize_moments), which
//    cannot know it.
//  * geomean: exp(mean of the logarithms) when every value is > 0, else NaN.
//    Meaningful for rates (ds::is_rate_metric); to_json shows it only then.
//  * A NaN among the inputs propagates; callers pass finite measurements.
struct Summary {
    int n = 0;
    double mean = 0;
    double median = 0;
    double stddev = 0;
    double cv = 0;
    double ci95_low = 0;
    double ci95_high = 0;
    double min = 0;
    double max = 0;
    double geomean = 0;
};

Summary summarize(std::span<const double> values);

// The moments of a sample as a store keeps them incrementally (Welford):
// n, mean, m2 = Σ(x - mean)², min, max, and Σ ln(x) over the `log_n` values
// that were > 0.
struct Moments {
    int n = 0;
    double mean = 0;
    double m2 = 0;
    double min = 0;
    double max = 0;
    double log_sum = 0;
    int log_n = 0;
};
// The same Summary as summarize() of the values, except median (NaN).
Summary summarize_moments(const Moments& moments);

// One measurement of a configuration: the round (repetition) it ran in and
// its value. Comparisons pair the runs of one round (compare/comparison.h).
struct RoundValue {
    int round = 0;
    double value = 0;
};

// The q-quantile of Student's t with `degrees_of_freedom` (> 0, may be
// fractional as from Welch's formula), 0 < q < 1. NaN outside that domain.
double student_t_quantile(double q, double degrees_of_freedom);
// t(0.975, df): the two-sided 95% factor. NaN for df < 1.
double student_t_975(int degrees_of_freedom);
// The q-quantile of the standard normal distribution, 0 < q < 1.
double normal_quantile(double q);
// Two-sided p-value of a t statistic: P(|T| >= |t|) with `degrees_of_freedom`.
double student_t_two_sided_p(double t, double degrees_of_freedom);

// The relative half-width of the 95% interval: (ci95_high - mean) / |mean|;
// NaN when undefined (n < 2, mean 0).
double relative_ci_half_width(const Summary&);

// {"n":3,"mean":..,"median":..,"stddev":..,"cv":..,"ci95_low":..,
//  "ci95_high":..,"min":..,"max":..} plus "geomean" when `rate`, with every
// NaN written as null (JSON has no NaN).
Json to_json(const Summary&, bool rate = false);

}  // namespace ds
