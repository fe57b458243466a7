// Comparing a configuration with a baseline: the ratio of their typical
// values with a 95% confidence interval on the log scale, a p-value, the
// Holm adjustment across a sweep's comparisons, and the verdict a reader
// sees. The unit of replication is one run; runs of the same round (a
// repetition in which every configuration ran once) are paired.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/model/stats.h"
#include "daemon/model/verdict_rules.h"

namespace ds {

// Whether a metric is a rate (IOPS, MiB/s, transactions or queries per
// second): its summaries also show the geometric mean. Decided by the
// metric's name, from one table of name patterns (comparison.cpp).
bool is_rate_metric(std::string_view metric);

// How a ratio was estimated.
enum class RatioMethod {
    kPaired,  // both ran in exactly the same rounds: t on per-round log differences
    kWelch,   // otherwise: Welch's t on the two samples' logarithms
    kNone,    // too few positive values on a side for an interval (ratio only)
};
std::string_view to_string(RatioMethod);

// candidate / baseline, estimated on the log scale.
//  * ratio: exp(mean log difference) when paired, else the ratio of the
//    geometric means. NaN when either side has no value > 0.
//  * ci95_low/high and p_value (H0: ratio = 1, two-sided): NaN with
//    method kNone (fewer than 2 values on a side, or pairs).
//  * Zero spread: the interval is the point; p is 1 when the ratio is
//    exactly 1, else 0.
//  * Values <= 0 cannot be logged: they are left out (n counts what was used).
struct RatioEstimate {
    RatioMethod method = RatioMethod::kNone;
    double ratio = 0;
    double ci95_low = 0;
    double ci95_high = 0;
    double p_value = 0;
    double degrees_of_freedom = 0;
    int n_candidate = 0;
    int n_baseline = 0;
    int pairs = 0;  // rounds used, when paired
};
RatioEstimate estimate_ratio(const std::vector<RoundValue>& candidate,
                             const std::vector<RoundValue>& baseline);

// The typical value on the ratios' scale: the geometric mean (exp of the
// mean logarithm) of the values > 0, which estimate_ratio's ratio is the
// quotient of; NaN when no value is > 0. Rankings order by it, so that a
// configuration ranked above another never has the lower ratio.
double log_scale_centre(const std::vector<RoundValue>& values);

// Holm's step-down adjustment: p-values in, adjusted ones out (same order).
// NaN entries are not comparisons: they stay NaN and do not count in m.
std::vector<double> holm_adjust(const std::vector<double>& p_values);

// The verdict on a comparison.
enum class Verdict {
    kBetter,         // significantly better by at least the practical threshold
    kWorse,          // significantly worse by at least the practical threshold
    kNoDifference,   // not significant, or smaller than the practical threshold
    kNotEnoughData,  // no p-value, or fewer runs on a side than VerdictRules::min_runs
};
// "faster", "slower", "no significant difference", "not enough runs".
std::string_view to_string(Verdict);

// The significance level of the verdicts (on Holm-adjusted p-values).
inline constexpr double kSignificanceLevel = 0.05;

// Whether `estimate` has at least rules.min_runs values on each side (the
// pairs, when paired). A comparison that has not is no test: it gets no
// verdict and does not enter the Holm adjustment.
bool has_enough_runs(const RatioEstimate& estimate, const VerdictRules& rules);

// `estimate.ratio` = candidate / baseline of a metric; `lower_is_better`
// says which way is better. A difference is called only when the estimate
// has enough runs (has_enough_runs), adjusted_p < kSignificanceLevel and
// |ratio - 1| >= rules.practical_difference.
Verdict decide_verdict(const RatioEstimate& estimate, double adjusted_p, bool lower_is_better,
                       const VerdictRules& rules);

}  // namespace ds
