// Descriptive statistics for repeated benchmark runs. Reports never show a
// single number without its spread: every metric of a configuration is a
// Summary of its repetitions.
#pragma once

#include <nlohmann/json.hpp>
#include <span>

namespace ds {

using Json = nlohmann::json;

// Summary of a sample of measurements.
//
// Contract:
//  * n == 0: every double is NaN.
//  * n == 1: mean == min == max == the value; stddev and the confidence
//    interval are undefined for one observation and are NaN.
//  * n >= 2: stddev is the sample standard deviation (divisor n-1); the 95%
//    confidence interval of the mean is mean ± t(0.975, n-1) · stddev / √n,
//    with Student's t from a table for n-1 <= 30 and the normal quantile
//    1.95996 beyond (a slight underestimate of the width for 31..~60 runs).
//  * A NaN among the inputs propagates into mean, stddev and the interval;
//    callers pass finite measurements.
struct Summary {
    int n = 0;
    double mean = 0;
    double stddev = 0;
    double ci95_low = 0;
    double ci95_high = 0;
    double min = 0;
    double max = 0;
};

Summary summarize(std::span<const double> values);

// Two-sided 95% quantile of Student's t with `degrees_of_freedom` (>= 1),
// i.e. t(0.975, df). Returns NaN for df < 1.
double student_t_975(int degrees_of_freedom);

// {"n":3,"mean":..,"stddev":..,"ci95_low":..,"ci95_high":..,"min":..,"max":..}
// with every NaN written as null (JSON has no NaN).
Json to_json(const Summary&);

}  // namespace ds
