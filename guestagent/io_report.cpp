#include "guestagent/io_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <type_traits>

#include "common/fio_logs.h"
#include "common/version.h"

namespace ds::io {
namespace {

constexpr double kNsPerSecond = 1e9;

std::string percentile_key(double percent) {
    char text[32];
    std::snprintf(text, sizeof text, "%f", percent);  // fio spells 99.9 as "99.900000"
    return text;
}

// fio's min/max/mean/dev/samples of a per-second series, under `prefix`
// ("bw" or "iops"), values scaled by `scale`.
void add_series(Json& out, const std::string& prefix, const char* dev_name,
                const std::vector<double>& samples, double scale) {
    double low = 0, high = 0, mean = 0, variance = 0;
    if (!samples.empty()) {
        low = high = samples.front() * scale;
        for (double sample : samples) {
            low = std::min(low, sample * scale);
            high = std::max(high, sample * scale);
            mean += sample * scale;
        }
        mean /= static_cast<double>(samples.size());
        for (double sample : samples) variance += (sample * scale - mean) * (sample * scale - mean);
        variance /= static_cast<double>(samples.size());
    }
    out[prefix + "_min"] = std::llround(low);
    out[prefix + "_max"] = std::llround(high);
    out[prefix + "_mean"] = mean;
    out[prefix + "_" + dev_name] = std::sqrt(variance);
    out[prefix + "_samples"] = samples.size();
}

Json direction_json(const DirectionStats& stats, std::uint64_t runtime_ns) {
    const double seconds = static_cast<double>(runtime_ns) / kNsPerSecond;
    const double iops = seconds > 0 ? static_cast<double>(stats.ios) / seconds : 0.0;
    const double bw_bytes = seconds > 0 ? static_cast<double>(stats.bytes) / seconds : 0.0;
    Json out = {
        {"io_bytes", stats.bytes},
        {"io_kbytes", stats.bytes / 1024},
        {"bw_bytes", std::llround(bw_bytes)},
        {"bw", std::llround(bw_bytes / 1024)},  // KiB/s, as fio
        {"iops", iops},
        {"runtime", stats.ios ? runtime_ns / 1000000 : 0},  // ms
        {"total_ios", stats.ios},
        {"short_ios", stats.short_ios},
        {"drop_ios", 0},
    };
    Json clat = {
        {"min", stats.clat.min()},       {"max", stats.clat.max()}, {"mean", stats.clat.mean()},
        {"stddev", stats.clat.stddev()}, {"N", stats.clat.count()},
    };
    if (stats.clat.count() > 0) {
        Json percentiles = Json::object();
        for (double percent : kReportedPercentiles) {
            percentiles[percentile_key(percent)] = stats.clat.percentile(percent);
        }
        clat["percentile"] = std::move(percentiles);
    }
    out["clat_ns"] = std::move(clat);
    add_series(out, "bw", "dev", stats.bw_bytes_per_second, 1.0 / 1024);
    add_series(out, "iops", "stddev", stats.iops_per_second, 1.0);
    // Not in fio's JSON: the per-second series themselves, under the keys
    // the agent adds to fio's report from fio's logs.
    out[std::string(kIopsPerSecondKey)] = stats.iops_per_second;
    out[std::string(kBwBytesPerSecondKey)] = stats.bw_bytes_per_second;
    return out;
}

Json empty_direction_json() {
    return direction_json(DirectionStats{}, 0);
}

// fio lists the options as given, every value as a string.
Json given_options_json(const Json& given) {
    Json out = Json::object();
    for (const auto& [name, value] : given.items()) {
        if (value.is_string()) {
            out[name] = value;
        } else if (value.is_boolean()) {
            out[name] = value.get<bool>() ? "1" : "0";
        } else {
            out[name] = value.dump();
        }
    }
    return out;
}

Json job_json(const JobOptions& options, const JobStats& stats, const std::string& name) {
    const double runtime_s = static_cast<double>(stats.runtime_ns) / kNsPerSecond;
    const double cpu_scale = runtime_s > 0 ? 100.0 / runtime_s : 0.0;
    return {
        {"jobname", name},
        {"groupid", 0},
        {"error", 0},
        {"elapsed", std::llround(static_cast<double>(stats.elapsed_ns) / kNsPerSecond)},
        {"job options", given_options_json(options.given)},
        {"read", direction_json(stats.directions[0], stats.runtime_ns)},
        {"write", direction_json(stats.directions[1], stats.runtime_ns)},
        {"trim", empty_direction_json()},
        {"job_runtime", stats.runtime_ns / 1000000},
        {"usr_cpu", stats.user_cpu_s * cpu_scale},
        {"sys_cpu", stats.system_cpu_s * cpu_scale},
        {"ctx", stats.context_switches},
        {"majf", 0},
        {"minf", 0},
    };
}

}  // namespace

namespace {

// "dsiojs01": bumped when the encoding changes.
constexpr std::uint64_t kStatsMagic = 0x3130736a6f697364ull;

class Encoder {
  public:
    template <class T>
    void put(T value) {
        static_assert(std::is_trivially_copyable_v<T>);
        out_.append(reinterpret_cast<const char*>(&value), sizeof value);
    }
    void put_series(const std::vector<double>& series) {
        put<std::uint64_t>(series.size());
        out_.append(reinterpret_cast<const char*>(series.data()), series.size() * sizeof(double));
    }
    std::string take() { return std::move(out_); }

  private:
    std::string out_;
};

class Decoder {
  public:
    explicit Decoder(std::string_view in) : in_(in) {}
    // False (and nothing read) when fewer than sizeof(T) bytes are left.
    template <class T>
    bool get(T& value) {
        static_assert(std::is_trivially_copyable_v<T>);
        if (in_.size() < sizeof value) return false;
        std::memcpy(&value, in_.data(), sizeof value);
        in_.remove_prefix(sizeof value);
        return true;
    }
    bool get_series(std::vector<double>& series) {
        std::uint64_t size = 0;
        if (!get(size) || size > in_.size() / sizeof(double)) return false;
        series.resize(size);
        // An empty vector's data() may be null, which memcpy may not get even for 0 bytes.
        if (size > 0) std::memcpy(series.data(), in_.data(), size * sizeof(double));
        in_.remove_prefix(size * sizeof(double));
        return true;
    }
    bool done() const { return in_.empty(); }

  private:
    std::string_view in_;
};

}  // namespace

std::string encode_job_stats(const JobStats& stats) {
    Encoder out;
    out.put(kStatsMagic);
    out.put<std::uint64_t>(stats.job_index);
    out.put(stats.runtime_ns);
    out.put(stats.elapsed_ns);
    out.put(stats.user_cpu_s);
    out.put(stats.system_cpu_s);
    out.put(stats.context_switches);
    for (const DirectionStats& direction : stats.directions) {
        out.put(direction.ios);
        out.put(direction.bytes);
        out.put(direction.short_ios);
        const LatencyHistogram& clat = direction.clat;
        out.put(clat.min());
        out.put(clat.max());
        out.put(clat.sum());
        out.put(clat.sum_squares());
        // Sparse: a histogram is 4864 buckets, a job touches a few hundred.
        const auto counts = clat.counts();
        const auto used = static_cast<std::uint64_t>(
            std::count_if(counts.begin(), counts.end(), [](std::uint64_t c) { return c > 0; }));
        out.put(used);
        for (std::uint32_t bucket = 0; bucket < counts.size(); ++bucket) {
            if (counts[bucket] == 0) continue;
            out.put(bucket);
            out.put(counts[bucket]);
        }
        out.put_series(direction.iops_per_second);
        out.put_series(direction.bw_bytes_per_second);
    }
    return out.take();
}

Result<JobStats> decode_job_stats(std::string_view bytes) {
    auto corrupt = [&](const std::string& what) {
        return make_error(errc::kIo, "job statistics from a job process are unreadable (" +
                                         std::to_string(bytes.size()) + " bytes): " + what);
    };
    Decoder in(bytes);
    std::uint64_t magic = 0;
    if (!in.get(magic) || magic != kStatsMagic) return corrupt("wrong magic");
    JobStats stats;
    std::uint64_t job_index = 0;
    if (!in.get(job_index) || !in.get(stats.runtime_ns) || !in.get(stats.elapsed_ns) ||
        !in.get(stats.user_cpu_s) || !in.get(stats.system_cpu_s) ||
        !in.get(stats.context_switches)) {
        return corrupt("truncated header");
    }
    stats.job_index = static_cast<unsigned>(job_index);
    for (DirectionStats& direction : stats.directions) {
        std::uint64_t min = 0, max = 0, used = 0;
        double sum = 0, sum_squares = 0;
        if (!in.get(direction.ios) || !in.get(direction.bytes) || !in.get(direction.short_ios) ||
            !in.get(min) || !in.get(max) || !in.get(sum) || !in.get(sum_squares) || !in.get(used) ||
            used > LatencyHistogram::kBucketCount) {
            return corrupt("truncated direction");
        }
        std::vector<std::uint64_t> counts(LatencyHistogram::kBucketCount, 0);
        for (std::uint64_t i = 0; i < used; ++i) {
            std::uint32_t bucket = 0;
            std::uint64_t count = 0;
            if (!in.get(bucket) || !in.get(count)) return corrupt("truncated histogram");
            if (bucket >= counts.size()) {
                return corrupt("histogram bucket " + std::to_string(bucket) + " out of range");
            }
            counts[bucket] = count;
        }
        auto clat = LatencyHistogram::restore(counts, min, max, sum, sum_squares);
        if (!clat) return corrupt("inconsistent histogram (min > max)");
        direction.clat = std::move(*clat);
        if (!in.get_series(direction.iops_per_second) ||
            !in.get_series(direction.bw_bytes_per_second)) {
            return corrupt("truncated per-second samples");
        }
    }
    if (!in.done()) return corrupt("trailing bytes");
    return stats;
}

JobStats merge_job_stats(const std::vector<JobStats>& jobs) {
    JobStats merged;
    if (jobs.empty()) return merged;
    std::size_t seconds = SIZE_MAX;
    for (const JobStats& job : jobs) {
        seconds = std::min(seconds, job.directions[0].iops_per_second.size());
    }
    for (auto& direction : merged.directions) {
        direction.iops_per_second.assign(seconds, 0.0);
        direction.bw_bytes_per_second.assign(seconds, 0.0);
    }
    std::uint64_t runtime_sum = 0;
    for (const JobStats& job : jobs) {
        for (int d = 0; d < kIoDirections; ++d) {
            const DirectionStats& from = job.directions[d];
            DirectionStats& to = merged.directions[d];
            to.ios += from.ios;
            to.bytes += from.bytes;
            to.short_ios += from.short_ios;
            to.clat.merge(from.clat);
            for (std::size_t s = 0; s < seconds; ++s) {
                to.iops_per_second[s] += from.iops_per_second[s];
                to.bw_bytes_per_second[s] += from.bw_bytes_per_second[s];
            }
        }
        merged.runtime_ns = std::max(merged.runtime_ns, job.runtime_ns);
        merged.elapsed_ns = std::max(merged.elapsed_ns, job.elapsed_ns);
        runtime_sum += job.runtime_ns;
        merged.user_cpu_s += job.user_cpu_s;
        merged.system_cpu_s += job.system_cpu_s;
        merged.context_switches += job.context_switches;
    }
    // CPU% per job, as fio's group_reporting: total CPU over total runtime,
    // expressed against the merged runtime.
    if (runtime_sum > 0) {
        const double share =
            static_cast<double>(merged.runtime_ns) / static_cast<double>(runtime_sum);
        merged.user_cpu_s *= share;
        merged.system_cpu_s *= share;
    }
    return merged;
}

Json io_report_json(const JobOptions& options, const std::vector<JobStats>& jobs,
                    std::chrono::system_clock::time_point started) {
    const auto since_epoch = started.time_since_epoch();
    const std::time_t seconds = std::chrono::system_clock::to_time_t(started);
    char time_text[64] = "";
    std::tm local{};
    if (localtime_r(&seconds, &local)) {
        std::strftime(time_text, sizeof time_text, "%a %b %e %H:%M:%S %Y", &local);
    }
    Json report = {
        {"disksweep io version", std::string(disksweep_version())},
        {"timestamp", static_cast<long long>(seconds)},
        {"timestamp_ms",
         std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch).count()},
        {"time", time_text},
        {"engine",
         {{"name", options.engine->name},
          {"description", options.engine->description},
          {"ops_version", options.engine->ops_version}}},
        {"resolved options", resolved_options_json(options)},
        {"histogram",
         {{"kind", "log-linear"},
          {"sub_bucket_bits", LatencyHistogram::kSubBucketBits},
          {"max_relative_error", LatencyHistogram::kMaxRelativeError}}},
    };
    const JobStats merged = merge_job_stats(jobs);
    Json entries = Json::array();
    if (options.group_reporting) {
        entries.push_back(job_json(options, merged, options.name));
    } else {
        for (const JobStats& job : jobs) entries.push_back(job_json(options, job, options.name));
    }
    report["jobs"] = std::move(entries);
    report["all jobs"] = {
        {"read", direction_json(merged.directions[0], merged.runtime_ns)},
        {"write", direction_json(merged.directions[1], merged.runtime_ns)},
    };
    return report;
}

}  // namespace ds::io
