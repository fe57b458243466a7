// Sweep specs (TOML, grammar in docs/spec.md): parsed and checked into a
// SweepSpec. plan/expand.h expands a spec into its runs.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/guest_suite.h"
#include "common/result.h"
#include "common/settings.h"
#include "daemon/model/verdict_rules.h"
#include "daemon/spec/unchecked_levels.h"

namespace ds {

// A named tuning of the workloads ([tunings.NAME], docs/spec.md): a value
// of the matrix's `tuning` axis.
struct WorkloadTuning {
    // MariaDB server variables added to the `server` table of every workload
    // whose kind takes one (mariadb-atis, sysbench-oltp).
    Json server = Json::object();
    // matrix.filesystem values (as written) its variants run on; empty = all.
    std::vector<std::string> filesystems;
};

// The tuning axis's value for the workloads as written.
inline constexpr std::string_view kDefaultTuning = "defaults";

struct SweepSpec {
    std::string name;
    // Rounds planned at submission: `repetitions = N`, or the `min` of
    // `repetitions = { min, max, ci }`.
    int repetitions = 1;
    // Adaptive repetitions: after `repetitions` rounds the sweep adds whole
    // rounds, up to max_repetitions, while any configuration's primary
    // metric has a 95% CI half-width above ci_target of its mean (a
    // fraction: "3%" -> 0.03). ci_target 0: not adaptive (max = min).
    int max_repetitions = 1;
    double ci_target = 0;
    // `baseline = { axis = "value", ... }`: matrix axis values selecting the
    // one configuration the others are compared with (empty: the first
    // configuration). baseline_where is "SOURCE:LINE:COLUMN" of the key, for
    // expand_sweep's errors.
    std::map<std::string, std::string> baseline;
    std::string baseline_where;
    // `baseline.tuning`: the tuning the baseline runs under; "" = the first
    // value of the tuning axis.
    std::string baseline_tuning;
    // What a verdict needs: `practical_difference = "2%"` (ratios to the
    // baseline closer to 1 than this are never called a difference) and
    // `min_runs_for_verdict = 3` (runs on each side).
    VerdictRules verdict_rules;
    std::string hypervisor = "libvirt";
    // [hypervisor] hosts: the daemon's hosts (by name) the runs may be
    // placed on; empty = any host of the hypervisor that reaches the storage.
    std::vector<std::string> hosts;
    // [hypervisor] identical_hosts: the user vouches that the hosts are the
    // same machine model, so comparisons pool runs across them.
    bool identical_hosts = false;
    // `[guest] suite`: the Debian release of the project's guest image
    // (common/guest_suite.h); the image is <image dir>/<its subdir>.
    std::string guest_suite{kDefaultGuestSuite};
    // Axis name -> the values listed for it in [matrix] (as written). Axes not
    // listed take their default.
    std::map<std::string, std::vector<std::string>> matrix;
    // Named filesystems from [filesystems.NAME] tables, usable in
    // matrix.filesystem next to the "TYPE[+step...][:mountopts]" shorthand.
    std::map<std::string, FilesystemSpec> filesystems;
    // matrix.tuning as listed ("defaults" or a [tunings.NAME] name); empty:
    // the axis is left out, every workload runs as written.
    std::vector<std::string> tuning_axis;
    std::map<std::string, WorkloadTuning> tunings;
    std::vector<Workload> workloads;
    std::uint64_t seed = 0;  // shuffle seed for run order (0 = derived from name)
    int boot_timeout_s = 0;  // 0 = daemon default
    int run_timeout_s = 0;   // 0 = daemon default
    // Also run each fio workload from the host on the raw volume of each
    // storage in the matrix, with no guest (ds::is_host_baseline), so reports
    // show what the hypervisor settings cost against bare storage.
    bool host_baseline = false;
    // `unchecked_levels`: whether a verification level that could not be
    // checked fails the sweep's runs (docs/verification.md).
    UncheckedLevelPolicy unchecked_levels = UncheckedLevelPolicy::kFailUnlessForbidden;
};

// Parses a spec. Errors name the source, line and column (malformed TOML),
// or the key path and the valid choices (unknown key, unknown axis value).
Result<SweepSpec> parse_sweep_spec(std::string_view toml_text, std::string_view source_name);

// A filesystem shorthand "TYPE[+step...][:mountopts]" or a named filesystem.
Result<FilesystemSpec> resolve_filesystem(const SweepSpec&, std::string_view value);

// A sweep may schedule at most this many runs (and its matrix may have at
// most this many combinations): a guard against a typo exploding the matrix.
inline constexpr std::uint64_t kMaxRuns = 10000;

// The checks of a spec that need no expansion: repetitions, workloads, the
// backend, distinct workload names and known, non-empty matrix axes.
// expand_sweep (plan/expand.h) runs them first, so that a spec built in code
// gets them too.
Status check_sweep_spec(const SweepSpec&);

// The keys a spec may have at its top level (docs/spec.md's table).
std::span<const std::string_view> spec_top_level_keys();

}  // namespace ds
