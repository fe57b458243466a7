// The rule that proves discard by its effect on the storage
// (daemon/run/discard_effect.h): each way a storage can contradict the
// requested discard fails with both figures named; a storage that behaves
// passes; too little removed is recorded as not checked.
#include "daemon/run/discard_effect.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

using Catch::Matchers::Contains;

constexpr std::uint64_t kMiB = 1u << 20;

DiscardFigures figures(std::uint64_t before, std::uint64_t after,
                       std::uint64_t removed = 32 * kMiB) {
    DiscardFigures figures;
    figures.allocated_before = before;
    figures.allocated_after = after;
    figures.removed_bytes = removed;
    return figures;
}

}  // namespace

TEST_CASE("discard effect: on and the allocation drops, off and it stays, both pass",
          "[discard_effect]") {
    const DiscardVerdict on = judge_discard_effect(true, figures(40 * kMiB, 8 * kMiB));
    CHECK(on.checked);
    CHECK(on.mismatch.empty());
    CHECK(on.record.at("in_force") == true);
    CHECK(on.record.at("allocated_before_bytes") == 40 * kMiB);
    CHECK(on.record.at("allocated_after_bytes") == 8 * kMiB);
    CHECK(on.record.at("freed_bytes") == 32 * kMiB);
    CHECK(on.record.at("removed_bytes") == 32 * kMiB);

    // Off: the allocation stays, or grows by the file system's last writes.
    for (std::uint64_t after : {40 * kMiB, 40 * kMiB + 4096}) {
        const DiscardVerdict off = judge_discard_effect(false, figures(40 * kMiB, after));
        CHECK(off.checked);
        CHECK(off.mismatch.empty());
        CHECK(off.record.at("in_force") == false);
    }
    // Less than the threshold is no drop: off still passes.
    CHECK(judge_discard_effect(false, figures(40 * kMiB, 40 * kMiB - kMiB / 2)).mismatch.empty());
}

TEST_CASE("discard effect: on without a drop fails, naming both figures", "[discard_effect]") {
    // Discard requested, but the storage kept every block (QEMU ignored the
    // guest's trim), or freed less than the threshold, or grew.
    for (std::uint64_t after : {40 * kMiB, 40 * kMiB - kMiB / 2, 41 * kMiB}) {
        INFO(after);
        const DiscardVerdict verdict = judge_discard_effect(true, figures(40 * kMiB, after));
        CHECK(verdict.checked);
        CHECK_THAT(verdict.mismatch,
                   Contains("discard: requested on, but the storage's allocation did not drop by "
                            "1.0 MiB after fstrim"));
        CHECK_THAT(verdict.mismatch, Contains("allocated 41943040 bytes before fstrim, " +
                                              std::to_string(after) + " after"));
        CHECK(verdict.record.at("in_force") == false);
    }
    // The guest's failed fstrim is quoted: it explains the missing drop.
    DiscardFigures failed_trim = figures(40 * kMiB, 40 * kMiB);
    failed_trim.trim_error = "FITRIM /mnt/disksweep: Operation not supported";
    const DiscardVerdict verdict = judge_discard_effect(true, failed_trim);
    CHECK_THAT(verdict.mismatch,
               Contains("the guest's fstrim failed: FITRIM /mnt/disksweep: Operation not "
                        "supported"));
    CHECK(verdict.record.at("trim_error") == failed_trim.trim_error);
}

TEST_CASE("discard effect: off with a drop fails, naming both figures", "[discard_effect]") {
    const DiscardVerdict verdict = judge_discard_effect(false, figures(40 * kMiB, 8 * kMiB));
    CHECK(verdict.checked);
    CHECK(verdict.mismatch ==
          "discard: requested off, but the storage's allocation dropped after fstrim: allocated "
          "41943040 bytes before fstrim, 8388608 after (freed 32.0 MiB)");
    CHECK(verdict.record.at("in_force") == true);
}

TEST_CASE("discard effect: too little removed is not checked, with the reason",
          "[discard_effect]") {
    // The workload's files held 1 MiB: no drop could show; neither way fails.
    for (bool discard : {true, false}) {
        const DiscardVerdict verdict =
            judge_discard_effect(discard, figures(40 * kMiB, 40 * kMiB, kMiB));
        CHECK_FALSE(verdict.checked);
        CHECK(verdict.mismatch.empty());
        CHECK(verdict.record.at("checked") == false);
        CHECK_THAT(verdict.record.at("reason").get<std::string>(),
                   Contains("the workload left only 1048576 bytes to free"));
    }
    // A guest that reports nothing removed is judged all the same.
    DiscardFigures unreported = figures(40 * kMiB, 40 * kMiB);
    unreported.removed_bytes.reset();
    CHECK_FALSE(judge_discard_effect(true, unreported).mismatch.empty());

    const Json not_measured = discard_effect_not_measured(true, "why");
    CHECK(not_measured == Json{{"discard", true}, {"checked", false}, {"reason", "why"}});
}

}  // namespace ds
