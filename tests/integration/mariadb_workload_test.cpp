// The MariaDB runners for real: mariadb-install-db, mariadbd, the client,
// test-ATIS (sql-bench) and sysbench from the host's packages
// (scripts/install-deps.sh installs them), with the datadir on ext4 on a loop
// device. sql-bench comes from $DISKSWEEP_SQL_BENCH_DIR or the cache of the
// mariadb image variant in $DISKSWEEP_TEST_IMAGE_DIR (scripts/test.sh builds
// it there). A test skips when a prerequisite is missing.
#include "guestagent/mariadb_workload.h"

#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/process.h"
#include "common/workload_output.h"
#include "daemon/durability/crash_verdict.h"
#include "guestagent/crash_check.h"
#include "guestagent/guest_system.h"
#include "guestagent/ledger_workload.h"
#include "guestagent/workload.h"
#include "support/loop_mount.h"
#include "support/skip.h"
#include "support/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ds::Json;
using ds::agent::WorkloadContext;

constexpr auto kToolTimeout = 60s;

// The newest prepared sql-bench in the mariadb image variant's cache under
// `image_dir`, or "" when there is none.
std::string newest_cached_sql_bench(const fs::path& image_dir) {
    std::error_code ec;
    std::string newest;
    for (const auto& entry : fs::directory_iterator(image_dir / "mariadb" / "cache", ec)) {
        const auto name = entry.path().filename().string();
        if (name.rfind("sqlbench-", 0) == 0 && fs::exists(entry.path() / "test-ATIS")) {
            newest = std::max(newest, entry.path().string());
        }
    }
    return newest;
}

// The sql-bench directory to use. Skips the test when neither variable says
// where to look; a test image dir without sql-bench is a failure, since
// scripts/test.sh builds the mariadb variant there.
std::string find_sql_bench() {
    if (const char* dir = std::getenv("DISKSWEEP_SQL_BENCH_DIR"); dir && *dir) return dir;
    const char* image_dir = std::getenv("DISKSWEEP_TEST_IMAGE_DIR");
    if (image_dir == nullptr || *image_dir == '\0') {
        ds::test::skip_test("DISKSWEEP_TEST_IMAGE_DIR not set (nor DISKSWEEP_SQL_BENCH_DIR)");
    }
    std::string found = newest_cached_sql_bench(image_dir);
    INFO("no sql-bench in " << image_dir << "/mariadb/cache: run scripts/build-guest-image.sh");
    REQUIRE(!found.empty());
    return found;
}

// Why this host cannot run the tests, or "" when it can.
std::string missing_prerequisite() {
    if (::geteuid() != 0) return "not root (loop devices, mount)";
    ds::RealProcessRunner runner;
    for (const char* tool : {"losetup", "mkfs.ext4", "mariadb-install-db", "mariadbd", "mariadb",
                             "mariadb-admin", "sysbench", "perl"}) {
        auto found = runner.run({"sh", "-c", std::string("command -v ") + tool}, 10s);
        if (!found.ok() || found->exit_code != 0) {
            return std::string(tool) + " not installed (scripts/install-deps.sh installs it)";
        }
    }
    auto dbd = runner.run({"perl", "-MDBD::MariaDB", "-e", "1"}, 10s);
    if (!dbd.ok() || dbd->exit_code != 0) return "Perl DBD::MariaDB missing (libdbd-mariadb-perl)";
    auto loop = runner.run({"losetup", "--find"}, 10s);
    if (!loop.ok() || loop->exit_code != 0) return "no free loop device";
    return {};
}

// Ends the test as skipped when this host cannot run it.
void skip_unless_prerequisites() {
    if (const std::string missing = missing_prerequisite(); !missing.empty()) {
        ds::test::skip_test("MariaDB integration test: " + missing);
    }
}

struct Setup {
    ds::test::TempDir dir;
    ds::RealProcessRunner runner;
    ds::test::LoopMount disk;
    std::vector<std::string> progress;
    WorkloadContext ctx{runner, "", "", 300s, {}};

    explicit Setup(std::uintmax_t disk_bytes = 600ull << 20, const std::string& fs_type = "ext4")
        : disk(dir.path(), disk_bytes, fs_type) {
        ctx.work_dir = disk.path();
        ctx.scratch_dir = (dir.path() / "scratch").string();
        fs::create_directories(ctx.scratch_dir);
        ctx.progress = [this](const std::string& message, double, std::optional<double>) {
            progress.push_back(message);
        };
    }
    // No mariadbd of this setup is left running.
    bool server_gone() const {
        std::ifstream pid_file(fs::path(ctx.scratch_dir) / "mariadb/mysqld.pid");
        long pid = 0;
        if (!(pid_file >> pid) || pid <= 1) return true;
        return ::kill(static_cast<pid_t>(pid), 0) != 0;
    }
};

// Points the runner at sql-bench (it reads DISKSWEEP_SQL_BENCH_DIR).
struct SqlBenchEnv {
    SqlBenchEnv() { ::setenv("DISKSWEEP_SQL_BENCH_DIR", find_sql_bench().c_str(), 1); }
};

}  // namespace

TEST_CASE("mariadb-atis for real: server variables verified, test-ATIS parsed", "[mariadb][loop]") {
    skip_unless_prerequisites();
    SqlBenchEnv env;
    Setup setup;
    const ds::Workload workload{
        "atis",
        "mariadb-atis",
        {{"server", {{"innodb_flush_log_at_trx_commit", 2}, {"innodb_doublewrite", false}}},
         {"loop_count", 5}},
        {},
        0};
    auto result = ds::agent::run_mariadb_atis(workload, setup.ctx);
    INFO((result.ok() ? "" : result.error().message));
    REQUIRE(result.ok());
    CHECK(setup.server_gone());
    CHECK(fs::exists(fs::path(setup.ctx.work_dir) / "mysql/ibdata1"));  // datadir on the disk
    const Json& shown = result->readback["server_variables"];
    CHECK(shown["innodb_flush_log_at_trx_commit"] == "2");
    CHECK(shown["innodb_doublewrite"] == "OFF");
    CHECK(shown.contains("innodb_flush_method"));
    CHECK_THAT(result->readback["server_version"].get<std::string>(), Catch::Contains("MariaDB"));

    auto metrics = ds::metrics_from_workload_output("mariadb-atis", result->output);
    INFO(result->output.dump());
    REQUIRE(metrics.ok());
    CHECK(metrics->at("total_s") > 0);
    CHECK(metrics->at("phase_insert_s") > 0);
    CHECK(metrics->at("estimated_phases") == 0);
    CHECK(metrics->count("phase_select_group_s") == 1);
    // wall_s is the runner's own clock around test-ATIS: at least its total
    CHECK(result->output["wall_s"].get<double>() >= metrics->at("total_s") * 0.95);
    bool saw_phase = false;
    for (const auto& message : setup.progress) {
        saw_phase = saw_phase || message.find("test-ATIS: ") == 0;
    }
    CHECK(saw_phase);
}

TEST_CASE("mariadb-atis for real: an unknown server variable fails with the server's [ERROR]",
          "[mariadb][loop]") {
    skip_unless_prerequisites();
    SqlBenchEnv env;
    Setup setup;
    const ds::Workload workload{
        "atis", "mariadb-atis", {{"server", {{"innodb_no_such_thing", 1}}}}, {}, 0};
    auto result = ds::agent::run_mariadb_atis(workload, setup.ctx);
    REQUIRE_FALSE(result.ok());
    INFO(result.error().message);
    CHECK(result.error().code == ds::errc::kAgent);
    CHECK_THAT(result.error().message, Catch::Contains("[ERROR]"));
    CHECK_THAT(result.error().message, Catch::Contains("innodb_no_such_thing"));
    CHECK(setup.server_gone());
}

TEST_CASE("mariadb-atis for real: the time limit stops test-ATIS and the server",
          "[mariadb][loop]") {
    skip_unless_prerequisites();
    SqlBenchEnv env;
    Setup setup;
    setup.ctx.time_limit = 8s;
    const ds::Workload workload{"atis", "mariadb-atis", {{"loop_count", 5000}}, {}, 0};
    const auto start = std::chrono::steady_clock::now();
    auto result = ds::agent::run_mariadb_atis(workload, setup.ctx);
    const auto took = std::chrono::steady_clock::now() - start;
    REQUIRE_FALSE(result.ok());
    INFO(result.error().message);
    CHECK(result.error().code == ds::errc::kTimeout);
    CHECK(took < 20s);
    CHECK(setup.server_gone());
}

TEST_CASE("sysbench-oltp for real: prepare, run, percentiles", "[mariadb][loop]") {
    skip_unless_prerequisites();
    Setup setup;
    const ds::Workload workload{
        "oltp",
        "sysbench-oltp",
        {{"table_size", 1000}, {"time", "2s"}, {"server", {{"innodb_flush_log_at_trx_commit", 2}}}},
        {},
        0};
    auto result = ds::agent::run_sysbench_oltp(workload, setup.ctx);
    INFO((result.ok() ? "" : result.error().message));
    REQUIRE(result.ok());
    CHECK(setup.server_gone());
    auto metrics = ds::metrics_from_workload_output("sysbench-oltp", result->output);
    INFO(result->output.dump());
    REQUIRE(metrics.ok());
    CHECK(metrics->at("tps") > 0);
    CHECK(metrics->at("qps") > metrics->at("tps"));
    CHECK(metrics->at("latency_p50_ms") <= metrics->at("latency_p95_ms"));
    CHECK(metrics->at("latency_p95_ms") <= metrics->at("latency_p99_ms"));
}

TEST_CASE("sysbench-oltp for real: a full filesystem says No space left on device",
          "[mariadb][loop]") {
    skip_unless_prerequisites();
    // 160 MB: the datadir (ib_logfile0 alone is 96 MB) fits, 400k rows do not.
    Setup setup(160ull << 20);
    const ds::Workload workload{"oltp", "sysbench-oltp", {{"table_size", 400000}}, {}, 0};
    auto result = ds::agent::run_sysbench_oltp(workload, setup.ctx);
    REQUIRE_FALSE(result.ok());
    INFO(result.error().message);
    CHECK(result.error().code == ds::errc::kIo);
    CHECK_THAT(result.error().message, Catch::Contains("No space left on device"));
    CHECK(setup.server_gone());
}

namespace {

// The ids the agent forwarded, in order.
struct AckRecorder {
    std::vector<long long> ids;
    void attach(WorkloadContext& ctx) {
        ctx.acknowledge = [this](long long id) { ids.push_back(id); };
    }
};

}  // namespace

TEST_CASE("ledger, file variant, for real: each record fsynced and acknowledged in order",
          "[ledger][loop]") {
    skip_unless_prerequisites();
    Setup setup;
    AckRecorder acks;
    acks.attach(setup.ctx);
    const ds::Workload workload{
        "ledger", "ledger", {{"variant", "file"}, {"records", 200}, {"record_size", "512"}}, {}, 0};
    auto result = ds::agent::run_ledger(workload, setup.ctx);
    INFO((result.ok() ? "" : result.error().message));
    REQUIRE(result.ok());
    REQUIRE(acks.ids.size() == 200);
    for (std::size_t i = 0; i < acks.ids.size(); ++i)
        REQUIRE(acks.ids[i] == static_cast<long long>(i) + 1);

    // The file holds record k at (k - 1) * 512, as a checker will read it.
    std::ifstream ledger(fs::path(setup.ctx.work_dir) / "ledger.dat", std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(ledger)), std::istreambuf_iterator<char>());
    REQUIRE(text.size() == 200u * 512u);
    CHECK(text.substr(199u * 512u, 512) == ds::agent::ledger_record(200, 512));
    CHECK(text.compare(0, 9, "ledger 1\n") == 0);

    auto metrics = ds::metrics_from_workload_output("ledger", result->output);
    INFO(result->output.dump());
    REQUIRE(metrics.ok());
    CHECK(metrics->at("acknowledged") == 200);
    CHECK(metrics->at("commits_per_s") > 0);
    CHECK(metrics->at("commit_p50_ms") <= metrics->at("commit_p99_ms"));
    CHECK(metrics->at("commit_p99_ms") <= metrics->at("commit_max_ms"));
}

TEST_CASE("ledger, database variant, for real: INSERT + COMMIT acknowledged one by one",
          "[ledger][mariadb][loop]") {
    skip_unless_prerequisites();
    Setup setup;
    AckRecorder acks;
    acks.attach(setup.ctx);
    const ds::Workload workload{"ledger",
                                "ledger",
                                {{"variant", "database"},
                                 {"records", 300},
                                 {"server", {{"innodb_flush_log_at_trx_commit", 1}}}},
                                {},
                                0};
    auto result = ds::agent::run_ledger(workload, setup.ctx);
    INFO((result.ok() ? "" : result.error().message));
    REQUIRE(result.ok());
    CHECK(setup.server_gone());
    REQUIRE(acks.ids.size() == 300);
    CHECK(acks.ids.back() == 300);
    CHECK(result->readback["server_variables"]["innodb_flush_log_at_trx_commit"] == "1");
    auto metrics = ds::metrics_from_workload_output("ledger", result->output);
    INFO(result->output.dump());
    REQUIRE(metrics.ok());
    CHECK(metrics->at("acknowledged") == 300);
    CHECK(metrics->at("commits_per_s") > 0);
    CHECK(result->output["variant"] == "database");
}

TEST_CASE("ledger, database variant, for real: `time` stops it early with what was acknowledged",
          "[ledger][mariadb][loop]") {
    skip_unless_prerequisites();
    Setup setup;
    AckRecorder acks;
    acks.attach(setup.ctx);
    const ds::Workload workload{
        "ledger", "ledger", {{"variant", "database"}, {"records", 1000000}, {"time", 2}}, {}, 0};
    auto result = ds::agent::run_ledger(workload, setup.ctx);
    INFO((result.ok() ? "" : result.error().message));
    REQUIRE(result.ok());
    CHECK(setup.server_gone());
    const long long acknowledged = result->output["acknowledged"].get<long long>();
    CHECK(acknowledged > 0);
    CHECK(acknowledged < 1000000);
    CHECK(static_cast<long long>(acks.ids.size()) == acknowledged);
}

namespace {

// The crash checker on a real image: ext4 on a loop device, filled by a
// ledger run and unmounted (a clean shutdown: the baseline every crash state
// is measured against), then checked as the checker guest checks it.
struct CheckedImage {
    CheckedImage() = default;
    explicit CheckedImage(const std::string& fs_type) : setup(600ull << 20, fs_type) {}

    Setup setup;
    ds::agent::RealGuestSystem system;

    Json fill_and_check(const ds::Workload& ledger) {
        auto ran = ds::agent::run_ledger(ledger, setup.ctx);
        INFO((ran.ok() ? "" : ran.error().message));
        REQUIRE(ran.ok());
        const std::string device = setup.disk.release_mount();
        const ds::agent::CrashCheckRequest request{device, "ext4",
                                                   (setup.dir.path() / "check").string(), ledger};
        auto report = ds::agent::check_crash_state(request, system, setup.ctx);
        INFO((report.ok() ? "" : report.error().message));
        REQUIRE(report.ok());
        return *report;
    }
};

}  // namespace

TEST_CASE("crash check for real: a cleanly unmounted file ledger keeps every record",
          "[ledger][durability][loop]") {
    skip_unless_prerequisites();
    CheckedImage image;
    const ds::Workload ledger{"l", "ledger", {{"records", 100}, {"record_size", 512}}, {}, 0};
    const Json report = image.fill_and_check(ledger);
    INFO(report.dump(2));
    CHECK(report["mounted"] == true);
    CHECK(report["fsck_after"]["clean"] == true);
    CHECK(report["ledger"]["present"] == Json{{1, 100}});
    CHECK(report["ledger"]["torn"] == 0);
}

TEST_CASE("crash check for real: MariaDB recovers the database ledger and lists its ids",
          "[ledger][durability][mariadb][loop]") {
    skip_unless_prerequisites();
    CheckedImage image;
    const ds::Workload ledger{"l", "ledger", {{"variant", "database"}, {"records", 50}}, {}, 0};
    const Json report = image.fill_and_check(ledger);
    INFO(report.dump(2));
    CHECK(report["mounted"] == true);
    CHECK(report["ledger"]["recovered"] == true);
    CHECK(report["ledger"]["present"] == Json{{1, 50}});
    CHECK(report["fsck_after"]["clean"] == true);
}

namespace {

// Writes `bytes` at `offset` of the (unmounted) device.
void overwrite(const std::string& device, std::uint64_t offset, const std::string& bytes) {
    std::fstream disk(device, std::ios::in | std::ios::out | std::ios::binary);
    REQUIRE(disk);
    disk.seekp(static_cast<std::streamoff>(offset));
    disk.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    disk.flush();
    REQUIRE(disk);
}

// A little-endian 32-bit field of ext4's primary superblock (at 1024).
std::uint32_t ext4_superblock_field(const std::string& device, std::uint64_t field) {
    std::ifstream disk(device, std::ios::binary);
    disk.seekg(static_cast<std::streamoff>(1024 + field));
    unsigned char bytes[4] = {};
    disk.read(reinterpret_cast<char*>(bytes), 4);
    REQUIRE(disk);
    return bytes[0] | bytes[1] << 8 | bytes[2] << 16 | static_cast<std::uint32_t>(bytes[3]) << 24;
}

// Checks the crash image on `device` as the checker guest does.
Json check_image(CheckedImage& image, const std::string& device, const std::string& fs_type,
                 const ds::Workload& ledger) {
    const ds::agent::CrashCheckRequest request{device, fs_type,
                                               (image.setup.dir.path() / "check").string(), ledger};
    auto report = ds::agent::check_crash_state(request, image.system, image.setup.ctx);
    INFO((report.ok() ? "" : report.error().message));
    REQUIRE(report.ok());
    return *report;
}

// The host's reading of `report`: {lost, lost after repair} of `acknowledged`.
std::pair<long long, long long> losses(const Json& report, long long acknowledged) {
    auto check = ds::parse_crash_check(report);
    INFO((check.ok() ? "" : check.error().message));
    REQUIRE(check.ok());
    const auto result = ds::crash_state_result(0, acknowledged, *check);
    return {result.lost, result.lost_after_repair};
}

}  // namespace

// ext4's primary superblock is at 1024; its backups stay, and e2fsck -y
// finds them ("Superblock invalid, trying backup blocks").
TEST_CASE("crash check for real: a wiped superblock does not mount, and e2fsck -y repairs it",
          "[ledger][durability][loop]") {
    skip_unless_prerequisites();
    CheckedImage image;
    const ds::Workload ledger{"l", "ledger", {{"records", 10}, {"record_size", 512}}, {}, 0};
    REQUIRE(ds::agent::run_ledger(ledger, image.setup.ctx).ok());
    const std::string device = image.setup.disk.release_mount();
    overwrite(device, 1024, std::string(1024, '\0'));
    const Json report = check_image(image, device, "ext4", ledger);
    INFO(report.dump(2));
    CHECK(report["mounted"] == false);
    CHECK(report["mount_error"].get<std::string>().size() > 0);
    CHECK(report["fsck_before"]["clean"] == false);
    const Json& repair = report["repair"];
    REQUIRE(repair["steps"].size() == 1);
    CHECK(repair["steps"][0]["command"] == "e2fsck -f -y " + device);
    CHECK(repair["steps"][0]["exit_code"].get<int>() < 4);  // corrected
    CHECK(repair["mounted"] == true);
    CHECK(report["ledger"]["present"] == Json{{1, 10}});
    CHECK(report["fsck_after"]["clean"] == true);
    CHECK(losses(report, 10) == std::pair<long long, long long>{10, 0});
}

// The "group descriptors corrupted": a descriptor's checksum
// (bg_checksum, at 0x1E of group 0's descriptor, in the block after the
// superblock's) that does not match; the kernel refuses to mount, e2fsck -y
// recomputes it.
TEST_CASE("crash check for real: a bad group descriptor checksum, and e2fsck -y repairs it",
          "[ledger][durability][loop]") {
    skip_unless_prerequisites();
    CheckedImage image;
    const ds::Workload ledger{"l", "ledger", {{"records", 300}, {"record_size", 512}}, {}, 0};
    REQUIRE(ds::agent::run_ledger(ledger, image.setup.ctx).ok());
    const std::string device = image.setup.disk.release_mount();
    const std::uint64_t first_data_block = ext4_superblock_field(device, 20);
    const std::uint64_t block_size = 1024ull << ext4_superblock_field(device, 24);
    overwrite(device, (first_data_block + 1) * block_size + 0x1E, "\xff\xff");
    const Json report = check_image(image, device, "ext4", ledger);
    INFO(report.dump(2));
    CHECK(report["mounted"] == false);
    CHECK(report["repair"]["steps"][0]["command"] == "e2fsck -f -y " + device);
    CHECK(report["repair"]["steps"][0]["exit_code"].get<int>() < 4);
    CHECK(report["repair"]["log_zeroed"] == false);
    CHECK(report["repair"]["mounted"] == true);
    CHECK(report["ledger"] == Json{{"present", {{1, 300}}}, {"torn", 0}});
    CHECK(losses(report, 300) == std::pair<long long, long long>{300, 0});
}

// xfs: a file system shut down with its log dirty (xfs_io's `shutdown`, no
// log flush: what a power cut leaves) and a broken primary superblock, so
// the mount that would replay the log fails. xfs_repair finds a secondary
// superblock, refuses the dirty log (exit 2), and -L zeroes it: what only
// the log held is gone, and the report says so.
TEST_CASE("crash check for real: xfs with a dirty log that does not mount, and xfs_repair -L",
          "[ledger][durability][loop]") {
    skip_unless_prerequisites();
    for (const char* tool : {"mkfs.xfs", "xfs_repair", "xfs_io"}) {
        auto found = ds::RealProcessRunner().run({"sh", "-c", std::string("command -v ") + tool},
                                                 kToolTimeout);
        if (!found.ok() || found->exit_code != 0)
            ds::test::skip_test(std::string(tool) + " not installed (xfsprogs)");
    }
    CheckedImage image("xfs");
    const ds::Workload ledger{"l", "ledger", {{"records", 50}, {"record_size", 512}}, {}, 0};
    REQUIRE(ds::agent::run_ledger(ledger, image.setup.ctx).ok());
    auto shutdown = image.setup.runner.run(
        {"xfs_io", "-x", "-c", "shutdown", image.setup.disk.path()}, kToolTimeout);
    REQUIRE(shutdown.ok());
    REQUIRE(shutdown->exit_code == 0);
    const std::string device = image.setup.disk.release_mount();
    overwrite(device, 0, "XFSX");  // the superblock's magic, "XFSB"
    const Json report = check_image(image, device, "xfs", ledger);
    INFO(report.dump(2));
    CHECK(report["mounted"] == false);
    const Json& repair = report["repair"];
    REQUIRE(repair["steps"].size() == 2);
    CHECK(repair["steps"][0]["command"] == "xfs_repair " + device);
    CHECK(repair["steps"][0]["exit_code"] == 2);
    CHECK(repair["steps"][1]["command"] == "xfs_repair -L " + device);
    CHECK(repair["steps"][1]["exit_code"] == 0);
    CHECK(repair["log_zeroed"] == true);
    CHECK(repair["mounted"] == true);
    REQUIRE(report.contains("ledger"));
    // Whatever the zeroed log took, the host counts it as lost after repair.
    const auto [lost, lost_after_repair] = losses(report, 50);
    CHECK(lost == 50);
    CHECK(lost_after_repair >= 0);
    CHECK(lost_after_repair <= 50);
}
