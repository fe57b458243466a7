#include "common/workload_output.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>

#include "common/fio_metrics.h"
#include "common/server_settings.h"
#include "common/text.h"
#include "common/workload_kind.h"

namespace ds {
namespace {

std::optional<long long> parse_integer(std::string_view text) {
    text = trim_whitespace(text);
    long long value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

// Splits `text` into lines without their '\n' (and a '\r' before it).
std::vector<std::string_view> split_lines(std::string_view text) {
    std::vector<std::string_view> lines;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(start, end - start);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        lines.push_back(line);
        start = end + 1;
    }
    return lines;
}

Error malformed(std::size_t line_number, std::string_view line, std::string_view what) {
    return make_error(errc::kInvalidArgument,
                      "sql-bench output line " + std::to_string(line_number) + " (\"" +
                          std::string(line.substr(0, 160)) + "\"): " + std::string(what));
}

// "N wallclock secs (...)" -> N.
std::optional<double> parse_wallclock(std::string_view rest) {
    const auto at = rest.find(" wallclock secs");
    if (at == std::string_view::npos) return std::nullopt;
    auto value = parse_finite_double(rest.substr(0, at));
    if (!value || *value < 0) return std::nullopt;
    return value;
}

// ---- sysbench ------------------------------------------------------------------

// "    transactions:   1234   (246.70 per sec.)" -> 246.70
std::optional<double> per_second(std::string_view rest) {
    const auto open = rest.find('(');
    const auto close = rest.find(" per sec.)", open == std::string_view::npos ? 0 : open);
    if (open == std::string_view::npos || close == std::string_view::npos) return std::nullopt;
    return parse_finite_double(rest.substr(open + 1, close - open - 1));
}

struct HistogramBucket {
    double value_ms;
    long long count;
};

// The value below which `percentile` percent of the events fall, the way
// sysbench computes its own "Nth percentile" line from the same buckets:
// the first bucket at which the running count reaches
// round(total * percentile / 100).
std::optional<double> histogram_percentile(const std::vector<HistogramBucket>& buckets,
                                           double percentile) {
    long long total = 0;
    for (const auto& bucket : buckets) total += bucket.count;
    if (total <= 0) return std::nullopt;
    const long long wanted =
        std::max<long long>(1, std::llround(static_cast<double>(total) * percentile / 100.0));
    long long running = 0;
    for (const auto& bucket : buckets) {
        running += bucket.count;
        if (running >= wanted) return bucket.value_ms;
    }
    return buckets.back().value_ms;
}

Error sysbench_invalid(std::string_view what) {
    return make_error(errc::kInvalidArgument, "sysbench output: " + std::string(what));
}

// One "key: value" line of sysbench's report into `metrics`. `in_latency`:
// inside the "Latency (ms):" block, which its "sum" line ends.
void read_sysbench_line(std::string_view key, std::string_view rest, bool& in_latency,
                        std::map<std::string, double>& metrics) {
    if (key == "transactions") {
        if (auto v = per_second(rest)) metrics["tps"] = *v;
    } else if (key == "queries") {
        if (auto v = per_second(rest)) metrics["qps"] = *v;
    } else if (key == "ignored errors") {
        if (auto v = per_second(rest)) metrics["errors_per_s"] = *v;
    } else if (key == "reconnects") {
        if (auto v = per_second(rest)) metrics["reconnects_per_s"] = *v;
    } else if (in_latency && (key == "avg" || key == "max")) {
        if (auto v = parse_finite_double(rest)) metrics["latency_" + std::string(key) + "_ms"] = *v;
    } else if (in_latency && key.size() > 13 && key.substr(key.size() - 13) == "th percentile") {
        const auto pct = parse_finite_double(key.substr(0, key.size() - 13));
        const auto v = parse_finite_double(rest);
        if (pct && v && (*pct == 50 || *pct == 95 || *pct == 99)) {
            metrics["latency_p" + std::to_string(static_cast<int>(*pct)) + "_ms"] = *v;
        }
    } else if (in_latency && key == "sum") {
        in_latency = false;
    }
}

// Metrics of `sysbench ... run`'s report. Percentiles: the "Nth percentile"
// line (sysbench prints one, --percentile, default 95) and, when the run had
// --histogram=on, p50/p95/p99 from the histogram wherever the line did not
// give that percentile.
Result<std::map<std::string, double>> sysbench_metrics(std::string_view text) {
    std::map<std::string, double> metrics;
    std::vector<HistogramBucket> histogram;
    bool in_histogram = false;
    bool in_latency = false;
    const auto lines = split_lines(text);
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::string_view line = trim_whitespace(lines[i]);
        if (line.starts_with("Latency histogram")) {
            in_histogram = true;
            continue;
        }
        if (in_histogram) {
            if (line.starts_with("value")) continue;
            const auto bar = line.find('|');
            if (bar == std::string_view::npos) {
                in_histogram = false;
            } else {
                const auto value = parse_finite_double(line.substr(0, bar));
                const auto last_space = line.find_last_of(' ');
                const auto count = last_space == std::string_view::npos || last_space < bar
                                       ? std::nullopt
                                       : parse_integer(line.substr(last_space + 1));
                if (!value || !count) {
                    return sysbench_invalid("histogram line " + std::to_string(i + 1) +
                                            " does not parse: \"" + std::string(line) + "\"");
                }
                histogram.push_back({*value, *count});
                continue;
            }
        }
        if (line.starts_with("Latency (ms):")) {
            in_latency = true;
            continue;
        }
        const auto colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        read_sysbench_line(line.substr(0, colon), line.substr(colon + 1), in_latency, metrics);
    }
    if (!metrics.count("tps") || !metrics.count("qps")) {
        return sysbench_invalid(
            "no \"transactions: N (X per sec.)\" and \"queries: N (X per sec.)\" lines; is this "
            "the output of sysbench's run command?");
    }
    for (const int pct : {50, 95, 99}) {
        const std::string name = "latency_p" + std::to_string(pct) + "_ms";
        if (metrics.count(name)) continue;
        if (auto v = histogram_percentile(histogram, pct)) metrics[name] = *v;
    }
    return metrics;
}

// `into` += `add` index by index, over the seconds both have.
void add_series(std::vector<double>& into, const std::vector<double>& add, bool first) {
    if (first) {
        into = add;
        return;
    }
    into.resize(std::min(into.size(), add.size()));
    for (std::size_t s = 0; s < into.size(); ++s) into[s] += add[s];
}

// fio's series: which per-second array of which direction of each job.
struct FioSeriesKey {
    const char* direction;
    const char* array;
    const char* name;
    double scale;
};
constexpr FioSeriesKey kFioSeriesKeys[] = {
    {"read", "iops_per_second", "read_iops", 1.0},
    {"write", "iops_per_second", "write_iops", 1.0},
    {"read", "bw_bytes_per_second", "read_bw_mib_s", 1.0 / (1024.0 * 1024.0)},
    {"write", "bw_bytes_per_second", "write_bw_mib_s", 1.0 / (1024.0 * 1024.0)},
};

Result<SeriesMap> fio_series(const Json& output) {
    SeriesMap series;
    const Json* jobs = output.is_object() && output.contains("jobs") ? &output.at("jobs") : nullptr;
    if (jobs == nullptr || !jobs->is_array()) return series;
    for (const FioSeriesKey& key : kFioSeriesKeys) {
        std::vector<double> sum;
        bool any = false;
        for (std::size_t j = 0; j < jobs->size(); ++j) {
            const Json& job = (*jobs)[j];
            if (!job.is_object() || !job.contains(key.direction)) continue;
            const std::string where = "jobs[" + std::to_string(j) + "]." + key.direction;
            auto values = per_second_array(job.at(key.direction), key.array, where);
            if (!values.ok()) return values.error();
            if (values->empty()) continue;
            add_series(sum, *values, !any);
            any = true;
        }
        if (!any || std::all_of(sum.begin(), sum.end(), [](double v) { return v == 0; })) continue;
        for (double& value : sum) value *= key.scale;
        series[key.name] = std::move(sum);
    }
    return series;
}

// "[ 3s ] thds: 4 tps: 123.45 qps: 2469.03 (r/w/o: ...) lat (ms,95%): ..."
SeriesMap sysbench_series(std::string_view text) {
    SeriesMap series;
    for (std::string_view line : split_lines(text)) {
        line = trim_whitespace(line);
        if (!line.starts_with("[ ") || line.find("s ]") == std::string_view::npos) continue;
        for (const char* name : {"tps", "qps"}) {
            const std::string label = std::string(" ") + name + ": ";
            const auto at = line.find(label);
            if (at == std::string_view::npos) continue;
            std::string_view rest = line.substr(at + label.size());
            rest = rest.substr(0, rest.find(' '));
            auto& values = series[name];
            if (auto value = parse_finite_double(rest);
                value && *value >= 0 && values.size() < kMaxSeriesSeconds) {
                values.push_back(*value);
            }
        }
    }
    return series;
}

const std::string* stdout_of(const Json& output) {
    if (!output.is_object()) return nullptr;
    const auto found = output.find("stdout");
    if (found == output.end() || !found->is_string()) return nullptr;
    return &found->get_ref<const std::string&>();
}

// The "stdout" of a kind whose output is its tool's printed report.
Result<const std::string*> required_stdout(std::string_view kind, const Json& output) {
    const std::string* text = stdout_of(output);
    if (text == nullptr) {
        return make_error(errc::kInvalidArgument, std::string(kind) +
                                                      " output has no string \"stdout\" (got " +
                                                      output.dump().substr(0, 120) + ")");
    }
    return text;
}

// ---- server variables --------------------------------------------------------

// A number with an optional K/M/G/T/P/E suffix (powers of 1024, as MariaDB
// reads sizes in option files), nullopt when `text` is not one.
std::optional<double> as_size(std::string_view text) {
    text = trim_whitespace(text);
    if (text.empty()) return std::nullopt;
    double multiplier = 1;
    const char suffix = static_cast<char>(std::toupper(static_cast<unsigned char>(text.back())));
    const std::string_view suffixes = "KMGTPE";
    if (const auto at = suffixes.find(suffix); at != std::string_view::npos) {
        multiplier = std::pow(1024.0, static_cast<double>(at + 1));
        text.remove_suffix(1);
    }
    const auto value = parse_finite_double(text);
    if (!value) return std::nullopt;
    return *value * multiplier;
}

// A phase's line, "Time for NAME (COUNT[:ROWS]): WALL wallclock secs (...)"
// (or "Time to", any case of its "T"), as `rest` after any "Estimated ";
// `number` and `line` say where, in errors.
Result<SqlBenchPhase> sqlbench_phase(std::string_view rest, std::size_t number,
                                     std::string_view line) {
    rest.remove_prefix(rest[5] == 'f' ? 9 : 8);
    const auto open = rest.find(" (");
    const auto close = rest.find("): ", open == std::string_view::npos ? 0 : open);
    if (open == std::string_view::npos || close == std::string_view::npos || open == 0) {
        return malformed(number, line, "expected \"Time for NAME (COUNT): N wallclock secs\"");
    }
    SqlBenchPhase phase;
    phase.name = std::string(trim_whitespace(rest.substr(0, open)));
    std::string_view count = rest.substr(open + 2, close - open - 2);
    count = count.substr(0, count.find(':'));  // "(count:rows)" of fetch loops
    const auto parsed_count = parse_integer(count);
    if (!parsed_count) return malformed(number, line, "the count in parentheses is not a number");
    phase.count = *parsed_count;
    const auto wall = parse_wallclock(rest.substr(close + 3));
    if (!wall) return malformed(number, line, "expected \"N wallclock secs\" after the count");
    phase.wall_s = *wall;
    return phase;
}

}  // namespace

Result<std::vector<double>> per_second_array(const Json& section, const char* key,
                                             const std::string& where) {
    std::vector<double> values;
    if (!section.is_object() || !section.contains(key)) return values;
    const Json& array = section.at(key);
    if (!array.is_array()) {
        return make_error(errc::kInvalidArgument, where + "." + key + " is not an array");
    }
    for (std::size_t i = 0; i < array.size() && i < kMaxSeriesSeconds; ++i) {
        const Json& value = array[i];
        if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0) {
            return make_error(errc::kInvalidArgument, where + "." + key + "[" + std::to_string(i) +
                                                          "] is not a non-negative number");
        }
        values.push_back(value.get<double>());
    }
    return values;
}

std::string_view image_variant_for_kind(std::string_view kind) {
    const WorkloadKind* descriptor = find_workload_kind(kind);
    return descriptor != nullptr ? descriptor->image_variant : "";
}

Result<SqlBenchReport> parse_sqlbench_output(std::string_view text) {
    SqlBenchReport report;
    bool have_total = false;
    const auto lines = split_lines(text);
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::size_t number = i + 1;
        const std::string_view line = trim_whitespace(lines[i]);
        if (line.empty()) continue;

        bool estimated = false;
        std::string_view rest = line;
        if (rest.starts_with("Estimated ")) {
            estimated = true;
            rest.remove_prefix(10);
        }
        if (rest.starts_with("total time:") || rest.starts_with("Total time:")) {
            auto wall = parse_wallclock(rest.substr(11));
            if (!wall) return malformed(number, line, "expected \"N wallclock secs\"");
            report.total_s = *wall;
            report.total_estimated = estimated;
            have_total = true;
            continue;
        }
        const bool time_line = rest.starts_with("Time for ") || rest.starts_with("Time to ") ||
                               rest.starts_with("time for ") || rest.starts_with("time to ");
        if (!time_line) {
            if (report.test.empty() && report.phases.empty() && !estimated && line.size() > 5 &&
                line.substr(line.size() - 5) == " test" && !line.starts_with("Testing ")) {
                report.test = std::string(line);
            }
            continue;
        }
        DS_ASSIGN_OR_RETURN(SqlBenchPhase phase, sqlbench_phase(rest, number, line));
        phase.estimated = estimated;
        report.phases.push_back(std::move(phase));
    }
    if (!have_total) {
        return make_error(errc::kInvalidArgument,
                          "sql-bench output has no \"Total time: N wallclock secs\" line (" +
                              std::to_string(lines.size()) +
                              " lines): the benchmark did not finish");
    }
    return report;
}

Result<MetricsMap> metrics_from_workload_output(std::string_view kind, const Json& output) {
    const WorkloadKind* descriptor = find_workload_kind(kind);
    if (descriptor == nullptr) {
        return make_error(errc::kInvalidArgument,
                          "no metrics for workload kind '" + std::string(kind) +
                              "' (known: " + join(workload_kind_names(), ", ") + ")");
    }
    return descriptor->metrics(kind, output);
}

Result<MetricsMap> sqlbench_output_metrics(std::string_view kind, const Json& output) {
    auto text = required_stdout(kind, output);
    if (!text.ok()) return text.error();
    auto report = parse_sqlbench_output(**text);
    if (!report.ok()) return report.error();
    MetricsMap metrics;
    double estimated = 0;
    for (const auto& phase : report->phases) {
        if (phase.estimated) {
            ++estimated;
            continue;
        }
        metrics["phase_" + phase.name + "_s"] += phase.wall_s;
    }
    metrics["estimated_phases"] = estimated;
    // An estimated total contains the estimates: not a measurement, so
    // not total_s (the run's phases that were measured still are metrics).
    if (!report->total_estimated) metrics["total_s"] = report->total_s;
    return metrics;
}

Result<MetricsMap> sysbench_output_metrics(std::string_view kind, const Json& output) {
    auto text = required_stdout(kind, output);
    if (!text.ok()) return text.error();
    return sysbench_metrics(**text);
}

Result<SeriesMap> per_second_series(std::string_view kind, const Json& output) {
    const WorkloadKind* descriptor = find_workload_kind(kind);
    return descriptor != nullptr ? descriptor->series(output) : SeriesMap{};
}

Result<SeriesMap> fio_output_series(const Json& output) {
    return fio_series(output);
}

Result<SeriesMap> sysbench_output_series(const Json& output) {
    const std::string* text = stdout_of(output);
    return text == nullptr ? SeriesMap{} : sysbench_series(*text);
}

Result<SeriesMap> no_output_series(const Json&) {
    return SeriesMap{};
}

std::vector<OutputMember> fio_series_members() {
    std::vector<OutputMember> members;
    for (const FioSeriesKey& key : kFioSeriesKeys)
        members.push_back({"jobs", "*", key.direction, key.array});
    return members;
}

PrimaryMetric primary_metric_for_kind(std::string_view kind) {
    const WorkloadKind* descriptor = find_workload_kind(kind);
    return descriptor != nullptr ? descriptor->primary_metric : PrimaryMetric{"read_iops", false};
}

bool server_variable_matches(std::string_view name, const Json& requested, std::string_view shown) {
    (void)name;  // the spellings below are the same for every variable
    const auto wanted = server_setting_text(requested);
    if (!wanted) return false;
    const std::string_view want = trim_whitespace(*wanted);
    const std::string_view got = trim_whitespace(shown);
    if (ascii_lower(want) == ascii_lower(got)) return true;
    // Booleans: 0/1/true/false/on/off/yes/no all name ON or OFF. A requested
    // integer other than 0/1 is not a boolean (server_setting_boolean refuses it).
    const auto want_bool = server_setting_boolean(want);
    const auto got_bool = server_setting_boolean(got);
    if (want_bool && got_bool) return *want_bool == *got_bool;
    // Numbers and sizes: 128M == 134217728, 90 == 90.000000.
    const auto want_size = as_size(want);
    const auto got_size = as_size(got);
    if (want_size && got_size) {
        return std::fabs(*want_size - *got_size) <= 1e-9 * std::max(1.0, std::fabs(*want_size));
    }
    return false;
}

namespace {

constexpr MariadbVersion kMariadb11{11, 0};
constexpr MariadbVersion kNoUpperBound{1000, 0};

// The Booleans MariaDB >= 11.0 derives from innodb_flush_method at start-up
// (11.8.9's SHOW VARIABLES, tests/data/mariadb/innodb_flush_settings_11.8.txt).
// innodb_log_file_buffering is not among them: it follows the log's file
// system, not the flush method.
constexpr std::array<ShownServerVariable, 4> kDataBuffered = {
    {{"innodb_data_file_buffering", "ON"},
     {"innodb_data_file_write_through", "OFF"},
     {"innodb_log_file_write_through", "OFF"}}};
constexpr std::array<ShownServerVariable, 4> kDataDirect = {
    {{"innodb_data_file_buffering", "OFF"},
     {"innodb_data_file_write_through", "OFF"},
     {"innodb_log_file_write_through", "OFF"}}};

constexpr VersionedServerVariable kVersionedServerVariables[] = {
    {"innodb_flush_method", "fsync", kMariadb11, kNoUpperBound, "", kDataBuffered},
    {"innodb_flush_method", "O_DIRECT", kMariadb11, kNoUpperBound, "", kDataDirect},
    // 10.x opened the log O_DSYNC and the data files O_DIRECT; 11.x opens
    // the data files O_DSYNC as well (innodb_log_file_write_through = true
    // alone is 10.x's O_DSYNC, docs/spec.md).
    {"innodb_flush_method",
     "O_DSYNC",
     kMariadb11,
     kNoUpperBound,
     "",
     {{{"innodb_data_file_buffering", "OFF"},
       {"innodb_data_file_write_through", "ON"},
       {"innodb_log_file_write_through", "ON"}}}},
    // MDEV-33545: 11.x turns a doublewrite left ON into "fast", which is
    // what skips the data files' fsync.
    {"innodb_flush_method",
     "O_DIRECT_NO_FSYNC",
     kMariadb11,
     kNoUpperBound,
     "",
     {{{"innodb_data_file_buffering", "OFF"},
       {"innodb_data_file_write_through", "OFF"},
       {"innodb_log_file_write_through", "OFF"},
       {"innodb_doublewrite", "fast"}}}},
    {"innodb_flush_method", "nosync", kMariadb11, kNoUpperBound,
     "MariaDB 11.0 and later show nosync but sync like fsync (11.8.9: 303 fdatasync calls for 300 "
     "commits, 10.11: 2), and no 11.x setting skips fsync; innodb_flush_log_at_trx_commit = 0 "
     "skips the sync at commit only"},
    {"innodb_flush_method", "littlesync", kMariadb11, kNoUpperBound,
     "MariaDB 11.0 and later treat littlesync as fsync (innodb_data_file_buffering = ON); 10.x "
     "skipped the data files' syncs"},
    {"innodb_doublewrite", "fast", MariadbVersion{0, 0}, kMariadb11,
     "MariaDB before 11.0 has no 'fast' (MDEV-33545): it logs \"ignoring option "
     "'--innodb-doublewrite' due to invalid value 'fast'\" and keeps ON"},
};

std::string version_text(const MariadbVersion& version) {
    return std::to_string(version.major) + "." + std::to_string(version.minor);
}

// The rows for `name = requested` on any version.
std::vector<const VersionedServerVariable*> rows_for(std::string_view name, const Json& requested) {
    std::vector<const VersionedServerVariable*> rows;
    const auto text = server_setting_text(requested);
    if (!text) return rows;
    const std::string value = ascii_lower(trim_whitespace(*text));
    for (const VersionedServerVariable& row : kVersionedServerVariables) {
        if (row.variable == name && ascii_lower(row.value) == value) rows.push_back(&row);
    }
    return rows;
}

// What the rows of `name = requested` say on `version`, appended to `lines`
// ("server variable NAME: requested VALUE" is `head`).
void check_versioned(const std::vector<const VersionedServerVariable*>& rows,
                     const std::optional<MariadbVersion>& version, std::string_view server_version,
                     const Json& requested_all, const Json& shown, const std::string& head,
                     std::vector<std::string>& lines) {
    if (!version) {
        // Quoted as JSON: the guest's text, whatever bytes it holds.
        const std::string quoted = Json(std::string(server_version.substr(0, 80)))
                                       .dump(-1, ' ', false, Json::error_handler_t::replace);
        lines.push_back(head +
                        ", whose effect depends on the MariaDB version, but the guest's "
                        "server_version " +
                        quoted + " does not say one");
        return;
    }
    for (const VersionedServerVariable* row : rows) {
        if (*version < row->since || !(*version < row->until)) continue;
        const std::string on = "MariaDB " + version_text(*version);
        if (!row->refused.empty()) {
            lines.push_back(head + ", refused on " + on + ": " + std::string(row->refused));
            continue;
        }
        for (const ShownServerVariable& implied : row->implies) {
            // Requested itself: checked against its own request.
            if (implied.name.empty() || shown_server_setting(requested_all, implied.name)) continue;
            const std::string as = ", which " + on + " applies as " + std::string(implied.name) +
                                   " = " + std::string(implied.shown);
            const auto got = shown_server_setting(shown, implied.name);
            if (!got) {
                lines.push_back(head + as + ", but SHOW VARIABLES did not list " +
                                std::string(implied.name));
            } else if (!server_variable_matches(implied.name, Json(std::string(implied.shown)),
                                                *got)) {
                lines.push_back(head + as + ", but the server has " + *got);
            }
        }
    }
}

}  // namespace

std::optional<MariadbVersion> parse_mariadb_version(std::string_view server_version) {
    server_version = trim_whitespace(server_version);
    const auto first_dot = server_version.find('.');
    if (first_dot == std::string_view::npos) return std::nullopt;
    const std::string_view rest = server_version.substr(first_dot + 1);
    const auto minor_end = rest.find_first_not_of("0123456789");
    const auto major = parse_integer(server_version.substr(0, first_dot));
    const auto minor = parse_integer(rest.substr(0, minor_end));
    if (!major || !minor || *major < 0 || *minor < 0 || *major > 999 || *minor > 999)
        return std::nullopt;
    return MariadbVersion{static_cast<int>(*major), static_cast<int>(*minor)};
}

std::span<const VersionedServerVariable> versioned_server_variables() {
    return kVersionedServerVariables;
}

std::vector<std::string> server_variable_mismatches(const Json& requested, const Json& shown,
                                                    std::string_view server_version) {
    std::vector<std::string> lines;
    if (!requested.is_object()) return lines;
    const auto version = parse_mariadb_version(server_version);
    for (const auto& [raw_name, want] : requested.items()) {
        const std::string name = server_setting_name(raw_name);
        const std::string head =
            "server variable " + raw_name + ": requested " + server_setting_display(want);
        const auto got = shown_server_setting(shown, name);
        if (!got) {
            lines.push_back(head + ", SHOW VARIABLES did not list it");
        } else if (!server_variable_matches(name, want, *got)) {
            lines.push_back(head + ", server has " + *got);
        }
        const auto rows = rows_for(name, want);
        if (!rows.empty())
            check_versioned(rows, version, server_version, requested, shown, head, lines);
    }
    return lines;
}

std::vector<std::string> server_variable_risks(const Json& server_variables) {
    std::vector<std::string> risks;
    if (!server_variables.is_object()) return risks;
    for (const auto& [raw_name, value] : server_variables.items()) {
        const std::string name = server_setting_name(raw_name);
        const auto text = server_setting_text(value);
        if (!text) continue;
        const std::string v = ascii_lower(trim_whitespace(*text));
        bool risky = false;
        if (name == "innodb_flush_method") {
            risky = v == "nosync" || v == "o_direct_no_fsync";
        } else if (name == "innodb_flush_log_at_trx_commit") {
            risky = v == "0" || v == "2";
        } else if (name == "innodb_doublewrite") {
            risky = server_setting_boolean(v) == std::optional<bool>(false) || v == "fast";
        }
        if (risky) risks.push_back(name + "=" + std::string(trim_whitespace(*text)));
    }
    return risks;
}

}  // namespace ds
