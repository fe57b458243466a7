#include "common/ledger_output.h"

#include <cmath>
#include <string>

namespace ds {
namespace {

// The longest a ledger run may say it took (30 days, as for any timing the
// guest reports).
constexpr double kMaxWallSeconds = 30.0 * 24 * 3600;

Error malformed(std::string_view kind, const std::string& what) {
    return make_error(errc::kInvalidArgument, std::string(kind) + " output: " + what);
}

Result<double> finite_number(std::string_view kind, const Json& object, const char* key,
                             const std::string& where, double maximum) {
    if (!object.is_object() || !object.contains(key)) {
        return malformed(kind, where + key + " is missing");
    }
    const Json& value = object.at(key);
    if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0 ||
        value.get<double>() > maximum) {
        return malformed(kind, where + key + " is not a number in 0.." + std::to_string(maximum));
    }
    return value.get<double>();
}

Result<long long> acknowledged_count(std::string_view kind, const Json& output) {
    const auto found = output.find("acknowledged");
    if (found == output.end() || !found->is_number_integer() || found->get<long long>() < 0 ||
        found->get<long long>() > kMaxLedgerRecords) {
        return malformed(
            kind, "acknowledged is not an integer in 0.." + std::to_string(kMaxLedgerRecords));
    }
    return found->get<long long>();
}

}  // namespace

Result<MetricsMap> ledger_output_metrics(std::string_view kind, const Json& output) {
    if (!output.is_object()) return malformed(kind, "not an object");
    DS_ASSIGN_OR_RETURN(const long long acknowledged, acknowledged_count(kind, output));
    DS_ASSIGN_OR_RETURN(const double wall_s,
                        finite_number(kind, output, "wall_s", "", kMaxWallSeconds));
    MetricsMap metrics;
    metrics["acknowledged"] = static_cast<double>(acknowledged);
    if (acknowledged > 0) {
        if (wall_s <= 0) return malformed(kind, "wall_s is 0 although records were acknowledged");
        metrics["commits_per_s"] = static_cast<double>(acknowledged) / wall_s;
    }
    const auto latency = output.find("commit_latency_us");
    if (acknowledged > 0 && latency != output.end()) {
        for (const auto& [key, metric] :
             {std::pair{"p50", "commit_p50_ms"}, std::pair{"p99", "commit_p99_ms"},
              std::pair{"max", "commit_max_ms"}}) {
            DS_ASSIGN_OR_RETURN(
                const double us,
                finite_number(kind, *latency, key, "commit_latency_us.", kMaxWallSeconds * 1e6));
            metrics[metric] = us / 1000.0;
        }
    }
    return metrics;
}

Result<SeriesMap> ledger_output_series(const Json& output) {
    SeriesMap series;
    DS_ASSIGN_OR_RETURN(auto commits, per_second_array(output, "per_second", "ledger output"));
    if (!commits.empty()) series["commits"] = std::move(commits);
    return series;
}

}  // namespace ds
