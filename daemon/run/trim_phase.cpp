#include "daemon/run/trim_phase.h"

#include <utility>

#include "common/json_fields.h"
#include "daemon/run/discard_effect.h"

namespace ds {
namespace {

// Why a run's guest does not trim, "" when it does.
std::string trim_skipped_reason(bool agent_trims, bool durability) {
    if (durability)
        return "a durability run keeps the workload's files for its crash states: no trim";
    if (!agent_trims) {
        return "the agent cannot wait for the host's measurement before its trim (it "
               "announced no 'trim' capability: a one-shot agent, docs/proxmox.md)";
    }
    return "";
}

}  // namespace

TrimPhase::TrimPhase(StorageBackend& storage, std::string volume, bool discard, bool agent_trims,
                     bool durability)
    : storage_(&storage),
      volume_(std::move(volume)),
      discard_(discard),
      skipped_(trim_skipped_reason(agent_trims, durability)) {}

void TrimPhase::measure_before() {
    auto before = storage_->allocated_bytes(volume_);
    if (before.ok()) {
        allocated_before_ = before.value();
    } else {
        not_measured_ = "cannot measure the volume's allocation: " + before.error().message;
    }
}

// The storage's allocation after the guest's trim against the one before.
Json TrimPhase::judge(const Json& readback) {
    if (!skipped_.empty()) {
        record_ = discard_effect_not_measured(discard_, skipped_);
        return record_;
    }
    std::uint64_t allocated_after = 0;
    if (not_measured_.empty()) {
        auto after = storage_->allocated_bytes(volume_);
        if (after.ok()) allocated_after = after.value();
        if (!after.ok()) {
            not_measured_ = "cannot measure the volume's allocation: " + after.error().message;
        }
    }
    if (!not_measured_.empty()) {
        record_ = discard_effect_not_measured(discard_, not_measured_);
        return record_;
    }
    // Checked by the session's schema (integers 0..2^63-1, a string); read
    // without throwing all the same.
    const auto count_at = [&readback](const char* key) -> std::optional<std::uint64_t> {
        const auto found = readback.find(key);
        if (found == readback.end() || !found->is_number_unsigned()) return std::nullopt;
        return found->get<std::uint64_t>();
    };
    DiscardFigures figures;
    figures.allocated_before = allocated_before_;
    figures.allocated_after = allocated_after;
    figures.removed_bytes = count_at("trim_removed_bytes");
    figures.trimmed_bytes = count_at("trimmed_bytes");
    figures.trim_error = json_read::string_or_empty(readback, "trim_error");
    DiscardVerdict verdict = judge_discard_effect(discard_, figures);
    record_ = std::move(verdict.record);
    mismatch_ = std::move(verdict.mismatch);
    return record_;
}

std::optional<NotChecked> TrimPhase::not_checked() const {
    if (!record_.is_object() || record_.value("checked", true) != false) return std::nullopt;
    return NotChecked{"effect on the storage (the guest's trim)", "discard",
                      record_.value("reason", "")};
}

}  // namespace ds
