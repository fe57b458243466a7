// A sweep spec expanded into its plan: the configurations of its matrix, its
// workloads with the tuning axis expanded, and the runs in their order.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "common/settings.h"
#include "daemon/spec/spec.h"

namespace ds {

struct DroppedCombination {
    Json settings;       // the partial configuration as JSON
    std::string reason;  // why it cannot exist
};

struct PlannedRun {
    int sequence = 0;        // position in the execution order (0-based)
    int config_index = 0;    // into SweepPlan::configs
    int workload_index = 0;  // into SweepPlan::workloads
    int repetition = 0;      // 0-based
};

struct SweepPlan {
    // The possible combinations, then (with host_baseline) one host baseline
    // per distinct storage, pool and disk size among them.
    std::vector<StorageConfig> configs;
    std::vector<DroppedCombination> dropped;
    // The spec's workloads with the tuning axis expanded (tuned_workloads).
    std::vector<Workload> workloads;
    // (config, workload) pairs × repetitions, randomised-interleaved: each
    // repetition round visits every pair once, in an order shuffled per
    // round, so slow drift of the host spreads over all configs. A workload
    // with `filesystems` pairs only with configurations whose filesystem
    // label (the matrix.filesystem value as written) it lists.
    std::vector<PlannedRun> runs;
    // Pairs left out by workloads' `filesystems` (per repetition round).
    int skipped_pairs = 0;
    // Names of the axes that take more than one value (the compare columns).
    std::vector<std::string> varying_axes;
    // Index into configs of the spec's baseline (the configuration whose
    // settings have every value of SweepSpec::baseline); -1 when the spec
    // names none. expand_sweep refuses a baseline that selects no
    // configuration or more than one, naming the key and its line.
    int baseline_config = -1;
    // The tuning the baseline runs under: `baseline.tuning`, else the first
    // value of the tuning axis, else "defaults". Every variant of a workload
    // is compared with the baseline configuration's run of the variant under
    // this tuning (compare_sweep).
    std::string baseline_tuning = std::string(kDefaultTuning);
};

// The spec's workloads with the tuning axis expanded, in spec order: a
// workload whose kind takes server variables runs once per value of the
// axis, as written for "defaults" and as "NAME.TUNING" for a named tuning
// (its server variables added to the workload's, its filesystems
// intersected with the workload's; Workload::tuning and variant_of say
// which); other workloads run once, as written. Errors: a variable both set,
// variants that share no filesystem, a name over 64 characters or twice.
Result<std::vector<Workload>> tuned_workloads(const SweepSpec&);

// The plan of a spec: check_sweep_spec's checks first; then the matrix's
// combinations (the impossible ones dropped, with their reasons), the
// workloads (tuned_workloads), the baseline, the host baselines and the runs
// in their order (plan/run_order.h). Errors: a baseline that selects no
// configuration or more than one, every combination dropped, a workload
// that runs nowhere, more than kMaxRuns runs.
Result<SweepPlan> expand_sweep(const SweepSpec&);

// The runs of round `round` (0-based) in the order the spec's generator
// gives it: the same runs and order expand_sweep would plan for that round
// with repetitions > round. Sequences start at `first_sequence`. For adaptive
// repetitions, which add rounds after the first ones ran.
Result<std::vector<PlannedRun>> plan_round(const SweepSpec&, int round, int first_sequence);

}  // namespace ds
