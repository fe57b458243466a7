#include "common/fio_logs.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>

#include "common/text.h"
#include "common/workload_output.h"

namespace ds {
namespace {

constexpr std::size_t kDirections = 2;  // read, write: the series fio's JSON has
constexpr unsigned kTrimDirection = 2;
constexpr double kBytesPerKiB = 1024.0;
// Bounds the thread scan; fio's own job limit (max-jobs) is far lower.
constexpr std::size_t kMaxThreadLogs = 65536;
constexpr std::array<const char*, kDirections> kDirectionNames = {"read", "write"};

struct LogEntry {
    std::uint64_t time_ms = 0;
    double value = 0;
    unsigned direction = 0;
};

template <class T>
std::optional<T> parse_field(std::string_view field) {
    field = trim_whitespace(field);
    T value{};
    const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
    if (field.empty() || error != std::errc() || end != field.data() + field.size()) {
        return std::nullopt;
    }
    return value;
}

// "TIME_MS, VALUE, DIRECTION, ..." (further fields are not read).
std::optional<LogEntry> parse_log_line(std::string_view line) {
    std::array<std::string_view, 3> fields;
    for (std::string_view& field : fields) {
        const auto comma = line.find(',');
        if (comma == std::string_view::npos && &field != &fields.back()) return std::nullopt;
        field = line.substr(0, comma);
        line = comma == std::string_view::npos ? std::string_view() : line.substr(comma + 1);
    }
    const auto time_ms = parse_field<std::uint64_t>(fields[0]);
    const auto value = parse_field<double>(fields[1]);
    const auto direction = parse_field<unsigned>(fields[2]);
    if (!time_ms || !value || !direction) return std::nullopt;
    if (!std::isfinite(*value) || *value < 0 || *direction > kTrimDirection) return std::nullopt;
    return LogEntry{*time_ms, *value, *direction};
}

// Per direction: the values that landed on each second, to be averaged.
class SecondBuckets {
  public:
    void add(unsigned direction, std::size_t second, double value) {
        auto& sums = sums_[direction];
        auto& counts = counts_[direction];
        if (sums.size() <= second) {
            sums.resize(second + 1, 0.0);
            counts.resize(second + 1, 0);
        }
        sums[second] += value;
        ++counts[second];
    }
    // Both directions up to the last second either has; 0 where none.
    std::array<std::vector<double>, kDirections> means() const {
        const std::size_t seconds = std::max(sums_[0].size(), sums_[1].size());
        std::array<std::vector<double>, kDirections> out;
        for (std::size_t d = 0; d < kDirections; ++d) {
            out[d].assign(seconds, 0.0);
            for (std::size_t s = 0; s < sums_[d].size(); ++s) {
                if (counts_[d][s] > 0) out[d][s] = sums_[d][s] / counts_[d][s];
            }
        }
        return out;
    }

  private:
    std::array<std::vector<double>, kDirections> sums_;
    std::array<std::vector<std::size_t>, kDirections> counts_;
};

std::string read_prefix_of_file(const std::filesystem::path& path) {
    std::error_code error;
    const auto size = std::filesystem::file_size(path, error);
    std::ifstream in(path, std::ios::binary);
    if (error || !in) return {};
    std::string text(std::min<std::uintmax_t>(size, kMaxFioLogBytes), '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    return text;
}

std::string thread_log_path(const std::string& prefix, const char* kind, std::size_t thread) {
    return prefix + "_" + kind + "." + std::to_string(thread) + ".log";
}

// Sum of the threads' series index by index over the seconds every thread
// has (as the native engine merges jobs).
std::array<std::vector<double>, kDirections> summed(
    const std::vector<const FioLogSeries*>& series) {
    std::size_t seconds = SIZE_MAX;
    for (const FioLogSeries* one : series) seconds = std::min(seconds, one->per_second[0].size());
    std::array<std::vector<double>, kDirections> out;
    for (std::size_t d = 0; d < kDirections; ++d) {
        out[d].assign(series.empty() ? 0 : seconds, 0.0);
        for (const FioLogSeries* one : series) {
            for (std::size_t s = 0; s < out[d].size(); ++s) out[d][s] += one->per_second[d][s];
        }
    }
    return out;
}

// The series each job entry gets: by thread, or all threads summed.
struct EntrySeries {
    std::array<std::vector<double>, kDirections> iops;
    std::array<std::vector<double>, kDirections> bw_bytes;
};

std::vector<EntrySeries> series_for_entries(std::size_t entries,
                                            const std::vector<FioThreadLogs>& threads) {
    std::vector<EntrySeries> out;
    if (entries == threads.size()) {
        for (const FioThreadLogs& thread : threads) {
            out.push_back({thread.iops.per_second, thread.bw_bytes.per_second});
        }
        return out;
    }
    std::vector<const FioLogSeries*> iops;
    std::vector<const FioLogSeries*> bw_bytes;
    for (const FioThreadLogs& thread : threads) {
        iops.push_back(&thread.iops);
        bw_bytes.push_back(&thread.bw_bytes);
    }
    out.push_back({summed(iops), summed(bw_bytes)});
    return out;
}

// The seconds every entry has (what per_second_series reads).
std::size_t shortest(const std::vector<EntrySeries>& series,
                     std::array<std::vector<double>, kDirections> EntrySeries::*which) {
    std::size_t seconds = SIZE_MAX;
    for (const EntrySeries& entry : series) seconds = std::min(seconds, (entry.*which)[0].size());
    return series.empty() ? 0 : seconds;
}

std::size_t value_count(const std::vector<EntrySeries>& series) {
    std::size_t count = 0;
    for (const EntrySeries& entry : series) {
        for (std::size_t d = 0; d < kDirections; ++d) {
            count += entry.iops[d].size() + entry.bw_bytes[d].size();
        }
    }
    return count;
}

// Why the threads' series cannot go into `entries` job entries, or "".
std::string attach_problem(std::size_t entries, std::size_t threads) {
    if (threads == 0) return "fio wrote no per-job logs";
    if (entries == threads || entries == 1) return "";
    return std::to_string(threads) + " per-job logs for " + std::to_string(entries) +
           " job entries (group_reporting over several groups): which logs make which entry is "
           "not in fio's output";
}

void write_series(Json& job, const EntrySeries& series) {
    if (!job.is_object()) return;
    for (std::size_t d = 0; d < kDirections; ++d) {
        const auto section = job.find(kDirectionNames[d]);
        if (section == job.end() || !section->is_object()) continue;
        (*section)[std::string(kIopsPerSecondKey)] = series.iops[d];
        (*section)[std::string(kBwBytesPerSecondKey)] = series.bw_bytes[d];
    }
}

Json note_json(const FioLogAttachment& attachment) {
    Json note = {
        {"log_avg_msec", kFioLogAverageMs},          {"job_logs", attachment.job_logs},
        {"iops_seconds", attachment.iops_seconds},   {"bw_seconds", attachment.bw_seconds},
        {"skipped_lines", attachment.skipped_lines},
    };
    if (!attachment.not_attached.empty()) note["not_attached"] = attachment.not_attached;
    return note;
}

}  // namespace

std::vector<std::string> fio_log_options(const std::string& prefix) {
    return {"--write_bw_log=" + prefix, "--write_iops_log=" + prefix,
            "--log_avg_msec=" + std::to_string(kFioLogAverageMs)};
}

FioLogSeries parse_fio_average_log(std::string_view text, double scale) {
    FioLogSeries series;
    SecondBuckets buckets;
    std::array<std::uint64_t, kDirections> boundary_ms = {0, 0};
    while (!text.empty()) {
        const auto end = text.find('\n');
        const std::string_view line = trim_whitespace(text.substr(0, end));
        text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
        if (line.empty()) continue;
        const auto entry = parse_log_line(line);
        if (!entry) {
            ++series.skipped_lines;
            continue;
        }
        if (entry->direction == kTrimDirection) continue;
        if (entry->time_ms / kFioLogAverageMs > kMaxSeriesSeconds) {
            ++series.skipped_lines;
            continue;
        }
        std::uint64_t& boundary = boundary_ms[entry->direction];
        if (entry->time_ms < boundary + kFioLogAverageMs - kFioLogSlackMs) {
            ++series.partial_entries;
            continue;
        }
        boundary = entry->time_ms - entry->time_ms % kFioLogAverageMs;
        const std::uint64_t second = (entry->time_ms + kFioLogSlackMs) / kFioLogAverageMs - 1;
        if (second >= kMaxSeriesSeconds) {
            ++series.skipped_lines;
            continue;
        }
        buckets.add(entry->direction, static_cast<std::size_t>(second), entry->value * scale);
    }
    series.per_second = buckets.means();
    return series;
}

std::vector<FioThreadLogs> read_fio_thread_logs(const std::string& prefix) {
    std::vector<FioThreadLogs> threads;
    for (std::size_t thread = 1; thread <= kMaxThreadLogs; ++thread) {
        const std::string iops_path = thread_log_path(prefix, "iops", thread);
        const std::string bw_path = thread_log_path(prefix, "bw", thread);
        std::error_code error;
        if (!std::filesystem::exists(iops_path, error) && !std::filesystem::exists(bw_path, error))
            break;
        threads.push_back({parse_fio_average_log(read_prefix_of_file(iops_path), 1.0),
                           parse_fio_average_log(read_prefix_of_file(bw_path), kBytesPerKiB)});
    }
    return threads;
}

FioLogAttachment attach_fio_samples(Json& fio_json, const std::vector<FioThreadLogs>& threads) {
    FioLogAttachment attachment;
    attachment.job_logs = threads.size();
    for (const FioThreadLogs& thread : threads) {
        attachment.skipped_lines += thread.iops.skipped_lines + thread.bw_bytes.skipped_lines;
    }
    Json* jobs = fio_json.is_object() && fio_json.contains("jobs") ? &fio_json["jobs"] : nullptr;
    if (jobs == nullptr || !jobs->is_array() || jobs->empty()) {
        attachment.not_attached = "fio's report has no job entries";
        return attachment;
    }
    attachment.not_attached = attach_problem(jobs->size(), threads.size());
    std::vector<EntrySeries> series;
    if (attachment.not_attached.empty()) series = series_for_entries(jobs->size(), threads);
    if (value_count(series) > kMaxFioSampleValues) {
        attachment.not_attached = std::to_string(value_count(series)) +
                                  " per-second values, more than the " +
                                  std::to_string(kMaxFioSampleValues) + " a report may carry";
    }
    if (attachment.not_attached.empty()) {
        for (std::size_t entry = 0; entry < series.size(); ++entry) {
            write_series((*jobs)[entry], series[entry]);
        }
        attachment.iops_seconds = shortest(series, &EntrySeries::iops);
        attachment.bw_seconds = shortest(series, &EntrySeries::bw_bytes);
    }
    if (fio_json.is_object()) fio_json[std::string(kFioLogsNoteKey)] = note_json(attachment);
    return attachment;
}

}  // namespace ds
