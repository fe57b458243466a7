// The spec's `unchecked_levels` key (docs/spec.md, docs/verification.md):
// what a verification level that could not be checked does to a run.
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace ds {

enum class UncheckedLevelPolicy {
    // A level not checked fails the run, unless the host does not let
    // disksweep read it (its privileges, or a process on another machine):
    // then it is reported. The default.
    kFailUnlessForbidden,
    kFail,    // every level not checked fails the run
    kReport,  // no level not checked fails the run; each is reported
};

// One value of the key: its spelling in a spec and what it means (the
// spec's error lists these; docs/spec.md shows the same table).
struct UncheckedLevelPolicyDef {
    UncheckedLevelPolicy policy;
    std::string_view name;
    std::string_view meaning;
};

inline constexpr std::string_view kUncheckedLevelsKey = "unchecked_levels";

// Every value, the default first.
std::span<const UncheckedLevelPolicyDef> unchecked_level_policies();
std::optional<UncheckedLevelPolicy> find_unchecked_level_policy(std::string_view name);
std::string_view to_string(UncheckedLevelPolicy);

}  // namespace ds
