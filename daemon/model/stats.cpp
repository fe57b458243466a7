#include "daemon/model/stats.h"

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <limits>
#include <vector>

namespace ds {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Boost.Math throws on a domain error by default; here every error becomes a
// NaN (or ±inf) result, so nothing escapes and callers test with isnan.
using QuietPolicy = boost::math::policies::policy<
    boost::math::policies::domain_error<boost::math::policies::ignore_error>,
    boost::math::policies::pole_error<boost::math::policies::ignore_error>,
    boost::math::policies::overflow_error<boost::math::policies::ignore_error>,
    boost::math::policies::evaluation_error<boost::math::policies::ignore_error>>;
using StudentT = boost::math::students_t_distribution<double, QuietPolicy>;
using Normal = boost::math::normal_distribution<double, QuietPolicy>;

Json number_or_null(double value) {
    return std::isfinite(value) ? Json(value) : Json(nullptr);
}

Summary empty_summary() {
    Summary summary;
    summary.mean = summary.median = summary.stddev = summary.cv = kNaN;
    summary.ci95_low = summary.ci95_high = summary.min = summary.max = summary.geomean = kNaN;
    return summary;
}

// Fills stddev, cv and the interval from n, mean and the sum of squared
// deviations (n >= 2), or leaves them NaN (n == 1).
void add_spread(double squared_deviations, Summary& summary) {
    if (summary.n < 2) {
        summary.stddev = summary.cv = summary.ci95_low = summary.ci95_high = kNaN;
        return;
    }
    summary.stddev = std::sqrt(squared_deviations / (summary.n - 1));
    summary.cv = summary.mean != 0 ? summary.stddev / std::fabs(summary.mean) : kNaN;
    const double half_width =
        student_t_975(summary.n - 1) * summary.stddev / std::sqrt(static_cast<double>(summary.n));
    summary.ci95_low = summary.mean - half_width;
    summary.ci95_high = summary.mean + half_width;
}

double median_of(std::span<const double> values) {
    std::vector<double> sorted(values.begin(), values.end());
    std::sort(sorted.begin(), sorted.end());
    const std::size_t middle = sorted.size() / 2;
    return sorted.size() % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

}  // namespace

double student_t_quantile(double q, double degrees_of_freedom) {
    if (!(q > 0 && q < 1) || !(degrees_of_freedom > 0)) return kNaN;
    return boost::math::quantile(StudentT(degrees_of_freedom), q);
}

double student_t_975(int degrees_of_freedom) {
    if (degrees_of_freedom < 1) return kNaN;
    return student_t_quantile(0.975, degrees_of_freedom);
}

double normal_quantile(double q) {
    if (!(q > 0 && q < 1)) return kNaN;
    return boost::math::quantile(Normal(0, 1), q);
}

double student_t_two_sided_p(double t, double degrees_of_freedom) {
    if (std::isnan(t) || !(degrees_of_freedom > 0)) return kNaN;
    if (std::isinf(t)) return 0;
    return 2 *
           boost::math::cdf(boost::math::complement(StudentT(degrees_of_freedom), std::fabs(t)));
}

Summary summarize(std::span<const double> values) {
    if (values.empty()) return empty_summary();
    Summary summary;
    summary.n = static_cast<int>(values.size());
    double sum = 0;
    double log_sum = 0;
    bool all_positive = true;
    for (double value : values) {
        sum += value;
        all_positive = all_positive && value > 0;
        if (value > 0) log_sum += std::log(value);
    }
    summary.mean = sum / summary.n;
    summary.median = median_of(values);
    summary.geomean = all_positive ? std::exp(log_sum / summary.n) : kNaN;
    const auto [min_it, max_it] = std::minmax_element(values.begin(), values.end());
    summary.min = *min_it;
    summary.max = *max_it;

    // Two passes (deviations from the computed mean) rather than the
    // sum-of-squares shortcut, which loses precision when the spread is small
    // next to the mean (e.g. IOPS around 1e5 varying by a few).
    double squared_deviations = 0;
    for (double value : values) {
        const double deviation = value - summary.mean;
        squared_deviations += deviation * deviation;
    }
    add_spread(squared_deviations, summary);
    return summary;
}

Summary summarize_moments(const Moments& moments) {
    if (moments.n <= 0) return empty_summary();
    Summary summary;
    summary.n = moments.n;
    summary.mean = moments.mean;
    summary.median = kNaN;
    summary.min = moments.min;
    summary.max = moments.max;
    summary.geomean = moments.log_n == moments.n ? std::exp(moments.log_sum / moments.n) : kNaN;
    add_spread(std::max(0.0, moments.m2), summary);
    return summary;
}

double relative_ci_half_width(const Summary& summary) {
    if (summary.n < 2 || summary.mean == 0 || std::isnan(summary.ci95_high)) return kNaN;
    return (summary.ci95_high - summary.mean) / std::fabs(summary.mean);
}

Json to_json(const Summary& summary, bool rate) {
    Json json{
        {"n", summary.n},
        {"mean", number_or_null(summary.mean)},
        {"median", number_or_null(summary.median)},
        {"stddev", number_or_null(summary.stddev)},
        {"cv", number_or_null(summary.cv)},
        {"ci95_low", number_or_null(summary.ci95_low)},
        {"ci95_high", number_or_null(summary.ci95_high)},
        {"min", number_or_null(summary.min)},
        {"max", number_or_null(summary.max)},
    };
    if (rate) json["geomean"] = number_or_null(summary.geomean);
    return json;
}

}  // namespace ds
