// POST /v1/sweeps/plan: what a sweep spec would run, without running it —
// its configurations, the combinations dropped as impossible, the number of
// runs, and how long they would take, estimated from the runs this daemon has
// already recorded.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/settings.h"
#include "daemon/plan/expand.h"
#include "daemon/spec/spec.h"
#include "daemon/store/store.h"

namespace ds {

// Where the estimate of one run's duration comes from, best first.
enum class EstimateBasis {
    kSameConfiguration,  // succeeded runs of this configuration with this workload
    kSameWorkload,       // succeeded runs of this workload on any configuration
    kUnknown,            // no succeeded run of this workload
};
std::string_view to_string(EstimateBasis);  // "configuration" "workload" "unknown"

struct DurationEstimate {
    EstimateBasis basis = EstimateBasis::kUnknown;
    double seconds = 0;                 // the median duration; 0 when unknown
    int based_on_runs = 0;              // how many runs the median is of
    std::vector<std::int64_t> run_ids;  // those runs
};

// The durations (timings.total_s) of past succeeded runs, by configuration
// and workload. A workload is the same when its kind and parameters are (its
// name, `filesystems` and timeout do not change what a run does).
class RunDurations {
  public:
    // Runs of any status; only succeeded ones with a total_s count.
    explicit RunDurations(const std::vector<RunRecord>& runs);
    // The median over the configuration's runs of the workload; else over
    // the workload's runs on any configuration; else unknown.
    DurationEstimate estimate(const std::string& config_id, const Workload& workload) const;

  private:
    struct Group {
        std::vector<double> seconds;
        std::vector<std::int64_t> run_ids;
    };
    std::map<std::pair<std::string, std::string>, Group> by_config_and_workload_;
    std::map<std::string, Group> by_workload_;
};

// The plan's answer (docs/api.md):
//  {"name", "repetitions", "varying_axes": [..],
//   "configurations": [{"config_id", "settings": {..canonical..},
//                       "durability_risks": [..]}],   (expansion order)
//   "workloads": [{"name", "kind"}],
//   "dropped": [{"settings", "reason"}], "skipped_by_filesystems": N,
//   "total_runs": N,
//   "pairs": [{"config_id", "workload", "runs", "estimate_s" (null when
//              unknown), "basis", "based_on_runs"}],
//   "estimate": {"run_seconds": sum over runs, "wall_seconds": run_seconds /
//                max_parallel_runs, "max_parallel_runs", "runs_estimated",
//                "runs_unknown", "based_on_runs": distinct past runs used,
//                "complete": runs_unknown == 0}}
// The seconds leave out the runs whose duration is unknown: "complete" says
// whether any are.
Json sweep_plan_json(const SweepSpec& spec, const SweepPlan& plan, const RunDurations& durations,
                     int max_parallel_runs);

}  // namespace ds
