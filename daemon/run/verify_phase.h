// A run's verify phase (docs/verification.md), as RunAttempt calls it after
// the job: the settings the hypervisor and the guest read back against the
// configuration (settings_verify.h), and the checks by their effect:
// discard's (the guest's trim, trim_phase.h) and the throttle limits'
// (throttle_effect.h). Mismatches fail the run; so do the levels not
// checked that the sweep's `unchecked_levels` does not allow
// (settings_verify.h fails_run). Every level and setting not checked is
// recorded.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "common/result.h"
#include "common/settings.h"
#include "daemon/run/settings_verify.h"
#include "daemon/run/throttle_effect.h"
#include "daemon/run/trim_phase.h"
#include "daemon/spec/unchecked_levels.h"
#include "daemon/store/store.h"

namespace ds {

// The means of the run's unthrottled twin (same sweep, workload and host),
// when one has succeeded; asked only for a run with a throttle limit.
using UnthrottledReference = std::function<std::optional<ThrottleRates>()>;

// That reference, from the sweep's metric aggregates in `store` (none without
// a store or a sweep): the twin of `config` (unthrottled_twin) that ran
// workload `workload_name` on host `host`.
std::optional<ThrottleRates> unthrottled_reference(Store* store, std::int64_t sweep_id,
                                                   const StorageConfig& config,
                                                   const std::string& workload_name,
                                                   const std::string& host);

class VerifyPhase {
  public:
    // The run's settings, workload and its sweep's `unchecked_levels`.
    VerifyPhase(const StorageConfig& config, const Workload& workload, UncheckedLevelPolicy policy)
        : config_(&config), workload_(&workload), policy_(policy) {}

    // Judges the run from its applied settings so far (`applied`: its
    // "hypervisor" is read), the guest's `readback`, its `metrics` and its
    // trim (null: none). Adds "guest", "throttle_effect" (for a run with a
    // limit), "verification" and "verified" to `applied`.
    // errc::kSettingsMismatch names every setting not in force and every
    // level not verified that fails the run.
    Status verify(Json& applied, const Json& readback, const std::map<std::string, double>& metrics,
                  const TrimPhase* trim, const UnthrottledReference& unthrottled) const;

  private:
    // applied_settings.throttle_effect; the limits its measurement does not
    // bear out are appended to `mismatches`.
    void judge_throttle(Json& applied, const std::map<std::string, double>& metrics,
                        const UnthrottledReference& unthrottled,
                        std::vector<std::string>& mismatches) const;

    const StorageConfig* config_;
    const Workload* workload_;
    UncheckedLevelPolicy policy_;
};

}  // namespace ds
