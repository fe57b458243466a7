#include "common/fio_metrics.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <optional>
#include <string_view>

namespace ds {
namespace {

constexpr double kBytesPerMiB = 1024.0 * 1024.0;
constexpr double kNanosecondsPerMicrosecond = 1000.0;

struct PercentileName {
    double percentile;        // as fio spells it in clat_ns.percentile, e.g. 99.9
    std::string_view suffix;  // metric name suffix, e.g. "p99_9_us"
};
constexpr std::array<PercentileName, 3> kPercentiles = {{
    {50.0, "clat_p50_us"},
    {99.0, "clat_p99_us"},
    {99.9, "clat_p99_9_us"},
}};

Error invalid(const std::string& path, const std::string& what) {
    return make_error(errc::kInvalidArgument, "fio output: " + path + " " + what);
}

// A required non-negative number at object[key].
Result<double> non_negative_number(const Json& object, const char* key, const std::string& path) {
    const auto found = object.find(key);
    if (found == object.end()) return invalid(path + "." + key, "is missing");
    if (!found->is_number()) {
        return invalid(path + "." + key,
                       std::string("is a ") + found->type_name() + ", expected a number");
    }
    const double value = found->get<double>();
    if (!std::isfinite(value) || value < 0) {
        return invalid(path + "." + key, "is " + found->dump() + ", expected >= 0");
    }
    return value;
}

// fio spells percentiles as "99.900000"; match numerically so a different
// number of decimals would still be found.
std::optional<double> parse_percentile_key(const std::string& key) {
    double value = 0;
    const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), value);
    if (error != std::errc() || end != key.data() + key.size()) return std::nullopt;
    return value;
}

// Accumulates one direction ("read" or "write") over all jobs.
struct DirectionTotals {
    bool did_io = false;
    double iops = 0;
    double bw_bytes = 0;
    std::array<std::optional<double>, kPercentiles.size()> clat_max_ns;
};

Status add_direction(const Json& job, const char* direction, const std::string& job_path,
                     DirectionTotals& totals) {
    const std::string path = job_path + "." + direction;
    const auto section = job.find(direction);
    if (section == job.end()) return invalid(path, "is missing");
    if (!section->is_object()) {
        return invalid(path, std::string("is a ") + section->type_name() + ", expected an object");
    }
    auto io_bytes = non_negative_number(*section, "io_bytes", path);
    if (!io_bytes) return io_bytes.error();
    auto iops = non_negative_number(*section, "iops", path);
    if (!iops) return iops.error();
    auto bw_bytes = non_negative_number(*section, "bw_bytes", path);
    if (!bw_bytes) return bw_bytes.error();
    if (*io_bytes == 0) return ok_status();  // this job did no I/O this way

    totals.did_io = true;
    totals.iops += *iops;
    totals.bw_bytes += *bw_bytes;

    const auto clat = section->find("clat_ns");
    if (clat == section->end()) return ok_status();
    if (!clat->is_object()) return invalid(path + ".clat_ns", "is not an object");
    const auto percentiles = clat->find("percentile");
    if (percentiles == clat->end()) return ok_status();  // clat_percentiles=0
    if (!percentiles->is_object()) {
        return invalid(path + ".clat_ns.percentile", "is not an object");
    }
    for (const auto& [key, value] : percentiles->items()) {
        const auto percentile = parse_percentile_key(key);
        if (!percentile) {
            return invalid(path + ".clat_ns.percentile", "has a non-numeric key \"" + key + "\"");
        }
        for (std::size_t i = 0; i < kPercentiles.size(); ++i) {
            if (std::abs(*percentile - kPercentiles[i].percentile) > 1e-4) continue;
            if (!value.is_number() || value.get<double>() < 0) {
                return invalid(path + ".clat_ns.percentile[\"" + key + "\"]",
                               "is " + value.dump() + ", expected a number >= 0");
            }
            auto& slot = totals.clat_max_ns[i];
            slot = std::max(slot.value_or(0.0), value.get<double>());
        }
    }
    return ok_status();
}

void emit(const char* direction, const DirectionTotals& totals,
          std::map<std::string, double>& metrics) {
    if (!totals.did_io) return;
    const std::string prefix = std::string(direction) + "_";
    metrics[prefix + "iops"] = totals.iops;
    metrics[prefix + "bw_mib_s"] = totals.bw_bytes / kBytesPerMiB;
    for (std::size_t i = 0; i < kPercentiles.size(); ++i) {
        if (totals.clat_max_ns[i]) {
            metrics[prefix + std::string(kPercentiles[i].suffix)] =
                *totals.clat_max_ns[i] / kNanosecondsPerMicrosecond;
        }
    }
}

}  // namespace

Result<std::map<std::string, double>> metrics_from_fio_json(const Json& fio_output) {
    if (!fio_output.is_object()) {
        return invalid("top level",
                       std::string("is a ") + fio_output.type_name() + ", expected an object");
    }
    const auto jobs = fio_output.find("jobs");
    if (jobs == fio_output.end()) return invalid("\"jobs\"", "is missing");
    if (!jobs->is_array()) {
        return invalid("\"jobs\"",
                       std::string("is a ") + jobs->type_name() + ", expected an array");
    }
    if (jobs->empty()) return invalid("\"jobs\"", "is empty");

    DirectionTotals read;
    DirectionTotals write;
    for (std::size_t index = 0; index < jobs->size(); ++index) {
        const Json& job = (*jobs)[index];
        const std::string path = "jobs[" + std::to_string(index) + "]";
        if (!job.is_object()) {
            return invalid(path, std::string("is a ") + job.type_name() + ", expected an object");
        }
        if (const auto error = job.find("error"); error != job.end()) {
            if (!error->is_number_integer()) return invalid(path + ".error", "is not an integer");
            if (error->get<long long>() != 0) {
                const auto name = job.find("jobname");
                const std::string job_name =
                    name != job.end() && name->is_string() ? name->get<std::string>() : "?";
                return invalid(path,
                               "(job \"" + job_name + "\") failed with error " + error->dump());
            }
        }
        if (auto status = add_direction(job, "read", path, read); !status) return status.error();
        if (auto status = add_direction(job, "write", path, write); !status) return status.error();
    }
    std::map<std::string, double> metrics;
    emit("read", read, metrics);
    emit("write", write, metrics);
    // Each job's numbers are finite, but their sum can still overflow.
    for (const auto& [name, value] : metrics) {
        if (!std::isfinite(value)) return invalid(name, "sums to a non-finite value over the jobs");
    }
    return metrics;
}

}  // namespace ds
