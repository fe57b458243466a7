// fio's per-second logs into fio's report: real logs recorded with the json+
// report they belong to (tests/data/fio/README.md), and the edge cases of
// the log format.
#include "common/fio_logs.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "common/fio_metrics.h"
#include "common/workload_output.h"
#include "support/temp_dir.h"
#include "support/test_data.h"

namespace ds {
namespace {

constexpr double kKiB = 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;

std::string recorded_prefix() {
    return (test::test_data_dir() / "fio/logs/randrw_4k_numjobs2").string();
}

Json recorded_report() {
    const std::string text = test::test_data_text("fio/randrw_4k_numjobs2_jsonplus.json");
    REQUIRE_FALSE(text.empty());
    return Json::parse(text);
}

std::vector<double> times(std::vector<double> values, double factor) {
    for (double& value : values) value *= factor;
    return values;
}

void write_file(const std::filesystem::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    REQUIRE(out.good());
}

}  // namespace

TEST_CASE("fio logs: real per-job logs become one value per whole second", "[fio_logs]") {
    const auto threads = read_fio_thread_logs(recorded_prefix());
    REQUIRE(threads.size() == 2);
    // Thread 1's entries are at 1000, 2001, 3002, 4001 ms; thread 2's at 999
    // (fio's 1 ms slack), 2000, 3001, 4000: both are seconds 0..3.
    CHECK(threads[0].iops.per_second[0] == std::vector<double>{13253, 12057, 10634, 13945});
    CHECK(threads[0].iops.per_second[1] == std::vector<double>{13270, 11997, 10707, 13642});
    CHECK(threads[1].iops.per_second[0] == std::vector<double>{7633, 6909, 9299, 6848});
    CHECK(threads[1].bw_bytes.per_second[1] ==
          times({30974, 28020, 36924, 27943}, kKiB));  // KiB/s in the log
    for (const auto& thread : threads) {
        CHECK(thread.iops.skipped_lines + thread.bw_bytes.skipped_lines == 0);
        CHECK(thread.iops.partial_entries + thread.bw_bytes.partial_entries == 0);
    }
    // They agree with fio's report of the same run (which also counts the
    // fifth second, whose window fio did not log): within a few percent.
    const Json report = recorded_report();
    const auto& read = threads[0].iops.per_second[0];
    const double mean = std::accumulate(read.begin(), read.end(), 0.0) / read.size();
    CHECK(mean == Approx(report["jobs"][0]["read"]["iops"].get<double>()).epsilon(0.05));
}

TEST_CASE("fio logs: one job entry per log, read back by per_second_series", "[fio_logs]") {
    Json report = recorded_report();
    const auto attached = attach_fio_samples(report, read_fio_thread_logs(recorded_prefix()));
    CHECK(attached.not_attached == "");
    CHECK(attached.job_logs == 2);
    CHECK(attached.iops_seconds == 4);
    CHECK(attached.bw_seconds == 4);
    CHECK(report["jobs"][1]["read"]["iops_per_second"] == Json{7633, 6909, 9299, 6848});
    CHECK(report["jobs"][0]["write"]["bw_bytes_per_second"] ==
          Json(times({53080, 47988, 42828, 54570}, kKiB)));
    CHECK(report[std::string(kFioLogsNoteKey)] == Json{{"log_avg_msec", 1000},
                                                       {"job_logs", 2},
                                                       {"iops_seconds", 4},
                                                       {"bw_seconds", 4},
                                                       {"skipped_lines", 0}});

    auto series = per_second_series("fio", report);
    REQUIRE(series.ok());
    CHECK(series->at("read_iops") ==
          std::vector<double>{13253 + 7633, 12057 + 6909, 10634 + 9299, 13945 + 6848});
    CHECK(series->at("write_bw_mib_s")[0] == Approx((53080 + 30974) * kKiB / kMiB));
    // The report stays one metrics_from_fio_json reads.
    auto metrics = metrics_from_fio_json(report);
    REQUIRE(metrics.ok());
    CHECK(metrics->count("read_clat_p99_us") == 1);
}

TEST_CASE("fio logs: group_reporting sums every thread into its one entry", "[fio_logs]") {
    Json report = recorded_report();
    report["jobs"].erase(1);
    const auto attached = attach_fio_samples(report, read_fio_thread_logs(recorded_prefix()));
    CHECK(attached.not_attached == "");
    CHECK(report["jobs"][0]["read"]["iops_per_second"] ==
          Json{13253 + 7633, 12057 + 6909, 10634 + 9299, 13945 + 6848});
}

TEST_CASE("fio logs: nothing is attached when logs and entries do not match", "[fio_logs]") {
    SECTION("no logs at all") {
        Json report = recorded_report();
        const auto attached = attach_fio_samples(report, read_fio_thread_logs("/nonexistent/ds"));
        CHECK(attached.not_attached == "fio wrote no per-job logs");
        CHECK_FALSE(report["jobs"][0]["read"].contains("iops_per_second"));
        CHECK(report[std::string(kFioLogsNoteKey)]["not_attached"] == "fio wrote no per-job logs");
        CHECK(per_second_series("fio", report)->empty());
    }
    SECTION("group_reporting over several groups") {
        Json report = recorded_report();
        report["jobs"].push_back(report["jobs"][0]);
        const auto attached = attach_fio_samples(report, read_fio_thread_logs(recorded_prefix()));
        CHECK_THAT(attached.not_attached,
                   Catch::StartsWith("2 per-job logs for 3 job entries (group_reporting"));
        for (const auto& job : report["jobs"]) CHECK_FALSE(job["read"].contains("iops_per_second"));
    }
    SECTION("more values than a report may carry") {
        FioThreadLogs long_run;
        for (auto* log : {&long_run.iops, &long_run.bw_bytes}) {
            for (auto& direction : log->per_second) direction.assign(20000, 1.0);
        }
        Json report = recorded_report();
        report["jobs"].erase(1);
        const auto attached = attach_fio_samples(report, {long_run});
        CHECK(attached.not_attached ==
              "80000 per-second values, more than the 65536 a report may carry");
        CHECK_FALSE(report["jobs"][0]["read"].contains("iops_per_second"));
    }
    SECTION("a report without job entries") {
        Json report = Json::object();
        CHECK(attach_fio_samples(report, read_fio_thread_logs(recorded_prefix())).not_attached ==
              "fio's report has no job entries");
    }
}

TEST_CASE("fio logs: windows, gaps, partial windows and garbage", "[fio_logs]") {
    SECTION("the partial window fio flushes at the job's end is dropped") {
        const auto log = parse_fio_average_log("1000, 10, 0\n2000, 20, 0\n2600, 99, 0\n", 1.0);
        CHECK(log.per_second[0] == std::vector<double>{10, 20});
        CHECK(log.partial_entries == 1);
        CHECK(log.skipped_lines == 0);
    }
    SECTION("a second without an entry had no I/O that way") {
        const auto log = parse_fio_average_log("1000, 10, 0\n3000, 30, 0\n", 1.0);
        CHECK(log.per_second[0] == std::vector<double>{10, 0, 30});
    }
    SECTION("both directions cover the same seconds") {
        const auto log = parse_fio_average_log("1000, 10, 1\n1000, 4, 0\n2001, 20, 1\n", 1.0);
        CHECK(log.per_second[0] == std::vector<double>{4, 0});
        CHECK(log.per_second[1] == std::vector<double>{10, 20});
    }
    SECTION("entries that land on one second are averaged") {
        // 2999 closes the window from 1000 within fio's slack, so fio's next
        // boundary is 2000 and it logs again at 3499.
        const auto log = parse_fio_average_log("1000, 10, 1\n2999, 30, 1\n3499, 50, 1\n", 1.0);
        CHECK(log.per_second[1] == std::vector<double>{10, 0, 40});
        CHECK(log.per_second[0] == std::vector<double>{0, 0, 0});
    }
    SECTION("garbage lines are skipped and counted; trim and extra columns are fine") {
        const auto log = parse_fio_average_log(
            "garbage\n1000, x, 0\n1000\n1000, 5\n1000, 5, 7\n-1000, 5, 0\n1000, -5, 0\n"
            "1000, nan, 0\n\n1000, 3, 2\n1000, 5, 0, 4096, 0, 1\r\n90000000000, 5, 0\n",
            kKiB);
        CHECK(log.skipped_lines == 9);
        CHECK(log.per_second[0] == std::vector<double>{5 * kKiB});
        CHECK(log.per_second[1] == std::vector<double>{0});
    }
    SECTION("empty or binary text is no series") {
        CHECK(parse_fio_average_log("", 1.0).per_second[0].empty());
        const auto binary = parse_fio_average_log(std::string("\0\xff\x01,\n", 5), 1.0);
        CHECK(binary.per_second[0].empty());
        CHECK(binary.skipped_lines == 1);
    }
}

TEST_CASE("fio logs: a thread with only one of its two logs", "[fio_logs]") {
    test::TempDir dir;
    const std::string prefix = (dir.path() / "ds").string();
    write_file(prefix + "_iops.1.log", "1000, 7, 0\n2000, 8, 0\n");
    write_file(prefix + "_bw.2.log", "1000, 1, 1\n");
    const auto threads = read_fio_thread_logs(prefix);
    REQUIRE(threads.size() == 2);
    CHECK(threads[0].iops.per_second[0] == std::vector<double>{7, 8});
    CHECK(threads[0].bw_bytes.per_second[0].empty());
    CHECK(threads[1].bw_bytes.per_second[1] == std::vector<double>{kKiB});
}

}  // namespace ds
