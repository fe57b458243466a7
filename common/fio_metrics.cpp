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
// The native engine's report: read/write sections merged over all jobs.
constexpr const char* kAllJobsKey = "all jobs";
constexpr std::array<const char*, 2> kDirections = {"read", "write"};

struct PercentileName {
    double percentile;      // as fio spells it in clat_ns.percentile, e.g. 99.9
    std::string_view name;  // in the metric's name, e.g. "p99_9"
};
constexpr std::array<PercentileName, 4> kPercentiles = {{
    {50.0, "p50"},
    {90.0, "p90"},
    {99.0, "p99"},
    {99.9, "p99_9"},
}};

// Latencies in ns, by kPercentiles index; empty where the source has none.
using Percentiles = std::array<std::optional<double>, kPercentiles.size()>;

Error invalid(const std::string& path, const std::string& what) {
    return make_error(errc::kInvalidArgument, "fio output: " + path + " " + what);
}

std::string is_a(const Json& value, const std::string& expected) {
    return std::string("is a ") + value.type_name() + ", expected " + expected;
}

// A required non-negative number at object[key].
Result<double> non_negative_number(const Json& object, const char* key, const std::string& path) {
    const auto found = object.find(key);
    if (found == object.end()) return invalid(path + "." + key, "is missing");
    if (!found->is_number()) return invalid(path + "." + key, is_a(*found, "a number"));
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

// A bin's key: its value in ns, digits only.
std::optional<std::uint64_t> parse_bin_value(const std::string& key) {
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), value);
    if (key.empty() || error != std::errc() || end != key.data() + key.size()) return std::nullopt;
    return value;
}

// A bin's count: an integer >= 0 (JSON parses it as unsigned, code may build
// it signed).
std::optional<std::uint64_t> bin_count(const Json& count) {
    if (count.is_number_unsigned()) return count.get<std::uint64_t>();
    if (count.is_number_integer() && count.get<std::int64_t>() >= 0) {
        return static_cast<std::uint64_t>(count.get<std::int64_t>());
    }
    return std::nullopt;
}

// clat_ns.percentile: the entries of kPercentiles that fio reported.
Result<Percentiles> read_reported_percentiles(const Json& percentiles, const std::string& path) {
    if (!percentiles.is_object()) return invalid(path, "is not an object");
    Percentiles found;
    for (const auto& [key, value] : percentiles.items()) {
        const auto percentile = parse_percentile_key(key);
        if (!percentile) return invalid(path, "has a non-numeric key \"" + key + "\"");
        for (std::size_t i = 0; i < kPercentiles.size(); ++i) {
            if (std::abs(*percentile - kPercentiles[i].percentile) > 1e-4) continue;
            if (!value.is_number() || value.get<double>() < 0) {
                return invalid(path + "[\"" + key + "\"]",
                               "is " + value.dump() + ", expected a number >= 0");
            }
            found[i] = value.get<double>();
        }
    }
    return found;
}

// clat_ns.bins (json+): bin value -> count, checked.
Result<FioLatencyBins> read_bins(const Json& bins, const std::string& path) {
    if (!bins.is_object()) return invalid(path, is_a(bins, "an object of bin value -> count"));
    if (bins.size() > kMaxFioLatencyBins) {
        return invalid(path, "has " + std::to_string(bins.size()) + " bins, more than fio's " +
                                 std::to_string(kMaxFioLatencyBins));
    }
    FioLatencyBins parsed;
    for (const auto& [key, count] : bins.items()) {
        const std::string where = path + "[\"" + key + "\"]";
        const auto value = parse_bin_value(key);
        if (!value) return invalid(where, "is not a bin value in ns (a non-negative integer)");
        const auto n = bin_count(count);
        if (!n) return invalid(where, "is " + count.dump() + ", expected a count (integer >= 0)");
        if (!parsed.emplace(*value, *n).second) {
            return invalid(where, "repeats bin value " + std::to_string(*value));
        }
    }
    return parsed;
}

// One direction of one job entry (or of "all jobs"), read and checked.
struct DirectionSection {
    bool did_io = false;
    double iops = 0;
    double bw_bytes = 0;
    Percentiles reported;                // clat_ns.percentile
    std::optional<FioLatencyBins> bins;  // clat_ns.bins (json+)
};

// clat_ns of a direction that did I/O: its percentiles and bins, each optional.
Status read_latency(const Json& section, const std::string& path, DirectionSection& out) {
    const auto clat = section.find("clat_ns");
    if (clat == section.end()) return ok_status();
    if (!clat->is_object()) return invalid(path + ".clat_ns", "is not an object");
    if (const auto percentiles = clat->find("percentile"); percentiles != clat->end()) {
        DS_ASSIGN_OR_RETURN(auto reported,
                            read_reported_percentiles(*percentiles, path + ".clat_ns.percentile"));
        out.reported = reported;
    }
    if (const auto bins = clat->find("bins"); bins != clat->end()) {
        DS_ASSIGN_OR_RETURN(auto parsed, read_bins(*bins, path + ".clat_ns.bins"));
        out.bins = std::move(parsed);
    }
    return ok_status();
}

Result<DirectionSection> read_direction(const Json& parent, const char* direction,
                                        const std::string& parent_path) {
    const std::string path = parent_path + "." + direction;
    const auto section = parent.find(direction);
    if (section == parent.end()) return invalid(path, "is missing");
    if (!section->is_object()) return invalid(path, is_a(*section, "an object"));
    DS_ASSIGN_OR_RETURN(auto io_bytes, non_negative_number(*section, "io_bytes", path));
    DS_ASSIGN_OR_RETURN(auto iops, non_negative_number(*section, "iops", path));
    DS_ASSIGN_OR_RETURN(auto bw_bytes, non_negative_number(*section, "bw_bytes", path));
    DirectionSection out;
    out.did_io = io_bytes > 0;
    if (!out.did_io) return out;  // no I/O this way: nothing more to read
    out.iops = iops;
    out.bw_bytes = bw_bytes;
    DS_TRY(read_latency(*section, path, out));
    return out;
}

// One direction accumulated over the job entries.
struct DirectionTotals {
    std::size_t jobs_with_io = 0;
    double iops = 0;
    double bw_bytes = 0;
    Percentiles job_max;   // each percentile's maximum over the jobs
    Percentiles last_job;  // the last job with I/O's own percentiles
    std::size_t jobs_with_bins = 0;
    FioLatencyBins bins;  // merged over the jobs that have them
    std::uint64_t bins_total = 0;
};

Status add_section(const DirectionSection& section, const std::string& path,
                   DirectionTotals& totals) {
    if (!section.did_io) return ok_status();
    ++totals.jobs_with_io;
    totals.iops += section.iops;
    totals.bw_bytes += section.bw_bytes;
    for (std::size_t i = 0; i < kPercentiles.size(); ++i) {
        if (!section.reported[i]) continue;
        totals.job_max[i] = std::max(totals.job_max[i].value_or(0.0), *section.reported[i]);
    }
    totals.last_job = section.reported;
    if (!section.bins) return ok_status();
    ++totals.jobs_with_bins;
    for (const auto& [value, count] : *section.bins) {
        // The total bounds every merged count, so only it can overflow.
        if (__builtin_add_overflow(totals.bins_total, count, &totals.bins_total)) {
            return invalid(path + ".clat_ns.bins", "has counts that sum beyond 2^64 over the jobs");
        }
        totals.bins[value] += count;
    }
    return ok_status();
}

Percentiles percentiles_from_bins(const FioLatencyBins& bins) {
    Percentiles out;
    for (std::size_t i = 0; i < kPercentiles.size(); ++i) {
        if (auto value = fio_bins_percentile(bins, kPercentiles[i].percentile)) {
            out[i] = static_cast<double>(*value);
        }
    }
    return out;
}

struct Latency {
    Percentiles values;
    bool pooled = false;  // of all I/Os; else the maximum over jobs
};

// The header's rule: the native engine's merged section, else merged bins,
// else the only job, else the maximum over jobs.
Latency latency_of(const DirectionTotals& totals, const std::optional<DirectionSection>& merged) {
    if (merged) return {merged->reported, true};
    if (totals.jobs_with_bins == totals.jobs_with_io) {
        return {percentiles_from_bins(totals.bins), true};
    }
    if (totals.jobs_with_io == 1) return {totals.last_job, true};
    return {totals.job_max, false};
}

void emit(const char* direction, const DirectionTotals& totals, const Latency& latency,
          std::map<std::string, double>& metrics) {
    if (totals.jobs_with_io == 0) return;
    const std::string prefix = std::string(direction) + "_";
    metrics[prefix + "iops"] = totals.iops;
    metrics[prefix + "bw_mib_s"] = totals.bw_bytes / kBytesPerMiB;
    const std::string clat = prefix + (latency.pooled ? "clat_" : "clat_jobmax_");
    for (std::size_t i = 0; i < kPercentiles.size(); ++i) {
        if (latency.values[i]) {
            metrics[clat + std::string(kPercentiles[i].name) + "_us"] =
                *latency.values[i] / kNanosecondsPerMicrosecond;
        }
    }
}

Result<const Json*> jobs_of(const Json& fio_output) {
    if (!fio_output.is_object()) return invalid("top level", is_a(fio_output, "an object"));
    const auto jobs = fio_output.find("jobs");
    if (jobs == fio_output.end()) return invalid("\"jobs\"", "is missing");
    if (!jobs->is_array()) return invalid("\"jobs\"", is_a(*jobs, "an array"));
    if (jobs->empty()) return invalid("\"jobs\"", "is empty");
    return &*jobs;
}

Status check_job(const Json& job, const std::string& path) {
    if (!job.is_object()) return invalid(path, is_a(job, "an object"));
    const auto error = job.find("error");
    if (error == job.end()) return ok_status();
    if (!error->is_number_integer()) return invalid(path + ".error", "is not an integer");
    if (error->get<long long>() == 0) return ok_status();
    const auto name = job.find("jobname");
    const std::string job_name =
        name != job.end() && name->is_string() ? name->get<std::string>() : "?";
    return invalid(path, "(job \"" + job_name + "\") failed with error " + error->dump());
}

// The native engine's "all jobs" section for `direction`; nullopt when the
// output has none (fio's).
Result<std::optional<DirectionSection>> read_merged(const Json& fio_output, const char* direction) {
    const auto all_jobs = fio_output.find(kAllJobsKey);
    if (all_jobs == fio_output.end()) return std::optional<DirectionSection>();
    const std::string path = std::string("\"") + kAllJobsKey + "\"";
    if (!all_jobs->is_object()) return invalid(path, is_a(*all_jobs, "an object"));
    DS_ASSIGN_OR_RETURN(auto section, read_direction(*all_jobs, direction, path));
    return std::optional<DirectionSection>(std::move(section));
}

}  // namespace

std::optional<std::uint64_t> fio_bins_percentile(const FioLatencyBins& bins, double percent) {
    std::uint64_t total = 0;
    for (const auto& [value, count] : bins) {
        if (__builtin_add_overflow(total, count, &total)) return std::nullopt;
    }
    if (total == 0) return std::nullopt;
    // fio: sum >= (long double) plist[j].u.f / 100.0 * nr
    const long double threshold =
        static_cast<long double>(percent) / 100.0L * static_cast<long double>(total);
    std::uint64_t cumulative = 0;
    for (const auto& [value, count] : bins) {
        cumulative += count;
        if (static_cast<long double>(cumulative) >= threshold) return value;
    }
    return std::nullopt;
}

Result<std::map<std::string, double>> metrics_from_fio_json(const Json& fio_output) {
    auto jobs = jobs_of(fio_output);
    if (!jobs) return jobs.error();
    std::array<DirectionTotals, kDirections.size()> totals;
    for (std::size_t index = 0; index < (*jobs)->size(); ++index) {
        const Json& job = (**jobs)[index];
        const std::string path = "jobs[" + std::to_string(index) + "]";
        DS_TRY(check_job(job, path));
        for (std::size_t d = 0; d < kDirections.size(); ++d) {
            DS_ASSIGN_OR_RETURN(auto section, read_direction(job, kDirections[d], path));
            DS_TRY(add_section(section, path + "." + kDirections[d], totals[d]));
        }
    }
    std::map<std::string, double> metrics;
    for (std::size_t d = 0; d < kDirections.size(); ++d) {
        DS_ASSIGN_OR_RETURN(auto merged, read_merged(fio_output, kDirections[d]));
        emit(kDirections[d], totals[d], latency_of(totals[d], merged), metrics);
    }
    // Each job's numbers are finite, but their sum can still overflow.
    for (const auto& [name, value] : metrics) {
        if (!std::isfinite(value)) return invalid(name, "sums to a non-finite value over the jobs");
    }
    return metrics;
}

}  // namespace ds
