#include "daemon/report/report_data.h"

#include <algorithm>
#include <tuple>

#include "common/compare_text.h"
#include "common/version.h"
#include "common/workload_kind.h"
#include "common/workload_output.h"
#include "daemon/compare/compare.h"
#include "daemon/report/json_skim.h"

namespace ds::report {
namespace {

// Runs read per store call: bounds the memory the raw outputs take.
constexpr int kRunsPerPage = 200;

// Finds the comparison row a run belongs to: same configuration, workload
// and partition.
class RowIndex {
  public:
    explicit RowIndex(const Json& compare) : partitions_(compare["partitions"]) {
        const Json& rows = compare["rows"];
        for (std::size_t r = 0; r < rows.size(); ++r) {
            const Json& partition = rows[r]["partition"];
            rows_[{rows[r]["config_id"].get<std::string>(), rows[r]["workload"].get<std::string>(),
                   partition.is_number() ? partition.get<long>() : -1}] = r;
        }
    }

    // The row's index, or npos (a run that has not finished has no partition).
    std::size_t row_of(const RunRecord& run) {
        if (run.partition_key.empty()) return npos;
        auto found =
            rows_.find({run.config_id, run.workload_name, partition_of(run.partition_key)});
        return found == rows_.end() ? npos : found->second;
    }

    static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  private:
    long partition_of(const std::string& key) {
        auto [cached, inserted] = partition_by_key_.try_emplace(key, -1);
        if (!inserted) return cached->second;
        const Json partition = partition_from_key(key);
        for (std::size_t p = 0; p < partitions_.size(); ++p)
            if (partitions_[p] == partition) cached->second = static_cast<long>(p);
        return cached->second;
    }

    const Json& partitions_;
    std::map<std::tuple<std::string, std::string, long>, std::size_t> rows_;
    std::map<std::string, long> partition_by_key_;
};

// The members of a run's raw output that ds::per_second_series reads, by
// workload kind (WorkloadKind::series_members); none for a kind without
// samples.
const std::vector<JsonPath>& series_members(std::string_view kind) {
    static const std::vector<JsonPath> kNone;
    const WorkloadKind* descriptor = find_workload_kind(kind);
    return descriptor != nullptr ? descriptor->series_members : kNone;
}

// The per-second series of a run; none when its output has none or cannot
// be read (the guest's output was checked when it was recorded; a report
// does not fail on an old or odd one). Only the members the series come
// from are parsed: a fio json+ output is mostly latency histograms.
SeriesMap run_series(const RunRecord& run) {
    const std::string& kind = run.workload.kind;
    const std::vector<JsonPath>& members = series_members(kind);
    if (members.empty()) return {};
    const std::optional<Json> output = skim_json(run.raw_output, members);
    if (!output) return {};
    Result<SeriesMap> series = per_second_series(kind, *output);
    return series.ok() ? std::move(series).value() : SeriesMap{};
}

// Sums one row's series run by run, over the seconds all of them have.
class SeriesAccumulator {
  public:
    void add(const SeriesMap& series) {
        if (series.empty()) return;
        ++runs_with_samples_;
        for (const auto& [name, values] : series) {
            Sum& sum = sums_[name];
            if (sum.runs == 0) {
                sum.values = values;
            } else {
                sum.values.resize(std::min(sum.values.size(), values.size()));
                for (std::size_t i = 0; i < sum.values.size(); ++i) sum.values[i] += values[i];
            }
            ++sum.runs;
        }
    }

    RowSeries means() const {
        RowSeries row;
        row.runs_with_samples = runs_with_samples_;
        for (const auto& [name, sum] : sums_) {
            std::vector<double>& mean = row.mean_per_second[name];
            for (double total : sum.values) mean.push_back(total / sum.runs);
        }
        return row;
    }

  private:
    struct Sum {
        std::vector<double> values;
        int runs = 0;
    };
    std::map<std::string, Sum> sums_;
    int runs_with_samples_ = 0;
};

bool finished(const RunRecord& run) {
    return run.status == RunStatus::kSucceeded || run.status == RunStatus::kFailed ||
           run.status == RunStatus::kTimedOut;
}

void count_versions(const RunRecord& run, ReportData& data) {
    if (!run.versions.is_object()) return;
    for (const auto& [key, value] : run.versions.items()) {
        const std::string text = json_read::text_of(value, "");
        if (!text.empty()) ++data.versions[key][text];
    }
}

void note_failure(const RunRecord& run, ReportData& data) {
    ++data.failures_total;
    if (data.failures.size() >= kMaxFailuresListed) return;
    data.failures.push_back(
        FailedRun{run.id, run.config_id, run.workload_name, run.status, run.failure_reason});
}

void note_readback(const RunRecord& run, RowReadback& readback) {
    ++readback.succeeded_runs;
    if (run.applied_settings.is_object() && run.applied_settings.value("verified", false))
        ++readback.verified_runs;
    if (readback.run_id != 0) return;
    readback.run_id = run.id;
    readback.applied = run.applied_settings;
}

// Folds one current run into the report's data.
void add_run(const RunRecord& run, RowIndex& index, std::vector<SeriesAccumulator>& series,
             ReportData& data) {
    if (finished(run)) count_versions(run, data);
    if (run.status == RunStatus::kFailed || run.status == RunStatus::kTimedOut)
        note_failure(run, data);
    if (run.status != RunStatus::kSucceeded) return;
    const std::size_t row = index.row_of(run);
    if (row == RowIndex::npos) return;  // finished after the comparison was read
    note_readback(run, data.readback[row]);
    series[row].add(run_series(run));
}

Status add_runs(Store& store, std::int64_t sweep_id, ReportData& data) {
    RowIndex index(data.compare);
    const std::size_t rows = data.compare["rows"].size();
    std::vector<SeriesAccumulator> series(rows);
    data.readback.assign(rows, RowReadback{});
    int after = -1;
    do {
        Result<RunPage> page =
            store.list_runs_page(sweep_id, after, kRunsPerPage, RawOutput::kInclude);
        DS_TRY(page);
        for (const RunRecord& run : page->runs)
            if (run.superseded_by == 0) add_run(run, index, series, data);
        after = page->next_after;
    } while (after >= 0);
    for (const SeriesAccumulator& row : series) data.series.push_back(row.means());
    return ok_status();
}

}  // namespace

Result<ReportData> gather_report_data(Store& store, std::int64_t sweep_id, SweepSpecs* specs) {
    ReportData data;
    Result<SweepRecord> sweep = store.get_sweep(sweep_id);
    DS_TRY(sweep);
    data.sweep = std::move(sweep).value();
    auto spec = spec_of(specs, data.sweep);
    if (spec.ok()) data.spec = spec.value();
    if (!spec.ok()) data.spec_error = spec.error().message;
    Result<std::map<std::string, int>> counts = store.run_counts(sweep_id);
    DS_TRY(counts);
    data.run_counts = std::move(counts).value();
    Result<Json> compare = compare_sweep(store, sweep_id, CompareOptions{"", true, specs});
    DS_TRY(compare);
    data.compare = std::move(compare).value();
    Result<std::map<std::string, Json>> workloads = store.sweep_workloads(sweep_id);
    DS_TRY(workloads);
    data.workloads = std::move(workloads).value();
    DS_TRY(add_runs(store, sweep_id, data));
    data.generator = "disksweepd " + std::string(disksweep_version());
    return data;
}

}  // namespace ds::report
