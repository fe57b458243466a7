// What the durability runs of a configuration add up to (docs/durability.md,
// "What you see"): the one place where stored durability records are read
// and summed, for `results compare`, the HTML report and `results apply`.
//
// A durability run is a succeeded run whose applied_settings has
// "durability" (docs/schema.md): the crash states its write log was cut
// into, what each lost, and their DurabilitySummary. Stored data may come
// from older or newer daemons: every field is read as possibly missing or
// mistyped, and a record that cannot be read counts as unreadable (never as
// safe), never as an error.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/settings.h"
#include "daemon/durability/crash_states.h"
#include "daemon/durability/crash_verdict.h"
#include "daemon/store/store.h"

namespace ds {

// The crash models a durability run records (docs/durability.md, section 3).
using durability::kFlushBarrierModel;
using durability::kHostPowerCutModel;

// The durability runs of one configuration (and workload), summed.
class DurabilityResult {
  public:
    // Takes in `run` when it is a current (not superseded), succeeded run
    // with applied_settings.durability; ignores every other run. Its crash
    // states come from the record's "summary", else from its "states"
    // (ds::summarize, when there are any); when neither reads, the run
    // counts as unreadable.
    void add(const RunRecord& run);
    // Adds the runs another result took in.
    void merge(const DurabilityResult& other);

    // Whether any durability run was taken in (readable or not).
    bool measured() const { return runs_ > 0 || unreadable_runs_ > 0; }
    // Crash states were tried, every record was read, and no state lost an
    // acknowledged commit, failed to mount, failed fsck or failed to recover.
    // Anything else is never safe.
    bool safe() const;
    // "not measured"; DurabilitySummary::verdict() of the summed states
    // ("no crash state tried" when there were none), and how many runs'
    // records could not be read.
    std::string verdict() const;

    // The host-writeback model (docs/durability.md, "Two host models"):
    // whether any run measured it (cache unsafe or writeback, a window
    // read), and the states summed over every readable run, each run's
    // host-writeback states where it has them, else its worst case (the
    // models agree where none was measured). safe() and verdict() stay the
    // worst case's: nothing is called safe on the typical figure alone.
    bool host_writeback_measured() const { return writeback_runs_ > 0; }
    const DurabilitySummary& host_writeback_summary() const { return writeback_.summary; }
    // The windows the runs used, in seconds, in the order first seen.
    const std::vector<double>& host_writeback_windows() const { return windows_; }

    // The summed states: counts added up, max_lost the largest, mean_lost
    // the mean over every crash state (each run's mean weighted by its
    // states).
    const DurabilitySummary& summary() const { return worst_.summary; }
    int runs() const { return runs_; }
    int unreadable_runs() const { return unreadable_runs_; }
    // The mean commits_per_s of the runs that have it; NaN when none has.
    double commits_per_s() const;
    // The crash models the runs used (kFlushBarrierModel, kHostPowerCutModel,
    // or what an unknown version wrote), in the order first seen.
    const std::vector<std::string>& models() const { return models_; }
    // Whether any run applied the volatile-cache rule.
    bool volatile_cache() const { return volatile_cache_runs_ > 0; }
    // The workloads whose runs were taken in, in the order first seen.
    const std::vector<std::string>& workloads() const { return workloads_; }
    // Whether any run was of the ledger's server variant `variant`
    // ("database" for MariaDB, "postgresql": ServerSettingsRules::ledger_variant).
    bool measured_server_ledger(std::string_view variant) const {
        return std::find(server_ledgers_.begin(), server_ledgers_.end(), variant) !=
               server_ledgers_.end();
    }

    // {"verdict": .., "safe": b, "runs": N, "unreadable_runs": N}, and when
    // measured also "crash_states", "mount_failures", "fsck_failures",
    // "recovery_failures", "states_with_losses", "max_lost", "mean_lost",
    // "commits_per_s" (null without), "models", "volatile_cache",
    // "images_s", "check_s" (seconds spent building crash images and
    // checking them, summed), "measured_by" (workloads()); with a
    // host-writeback figure "host_writeback": its summary's keys, "verdict",
    // "safe" (the same rule, on its states), "runs" (those that measured it)
    // and "window_s" (null when the runs' windows differ).
    Json to_json() const;

  private:
    // The rule of safe(), on `summary`.
    bool safe(const DurabilitySummary& summary) const;
    // Crash states summed over runs: counts added, maxima kept, means
    // weighted by each run's states.
    struct StateSums {
        DurabilitySummary summary;
        double lost_total = 0;
        double lost_after_repair_total = 0;
        void add(const DurabilitySummary& run);
        void merge(const StateSums& other);
    };
    // A run's host-writeback summary, when its record has a readable one.
    void add_host_writeback(const Json& record, const DurabilitySummary& worst_case);

    StateSums worst_;
    StateSums writeback_;
    int writeback_runs_ = 0;
    std::vector<double> windows_;
    int runs_ = 0;
    int unreadable_runs_ = 0;
    int volatile_cache_runs_ = 0;
    std::vector<std::string> server_ledgers_;  // the server variants measured
    double commits_sum_ = 0;
    int commits_runs_ = 0;
    double images_s_ = 0;
    double check_s_ = 0;
    std::vector<std::string> models_;
    std::vector<std::string> workloads_;
};

// Whether `result` measured the danger a durability-risk label names
// (ds::durability_risks, ds::server_settings_risks), so that its verdict
// speaks for that label:
//  * "cache=unsafe": only a run under the host power-cut model; under flush
//    barriers the host is assumed to honour every flush;
//  * "barrier=0", "nobarrier": only with the volatile-cache rule; without it
//    a crash keeps every write before a flush, in order, so a missing
//    barrier cannot show;
//  * "data=writeback", "no journal ...": any run (crash states cut at flush
//    points show stale or missing data either way);
//  * a server setting's risk (ds::rules_of_server_settings_risk: MariaDB's
//    innodb_* variables, PostgreSQL's synchronous_commit, ...): only runs of
//    the ledger's variant that commits into that server (its rules'
//    ledger_variant; the caller chooses runs with the same server settings);
//  * anything else: never.
bool measurement_covers(const DurabilityResult& result, std::string_view risk);

// Pareto front of a speed-vs-safety trade-off: points are (speed, loss),
// more speed better, less loss better. Returns, per point, whether no other
// point dominates it (is at least as fast and loses no more, and is faster
// or loses less). Equal points are all on the front. Points with a NaN
// coordinate are never on it and dominate nothing.
std::vector<bool> pareto_front(const std::vector<std::pair<double, double>>& speed_loss);

}  // namespace ds
