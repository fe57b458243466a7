// What it takes to call a difference. Below spec/ (which reads it from the
// sweep's spec) and compare/ (which applies it, compare/comparison.h).
#pragma once

namespace ds {

// The spec's `practical_difference` and `min_runs_for_verdict`
// (docs/spec.md), with their defaults.
struct VerdictRules {
    // Differences below this fraction (2%) are not differences.
    double practical_difference = 0.02;
    // Runs each side needs before a verdict. Two runs that happen to agree
    // have zero spread, so t is infinite and p = 0: a verdict from nothing.
    int min_runs = 3;
};

}  // namespace ds
