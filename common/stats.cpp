#include "common/stats.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace ds {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// t(0.975, df) for df = 1..30 (index df-1), to four decimals.
constexpr std::array<double, 30> kStudentT975 = {
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
    2.2010,  2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
    2.0796,  2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
};
// The standard normal's 0.975 quantile: the limit of t(0.975, df) as df grows.
constexpr double kNormal975 = 1.959964;

Json number_or_null(double value) {
    return std::isnan(value) ? Json(nullptr) : Json(value);
}

}  // namespace

double student_t_975(int degrees_of_freedom) {
    if (degrees_of_freedom < 1) return kNaN;
    if (degrees_of_freedom <= static_cast<int>(kStudentT975.size())) {
        return kStudentT975[degrees_of_freedom - 1];
    }
    return kNormal975;
}

Summary summarize(std::span<const double> values) {
    Summary summary;
    summary.n = static_cast<int>(values.size());
    if (values.empty()) {
        summary.mean = summary.stddev = summary.ci95_low = summary.ci95_high = kNaN;
        summary.min = summary.max = kNaN;
        return summary;
    }

    double sum = 0;
    for (double value : values) sum += value;
    summary.mean = sum / summary.n;
    const auto [min_it, max_it] = std::minmax_element(values.begin(), values.end());
    summary.min = *min_it;
    summary.max = *max_it;

    if (summary.n == 1) {
        summary.stddev = summary.ci95_low = summary.ci95_high = kNaN;
        return summary;
    }

    // Two passes (deviations from the computed mean) rather than the
    // sum-of-squares shortcut, which loses precision when the spread is small
    // next to the mean (e.g. IOPS around 1e5 varying by a few).
    double squared_deviations = 0;
    for (double value : values) {
        const double deviation = value - summary.mean;
        squared_deviations += deviation * deviation;
    }
    summary.stddev = std::sqrt(squared_deviations / (summary.n - 1));
    const double half_width =
        student_t_975(summary.n - 1) * summary.stddev / std::sqrt(static_cast<double>(summary.n));
    summary.ci95_low = summary.mean - half_width;
    summary.ci95_high = summary.mean + half_width;
    return summary;
}

Json to_json(const Summary& summary) {
    return Json{
        {"n", summary.n},
        {"mean", number_or_null(summary.mean)},
        {"stddev", number_or_null(summary.stddev)},
        {"ci95_low", number_or_null(summary.ci95_low)},
        {"ci95_high", number_or_null(summary.ci95_high)},
        {"min", number_or_null(summary.min)},
        {"max", number_or_null(summary.max)},
    };
}

}  // namespace ds
