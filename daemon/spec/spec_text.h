// The spec's small text rules, shared by its parser (spec/) and the planner
// (plan/expand.cpp): names, whole-number durations, and how an error quotes
// a word and lists the valid choices.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace ds {

// errc::kInvalidSpec: every error of a spec.
Error spec_error(std::string message);

// 'text'
std::string in_quotes(std::string_view text);

// A name of a sweep, workload, tuning or filesystem: 1 to 64 of
// A-Z a-z 0-9 . _ -
bool is_name(std::string_view text);

bool contains(const std::vector<std::string_view>& words, std::string_view word);

// " Did you mean 'x'?" for the closest candidate within two edits, else "".
std::string suggestion(std::string_view word, const std::vector<std::string_view>& candidates);

// "unknown WHAT 'word' WHERE; VALID_LABEL: a, b." and a suggestion.
std::string unknown_choice(std::string_view what, std::string_view word, std::string_view where,
                           std::string_view valid_label,
                           const std::vector<std::string_view>& valid);

// A unit of a duration: "N" followed by its name is N * multiplier. (Sizes:
// common/units.h.)
struct DurationUnit {
    std::string_view name;
    std::uint64_t multiplier;
};

// Whether `text` is "N" or "N" followed by the name of one of `units` (no
// fractions); stores N times the unit's multiplier in `value` if so.
bool parse_duration_text(std::string_view text, const std::vector<DurationUnit>& units,
                         std::uint64_t& value);

}  // namespace ds
