// Throttle limits proven by their effect (issue 32, "What to build" §4):
// on Proxmox VE 9 a drive's limits sit in a QEMU throttle-group object,
// which no HMP `info` command shows (only qom-get, which needs Sys.Modify),
// so the run's own measurement must bear them out. On every backend:
//  * not exceeded: the measured total (reads + writes) IOPS and bandwidth
//    stay within kThrottleOverrun of the limit (QEMU's throttle lets a
//    bucket of a tenth of a second's worth through at once, which a run of
//    seconds dilutes to a few percent);
//  * not enforced lower than asked: where the same configuration without
//    the limits, measured in the same sweep on the same host (its mean, the
//    reference), went clearly faster than the limit (limit <=
//    kThrottleShortfall x reference: the limit binds), the run reaches at
//    least kThrottleShortfall of the limit. Without a reference (none
//    finished yet, or the sweep has no unthrottled twin) or with one too
//    slow for the limit to bind, that half is recorded as not checked, with
//    the reason.
// Either failing fails the run, naming the limit. A workload that reports
// no I/O rate (sql-bench), or whose I/O is buffered (its rate is the page
// cache's, not the disk's), checks neither half: recorded, with the reason.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/settings.h"

namespace ds {

inline constexpr double kThrottleOverrun = 1.10;
inline constexpr double kThrottleShortfall = 0.75;

// A run's (or its reference's) measured totals.
struct ThrottleRates {
    std::optional<double> iops;              // read_iops + write_iops
    std::optional<double> bytes_per_second;  // (read + write bandwidth) in bytes/s
};

// The totals of a run's normalised metrics (read_iops, write_iops,
// read_bw_mib_s, write_bw_mib_s): a figure absent when neither direction
// reported it (or one reported a negative or non-finite value).
ThrottleRates throttle_rates_of(const std::map<std::string, double>& metrics);

struct ThrottleVerdict {
    std::vector<std::string> mismatches;  // one line per limit not borne out
    Json record;                          // applied_settings.throttle_effect
};

// How the workload reached the disk: only direct I/O's rate is the disk's.
enum class WorkloadIo { kDirect, kBuffered };

// The rule above for the limits `config` sets; an unthrottled config gives
// an empty verdict (record null). `reference`: the unthrottled twin's
// means, when known. The record: per limit {"limit", "checked": false,
// "reason"} without a measured rate, else {"limit", "checked": true,
// "measured", "reference" (when known), "exceeded": bool, "lower":
// {"checked": bool, "reason" | "expected_at_least"}}.
ThrottleVerdict judge_throttle_effect(const StorageConfig& config, WorkloadIo io,
                                      const ThrottleRates& measured,
                                      const std::optional<ThrottleRates>& reference);

// The configuration whose runs are the reference: `config` without its
// limits (everything else, the id included, as the spec made it).
StorageConfig unthrottled_twin(const StorageConfig& config);

}  // namespace ds
