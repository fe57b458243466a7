#include "common/pgbench_output.h"

#include <array>
#include <cmath>
#include <string>

#include "common/text.h"

namespace ds {
namespace {

Error invalid(std::string_view kind, const std::string& what) {
    return make_error(errc::kInvalidArgument, std::string(kind) + " output: " + what);
}

// Each line of `text`, in order.
template <typename Visit>
void for_each_line(std::string_view text, Visit visit) {
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        visit(text.substr(start, end - start));
        start = end + 1;
    }
}

// The number after `prefix` up to the next space: "tps = 2072.1 (...)" with
// prefix "tps = ".
std::optional<double> number_after(std::string_view line, std::string_view prefix) {
    if (line.substr(0, prefix.size()) != prefix) return std::nullopt;
    std::string_view rest = line.substr(prefix.size());
    return parse_finite_double(rest.substr(0, rest.find(' ')));
}

// The summary lines pgbench prints once, and the metric each becomes.
struct SummaryLine {
    std::string_view prefix;
    std::string_view metric;
};
constexpr std::array<SummaryLine, 5> kSummaryLines = {{
    {"tps = ", "tps"},
    {"latency average = ", "latency_avg_ms"},
    {"latency stddev = ", "latency_stddev_ms"},
    {"number of transactions actually processed: ", "transactions"},
    {"number of failed transactions: ", "failed"},
}};

Status add_latency_percentiles(std::string_view kind, const Json& output, MetricsMap& metrics) {
    const auto found = output.find("latency_us");
    if (found == output.end()) return ok_status();
    const Json& latency = *found;
    if (!latency.is_object() || !latency.contains("count") ||
        !latency["count"].is_number_integer() || latency["count"].get<long long>() < 0) {
        return invalid(kind, "latency_us is not an object with a non-negative integer count");
    }
    if (latency["count"].get<long long>() == 0) return ok_status();
    double previous = 0;
    for (const char* name : {"p50", "p95", "p99", "max"}) {
        const Json* value = latency.contains(name) ? &latency[name] : nullptr;
        if (value == nullptr || !value->is_number() || !std::isfinite(value->get<double>()) ||
            value->get<double>() < previous) {
            return invalid(kind, std::string("latency_us.") + name +
                                     " is not a finite number of µs at least the percentile "
                                     "before it");
        }
        previous = value->get<double>();
        metrics[std::string("latency_") + name + "_ms"] = previous / 1000.0;
    }
    return ok_status();
}

}  // namespace

Result<MetricsMap> pgbench_output_metrics(std::string_view kind, const Json& output) {
    if (!output.is_object() || !output.contains("stdout") || !output["stdout"].is_string())
        return invalid(kind, "no string \"stdout\"");
    MetricsMap metrics;
    for_each_line(output["stdout"].get_ref<const std::string&>(), [&](std::string_view line) {
        for (const SummaryLine& summary : kSummaryLines) {
            const auto value = number_after(line, summary.prefix);
            if (value && *value >= 0) metrics[std::string(summary.metric)] = *value;
        }
    });
    if (metrics.count("tps") == 0) return invalid(kind, "pgbench printed no \"tps = \" line");
    DS_TRY(add_latency_percentiles(kind, output, metrics));
    return metrics;
}

Result<SeriesMap> pgbench_output_series(const Json& output) {
    SeriesMap series;
    if (!output.is_object() || !output.contains("progress") || !output["progress"].is_string())
        return series;
    auto& tps = series["tps"];
    auto& latency = series["latency_ms"];
    for_each_line(output["progress"].get_ref<const std::string&>(), [&](std::string_view line) {
        // "progress: 1.0 s, 1667.6 tps, lat 2.151 ms stddev 3.120, 0 failed"
        const auto comma = line.find(", ");
        if (line.substr(0, 10) != "progress: " || comma == std::string_view::npos) return;
        if (tps.size() >= kMaxSeriesSeconds) return;
        const std::string_view rest = line.substr(comma + 2);
        const auto tps_value = parse_finite_double(rest.substr(0, rest.find(" tps")));
        const auto lat_at = rest.find(", lat ");
        const auto lat_value = lat_at == std::string_view::npos
                                   ? std::nullopt
                                   : parse_finite_double(rest.substr(
                                         lat_at + 6, rest.find(" ms", lat_at) - (lat_at + 6)));
        if (!tps_value || *tps_value < 0) return;
        tps.push_back(*tps_value);
        if (lat_value && *lat_value >= 0) latency.push_back(*lat_value);
    });
    if (latency.size() != tps.size()) series.erase("latency_ms");
    if (tps.empty()) series.clear();
    return series;
}

}  // namespace ds
