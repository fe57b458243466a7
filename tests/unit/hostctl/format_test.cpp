// hostctl's printers: JSON as the daemon sends it (docs/api.md) in, exact
// text out.
#include "hostctl/format.h"

#include <catch2/catch.hpp>

#include "hostctl/compare_format.h"
#include "hostctl/results_format.h"
#include "hostctl/status_format.h"
#include "hostctl/submission_format.h"
#include "hostctl/sweep_format.h"
#include "hostctl/sweep_progress.h"
#include "unit/api_messages.h"

using ds::hostctl::Json;

namespace {

// A comparison as daemon/compare/compare.cpp produces it: four configurations of the
// reference fio study, one of them with only failed runs, one unsafe.
Json realistic_compare() {
    return Json::parse(R"({
      "sweep_id": 7,
      "varying_axes": ["filesystem", "cache"],
      "metrics": ["read_iops", "read_bw_mib_s", "write_clat_p99_us"],
      "rows": [
        {"config_id": "ab12cd34ef56aa", "workload": "randrw",
         "settings": {"filesystem": "ext4", "cache": "none", "discard": true},
         "durability_risks": [],
         "runs": {"pending": 0, "running": 0, "succeeded": 3, "failed": 0, "cancelled": 0},
         "metrics": {
           "read_iops": {"n": 3, "mean": 256.4, "stddev": 12.31, "ci95_low": 225.8,
                         "ci95_high": 287.0, "min": 244.0, "max": 268.5},
           "read_bw_mib_s": {"n": 3, "mean": 1.0016, "stddev": 0.0482, "ci95_low": 0.882,
                             "ci95_high": 1.121, "min": 0.95, "max": 1.05},
           "write_clat_p99_us": {"n": 3, "mean": 183500.0, "stddev": 20412.5,
                                 "ci95_low": 132800.1, "ci95_high": 234199.9,
                                 "min": 160000, "max": 200000}}},
        {"config_id": "99ffee00112233", "workload": "randrw",
         "settings": {"filesystem": "btrfs:nodatacow", "cache": "unsafe", "discard": true},
         "durability_risks": ["cache=unsafe"],
         "runs": {"pending": 0, "running": 0, "succeeded": 2, "failed": 1, "cancelled": 0},
         "metrics": {
           "read_iops": {"n": 2, "mean": 845.25, "stddev": 102.7, "ci95_low": -77.5,
                         "ci95_high": 1768.0, "min": 772.6, "max": 917.9},
           "read_bw_mib_s": {"n": 2, "mean": 3.3019, "stddev": 0.4012, "ci95_low": -0.3,
                             "ci95_high": 6.9, "min": 3.0, "max": 3.6},
           "write_clat_p99_us": {"n": 2, "mean": 52000.0, "stddev": 0.0, "ci95_low": 52000.0,
                                 "ci95_high": 52000.0, "min": 52000, "max": 52000}}},
        {"config_id": "5555aaaabbbbcc", "workload": "randrw",
         "settings": {"filesystem": "btrfs", "cache": "none", "discard": true},
         "durability_risks": [],
         "runs": {"pending": 0, "running": 0, "succeeded": 1, "failed": 0, "cancelled": 0},
         "metrics": {
           "read_iops": {"n": 1, "mean": 812.5, "stddev": null, "ci95_low": null,
                         "ci95_high": null, "min": 812.5, "max": 812.5}}},
        {"config_id": "0000111122223", "workload": "randrw",
         "settings": {"filesystem": "xfs, \"special\"", "cache": "writeback", "discard": true},
         "durability_risks": [],
         "runs": {"pending": 0, "running": 0, "succeeded": 0, "failed": 3, "cancelled": 0},
         "metrics": {}}
      ]})");
}

}  // namespace

TEST_CASE("mean ± stddev keeps two significant digits of the spread", "[hostctl][format]") {
    using ds::hostctl::format_mean_stddev;
    CHECK(format_mean_stddev(1234.567, 45.6) == "1235 ± 46");
    CHECK(format_mean_stddev(3.3123, 0.1234) == "3.31 ± 0.12");
    CHECK(format_mean_stddev(1.0, 0.1) == "1.00 ± 0.10");
    CHECK(format_mean_stddev(845.25, 102.7) == "845 ± 103");
    CHECK(format_mean_stddev(183500, 20412.5) == "183500 ± 20412");           // integer digits stay
    CHECK(format_mean_stddev(0.000123, 0.0000045) == "0.000123 ± 0.000005");  // capped at 6
    CHECK(format_mean_stddev(-0.001, 0.2) == "0.00 ± 0.20");                  // no "-0.00"
    CHECK(format_mean_stddev(812.5, std::nullopt) == "812.5");                // one run: no spread
    CHECK(format_mean_stddev(3.30192, std::nullopt) == "3.302");
    CHECK(format_mean_stddev(52000, 0.0) == "52000 ± 0");
    CHECK(format_mean_stddev(0, std::nullopt) == "0");
}

TEST_CASE("display width counts code points, not bytes", "[hostctl][format]") {
    CHECK(ds::hostctl::display_width("1.00 ± 0.10") == 11);
    CHECK(ds::hostctl::display_width("") == 0);
    CHECK(ds::hostctl::display_width("ä€") == 2);
}

TEST_CASE("tables align columns and leave no trailing blanks", "[hostctl][format]") {
    using ds::hostctl::Align;
    ds::hostctl::Table table({{"name"}, {"value", Align::kRight}, {"note"}});
    table.add_row({"a", "1 ± 2", ""});
    table.add_row({"longer", "10", "x"});
    table.add_row({"short"});
    CHECK(table.render() ==
          "name    value  note\n"
          "a       1 ± 2\n"
          "longer     10  x\n"
          "short\n");
}

TEST_CASE("CSV fields are quoted only when needed", "[hostctl][format]") {
    using ds::hostctl::csv_field;
    CHECK(csv_field("ext4") == "ext4");
    CHECK(csv_field("barrier=0,data=writeback") == "\"barrier=0,data=writeback\"");
    CHECK(csv_field("say \"hi\"") == "\"say \"\"hi\"\"\"");
    CHECK(csv_field("two\nlines") == "\"two\nlines\"");
    CHECK(csv_field("") == "");
}

TEST_CASE("wide compare table (--all): varying settings, aligned spreads, n, risks",
          "[hostctl][format]") {
    // Columns in terminal cells; "±" lines up within each metric column.
    std::string expected =
        "sweep 7: mean ± stddev over n succeeded runs per configuration and workload\n"
        "filesystem       cache      workload    read_iops  read_bw_mib_s  write_clat_p99_us"
        "             n  !\n"
        "ext4             none       randrw      256 ± 12   1.002 ± 0.048     183500 ± 20412"
        "             3\n"
        "btrfs:nodatacow  unsafe     randrw      845 ± 103   3.30 ± 0.40       52000 ± 0    "
        "  2 (1 failed)  unsafe: cache=unsafe\n"
        "btrfs            none       randrw    812.5            -                  -         "
        "            1\n"
        "xfs, \"special\"   writeback  randrw        -            -                  -       "
        "   0 (3 failed)\n"
        "! = settings that can lose data on a power failure or crash\n";
    std::string table = ds::hostctl::format_compare_wide(
        ds::api::test::decoded<ds::api::CompareReply>(realistic_compare()));
    INFO(table);
    CHECK(table == expected);
}

TEST_CASE("compare table without results says so", "[hostctl][format]") {
    Json empty = {{"sweep_id", 3}, {"varying_axes", Json::array()}, {"rows", Json::array()}};
    CHECK(ds::hostctl::format_compare_table(ds::api::test::decoded<ds::api::CompareReply>(empty)) ==
          "sweep 3 has no results yet\n");
    CHECK(ds::hostctl::format_compare_wide(ds::api::test::decoded<ds::api::CompareReply>(empty)) ==
          "sweep 3 has no results yet\n");
    CHECK(ds::hostctl::format_compare_csv(ds::api::test::decoded<ds::api::CompareReply>(empty)) ==
          "sweep_id,config_id,workload,runs_succeeded,runs_failed,partition,compared_metric,"
          "vs_baseline_ratio,vs_baseline_ci95_low,vs_baseline_ci95_high,vs_baseline_p_value,"
          "vs_baseline_p_adjusted,vs_baseline_verdict,vs_host,durability_risks,"
          "durability_verdict,durability_safe,durability_crash_states,"
          "durability_states_with_losses,durability_max_lost,durability_mean_lost,"
          "durability_mount_failures,durability_fsck_failures,durability_recovery_failures\n");
}

TEST_CASE("compare table of a single configuration shows its id", "[hostctl][format]") {
    Json compare = Json::parse(R"({"sweep_id": 2, "varying_axes": [], "metrics": ["read_iops"],
        "rows": [{"config_id": "0123456789abcdef", "workload": "atis", "settings": {},
                  "durability_risks": null, "settings_error": "no longer parses",
                  "runs": {"succeeded": 2, "failed": 0},
                  "metrics": {"read_iops": {"n": 2, "mean": 10.0, "stddev": 1.0}}}]})");
    CHECK(
        ds::hostctl::format_compare_wide(ds::api::test::decoded<ds::api::CompareReply>(compare)) ==
        "sweep 2: mean ± stddev over n succeeded runs per configuration and workload\n"
        "config        workload   read_iops  n\n"
        "0123456789ab  atis      10.0 ± 1.0  2\n");
}

TEST_CASE("compare CSV has separate columns at full precision", "[hostctl][format]") {
    std::string csv = ds::hostctl::format_compare_csv(
        ds::api::test::decoded<ds::api::CompareReply>(realistic_compare()));
    INFO(csv);
    // Per metric: n, mean, median, stddev, cv, ci95_low, ci95_high, geomean;
    // then the partition and the comparison with the baseline.
    std::string header =
        "sweep_id,config_id,workload,filesystem,cache,runs_succeeded,runs_failed,"
        "read_iops_n,read_iops_mean,read_iops_median,read_iops_stddev,read_iops_cv,read_iops_ci95_"
        "low,read_iops_ci95_high,read_iops_geomean,"
        "read_bw_mib_s_n,read_bw_mib_s_mean,read_bw_mib_s_median,read_bw_mib_s_stddev,read_bw_mib_"
        "s_cv,read_bw_mib_s_ci95_low,read_bw_mib_s_ci95_high,read_bw_mib_s_geomean,"
        "write_clat_p99_us_n,write_clat_p99_us_mean,write_clat_p99_us_median,write_clat_p99_us_"
        "stddev,write_clat_p99_us_cv,write_clat_p99_us_ci95_low,write_clat_p99_us_ci95_high,write_"
        "clat_p99_us_geomean,"
        "partition,compared_metric,vs_baseline_ratio,vs_baseline_ci95_low,"
        "vs_baseline_ci95_high,vs_baseline_p_value,vs_baseline_p_adjusted,vs_baseline_verdict,"
        "vs_host,durability_risks,durability_verdict,durability_safe,durability_crash_states,"
        "durability_states_with_losses,durability_max_lost,durability_mean_lost,"
        "durability_mount_failures,durability_fsck_failures,durability_recovery_failures\n";
    CHECK(csv.substr(0, header.size()) == header);
    CHECK_THAT(csv, Catch::Contains("\n7,ab12cd34ef56aa,randrw,ext4,none,3,0,"
                                    "3,256.4,,12.31,,225.8,287.0,,"
                                    "3,1.0016,,0.0482,,0.882,1.121,,"
                                    "3,183500.0,,20412.5,,132800.1,234199.9,,,,,,,,,,,"
                                    ",,,,,,,,,\n"));
    CHECK_THAT(csv, Catch::Contains("\n7,99ffee00112233,randrw,btrfs:nodatacow,unsafe,2,1,"));
    CHECK_THAT(csv, Catch::Contains(",cache=unsafe,,,,,,,,,\n"));
    // One run: the spread and interval are empty, not zero.
    CHECK_THAT(csv, Catch::Contains("\n7,5555aaaabbbbcc,randrw,btrfs,none,1,0,1,812.5,,,,,,,0,,,,,,"
                                    ",,0,,,,,,,,,,,,,,,,,,,,,,,,,,\n"));
    // Failed only: n = 0 everywhere; the value with a comma and quotes is quoted.
    CHECK_THAT(csv, Catch::Contains("\n7,0000111122223,randrw,\"xfs, \"\"special\"\"\",writeback,"
                                    "0,3,0,,,,,,,,0,,,,,,,,0,,,,,,,,,,,,,,,,,,,,,,,,,,\n"));
    CHECK(std::count(csv.begin(), csv.end(), '\n') == 5);
}

TEST_CASE("submitted sweep lists run count and dropped combinations", "[hostctl][format]") {
    Json reply = Json::parse(R"({
      "sweep": {"id": 12, "name": "seed-fio-rbd", "status": "queued", "total_runs": 30},
      "varying_axes": ["filesystem", "cache", "bus"],
      "dropped": [
        {"settings": {"filesystem": "ext4", "cache": "none", "bus": "virtio-blk", "ssd": true},
         "reason": "ssd emulation needs a SCSI or SATA disk; virtio-blk has no rotation rate"},
        {"settings": {"filesystem": "btrfs", "cache": "unsafe", "bus": "virtio-blk"},
         "reason": "two\nlines"}]})");
    CHECK(ds::hostctl::format_submitted(ds::api::test::decoded<ds::api::SweepSubmitReply>(reply)) ==
          "sweep 12 \"seed-fio-rbd\" submitted: 30 runs, queued\n"
          "varying: filesystem, cache, bus\n"
          "dropped 2 combinations that cannot exist:\n"
          "  filesystem=ext4 cache=none bus=virtio-blk: ssd emulation needs a SCSI or SATA disk; "
          "virtio-blk has no rotation rate\n"
          "  filesystem=btrfs cache=unsafe bus=virtio-blk: two lines\n");

    Json nothing_dropped = {{"sweep", {{"id", 1}, {"name", "one"}, {"total_runs", 1}}},
                            {"dropped", Json::array()}};
    CHECK(ds::hostctl::format_submitted(ds::api::test::decoded<ds::api::SweepSubmitReply>(
              nothing_dropped)) == "sweep 1 \"one\" submitted: 1 run, queued\n");
}

TEST_CASE("sweep list and show", "[hostctl][format]") {
    Json list = Json::parse(R"({"sweeps": [
      {"id": 1, "name": "atis", "status": "succeeded", "total_runs": 6,
       "counts": {"pending": 0, "running": 0, "succeeded": 6, "failed": 0, "cancelled": 0},
       "created_at": "2026-11-29T20:00:00Z"},
      {"id": 12, "name": "seed-fio-rbd", "status": "running", "total_runs": 30,
       "counts": {"pending": 20, "running": 2, "succeeded": 7, "failed": 1, "cancelled": 0},
       "created_at": "2026-11-29T21:10:05Z"}]})");
    CHECK(ds::hostctl::format_sweep_list(ds::api::test::decoded<ds::api::SweepListReply>(list)) ==
          "id  name          status     done  failed  created\n"
          " 1  atis          succeeded   6/6       0  2026-11-29T20:00:00Z\n"
          "12  seed-fio-rbd  running    8/30       1  2026-11-29T21:10:05Z\n");
    CHECK(ds::hostctl::format_sweep_list(ds::api::test::decoded<ds::api::SweepListReply>(
              Json::parse(R"({"sweeps": []})"))) == "no sweeps\n");

    Json show = Json::parse(R"({
      "sweep": {"id": 12, "name": "seed-fio-rbd", "status": "running", "total_runs": 4,
                "counts": {"pending": 1, "running": 1, "succeeded": 1, "failed": 1,
                           "cancelled": 0},
                "eta_s": 125, "created_at": "2026-11-29T21:10:05Z",
                "varying_axes": ["filesystem"]},
      "runs": [
        {"id": 40, "sequence": 0, "config_id": "ab12", "workload_name": "randrw",
         "workload": {"kind": "fio"}, "repetition": 0, "status": "succeeded",
         "failure_reason": null, "config": {"filesystem": "ext4", "cache": "none"}},
        {"id": 41, "sequence": 1, "config_id": "cd34", "workload_name": "randrw",
         "repetition": 0, "status": "failed",
         "failure_reason": "agent: mkfs.btrfs exited 1:\nERROR: device busy",
         "config": {"filesystem": "btrfs", "cache": "unsafe"}},
        {"id": 42, "sequence": 2, "config_id": "ab12", "workload": "randrw",
         "repetition": 1, "status": "running",
         "settings": {"filesystem": "ext4", "cache": "none"}},
        {"id": 43, "sequence": 3, "config_id": "cd34", "workload_name": "randrw",
         "repetition": 1, "status": "pending",
         "config": {"filesystem": "btrfs", "cache": "unsafe"}}]})");
    CHECK(ds::hostctl::format_sweep_show(ds::api::test::decoded<ds::api::SweepShowReply>(show)) ==
          "sweep 12 \"seed-fio-rbd\": running, 2/4 runs done (1 succeeded, 1 failed, 0 "
          "cancelled), ETA 2m05s\n"
          "created 2026-11-29T21:10:05Z\n"
          "id  config                         workload  rep  status     reason\n"
          "40  filesystem=ext4 cache=none     randrw      0  succeeded\n"
          "41  filesystem=btrfs cache=unsafe  randrw      0  failed     agent: mkfs.btrfs exited "
          "1: ERROR: device busy\n"
          "42  filesystem=ext4 cache=none     randrw      1  running\n"
          "43  filesystem=btrfs cache=unsafe  randrw      1  pending\n");
}

TEST_CASE("run details: scalars, sections, bulky fields by size", "[hostctl][format]") {
    Json reply = Json::parse(R"({"run": {
      "id": 41, "sweep_id": 12, "sequence": 1, "repetition": 0, "config_id": "cd34",
      "workload_name": "randrw", "status": "succeeded", "failure_reason": null, "accel": "tcg",
      "timings": {"boot_s": 4.2, "bench_s": 10.5},
      "metrics": {"read_iops": 845.2},
      "applied_settings": {"hypervisor": {"cache": "unsafe"}, "verified": true},
      "raw_output": "{\"fio version\": \"fio-3.33\"}"}})");
    CHECK(ds::hostctl::format_run(ds::api::test::decoded<ds::api::RunShowReply>(reply)) ==
          "run 41 of sweep 12: succeeded\n"
          "  status:        succeeded\n"
          "  config_id:     cd34\n"
          "  workload_name: randrw\n"
          "  repetition:    0\n"
          "  sequence:      1\n"
          "  accel:         tcg\n"
          "applied_settings:\n"
          "  hypervisor.cache  unsafe\n"
          "  verified          true\n"
          "metrics:\n"
          "  read_iops  845.2\n"
          "timings:\n"
          "  bench_s  10.5\n"
          "  boot_s   4.2\n"
          "raw_output: 27 bytes (hostctl --json results show 41 prints it)\n");
}

TEST_CASE("run details: what verification did not check, as lines", "[hostctl][format]") {
    Json reply = Json::parse(R"J({"run": {
      "id": 41, "sweep_id": 12, "status": "failed",
      "applied_settings": {"hypervisor": {"cache": "unsafe"}, "verified": false,
        "verification": {"policy": "fail-unless-forbidden", "not_checked": [
          {"level": "QEMU (info block)", "reason": "the monitor answered 403 (Sys.Audit)",
           "forbidden": true, "fails_run": false},
          {"level": "QEMU", "reason": "query-block: no answer", "forbidden": false,
           "fails_run": true},
          {"level": "QEMU (info block)", "setting": "iops_limit",
           "reason": "in a throttle group", "forbidden": false, "fails_run": false}]}}}})J");
    CHECK(ds::hostctl::format_run(ds::api::test::decoded<ds::api::RunShowReply>(reply)) ==
          "run 41 of sweep 12: failed\n"
          "  status: failed\n"
          "verification (unchecked_levels = fail-unless-forbidden):\n"
          "  QEMU (info block): not checked: the monitor answered 403 (Sys.Audit) (not allowed by "
          "the host)\n"
          "  QEMU: not checked: query-block: no answer (failed the run)\n"
          "  QEMU (info block), iops_limit: not checked: in a throttle group\n"
          "applied_settings:\n"
          "  hypervisor.cache  unsafe\n"
          "  verified          false\n");
    reply["run"]["applied_settings"]["verification"]["not_checked"] = Json::array();
    CHECK_THAT(ds::hostctl::format_run(ds::api::test::decoded<ds::api::RunShowReply>(reply)),
               Catch::Contains("verification (unchecked_levels = fail-unless-forbidden): nothing "
                               "left unchecked\n"));
}

TEST_CASE("progress follows the event stream", "[hostctl][format]") {
    ds::hostctl::SweepProgress progress;
    progress.apply(ds::api::test::decoded<ds::api::SweepEvent>(
                       Json::parse(R"({"type":"snapshot","sweep_id":12,"status":"running",
        "total_runs":8,"counts":{"pending":6,"running":1,"succeeded":1,"failed":0,
        "cancelled":0}})")),
                   0);
    CHECK(ds::hostctl::format_progress_bar(progress, 8) ==
          "[#-------]  1/8 runs  1 ok  0 failed  1 running  ETA ?");

    // No eta_s from the daemon: estimated from what finished while watching.
    Json failed = Json::parse(R"({"type":"run_finished","run_id":5,"status":"failed",
        "message":"guest did not boot within 300 s","total_runs":8})");
    progress.apply(ds::api::test::decoded<ds::api::SweepEvent>(failed), 60);
    CHECK(progress.counts().failed == 1);
    CHECK(progress.counts().running == 0);
    REQUIRE(progress.eta_seconds());
    CHECK(*progress.eta_seconds() == Approx(360));
    CHECK(ds::hostctl::format_event_line(ds::api::test::decoded<ds::api::SweepEvent>(failed),
                                         progress) ==
          "run 5 failed: guest did not boot within 300 s (2/8 done, 1 failed, ETA 6m00s)");

    // The daemon's own numbers win when present.
    progress.apply(ds::api::test::decoded<ds::api::SweepEvent>(
                       Json::parse(R"({"type":"progress","counts":{"pending":4,"running":2,
        "succeeded":1,"failed":1,"cancelled":0},"eta_s":3725.4})")),
                   61);
    CHECK(ds::hostctl::format_progress_bar(progress, 8) ==
          "[##------]  2/8 runs  1 ok  1 failed  2 running  ETA 1h02m");
    CHECK(ds::hostctl::format_event_line(
              ds::api::test::decoded<ds::api::SweepEvent>(Json::parse(R"({"type":"keepalive"})")),
              progress) == "");
    CHECK(ds::hostctl::format_event_line(ds::api::test::decoded<ds::api::SweepEvent>(Json::parse(
                                             R"({"type":"run_progress","run_id":6,"phase":"booted",
                  "message":"agent connected"})")),
                                         progress) == "run 6: booted: agent connected");

    CHECK_FALSE(progress.finished());
    progress.apply(ds::api::test::decoded<ds::api::SweepEvent>(
                       Json::parse(R"({"type":"sweep_finished","status":"failed","counts":{
        "pending":0,"running":0,"succeeded":7,"failed":1,"cancelled":0}})")),
                   500);
    CHECK(progress.finished());
    CHECK_FALSE(progress.all_succeeded());
    CHECK(ds::hostctl::format_watch_summary(12, progress) ==
          "sweep 12 failed: 7 succeeded, 1 failed, 0 cancelled of 8 runs");
    CHECK(ds::hostctl::format_progress_bar(progress, 8) ==
          "[########]  8/8 runs  7 ok  1 failed  0 running");
}

TEST_CASE("watch summary: adaptive repetitions' extra rounds count in the total", "[format]") {
    ds::hostctl::SweepProgress progress;
    progress.apply(ds::api::test::decoded<ds::api::SweepEvent>(
                       Json::parse(R"({"type":"snapshot","status":"running","total_runs":12})")),
                   0);
    progress.apply(ds::api::test::decoded<ds::api::SweepEvent>(
                       Json::parse(R"({"type":"sweep_finished","status":"succeeded","counts":{
        "pending":0,"running":0,"succeeded":16,"failed":0,"cancelled":0}})")),
                   180);
    CHECK(ds::hostctl::format_watch_summary(1, progress) ==
          "sweep 1 succeeded: 16 succeeded, 0 failed, 0 cancelled of 16 runs");
    CHECK(progress.all_succeeded());
}

namespace {

// A compare reply for a mariadb-atis sweep, as daemon/compare/compare.cpp builds it.
ds::hostctl::Json atis_compare() {
    using ds::hostctl::Json;
    auto row = [](std::string fs, std::string workload, std::string options, Json metrics,
                  Json runs, Json risks) {
        return Json{
            {"config_id", "c-" + fs}, {"workload", workload},     {"workload_kind", "mariadb-atis"},
            {"filesystem", fs},       {"options", options},       {"runs", runs},
            {"metrics", metrics},     {"durability_risks", risks}};
    };
    auto total = [](double mean, Json stddev, int n) {
        return Json{{"total_s", {{"n", n}, {"mean", mean}, {"stddev", stddev}}}};
    };
    Json rows = Json::array(
        {row("ext4", "defaults", "defaults", total(23.4, 0.52, 3), {{"succeeded", 3}},
             {"cache=unsafe"}),
         row("btrfs+nocow", "defaults", "defaults", total(28.1, 1.26, 3), {{"succeeded", 3}},
             {"cache=unsafe"}),
         row("ext4", "dw0-nosync", "innodb_doublewrite=0 innodb_flush_method=nosync",
             total(15.0, nullptr, 1), {{"succeeded", 1}, {"failed", 1}, {"timed_out", 1}},
             {"cache=unsafe", "innodb_flush_method=nosync"}),
         row("btrfs", "dw0-nosync", "innodb_doublewrite=0 innodb_flush_method=nosync",
             Json::object(), {{"succeeded", 0}, {"timed_out", 3}},
             {"cache=unsafe", "innodb_flush_method=nosync"})});
    return Json{{"sweep_id", 7},
                {"rows", rows},
                {"workload_kinds", {"mariadb-atis"}},
                {"primary_metric", {{"name", "total_s"}, {"lower_is_better", true}}},
                {"ranking", {{{"row", 2}}, {{"row", 0}}, {{"row", 1}}}}};
}

}  // namespace

TEST_CASE("wide compare table of a mariadb-atis sweep has the seed study's shape", "[format]") {
    // Fastest first (the ranking), rows without a result last; no spread
    // for a single run; risks of the disk and of the server variables.
    const std::string expected =
        "sweep 7: sql-bench test-ATIS total time in seconds (lower is better), fastest first; "
        "mean ± sd (sample standard deviation) over n succeeded runs\n"
        "Filesystem   Options                                          Time (s)      n             "
        "             !\n"
        "ext4         innodb_doublewrite=0 innodb_flush_method=nosync  15.00         1 (1 failed, "
        "1 timed out)  unsafe: cache=unsafe, innodb_flush_method=nosync\n"
        "ext4         defaults                                         23.40 ± 0.52  3             "
        "             unsafe: cache=unsafe\n"
        "btrfs+nocow  defaults                                          28.1 ± 1.3   3             "
        "             unsafe: cache=unsafe\n"
        "btrfs        innodb_doublewrite=0 innodb_flush_method=nosync      -         0 (3 timed "
        "out)            unsafe: cache=unsafe, innodb_flush_method=nosync\n"
        "! = settings that can lose data on a power failure or crash\n";
    CHECK(ds::hostctl::format_compare_wide(
              ds::api::test::decoded<ds::api::CompareReply>(atis_compare())) == expected);
}

TEST_CASE("wide compare table of a sysbench-oltp sweep ranks by TPS", "[format]") {
    const Json compare = Json::parse(R"({
      "sweep_id": 8, "workload_kinds": ["sysbench-oltp"],
      "primary_metric": {"name": "tps", "lower_is_better": false},
      "ranking": [{"row": 1}, {"row": 0}],
      "rows": [
        {"config_id": "a", "workload": "oltp", "filesystem": "ext4", "options": "defaults",
         "runs": {"succeeded": 1}, "metrics": {"tps": {"n": 1, "mean": 100},
         "latency_p95_ms": {"n": 1, "mean": 12}, "latency_p99_ms": {"n": 1, "mean": 20}}},
        {"config_id": "b", "workload": "oltp", "filesystem": "xfs", "options": "defaults",
         "runs": {"succeeded": 1}, "metrics": {"tps": {"n": 1, "mean": 200},
         "latency_p95_ms": {"n": 1, "mean": 6}, "latency_p99_ms": {"n": 1, "mean": 9}}}]})");
    const std::string table =
        ds::hostctl::format_compare_wide(ds::api::test::decoded<ds::api::CompareReply>(compare));
    INFO(table);
    CHECK_THAT(table, Catch::StartsWith("sweep 8: sysbench OLTP transactions per second (higher "
                                        "is better), highest first; mean ± sd"));
    CHECK_THAT(table, Catch::Matches("(.|\n)*\nFilesystem +Options +TPS +p95 ms +p99 ms +n\n"
                                     "xfs +defaults +200(.|\n)*\next4 +defaults +100(.|\n)*"));
}

TEST_CASE("run counts include timed-out runs", "[format]") {
    const auto counts = ds::api::test::decoded<ds::api::RunCounts>(
        ds::hostctl::Json{{"succeeded", 2}, {"failed", 1}, {"timed_out", 3}, {"cancelled", 0}});
    CHECK(counts.timed_out == 3);
    CHECK(counts.done() == 6);
}

TEST_CASE("compare table: configurations as a share of their host baseline", "[hostctl][format]") {
    const Json compare = Json::parse(R"({
      "sweep_id": 4, "varying_axes": ["cache"], "metrics": ["read_iops"],
      "primary_metric": {"name": "read_iops", "lower_is_better": false},
      "rows": [
        {"config_id": "a1", "workload": "randrw", "host_baseline": false,
         "settings": {"hypervisor": "libvirt", "storage": "file", "cache": "none"},
         "runs": {"succeeded": 1}, "metrics": {"read_iops": {"n": 1, "mean": 250}},
         "vs_host": {"baseline_row": 1, "ratios": {"read_iops": 0.25}}},
        {"config_id": "b2", "workload": "randrw", "host_baseline": true,
         "settings": {"hypervisor": "host", "storage": "file"},
         "runs": {"succeeded": 1}, "metrics": {"read_iops": {"n": 1, "mean": 1000}}}]})");
    const std::string table =
        ds::hostctl::format_compare_wide(ds::api::test::decoded<ds::api::CompareReply>(compare));
    INFO(table);
    CHECK_THAT(table, Catch::Contains("vs host"));
    CHECK_THAT(table, Catch::Matches("(.|\n)*none +randrw +250.0 +25% +1\n(.|\n)*"));
    CHECK_THAT(table,
               Catch::Matches("(.|\n)*- +randrw \\(host, raw volume\\) +1000 +- +1\n(.|\n)*"));
    CHECK_THAT(table, Catch::Contains("vs host = the configuration's mean read_iops as a share"));
}

// A sweep with host_baseline = true as compare_sweep answers it: the guest
// rows ran under TCG (partition 0), the host baseline with acceleration
// "none" (partition 1), and only the JSON's rows link the two.
Json host_baseline_in_own_partition() {
    return Json::parse(R"({
      "sweep_id": 5, "varying_axes": ["filesystem"], "metrics": ["read_iops"],
      "primary_metric": {"name": "read_iops", "lower_is_better": false},
      "partitions": [{"accel": "tcg", "kernel": "6.1"}, {"accel": "none", "kernel": "6.1"}],
      "baseline": {"config_id": "g1", "chosen_by": "first configuration"},
      "rows": [
        {"config_id": "g1", "workload": "randrw", "host_baseline": false, "is_baseline": true,
         "partition": 0, "settings": {"hypervisor": "libvirt", "filesystem": "ext4"},
         "primary_metric": {"name": "read_iops", "lower_is_better": false},
         "runs": {"succeeded": 2}, "metrics": {"read_iops": {"n": 2, "mean": 670}},
         "vs_host": {"baseline_row": 2, "ratios": {"read_iops": 0.67}}},
        {"config_id": "g2", "workload": "randrw", "host_baseline": false, "is_baseline": false,
         "partition": 0, "settings": {"hypervisor": "libvirt", "filesystem": "btrfs"},
         "primary_metric": {"name": "read_iops", "lower_is_better": false},
         "runs": {"succeeded": 2}, "metrics": {"read_iops": {"n": 2, "mean": 250}},
         "vs_baseline": {"ratio": 0.373, "verdict": "not enough runs"},
         "vs_host": {"baseline_row": 2, "ratios": {"read_iops": 0.25}}},
        {"config_id": "h1", "workload": "randrw", "host_baseline": true, "is_baseline": false,
         "partition": 1, "settings": {"hypervisor": "host", "storage": "rbd"},
         "primary_metric": {"name": "read_iops", "lower_is_better": false},
         "runs": {"succeeded": 2}, "metrics": {"read_iops": {"n": 2, "mean": 1000}}}],
      "ranking": [{"row": 0}, {"row": 1}, {"row": 2}]})");
}

TEST_CASE("compare table and CSV show vs host when the baseline is in another partition",
          "[hostctl][format]") {
    const Json compare = host_baseline_in_own_partition();
    const std::string table =
        ds::hostctl::format_compare_table(ds::api::test::decoded<ds::api::CompareReply>(compare));
    INFO(table);
    CHECK_THAT(table, Catch::Contains("vs host"));
    CHECK_THAT(table, Catch::Matches("(.|\n)*\next4 +670\\.0 +67% +1 +baseline(.|\n)*"));
    CHECK_THAT(table,
               Catch::Matches("(.|\n)*\nbtrfs +250\\.0 +25% +0\\.373 +not enough runs(.|\n)*"));
    CHECK_THAT(table, Catch::Contains("vs host = the configuration's mean read_iops as a share"));

    const std::string csv =
        ds::hostctl::format_compare_csv(ds::api::test::decoded<ds::api::CompareReply>(compare));
    INFO(csv);
    CHECK_THAT(csv, Catch::Contains(",vs_baseline_verdict,vs_host,durability_risks,"));
    CHECK_THAT(csv, Catch::Contains(
                        "\n5,g1,randrw,ext4,2,0,2,670,,,,,,,\"tcg, kernel 6.1\",read_iops,,,,,,,"
                        "0.67,,,,,,,,,,\n"));
    CHECK_THAT(csv, Catch::Contains(",not enough runs,0.25,,,,,,,,,,\n"));
    // The host baseline itself has no share of itself.
    CHECK_THAT(csv, Catch::Contains("\n5,h1,randrw,,2,0,2,1000,,,,,,,\"none, kernel 6.1\","
                                    "read_iops,,,,,,,,,,,,,,,,,\n"));
}

namespace {

// GET /v1/status as daemon/daemon.cpp builds it (abridged).
Json realistic_status() {
    return Json::parse(R"({
      "api": 1, "version": "0.1.0",
      "instance": {"name": "aaaa1111", "resource_prefix": "disksweep-aaaa1111-",
                   "source": "generated"},
      "accel": "tcg", "accel_reason": "configured: tcg",
      "hypervisor": {"backend": "libvirt", "uri": "qemu:///system"},
      "versions": {"libvirt": "9.0.0", "qemu": "7.2.0"},
      "hosts": [{"name": "local", "kind": "libvirt", "parallel": 1, "accel": "tcg"}],
      "backends": {"storages": [{"name": "file", "produces": "file"}]},
      "guest_image": {"ready": true, "problem": ""},
      "config": {"image_dir": "/var/lib/disksweep/images",
                 "database": "/var/lib/disksweep/results.db", "max_parallel_runs": 1}
    })");
}

}  // namespace

TEST_CASE("status: the instance and its names' prefix come first", "[hostctl][format]") {
    CHECK(ds::hostctl::format_status(
              ds::api::test::decoded<ds::api::StatusReply>(realistic_status())) ==
          "disksweepd 0.1.0 (API 1)\n"
          "instance:     aaaa1111 (generated), guests and volumes named disksweep-aaaa1111-*\n"
          "acceleration: tcg (configured: tcg)\n"
          "hypervisor:   libvirt qemu:///system (libvirt 9.0.0, qemu 7.2.0)\n"
          "hosts:        local (libvirt, 1 at once, tcg)\n"
          "storages:     file (file disks)\n"
          "guest image:  /var/lib/disksweep/images\n"
          "database:     /var/lib/disksweep/results.db\n"
          "parallel:     1 run(s) at once\n");
    // A daemon from before instances sends none: no instance line.
    Json older = realistic_status();
    older.erase("instance");
    const std::string shown =
        ds::hostctl::format_status(ds::api::test::decoded<ds::api::StatusReply>(older));
    CHECK_THAT(shown, Catch::StartsWith("disksweepd 0.1.0 (API 1)\nacceleration: tcg"));
    CHECK_THAT(shown, !Catch::Contains("instance"));
}

TEST_CASE("status: each guest suite's images, ready with their kernel or what builds them",
          "[hostctl][format]") {
    Json status = realistic_status();
    status["guest_images"] = Json::parse(R"([
      {"suite": "bookworm", "variant": "", "ready": true, "kernel": "6.1.0-57-amd64"},
      {"suite": "bookworm", "variant": "mariadb", "ready": true, "kernel": "6.1.0-57-amd64"},
      {"suite": "trixie", "variant": "", "ready": true, "kernel": "6.12.57+deb13-amd64"},
      {"suite": "trixie", "variant": "mariadb", "ready": false,
       "problem": "guest image variant 'mariadb' (trixie) incomplete: /i/trixie/mariadb/vmlinuz is missing; build it with: scripts/build-guest-image.sh --suite trixie /i"}
    ])");
    const std::string shown =
        ds::hostctl::format_status(ds::api::test::decoded<ds::api::StatusReply>(status));
    CHECK_THAT(shown, Catch::Contains("guest image:  /var/lib/disksweep/images\n"
                                      "guest suites:\n"
                                      "  bookworm: base, mariadb (kernel 6.1.0-57-amd64)\n"
                                      "  trixie: base (kernel 6.12.57+deb13-amd64); not built: "
                                      "mariadb (build it with: scripts/build-guest-image.sh "
                                      "--suite trixie /i)\n"
                                      "database:"));
}

TEST_CASE("compare text: the golden datasets' time saved is one line, none without them",
          "[format][golden]") {
    const Json compare = {{"golden_datasets",
                           {{"runs", 4},
                            {"golden_volumes", 1},
                            {"avoided_s", 40.25},
                            {"preparation_s", 31.0},
                            {"clone_s", 0.5},
                            {"saved_s", 8.75}}}};
    CHECK(ds::hostctl::format_golden_datasets(
              ds::api::test::decoded<ds::api::CompareReply>(compare)) ==
          "golden datasets: 4 runs cloned from 1 golden volume(s); preparation avoided 40.2 s, "
          "golden preparation 31.0 s (its guest's boot included), clones 0.5 s: saved 8.8 s\n");
    CHECK(ds::hostctl::format_golden_datasets(
              ds::api::test::decoded<ds::api::CompareReply>(Json{{"golden_datasets", nullptr}}))
              .empty());
    CHECK(ds::hostctl::format_golden_datasets(
              ds::api::test::decoded<ds::api::CompareReply>(Json::object()))
              .empty());
}

TEST_CASE(
    "status: a host backed off after failures says until when and why, and the submission's "
    "warnings are shown",
    "[hostctl][format][placement]") {
    Json status = realistic_status();
    status["hosts"] = Json::parse(R"([
      {"name": "local", "kind": "libvirt", "parallel": 1, "accel": "tcg",
       "placement": {"busy": 1, "parallel": 1, "consecutive_failures": 0,
                     "backed_off_until": null, "last_failure": null}},
      {"name": "node2", "kind": "libvirt", "parallel": 1, "accel": "tcg",
       "placement": {"busy": 0, "parallel": 1, "consecutive_failures": 3,
                     "backed_off_until": "2026-01-01T00:01:00Z",
                     "last_failure": "agent did not connect within 20 s\nconsole"}},
      {"name": "node3", "kind": "libvirt", "parallel": 1, "accel": "tcg",
       "placement": {"busy": 0, "parallel": 1, "consecutive_failures": 1,
                     "backed_off_until": null, "last_failure": "cannot start domain"}}])");
    const std::string shown =
        ds::hostctl::format_status(ds::api::test::decoded<ds::api::StatusReply>(status));
    CHECK_THAT(shown, Catch::Contains("hosts:        local (libvirt, 1 at once, tcg), node2 "
                                      "(libvirt, 1 at once, tcg), node3 (libvirt, 1 at once, "
                                      "tcg)\n"
                                      "              node2: backed off until "
                                      "2026-01-01T00:01:00Z (3 failures in a row): agent did not "
                                      "connect within 20 s console\n"
                                      "              node3: (1 failure in a row): cannot start "
                                      "domain\n"
                                      "storages:"));

    const Json submitted = {{"sweep", {{"id", 1}, {"name", "one"}, {"total_runs", 4}}},
                            {"warnings", {"rounds may spread"}}};
    CHECK(ds::hostctl::format_submitted(
              ds::api::test::decoded<ds::api::SweepSubmitReply>(submitted)) ==
          "sweep 1 \"one\" submitted: 4 runs, queued\nwarning: rounds may spread\n");
}

TEST_CASE("status: an unreachable host says so with libvirt's reason", "[hostctl][format]") {
    Json status = realistic_status();
    status["hosts"] = Json::parse(R"([
      {"name": "local", "kind": "libvirt", "parallel": 1, "accel": "tcg",
       "connection": {"state": "connected", "reconnects": 0}},
      {"name": "node2", "kind": "libvirt", "parallel": 1, "accel": "tcg",
       "connection": {"state": "unreachable", "reconnects": 1,
                      "error": "host unreachable: libvirt: Connection refused"}}])");
    const std::string shown =
        ds::hostctl::format_status(ds::api::test::decoded<ds::api::StatusReply>(status));
    CHECK_THAT(shown, Catch::Contains("\n              node2: unreachable: host unreachable: "
                                      "libvirt: Connection refused\nstorages:"));
    CHECK_THAT(shown, !Catch::Contains("local: unreachable"));
}
