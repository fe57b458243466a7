#include "daemon/compare/comparison.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

namespace ds {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Rates by name: fio's read_iops, write_bw_mib_s; sysbench's tps, qps,
// errors_per_s. A metric matches when its name is a pattern or ends in
// "_" + the pattern.
constexpr std::array<std::string_view, 5> kRatePatterns = {"iops", "bw_mib_s", "tps", "qps",
                                                           "per_s"};

// The logarithms of a side's positive values, by round. `unique_rounds` is
// false when a round occurs twice (then the side cannot be paired).
struct LogSample {
    std::map<int, double> by_round;
    std::vector<double> logs;
    bool unique_rounds = true;
};

LogSample log_sample(const std::vector<RoundValue>& values) {
    LogSample sample;
    for (const RoundValue& value : values) {
        if (!(value.value > 0) || !std::isfinite(value.value)) continue;
        const double log_value = std::log(value.value);
        sample.logs.push_back(log_value);
        if (!sample.by_round.emplace(value.round, log_value).second) sample.unique_rounds = false;
    }
    return sample;
}

double mean_of(const std::vector<double>& values) {
    return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

// Sample variance (divisor n-1), n >= 2.
double variance_of(const std::vector<double>& values, double mean) {
    double squared = 0;
    for (double value : values) squared += (value - mean) * (value - mean);
    return squared / static_cast<double>(values.size() - 1);
}

bool same_rounds(const LogSample& a, const LogSample& b) {
    if (!a.unique_rounds || !b.unique_rounds || a.by_round.size() != b.by_round.size())
        return false;
    return std::equal(a.by_round.begin(), a.by_round.end(), b.by_round.begin(),
                      [](const auto& x, const auto& y) { return x.first == y.first; });
}

// Fills ratio, interval and p from a log-scale difference, its standard
// error and degrees of freedom.
void set_from_log_difference(double difference, double standard_error, double df,
                             RatioEstimate& estimate) {
    estimate.ratio = std::exp(difference);
    estimate.degrees_of_freedom = df;
    if (standard_error == 0) {
        estimate.ci95_low = estimate.ci95_high = estimate.ratio;
        estimate.p_value = difference == 0 ? 1 : 0;
        return;
    }
    const double half_width = student_t_quantile(0.975, df) * standard_error;
    estimate.ci95_low = std::exp(difference - half_width);
    estimate.ci95_high = std::exp(difference + half_width);
    estimate.p_value = student_t_two_sided_p(difference / standard_error, df);
}

void estimate_paired(const LogSample& candidate, const LogSample& baseline,
                     RatioEstimate& estimate) {
    std::vector<double> differences;
    for (const auto& [round, log_value] : candidate.by_round)
        differences.push_back(log_value - baseline.by_round.at(round));
    const double n = static_cast<double>(differences.size());
    const double mean = mean_of(differences);
    estimate.method = RatioMethod::kPaired;
    estimate.pairs = static_cast<int>(differences.size());
    set_from_log_difference(mean, std::sqrt(variance_of(differences, mean) / n), n - 1, estimate);
}

void estimate_welch(const LogSample& candidate, const LogSample& baseline,
                    RatioEstimate& estimate) {
    const double n_c = static_cast<double>(candidate.logs.size());
    const double n_b = static_cast<double>(baseline.logs.size());
    const double mean_c = mean_of(candidate.logs);
    const double mean_b = mean_of(baseline.logs);
    const double share_c = variance_of(candidate.logs, mean_c) / n_c;
    const double share_b = variance_of(baseline.logs, mean_b) / n_b;
    const double variance = share_c + share_b;
    // Welch-Satterthwaite; with no spread at all the pooled df stands in
    // (the interval is the point then and df does not matter).
    const double df =
        variance > 0
            ? variance * variance / (share_c * share_c / (n_c - 1) + share_b * share_b / (n_b - 1))
            : n_c + n_b - 2;
    estimate.method = RatioMethod::kWelch;
    set_from_log_difference(mean_c - mean_b, std::sqrt(variance), df, estimate);
}

}  // namespace

bool is_rate_metric(std::string_view metric) {
    return std::any_of(kRatePatterns.begin(), kRatePatterns.end(), [&](std::string_view pattern) {
        if (metric == pattern) return true;
        return metric.size() > pattern.size() && metric.ends_with(pattern) &&
               metric[metric.size() - pattern.size() - 1] == '_';
    });
}

std::string_view to_string(RatioMethod method) {
    switch (method) {
        case RatioMethod::kPaired:
            return "paired";
        case RatioMethod::kWelch:
            return "welch";
        case RatioMethod::kNone:
            break;
    }
    return "none";
}

RatioEstimate estimate_ratio(const std::vector<RoundValue>& candidate,
                             const std::vector<RoundValue>& baseline) {
    const LogSample c = log_sample(candidate);
    const LogSample b = log_sample(baseline);
    RatioEstimate estimate;
    estimate.n_candidate = static_cast<int>(c.logs.size());
    estimate.n_baseline = static_cast<int>(b.logs.size());
    estimate.ci95_low = estimate.ci95_high = estimate.p_value = kNaN;
    estimate.degrees_of_freedom = kNaN;
    if (c.logs.empty() || b.logs.empty()) {
        estimate.ratio = kNaN;
        return estimate;
    }
    if (same_rounds(c, b) && c.logs.size() >= 2) {
        estimate_paired(c, b, estimate);
    } else if (c.logs.size() >= 2 && b.logs.size() >= 2) {
        estimate_welch(c, b, estimate);
    } else {
        estimate.ratio = std::exp(mean_of(c.logs) - mean_of(b.logs));
    }
    return estimate;
}

double log_scale_centre(const std::vector<RoundValue>& values) {
    const LogSample sample = log_sample(values);
    return sample.logs.empty() ? kNaN : std::exp(mean_of(sample.logs));
}

std::vector<double> holm_adjust(const std::vector<double>& p_values) {
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < p_values.size(); ++i)
        if (!std::isnan(p_values[i])) order.push_back(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return p_values[a] < p_values[b]; });
    std::vector<double> adjusted(p_values.size(), kNaN);
    const double m = static_cast<double>(order.size());
    double running_max = 0;  // step-down: adjusted values never decrease
    for (std::size_t rank = 0; rank < order.size(); ++rank) {
        const double scaled =
            std::min(1.0, (m - static_cast<double>(rank)) * p_values[order[rank]]);
        running_max = std::max(running_max, scaled);
        adjusted[order[rank]] = running_max;
    }
    return adjusted;
}

std::string_view to_string(Verdict verdict) {
    switch (verdict) {
        case Verdict::kBetter:
            return "faster";
        case Verdict::kWorse:
            return "slower";
        case Verdict::kNoDifference:
            return "no significant difference";
        case Verdict::kNotEnoughData:
            break;
    }
    return "not enough runs";
}

bool has_enough_runs(const RatioEstimate& estimate, const VerdictRules& rules) {
    const int runs = estimate.method == RatioMethod::kPaired
                         ? estimate.pairs
                         : std::min(estimate.n_candidate, estimate.n_baseline);
    return runs >= rules.min_runs;
}

Verdict decide_verdict(const RatioEstimate& estimate, double adjusted_p, bool lower_is_better,
                       const VerdictRules& rules) {
    if (std::isnan(adjusted_p) || std::isnan(estimate.ratio) || !has_enough_runs(estimate, rules))
        return Verdict::kNotEnoughData;
    if (adjusted_p >= kSignificanceLevel) return Verdict::kNoDifference;
    if (std::fabs(estimate.ratio - 1) < rules.practical_difference) return Verdict::kNoDifference;
    const bool higher = estimate.ratio > 1;
    return higher != lower_is_better ? Verdict::kBetter : Verdict::kWorse;
}

}  // namespace ds
