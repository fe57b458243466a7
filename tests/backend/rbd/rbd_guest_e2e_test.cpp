// Seed study B (issue 7 §6) on its real storage: config/sweeps/seed-fio-rbd.toml
// through the real disksweepd and hostctl, in real TCG guests whose data disk
// is an RBD image on the throwaway test Ceph (fixture rbd/ceph_up). Shortened
// for CI: one repetition, one cache mode, a 3 s fio job on 4 x 16 MiB, so six
// runs, one at a time.
//
// Under libvirt's embedded driver QEMU cannot be given a cephx user (no
// secret driver), so it is client.admin through the test Ceph's admin client
// config (docs/storage-rbd.md); the daemon's own rbd/ceph calls use the same.
#include <SQLiteCpp/SQLiteCpp.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "common/process.h"
#include "support/ceph/test_ceph.h"
#include "support/daemon_fixture.h"
#include "support/run_rows.h"
#include "support/skip.h"
#include "support/table_text.h"

using ds::Json;
using ds::test::DaemonFixture;
using ds::test::TestCeph;

namespace {

constexpr std::uint64_t kDiskBytes = 1ull << 30;  // disk_size = "1g" below
// The daemon's instance: every guest and volume it creates starts with
// kResourcePrefix (ds::ResourceNames, "disksweep-INSTANCE-").
constexpr const char* kInstance = "rbdguest";
constexpr const char* kResourcePrefix = "disksweep-rbdguest-";
// The one workload of seed-fio-rbd.toml.
constexpr const char* kWorkload = "randrw-4k-qd64";
const std::set<std::string> kSeedFilesystems = {"ext4",         "ext4:barrier=0,data=writeback",
                                                "btrfs",        "btrfs:nodatacow",
                                                "btrfs+single", "btrfs+single:nodatacow"};

// $DISKSWEEP_TEST_IMAGE_DIR, else the daemon's default; a skip when the base
// image is not there (scripts/build-guest-image.sh builds it).
std::string image_dir_or_skip() {
    const char* env = std::getenv("DISKSWEEP_TEST_IMAGE_DIR");
    const std::string dir = env && *env ? env : "/var/lib/disksweep/images";
    if (!std::filesystem::exists(dir + "/manifest.json")) {
        ds::test::skip_test("no guest image in " + dir + " (scripts/build-guest-image.sh)");
    }
    return dir;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

// Replaces every `from` in `text`; returns how many were replaced.
int replace_all(std::string& text, const std::string& from, const std::string& to) {
    int count = 0;
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
        ++count;
    }
    return count;
}

// The shipped seed-fio-rbd sweep, shortened for CI, on the test Ceph's pool.
std::string shortened_seed_spec(const TestCeph& ceph) {
    std::string spec =
        read_file(std::string(DISKSWEEP_SOURCE_DIR) + "/config/sweeps/seed-fio-rbd.toml");
    const std::pair<std::string, std::string> edits[] = {
        {"repetitions = 3", "repetitions = 1"},
        {"storage = \"rbd:disksweep\"", "storage = \"rbd:" + ceph.pool + "\""},
        {"disk_size = \"4g\"", "disk_size = \"1g\""},
        {"cache = [\"none\", \"unsafe\"]", "cache = \"none\""},
        {"size = \"256m\"", "size = \"16m\""},
        {"runtime = \"10s\"", "runtime = \"3s\""},
    };
    for (const auto& [from, to] : edits) {
        INFO("seed-fio-rbd.toml no longer has exactly one '" << from << "'");
        REQUIRE(replace_all(spec, from, to) == 1);
    }
    return spec;
}

// The daemon's storage line for the test Ceph, as client.admin (see the top).
std::string storage_line(const TestCeph& ceph) {
    return "rbd:" + ceph.pool + ",mon_host=" + ceph.mon_host + ",id=admin,conf=" + ceph.admin_conf;
}

using ds::test::RunRow;
using ds::test::runs_of_sweep;

std::string tail(const std::string& text, std::size_t bytes) {
    return text.size() <= bytes ? text : "..." + text.substr(text.size() - bytes);
}

// The runs that did not succeed, with their reasons, and the tails of
// hostctl's output and the daemon's log: what a failed check needs.
std::string sweep_failure_summary(const DaemonFixture& daemon,
                                  const ds::test::HostctlResult& submitted) {
    std::ostringstream summary;
    summary << "runs not succeeded:\n";
    for (const auto& run : runs_of_sweep(daemon.database(), 1)) {
        if (run.status == "succeeded") continue;
        summary << "  " << run.config["filesystem"].dump() << ": " << run.status << ": "
                << run.failure_reason.substr(0, 1500) << "\n";
    }
    summary << "hostctl stderr: " << submitted.err
            << "\nhostctl output (tail): " << tail(submitted.out, 1500)
            << "\ndaemon log (tail): " << tail(daemon.log(), 3000);
    return summary.str();
}

// The image names in the pool, as client.admin.
std::vector<std::string> images_in_pool(const TestCeph& ceph) {
    ds::RealProcessRunner runner;
    const std::vector<std::string> argv{"rbd", "--conf", ceph.admin_conf, "--id",     "admin",
                                        "ls",  "--pool", ceph.pool,       "--format", "json"};
    auto output = runner.run(argv, std::chrono::seconds(120));
    REQUIRE(output.ok());
    INFO(output->stderr_text);
    REQUIRE(output->exit_code == 0);
    return Json::parse(output->stdout_text).get<std::vector<std::string>>();
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// The per-run storage overhead, printed for the record (issue 7 asks for it).
void report_overhead(const std::vector<RunRow>& runs) {
    std::vector<double> provision, teardown;
    for (const auto& run : runs) {
        provision.push_back(run.timings.value("provision_s", -1.0));
        teardown.push_back(run.timings.value("teardown_s", -1.0));
    }
    std::cout << "rbd per-run overhead over " << runs.size() << " runs: provision_s median "
              << median(provision) << ", teardown_s median " << median(teardown) << std::endl;
}

void check_storage_record(const RunRow& run, const TestCeph& ceph) {
    CHECK(run.config["storage"] == "rbd");
    CHECK(run.config["storage_pool"] == ceph.pool);
    const Json& storage = run.applied["storage"];
    INFO(storage.dump(2));
    CHECK(storage["backend"] == "rbd:" + ceph.pool);
    CHECK(storage["source"]["kind"] == "rbd");
    CHECK(storage["source"]["pool"] == ceph.pool);
    CHECK(storage["source"]["image"] == run.volume_name);
    CHECK(run.volume_name.starts_with(kResourcePrefix));
    for (const char* when : {"before", "after"}) {
        const Json& state = storage[when];
        CHECK_FALSE(state.contains("errors"));
        CHECK(state.value("health", "").starts_with("HEALTH_"));
        CHECK(state.value("volume_provisioned_bytes", std::uint64_t{0}) == kDiskBytes);
    }
    // A fresh image holds nothing; after mkfs and fio it holds their writes.
    CHECK(storage["before"].value("volume_used_bytes", std::uint64_t{1}) == 0);
    CHECK(storage["after"].value("volume_used_bytes", std::uint64_t{0}) > 0);
}

// The baseline ran fio from the host through librbd, on its own image.
void check_host_baseline(const RunRow& run) {
    const Json& baseline = run.applied["host_baseline"];
    INFO(baseline.dump(2));
    const std::string command = baseline.value("job_command", "");
    CHECK(command.find("--ioengine=rbd") != std::string::npos);
    CHECK(command.find("--rbdname=" + run.volume_name) != std::string::npos);
    CHECK(command.find("--ioengine=libaio") == std::string::npos);
    // 4 jobs x 16 MiB fit in the 1 GiB image: a region each, all prefilled.
    CHECK(baseline["separate_regions"] == true);
    CHECK(baseline["prefill_bytes"] == 4 * (16u << 20));
}

void check_seed_disk_settings(const Json& config) {
    INFO(config.dump());
    CHECK(config["bus"] == "scsi-single");
    CHECK(config["cache"] == "none");
    CHECK(config["ssd"] == true);
    CHECK(config["discard"] == true);
    CHECK(config["iothread"] == true);
}

// The blank-separated cells of a line of hostctl's text table.
std::vector<std::string> cells_of(const std::string& line) {
    std::istringstream stream(line);
    std::vector<std::string> cells;
    for (std::string cell; stream >> cell;) cells.push_back(cell);
    return cells;
}

// `hostctl results compare 1`: one row per filesystem, each with its IOPS,
// in the JSON and in the text table.
void check_compare(const DaemonFixture& daemon) {
    auto compare_json = daemon.hostctl({"--json", "results", "compare", "1"});
    REQUIRE(compare_json.exit_code == 0);
    const Json table = Json::parse(compare_json.out);
    // The wide table (--all): every metric, and the share of the host baseline.
    auto compare = daemon.hostctl({"results", "compare", "1", "--all"});
    INFO(compare.out << compare.err);
    REQUIRE(compare.exit_code == 0);
    REQUIRE(table["rows"].size() == kSeedFilesystems.size() + 1);
    std::set<std::string> filesystems;
    for (const Json& row : table["rows"]) {
        INFO(row.dump());
        if (row["host_baseline"] == true) continue;
        // Every guest configuration as a share of the bare image's IOPS.
        CHECK(row["vs_host"]["ratios"]["read_iops"].get<double>() > 0);
        filesystems.insert(row["settings"]["filesystem"].dump());
        for (const char* metric : {"read_iops", "write_iops"}) {
            CHECK(row["metrics"][metric]["n"] == 1);
            CHECK(row["metrics"][metric]["mean"].get<double>() > 0);
        }
    }
    CHECK(filesystems.size() == kSeedFilesystems.size());
    // The text table: filesystem | workload | read_iops | write_iops | ...,
    // then a row per filesystem, as written in the spec.
    const auto header = cells_of(ds::test::table_row(compare.out, "filesystem", "workload"));
    REQUIRE(header.size() > 3);
    CHECK(header[2] == "read_iops");
    CHECK(header[3] == "write_iops");
    for (const auto& filesystem : kSeedFilesystems) {
        const auto row = cells_of(ds::test::table_row(compare.out, filesystem, kWorkload));
        INFO("row of " << filesystem);
        REQUIRE(row.size() > 3);
        CHECK(std::stod(row[2]) > 0);
        CHECK(std::stod(row[3]) > 0);
    }
    CHECK(compare.out.find("vs host") != std::string::npos);
    CHECK(compare.out.find(std::string(kWorkload) + " (host, raw volume)") != std::string::npos);
}

}  // namespace

TEST_CASE("seed study B runs on RBD in real guests and compares in the study's shape",
          "[rbd][guest]") {
    const TestCeph ceph = ds::test::test_ceph_or_skip();
    const std::string image_dir = image_dir_or_skip();
    const std::string spec = shortened_seed_spec(ceph);
    DaemonFixture daemon({"--image-dir", image_dir, "--accel", "tcg", "--boot-timeout", "120",
                          "--storage", storage_line(ceph), "--instance", kInstance});
    if (!daemon.ready()) FAIL("disksweepd did not start: " << daemon.log());
    const auto path = ds::test::write_temp_file("seed-fio-rbd-short.toml", spec);
    auto submitted =
        daemon.hostctl({"sweep", "submit", path, "--wait"}, std::chrono::seconds(1200));
    INFO(sweep_failure_summary(daemon, submitted));
    CHECK(submitted.exit_code == 0);

    const auto runs = runs_of_sweep(daemon.database(), 1);
    // A run per filesystem, and the host baseline on a bare image.
    REQUIRE(runs.size() == kSeedFilesystems.size() + 1);
    int baselines = 0;
    for (const auto& run : runs) {
        INFO(run.config.dump() << ": " << run.failure_reason);
        REQUIRE(run.status == "succeeded");
        check_storage_record(run, ceph);
        CHECK(run.metrics.at("read_iops") > 0);
        CHECK(run.metrics.at("write_iops") > 0);
        CHECK(run.timings.value("provision_s", 0.0) > 0);
        CHECK(run.timings.value("teardown_s", 0.0) > 0);
        if (run.config["hypervisor"] == "host") {
            ++baselines;
            check_host_baseline(run);
            continue;
        }
        CHECK(run.applied["verified"] == true);
        // Discard (on in the seed study) proven on Ceph: rbd du's used size
        // dropped after the guest's fstrim.
        const Json effect = run.applied.value("discard_effect", Json::object());
        CHECK(effect.value("checked", false));
        CHECK(effect.value("in_force", false));
        std::printf("%s: rbd du used %s bytes before fstrim, %s after\n",
                    run.config["filesystem"].dump().c_str(),
                    effect.value("allocated_before_bytes", Json()).dump().c_str(),
                    effect.value("allocated_after_bytes", Json()).dump().c_str());
        check_seed_disk_settings(run.config);
    }
    CHECK(baselines == 1);
    report_overhead(runs);
    check_compare(daemon);

    // Nothing left: no guest, and no image of this daemon in the pool.
    CHECK(ds::test::qemu_processes_mentioning(daemon.state_dir()).empty());
    for (const auto& image : images_in_pool(ceph)) CHECK_FALSE(image.starts_with(kResourcePrefix));
}
