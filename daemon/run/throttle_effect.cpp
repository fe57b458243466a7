#include "daemon/run/throttle_effect.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace ds {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::optional<double> metric(const std::map<std::string, double>& metrics, const char* name) {
    const auto found = metrics.find(name);
    if (found == metrics.end() || !std::isfinite(found->second) || found->second < 0)
        return std::nullopt;
    return found->second;
}

std::optional<double> sum(std::optional<double> a, std::optional<double> b, double scale) {
    if (!a && !b) return std::nullopt;
    return (a.value_or(0) + b.value_or(0)) * scale;
}

std::string figure(double value) {
    std::ostringstream out;
    out.precision(value >= 100 ? 0 : 1);
    out << std::fixed << value;
    return out.str();
}

// One limit: `name` (iops_limit), its unit in messages, the limit, what the
// run measured and the reference's figure.
struct LimitCase {
    WorkloadIo io;
    const char* name;
    const char* unit;
    double limit;
    std::optional<double> measured;
    std::optional<double> reference;
};

Json judge_limit(const LimitCase& limit, std::vector<std::string>& mismatches) {
    Json record = {{"limit", limit.limit}};
    if (limit.io == WorkloadIo::kBuffered) {
        record["checked"] = false;
        record["reason"] =
            "the workload's I/O is buffered (direct = false): its rate is the page cache's, not "
            "the disk's";
        return record;
    }
    if (!limit.measured) {
        // A workload that reports no I/O rate (sql-bench's seconds) cannot
        // bear a limit out either way: not checked, said so.
        record["checked"] = false;
        record["reason"] = "the workload reports no I/O rate to hold the limit against";
        return record;
    }
    record["checked"] = true;
    const double measured = *limit.measured;
    record["measured"] = measured;
    const bool exceeded = measured > limit.limit * kThrottleOverrun;
    record["exceeded"] = exceeded;
    if (exceeded) {
        mismatches.push_back(std::string(limit.name) + ": requested " + figure(limit.limit) + " " +
                             limit.unit + ", the run measured " + figure(measured) +
                             " (more than " + figure((kThrottleOverrun - 1) * 100) +
                             " % over: the limit is not in force)");
    }
    if (!limit.reference) {
        record["lower"] = {{"checked", false},
                           {"reason",
                            "no run of the same configuration without limits has finished on "
                            "this host in this sweep, so a limit enforced lower than asked cannot "
                            "be told from a slow disk"}};
        return record;
    }
    record["reference"] = *limit.reference;
    // Only a limit that binds can show a lower one: the twin must have gone
    // clearly faster than the limit, else run-to-run noise (tens of percent
    // under TCG) would pass for a lower limit.
    if (*limit.reference * kThrottleShortfall < limit.limit) {
        record["lower"] = {{"checked", false},
                           {"reason", "the same configuration without limits reached only " +
                                          figure(*limit.reference) + " " + limit.unit +
                                          ": the limit does not bind, so a lower one cannot show"}};
        return record;
    }
    const double expected = limit.limit * kThrottleShortfall;
    record["lower"] = {{"checked", true}, {"expected_at_least", expected}};
    if (measured < expected) {
        mismatches.push_back(std::string(limit.name) + ": requested " + figure(limit.limit) + " " +
                             limit.unit + ", the run measured " + figure(measured) +
                             " where the same configuration without limits reached " +
                             figure(*limit.reference) + " (below " +
                             figure(kThrottleShortfall * 100) +
                             " % of the limit: a lower limit is in force)");
    }
    return record;
}

}  // namespace

ThrottleRates throttle_rates_of(const std::map<std::string, double>& metrics) {
    return {sum(metric(metrics, "read_iops"), metric(metrics, "write_iops"), 1.0),
            sum(metric(metrics, "read_bw_mib_s"), metric(metrics, "write_bw_mib_s"), kMiB)};
}

ThrottleVerdict judge_throttle_effect(const StorageConfig& config, WorkloadIo io,
                                      const ThrottleRates& measured,
                                      const std::optional<ThrottleRates>& reference) {
    ThrottleVerdict verdict;
    if (!config.iops_limit && !config.bandwidth_limit) return verdict;
    verdict.record = Json::object();
    if (config.iops_limit) {
        verdict.record["iops_limit"] =
            judge_limit({io, "iops_limit", "IOPS", static_cast<double>(*config.iops_limit),
                         measured.iops, reference ? reference->iops : std::nullopt},
                        verdict.mismatches);
    }
    if (config.bandwidth_limit) {
        verdict.record["bandwidth_limit"] = judge_limit(
            {io, "bandwidth_limit", "bytes/s", static_cast<double>(*config.bandwidth_limit),
             measured.bytes_per_second, reference ? reference->bytes_per_second : std::nullopt},
            verdict.mismatches);
    }
    return verdict;
}

StorageConfig unthrottled_twin(const StorageConfig& config) {
    StorageConfig twin = config;
    twin.iops_limit.reset();
    twin.bandwidth_limit.reset();
    return twin;
}

}  // namespace ds
