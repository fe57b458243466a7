// A run's trim and discard's check by its effect (discard_effect.h), as
// RunAttempt's job and verify phases call it: the job asks the guest to
// trim after the workload; at the guest's trim_ready the volume's
// allocation is measured (measure_before), after the result again (judge),
// and verify fails a mismatch. A guest that does not trim leaves the effect
// not measured, with the reason.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "daemon/backends/storage/storage.h"
#include "daemon/run/settings_verify.h"

namespace ds {

class TrimPhase {
  public:
    // The run's volume `volume` on `storage`, with `discard` as its
    // configuration says. Its guest trims when its agent announced the
    // "trim" capability (`agent_trims`) and the run is no durability run
    // (`durability`: its last crash states are cut after the workload, from
    // the files a trim would delete).
    TrimPhase(StorageBackend& storage, std::string volume, bool discard, bool agent_trims,
              bool durability);

    // Whether the job asks the guest to trim.
    bool guest_trims() const { return skipped_.empty(); }
    // At the guest's trim_ready: the volume's allocation before the trim.
    void measure_before();
    // After the guest's result, whose `readback` holds what its trim
    // removed and trimmed: applied_settings.discard_effect.
    Json judge(const Json& readback);

    // What judge() found the storage did against `discard`; "" when it
    // behaved as it says or was not measured.
    const std::string& mismatch() const { return mismatch_; }
    // The check not made (too little removed, or not measured) as a setting
    // not checked: reported, never hidden (docs/verification.md).
    std::optional<NotChecked> not_checked() const;

  private:
    StorageBackend* storage_;
    std::string volume_;
    bool discard_;
    std::string skipped_;  // why the guest does not trim; "" when it does
    std::uint64_t allocated_before_ = 0;
    std::string not_measured_;  // why the allocation was not measured; "" when it was
    std::string mismatch_;
    Json record_;  // judge()'s
};

}  // namespace ds
