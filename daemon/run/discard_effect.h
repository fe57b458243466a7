// Discard proven by its effect on the storage (issue 18 §2): after the
// workload the guest removes the workload's files and runs fstrim
// (docs/agent-protocol.md, "Trim"); the storage's allocation of the volume
// (StorageBackend::allocated_bytes) is measured when the workload's data is
// on the disk and again after the trim. With discard on the allocation must
// drop, with discard off it must not. This is the only check that can fail
// for discard off: the guest sees discard support either way (measured), so
// its own readback cannot tell.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/settings.h"

namespace ds {

// A drop smaller than this is no drop: allocation granularity (a thin pool's
// 0.01 % steps, an RBD object) and a file system's own writes after the
// trim (journal, superblock) move the figures by less.
inline constexpr std::uint64_t kDiscardDropBytes = 1u << 20;
// Below this the workload left too little to free for a drop to show: the
// check is not made (recorded with the reason) rather than failed.
inline constexpr std::uint64_t kDiscardMinRemovedBytes = 4u << 20;

// The figures of one run. The storage's come from the host; the guest's are
// untrusted and only decide whether the check applies, or explain a result.
struct DiscardFigures {
    std::uint64_t allocated_before = 0;          // with the workload's files on the disk
    std::uint64_t allocated_after = 0;           // after their removal, fstrim and unmount
    std::optional<std::uint64_t> removed_bytes;  // guest: what the removed files held
    std::optional<std::uint64_t> trimmed_bytes;  // guest: what FITRIM said it trimmed
    std::string trim_error;                      // guest: FITRIM's failure, "" if none
};

struct DiscardVerdict {
    bool checked = false;  // false: too little was removed for a drop to show
    std::string mismatch;  // "" when the storage behaved as `discard` says
    Json record;           // applied_settings.discard_effect
};

// The rule: with `discard` on, allocated_after must be at least
// kDiscardDropBytes below allocated_before; with it off, it must not be.
// Not checked when the guest removed less than kDiscardMinRemovedBytes.
// The record holds every figure, "freed_bytes" (before - after, negative
// when the allocation grew), "checked" and, when not checked, "reason".
DiscardVerdict judge_discard_effect(bool discard, const DiscardFigures& figures);

// The record of a run whose effect was not measured, with the reason.
Json discard_effect_not_measured(bool discard, const std::string& reason);

}  // namespace ds
