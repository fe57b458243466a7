#include "common/workload_output.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <sstream>

#include "support/test_data.h"

namespace ds {
namespace {

// Real outputs recorded on the development host (tests/data/mariadb/README.md).
std::string recorded(const std::string& name) {
    std::string text = test::test_data_text(std::filesystem::path("mariadb") / name);
    REQUIRE_FALSE(text.empty());
    return text;
}

Json stdout_output(const std::string& text) {
    return Json{{"stdout", text}};
}

}  // namespace

TEST_CASE("image variant and primary metric by kind") {
    CHECK(image_variant_for_kind("fio") == "");
    CHECK(image_variant_for_kind("io") == "");
    CHECK(image_variant_for_kind("mariadb-atis") == "mariadb");
    CHECK(image_variant_for_kind("sysbench-oltp") == "mariadb");
    CHECK(image_variant_for_kind("nonsense") == "");

    CHECK(primary_metric_for_kind("mariadb-atis").name == "total_s");
    CHECK(primary_metric_for_kind("mariadb-atis").lower_is_better);
    CHECK(primary_metric_for_kind("sysbench-oltp").name == "tps");
    CHECK_FALSE(primary_metric_for_kind("sysbench-oltp").lower_is_better);
    CHECK(primary_metric_for_kind("fio").name == "read_iops");
    CHECK(primary_metric_for_kind("io").name == "read_iops");
}

TEST_CASE("parse_sqlbench_output reads a real test-ATIS run with fractional seconds") {
    auto report = parse_sqlbench_output(recorded("atis_host_hires_loop20.txt"));
    INFO((report.ok() ? "" : report.error().message));
    REQUIRE(report.ok());
    CHECK(report->test == "ATIS table test");
    CHECK(report->total_s == Approx(28.6004));
    CHECK_FALSE(report->total_estimated);
    REQUIRE(report->phases.size() == 8);
    CHECK(report->phases[0].name == "create_table");
    CHECK(report->phases[0].count == 28);
    CHECK(report->phases[0].wall_s == Approx(0.944438));
    CHECK(report->phases[1].name == "insert");
    CHECK(report->phases[1].count == 9768);
    CHECK(report->phases[1].wall_s == Approx(25.131));
    CHECK(report->phases[3].name == "select_join");
    CHECK(report->phases[3].wall_s == Approx(0.0224979));
    CHECK(report->phases[7].name == "drop_table");
    for (const auto& phase : report->phases) CHECK_FALSE(phase.estimated);
}

TEST_CASE("parse_sqlbench_output reads whole seconds (no hires wallclock)") {
    auto report = parse_sqlbench_output(recorded("atis_host_nohires_loop50.txt"));
    REQUIRE(report.ok());
    CHECK(report->total_s == 26);
    REQUIRE(report->phases.size() == 8);
    CHECK(report->phases[1].wall_s == 19);
    CHECK(report->phases[2].name == "select_simple_join");
    CHECK(report->phases[2].count == 250);
    CHECK(report->phases[2].wall_s == 0);
}

TEST_CASE("outputs of the mariadb image variant's own programs parse (chroot, tmpfs datadir)") {
    auto report = parse_sqlbench_output(recorded("atis_variant_chroot_tmpfs_loop20.txt"));
    REQUIRE(report.ok());
    CHECK(report->test == "ATIS table test");
    CHECK(report->phases.size() == 8);
    CHECK(report->total_s > 0);
    CHECK_FALSE(report->total_estimated);

    auto metrics = metrics_from_workload_output(
        "sysbench-oltp", stdout_output(recorded("sysbench_variant_chroot_tmpfs.txt")));
    REQUIRE(metrics.ok());
    CHECK(metrics->at("tps") > 0);
    CHECK(metrics->at("latency_p50_ms") <= metrics->at("latency_p95_ms"));
    CHECK(metrics->at("latency_p95_ms") <= metrics->at("latency_p99_ms"));
    CHECK(metrics->at("latency_p99_ms") <= metrics->at("latency_max_ms"));
}

TEST_CASE("parse_sqlbench_output flags estimate lines and an estimated total") {
    auto report = parse_sqlbench_output(recorded("atis_host_estimated_loop100_tl0.txt"));
    REQUIRE(report.ok());
    CHECK(report->total_estimated);
    CHECK(report->total_s == Approx(29.9728));
    REQUIRE(report->phases.size() == 8);
    int estimated = 0;
    for (const auto& phase : report->phases) estimated += phase.estimated ? 1 : 0;
    CHECK(estimated == 5);
    CHECK(report->phases[2].name == "select_simple_join");
    CHECK(report->phases[2].estimated);
    CHECK(report->phases[2].count == 500);
    CHECK(report->phases[2].wall_s == Approx(0.197196));
    CHECK_FALSE(report->phases[1].estimated);
}

TEST_CASE("parse_sqlbench_output reads fetch loops' (count:rows) and scientific seconds") {
    const std::string text =
        "Time for select_range (410:1057904): 3.5 wallclock secs ( 0.1 usr 0.0 sys + 0 cusr 0 "
        "csys = 0.1 CPU)\n"
        "Time for min_max (60): 1e-05 wallclock secs (...)\n"
        "Total time: 3.50001 wallclock secs (...)\n";
    auto report = parse_sqlbench_output(text);
    REQUIRE(report.ok());
    REQUIRE(report->phases.size() == 2);
    CHECK(report->phases[0].name == "select_range");
    CHECK(report->phases[0].count == 410);
    CHECK(report->phases[1].wall_s == Approx(1e-05));
}

TEST_CASE("parse_sqlbench_output names the malformed line") {
    const std::string text =
        "ATIS table test\n\nTime to insert (abc): 1 wallclock secs\nTotal time: 1 wallclock secs\n";
    auto report = parse_sqlbench_output(text);
    REQUIRE_FALSE(report.ok());
    CHECK(report.error().code == errc::kInvalidArgument);
    CHECK_THAT(report.error().message, Catch::Contains("line 3"));
    CHECK_THAT(report.error().message, Catch::Contains("Time to insert (abc)"));

    auto no_wall = parse_sqlbench_output("Time for x (1): soon\nTotal time: 1 wallclock secs\n");
    REQUIRE_FALSE(no_wall.ok());
    CHECK_THAT(no_wall.error().message, Catch::Contains("line 1"));
}

TEST_CASE("parse_sqlbench_output refuses output without a total line") {
    auto full = recorded("atis_host_hires_loop20.txt");
    auto truncated = full.substr(0, full.find("Removing tables"));
    auto report = parse_sqlbench_output(truncated);
    REQUIRE_FALSE(report.ok());
    CHECK(report.error().code == errc::kInvalidArgument);
    CHECK_THAT(report.error().message, Catch::Contains("Total time"));
}

TEST_CASE("mariadb-atis metrics: total, summed phases, estimates not counted") {
    auto metrics = metrics_from_workload_output(
        "mariadb-atis", stdout_output(recorded("atis_host_hires_loop20.txt")));
    REQUIRE(metrics.ok());
    CHECK(metrics->at("total_s") == Approx(28.6004));
    CHECK(metrics->at("phase_insert_s") == Approx(25.131));
    CHECK(metrics->at("phase_select_group_s") == Approx(0.512112));
    CHECK(metrics->at("estimated_phases") == 0);
    CHECK(metrics->size() == 10);  // total, estimated_phases, 8 phases

    const std::string repeated =
        "Time for q (1): 1.5 wallclock secs\nTime for q (1): 2 wallclock secs\n"
        "Total time: 3.5 wallclock secs\n";
    auto summed = metrics_from_workload_output("mariadb-atis", stdout_output(repeated));
    REQUIRE(summed.ok());
    CHECK(summed->at("phase_q_s") == Approx(3.5));

    auto estimated = metrics_from_workload_output(
        "mariadb-atis", stdout_output(recorded("atis_host_estimated_loop100_tl0.txt")));
    REQUIRE(estimated.ok());
    CHECK(estimated->at("estimated_phases") == 5);
    CHECK(estimated->count("total_s") == 0);  // an estimated total is no measurement
    CHECK(estimated->count("phase_select_join_s") == 0);
    CHECK(estimated->at("phase_insert_s") == Approx(22.9844));
}

TEST_CASE("sysbench-oltp metrics from a real run with --histogram=on") {
    auto metrics = metrics_from_workload_output(
        "sysbench-oltp", stdout_output(recorded("sysbench_oltp_read_write_histogram.txt")));
    INFO((metrics.ok() ? "" : metrics.error().message));
    REQUIRE(metrics.ok());
    CHECK(metrics->at("tps") == Approx(339.46));
    CHECK(metrics->at("qps") == Approx(6789.14));
    CHECK(metrics->at("errors_per_s") == 0);
    CHECK(metrics->at("reconnects_per_s") == 0);
    CHECK(metrics->at("latency_avg_ms") == Approx(2.94));
    CHECK(metrics->at("latency_max_ms") == Approx(77.45));
    // sysbench's own line
    CHECK(metrics->at("latency_p95_ms") == Approx(8.43));
    // from the histogram, the way sysbench computes its line (the 95th
    // percentile bucket of the same histogram is 8.428)
    CHECK(metrics->at("latency_p50_ms") == Approx(1.469));
    CHECK(metrics->at("latency_p99_ms") == Approx(33.718));
}

TEST_CASE("sysbench-oltp metrics without a histogram take the percentile line only") {
    auto metrics = metrics_from_workload_output(
        "sysbench-oltp", stdout_output(recorded("sysbench_oltp_read_write_p99.txt")));
    REQUIRE(metrics.ok());
    CHECK(metrics->at("tps") == Approx(357.30));
    CHECK(metrics->at("latency_p99_ms") == Approx(32.53));
    CHECK(metrics->count("latency_p50_ms") == 0);
    CHECK(metrics->count("latency_p95_ms") == 0);
}

TEST_CASE("workload output errors name what is wrong") {
    auto unknown = metrics_from_workload_output("tpcc", Json::object());
    REQUIRE_FALSE(unknown.ok());
    CHECK_THAT(unknown.error().message, Catch::Contains("tpcc"));

    auto no_stdout = metrics_from_workload_output("mariadb-atis", Json{{"stdout", 3}});
    REQUIRE_FALSE(no_stdout.ok());
    CHECK_THAT(no_stdout.error().message, Catch::Contains("stdout"));

    auto prepare_only = metrics_from_workload_output(
        "sysbench-oltp", stdout_output("sysbench 1.0.20\nCreating table 'sbtest1'...\n"));
    REQUIRE_FALSE(prepare_only.ok());
    CHECK_THAT(prepare_only.error().message, Catch::Contains("transactions"));

    auto bad_histogram = metrics_from_workload_output(
        "sysbench-oltp", stdout_output("Latency histogram (values are in milliseconds)\n"
                                       "  value  --- distribution --- count\n"
                                       "  x.y |**  3\n"));
    REQUIRE_FALSE(bad_histogram.ok());
    CHECK_THAT(bad_histogram.error().message, Catch::Contains("line 3"));
}

TEST_CASE("an unknown kind's error lists the known kinds") {
    auto unknown = metrics_from_workload_output("tpcc", Json::object());
    REQUIRE_FALSE(unknown.ok());
    CHECK(unknown.error().message ==
          "no metrics for workload kind 'tpcc' (known: fio, io, mariadb-atis, sysbench-oltp, "
          "ledger, pgbench)");
    CHECK(per_second_series("tpcc", Json::object())->empty());
}

TEST_CASE("fio's series are read from each job's direction's per-second arrays") {
    CHECK(fio_series_members() ==
          std::vector<OutputMember>{{"jobs", "*", "read", "iops_per_second"},
                                    {"jobs", "*", "write", "iops_per_second"},
                                    {"jobs", "*", "read", "bw_bytes_per_second"},
                                    {"jobs", "*", "write", "bw_bytes_per_second"}});
}

TEST_CASE("fio and io metrics go through the fio parser") {
    auto bad = metrics_from_workload_output("io", Json::object());
    REQUIRE_FALSE(bad.ok());
    CHECK_THAT(bad.error().message, Catch::Contains("fio output"));
}

TEST_CASE("server_variable_matches handles MariaDB's spellings") {
    // booleans
    CHECK(server_variable_matches("innodb_doublewrite", Json(0), "OFF"));
    CHECK(server_variable_matches("innodb_doublewrite", Json(false), "OFF"));
    CHECK(server_variable_matches("innodb_doublewrite", Json("off"), "OFF"));
    CHECK(server_variable_matches("innodb_doublewrite", Json(true), "ON"));
    CHECK(server_variable_matches("innodb_doublewrite", Json("1"), "ON"));
    CHECK_FALSE(server_variable_matches("innodb_doublewrite", Json(0), "ON"));
    // numbers are numbers, 2 is not a boolean
    CHECK(server_variable_matches("innodb_flush_log_at_trx_commit", Json(2), "2"));
    CHECK(server_variable_matches("innodb_flush_log_at_trx_commit", Json(0), "0"));
    CHECK_FALSE(server_variable_matches("innodb_flush_log_at_trx_commit", Json(2), "ON"));
    CHECK_FALSE(server_variable_matches("innodb_flush_log_at_trx_commit", Json(2), "1"));
    CHECK(server_variable_matches("innodb_max_dirty_pages_pct", Json(90), "90.000000"));
    // sizes
    CHECK(server_variable_matches("innodb_buffer_pool_size", Json("128M"), "134217728"));
    CHECK(server_variable_matches("innodb_buffer_pool_size", Json("1g"), "1073741824"));
    CHECK(server_variable_matches("innodb_log_file_size", Json(50331648), "50331648"));
    CHECK_FALSE(server_variable_matches("innodb_buffer_pool_size", Json("256M"), "134217728"));
    // enums, case-insensitively
    CHECK(server_variable_matches("innodb_flush_method", Json("o_dsync"), "O_DSYNC"));
    CHECK(server_variable_matches("innodb_flush_method", Json("nosync"), "nosync"));
    CHECK_FALSE(server_variable_matches("innodb_flush_method", Json("O_DSYNC"), "fsync"));
    // what a spec cannot say
    CHECK_FALSE(server_variable_matches("x", Json::array(), "1"));
    CHECK_FALSE(server_variable_matches("x", Json(), ""));
}

TEST_CASE("server_variable_risks lists what trades durability for speed") {
    const Json server = {{"innodb_flush_method", "nosync"},
                         {"innodb_flush_log_at_trx_commit", 2},
                         {"innodb-doublewrite", false},
                         {"sync_binlog", 0},
                         {"innodb_buffer_pool_size", "64M"}};
    CHECK(server_variable_risks(server) ==
          std::vector<std::string>{"innodb_doublewrite=0", "innodb_flush_log_at_trx_commit=2",
                                   "innodb_flush_method=nosync"});
    CHECK(server_variable_risks(Json{{"innodb_flush_log_at_trx_commit", "0"}}) ==
          std::vector<std::string>{"innodb_flush_log_at_trx_commit=0"});
    CHECK(server_variable_risks(Json{{"innodb_doublewrite", "OFF"}}) ==
          std::vector<std::string>{"innodb_doublewrite=OFF"});
    CHECK(server_variable_risks(Json{{"innodb_flush_method", "O_DSYNC"},
                                     {"innodb_flush_log_at_trx_commit", 1},
                                     {"innodb_doublewrite", 1}})
              .empty());
    CHECK(server_variable_risks(Json::array()).empty());
    // No sync of the data files: 10.x's O_DIRECT_NO_FSYNC, 11.x's "fast".
    CHECK(server_variable_risks(
              Json{{"innodb_doublewrite", "fast"}, {"innodb_flush_method", "O_DIRECT_NO_FSYNC"}}) ==
          std::vector<std::string>{"innodb_doublewrite=fast",
                                   "innodb_flush_method=O_DIRECT_NO_FSYNC"});
}

namespace {

// One server start of tests/data/mariadb/innodb_flush_settings_*.txt: the
// [mysqld] lines it was given, SELECT VERSION(), SHOW VARIABLES' rows.
struct RecordedStart {
    Json requested = Json::object();
    std::string version;
    Json shown = Json::object();
};

// "=== setting: a=1 b=2" starts a block; its next line is the version, then
// "  name<TAB>value" rows until "  -- warnings:".
std::vector<RecordedStart> recorded_starts(const std::string& file) {
    std::vector<RecordedStart> starts;
    std::istringstream in(recorded(file));
    bool in_rows = false;
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("=== setting: ", 0) == 0) {
            starts.emplace_back();
            std::istringstream settings(line.substr(13));
            for (std::string item; settings >> item;) {
                const auto eq = item.find('=');
                starts.back().requested[item.substr(0, eq)] = item.substr(eq + 1);
            }
            in_rows = false;
        } else if (!starts.empty() && starts.back().version.empty() && line.size() > 2) {
            starts.back().version = line.substr(2);
            in_rows = true;
        } else if (in_rows && line.find('\t') != std::string::npos) {
            const auto tab = line.find('\t');
            starts.back().shown[line.substr(2, tab - 2)] = line.substr(tab + 1);
        } else if (line == "  -- warnings:") {
            in_rows = false;
        }
    }
    return starts;
}

std::string joined(const std::vector<std::string>& lines) {
    std::string text;
    for (const auto& line : lines) text += line + "\n";
    return text;
}

}  // namespace

TEST_CASE("parse_mariadb_version reads MAJOR.MINOR of SELECT VERSION()") {
    CHECK(parse_mariadb_version("10.11.19-MariaDB-0+deb12u1") == MariadbVersion{10, 11});
    CHECK(parse_mariadb_version("11.8.9-MariaDB-0+deb13u1 from Debian") == MariadbVersion{11, 8});
    CHECK(parse_mariadb_version("11.0") == MariadbVersion{11, 0});
    CHECK(MariadbVersion{10, 11} < MariadbVersion{11, 0});
    CHECK_FALSE(parse_mariadb_version(""));
    CHECK_FALSE(parse_mariadb_version("MariaDB"));
    CHECK_FALSE(parse_mariadb_version("11"));
    CHECK_FALSE(parse_mariadb_version("x.8.9"));
}

TEST_CASE("server_variable_mismatches: MariaDB 10.11 as recorded, every tuning in force but fast") {
    const auto starts = recorded_starts("innodb_flush_settings_10.11.txt");
    REQUIRE(starts.size() == 12);
    for (const RecordedStart& start : starts) {
        INFO(start.requested.dump() << " on " << start.version);
        const auto lines = server_variable_mismatches(start.requested, start.shown, start.version);
        if (start.requested == Json{{"innodb_doublewrite", "fast"}}) {
            // 10.11 logs "ignoring option ... invalid value 'fast'" and keeps ON.
            CHECK(joined(lines) ==
                  "server variable innodb_doublewrite: requested fast, server has ON\n"
                  "server variable innodb_doublewrite: requested fast, refused on MariaDB 10.11: "
                  "MariaDB before 11.0 has no 'fast' (MDEV-33545): it logs \"ignoring option "
                  "'--innodb-doublewrite' due to invalid value 'fast'\" and keeps ON\n");
        } else {
            CHECK(lines.empty());
        }
    }
}

TEST_CASE("server_variable_mismatches: MariaDB 11.8 as recorded, nosync refused, the rest mapped") {
    const auto starts = recorded_starts("innodb_flush_settings_11.8.txt");
    REQUIRE(starts.size() == 12);
    for (const RecordedStart& start : starts) {
        INFO(start.requested.dump() << " on " << start.version);
        const auto lines = server_variable_mismatches(start.requested, start.shown, start.version);
        if (start.requested == Json{{"innodb_flush_method", "nosync"}}) {
            // Shown back as requested, and still not applied: refused.
            REQUIRE(lines.size() == 1);
            CHECK_THAT(lines[0], Catch::StartsWith("server variable innodb_flush_method: "
                                                   "requested nosync, refused on MariaDB 11.8: "
                                                   "MariaDB 11.0 and later show nosync but sync "
                                                   "like fsync"));
        } else {
            CHECK(lines.empty());
        }
    }
}

TEST_CASE("server_variable_mismatches: 11.x's Booleans are checked for the flush method") {
    const std::string v118 = "11.8.9-MariaDB-0+deb13u1";
    const Json odsync = {{"innodb_flush_method", "O_DSYNC"}};
    Json shown = {{"innodb_flush_method", "O_DSYNC"},
                  {"innodb_data_file_buffering", "OFF"},
                  {"innodb_data_file_write_through", "ON"},
                  {"innodb_log_file_write_through", "ON"},
                  {"innodb_doublewrite", "ON"}};
    CHECK(server_variable_mismatches(odsync, shown, v118).empty());
    // On 10.11 the Booleans are neither needed nor there.
    CHECK(server_variable_mismatches(odsync, Json{{"innodb_flush_method", "O_DSYNC"}},
                                     "10.11.19-MariaDB-0+deb12u1")
              .empty());

    shown["innodb_log_file_write_through"] = "OFF";
    shown.erase("innodb_data_file_write_through");
    CHECK(server_variable_mismatches(odsync, shown, v118) ==
          std::vector<std::string>{
              "server variable innodb_flush_method: requested O_DSYNC, which MariaDB 11.8 applies "
              "as innodb_data_file_write_through = ON, but SHOW VARIABLES did not list "
              "innodb_data_file_write_through",
              "server variable innodb_flush_method: requested O_DSYNC, which MariaDB 11.8 applies "
              "as innodb_log_file_write_through = ON, but the server has OFF"});

    // A Boolean the workload sets itself is checked against its own request
    // (11.8 lets innodb_flush_method=O_DSYNC win over it).
    const Json both = {{"innodb_flush_method", "O_DSYNC"},
                       {"innodb_log_file_write_through", false}};
    CHECK(server_variable_mismatches(both, shown, v118) ==
          std::vector<std::string>{
              "server variable innodb_flush_method: requested O_DSYNC, which MariaDB 11.8 applies "
              "as innodb_data_file_write_through = ON, but SHOW VARIABLES did not list "
              "innodb_data_file_write_through"});

    // O_DIRECT_NO_FSYNC: 11.x shows doublewrite "fast", unless it was asked OFF.
    const Json nofsync_shown = {{"innodb_flush_method", "O_DIRECT_NO_FSYNC"},
                                {"innodb_data_file_buffering", "OFF"},
                                {"innodb_data_file_write_through", "OFF"},
                                {"innodb_log_file_write_through", "OFF"},
                                {"innodb_doublewrite", "OFF"}};
    CHECK(server_variable_mismatches(
              Json{{"innodb_flush_method", "O_DIRECT_NO_FSYNC"}, {"innodb_doublewrite", 0}},
              nofsync_shown, v118)
              .empty());
    CHECK_THAT(joined(server_variable_mismatches(Json{{"innodb_flush_method", "O_DIRECT_NO_FSYNC"}},
                                                 nofsync_shown, v118)),
               Catch::Contains("applies as innodb_doublewrite = fast, but the server has OFF"));
}

TEST_CASE("server_variable_mismatches: a versioned value needs the server's version") {
    const Json shown = {{"innodb_flush_method", "nosync"}, {"innodb_doublewrite", "OFF"}};
    CHECK(server_variable_mismatches(Json{{"innodb_flush_method", "nosync"}}, shown, "") ==
          std::vector<std::string>{
              "server variable innodb_flush_method: requested nosync, whose effect depends on "
              "the MariaDB version, but the guest's server_version \"\" does not say one"});
    // A value no version treats differently is checked as shown.
    CHECK(server_variable_mismatches(Json{{"innodb_doublewrite", false}}, shown, "").empty());
    // Spellings: the spec's name as written, matched by SHOW VARIABLES' spelling.
    CHECK(server_variable_mismatches(Json{{"innodb-doublewrite", true}}, shown, "10.11.6") ==
          std::vector<std::string>{
              "server variable innodb-doublewrite: requested on, server has OFF"});
    // Untrusted readbacks: never a throw.
    for (const Json& strange :
         {Json(), Json(1), Json::array({1}), Json{{"innodb_flush_method", 5}}}) {
        CHECK_NOTHROW(server_variable_mismatches(Json{{"innodb_flush_method", "O_DSYNC"}}, strange,
                                                 "11.8.9"));
    }
    CHECK(server_variable_mismatches(Json::array(), shown, "11.8.9").empty());
}

TEST_CASE("per_second_series: sysbench's report-interval lines become tps and qps series") {
    auto series = per_second_series(
        "sysbench-oltp", stdout_output(recorded("sysbench_oltp_read_write_histogram.txt")));
    REQUIRE(series.ok());
    REQUIRE(series->at("tps").size() == 5);
    CHECK(series->at("tps")[0] == Approx(671.02));
    CHECK(series->at("tps")[4] == Approx(160.24));
    CHECK(series->at("qps")[1] == Approx(3661.04));
    CHECK(
        per_second_series("mariadb-atis", stdout_output("Total time: 3 wallclock secs"))->empty());
}

TEST_CASE("per_second_series: fio/io jobs are summed over the seconds every job has") {
    const Json output = {
        {"jobs",
         {{{"read", {{"iops_per_second", {10, 20, 30}}, {"bw_bytes_per_second", {1048576, 0, 0}}}},
           {"write", {{"iops_per_second", {0, 0, 0}}}}},
          {{"read", {{"iops_per_second", {1, 2}}}}, {"write", Json::object()}}}}};
    auto series = per_second_series("io", output);
    REQUIRE(series.ok());
    CHECK(series->at("read_iops") == std::vector<double>{11, 22});
    CHECK(series->at("read_bw_mib_s") == std::vector<double>{1, 0, 0});
    CHECK(series->count("write_iops") == 0);  // no I/O in that direction
    CHECK(per_second_series("fio", Json{{"jobs", Json::array()}})->empty());
}

TEST_CASE("per_second_series: a guest's malformed series is refused, naming the element") {
    const Json output = {{"jobs", {{{"read", {{"iops_per_second", {1, "x"}}}}}}}};
    auto series = per_second_series("fio", output);
    REQUIRE_FALSE(series.ok());
    CHECK_THAT(series.error().message, Catch::Contains("jobs[0].read.iops_per_second[1]"));
    const Json negative = {{"jobs", {{{"write", {{"iops_per_second", {-1}}}}}}}};
    CHECK_FALSE(per_second_series("io", negative).ok());
    const Json not_array = {{"jobs", {{{"write", {{"bw_bytes_per_second", 3}}}}}}};
    CHECK_FALSE(per_second_series("io", not_array).ok());
}

}  // namespace ds
