#include "daemon/run/discard_effect.h"

#include <cstdio>

namespace ds {

namespace {

std::string mib(std::int64_t bytes) {
    const double value = static_cast<double>(bytes) / (1u << 20);
    char text[32];
    std::snprintf(text, sizeof text, "%.1f MiB", value);
    return text;
}

std::string figures_text(const DiscardFigures& figures, std::int64_t freed) {
    std::string text = "allocated " + std::to_string(figures.allocated_before) +
                       " bytes before fstrim, " + std::to_string(figures.allocated_after) +
                       " after (freed " + mib(freed) + ")";
    if (!figures.trim_error.empty()) text += "; the guest's fstrim failed: " + figures.trim_error;
    return text;
}

}  // namespace

Json discard_effect_not_measured(bool discard, const std::string& reason) {
    return {{"discard", discard}, {"checked", false}, {"reason", reason}};
}

DiscardVerdict judge_discard_effect(bool discard, const DiscardFigures& figures) {
    const std::int64_t freed = static_cast<std::int64_t>(figures.allocated_before) -
                               static_cast<std::int64_t>(figures.allocated_after);
    DiscardVerdict verdict;
    verdict.record = {{"discard", discard},
                      {"allocated_before_bytes", figures.allocated_before},
                      {"allocated_after_bytes", figures.allocated_after},
                      {"freed_bytes", freed}};
    if (figures.removed_bytes) verdict.record["removed_bytes"] = *figures.removed_bytes;
    if (figures.trimmed_bytes) verdict.record["trimmed_bytes"] = *figures.trimmed_bytes;
    if (!figures.trim_error.empty()) verdict.record["trim_error"] = figures.trim_error;
    if (figures.removed_bytes && *figures.removed_bytes < kDiscardMinRemovedBytes) {
        verdict.record["checked"] = false;
        verdict.record["reason"] = "the workload left only " +
                                   std::to_string(*figures.removed_bytes) +
                                   " bytes to free, too little for a drop to show";
        return verdict;
    }
    verdict.checked = true;
    verdict.record["checked"] = true;
    const bool dropped = freed >= static_cast<std::int64_t>(kDiscardDropBytes);
    if (discard && !dropped) {
        verdict.mismatch = "discard: requested on, but the storage's allocation did not drop by " +
                           mib(kDiscardDropBytes) +
                           " after fstrim: " + figures_text(figures, freed);
    } else if (!discard && dropped) {
        verdict.mismatch =
            "discard: requested off, but the storage's allocation dropped after "
            "fstrim: " +
            figures_text(figures, freed);
    }
    verdict.record["in_force"] = dropped;
    return verdict;
}

}  // namespace ds
