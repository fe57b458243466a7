#include "daemon/spec/unchecked_levels.h"

#include <array>

namespace ds {
namespace {

// clang-format off
constexpr std::array kPolicies = {
    UncheckedLevelPolicyDef{UncheckedLevelPolicy::kFailUnlessForbidden, "fail-unless-forbidden",
        "a level not checked fails the run, unless the host does not allow reading it "
        "(privileges, or QEMU on another machine): then it is reported"},
    UncheckedLevelPolicyDef{UncheckedLevelPolicy::kFail, "fail",
        "every level not checked fails the run"},
    UncheckedLevelPolicyDef{UncheckedLevelPolicy::kReport, "report",
        "no level not checked fails the run; each is reported"},
};
// clang-format on

}  // namespace

std::span<const UncheckedLevelPolicyDef> unchecked_level_policies() {
    return kPolicies;
}

std::optional<UncheckedLevelPolicy> find_unchecked_level_policy(std::string_view name) {
    for (const UncheckedLevelPolicyDef& def : kPolicies) {
        if (def.name == name) return def.policy;
    }
    return std::nullopt;
}

std::string_view to_string(UncheckedLevelPolicy policy) {
    for (const UncheckedLevelPolicyDef& def : kPolicies) {
        if (def.policy == policy) return def.name;
    }
    return "?";
}

}  // namespace ds
