// The checker's scan of a ledger file and its fsck table (the integration
// tier runs the checker on real file systems).
#include "guestagent/crash_check.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <map>

#include "common/protocol.h"
#include "daemon/durability/crash_verdict.h"
#include "support/fakes/agent_fakes.h"
#include "support/temp_dir.h"

namespace ds::agent {
namespace {

// Writes records by their ids (0 = a zeroed slot, -1 = garbage).
std::string write_ledger(const test::TempDir& dir, const std::vector<long long>& slots,
                         std::uint64_t size) {
    const std::string path = dir.file("ledger.dat");
    std::ofstream out(path, std::ios::binary);
    for (long long id : slots) {
        if (id > 0) {
            out << ledger_record(id, size);
        } else {
            out << std::string(size, id == 0 ? '\0' : 'x');
        }
    }
    return path;
}

TEST_CASE("crash check: the ledger file's records found, zeroed and torn") {
    test::TempDir dir;
    const auto path = write_ledger(dir, {1, 2, 3, 0, 5, -1, 7}, 64);
    auto scan = scan_ledger_file(path, 64);
    REQUIRE(scan.ok());
    CHECK(scan->present == IdRanges{{1, 3}, {5, 5}, {7, 7}});
    CHECK(scan->torn == 1);
    CHECK(ranges_json(scan->present) == Json{{1, 3}, {5, 5}, {7, 7}});
}

TEST_CASE("crash check: a record in the wrong slot is not that record") {
    test::TempDir dir;
    // Record 3 written where record 2 belongs (a misdirected write).
    const auto path = write_ledger(dir, {1, 3, 3}, 64);
    auto scan = scan_ledger_file(path, 64);
    REQUIRE(scan.ok());
    CHECK(scan->present == IdRanges{{1, 1}, {3, 3}});
    CHECK(scan->torn == 1);
}

TEST_CASE("crash check: a missing ledger file is said so") {
    test::TempDir dir;
    CHECK(scan_ledger_file(dir.file("ledger.dat"), 64).error().code == errc::kNotFound);
}

TEST_CASE("crash check: every file system the agent formats has a read-only fsck") {
    for (const char* type : {"ext4", "xfs", "btrfs"}) {
        const ReadOnlyFsck* fsck = find_read_only_fsck(type);
        REQUIRE(fsck != nullptr);
        // Read only: each asks its tool to change nothing.
        const bool read_only =
            std::find(fsck->argv.begin(), fsck->argv.end(), "-n") != fsck->argv.end() ||
            std::find(fsck->argv.begin(), fsck->argv.end(), "--readonly") != fsck->argv.end();
        CHECK(read_only);
    }
    CHECK(find_read_only_fsck("vfat") == nullptr);
}

}  // namespace
}  // namespace ds::agent

namespace ds::agent {
namespace {

// The checker run on `device` (of `fs_type`, mounted at `mount_point`) for
// the file ledger of 32-byte records, its tools run by `runner`.
Result<Json> check_file_ledger(testing::FakeGuestTree& tree, testing::FakeProcessRunner& runner,
                               GuestSystem& system, const std::string& device,
                               const std::string& fs_type,
                               const std::filesystem::path& mount_point) {
    WorkloadContext ctx{runner,
                        "",
                        (tree.mnt() / "scratch").string(),
                        std::chrono::seconds(60),
                        {},
                        &real_clock(),
                        {},
                        DatasetMode::kFresh};
    Workload ledger{"ledger", "ledger", Json{{"variant", "file"}, {"record_size", 32}}};
    return check_crash_state(CrashCheckRequest{device, fs_type, mount_point.string(), ledger},
                             system, ctx);
}

}  // namespace

TEST_CASE("crash check: a report is bounded, so 16 of them always fit one result message") {
    testing::FakeGuestTree tree;
    testing::FakeProcessRunner runner;
    testing::FakeGuestSystem system{tree.proc()};
    // A ledger whose every other record is there: more ranges than a report
    // holds; and an fsck that prints a flood of control characters.
    const std::filesystem::path mount_point = tree.mnt() / "crash";
    std::vector<long long> slots;
    for (long long id = 1; id <= 2 * static_cast<long long>(kMaxReportedRanges) + 20; ++id)
        slots.push_back(id % 2 == 1 ? id : 0);
    std::string content;
    for (long long id : slots) content += id > 0 ? ledger_record(id, 32) : std::string(32, '\0');
    testing::write_text(mount_point / "ledger.dat", content);
    runner.script = [](const std::vector<std::string>& argv,
                       std::chrono::milliseconds) -> std::optional<Result<ProcessOutput>> {
        if (argv.front() != "e2fsck") return std::nullopt;
        ProcessOutput output;
        output.exit_code = 4;
        output.stdout_text = std::string(100000, '\x01') + "\n";
        return output;
    };
    auto report =
        check_file_ledger(tree, runner, system, (tree.dev() / "sdb").string(), "ext4", mount_point);
    REQUIRE(report.ok());
    const Json& present = (*report)["ledger"]["present"];
    CHECK(present.size() == kMaxReportedRanges);
    CHECK(present.back() == Json{2 * kMaxReportedRanges - 1, 2 * kMaxReportedRanges - 1});
    CHECK((*report)["ledger"]["present_truncated"] == true);
    const std::string fsck_output = (*report)["fsck_before"]["output"];
    CHECK(fsck_output.size() == kMaxReportTextBytes);

    // Sixteen of them, as a checker guest's result, go through the protocol
    // and the daemon's parser.
    Json states = Json::array();
    for (std::size_t i = 0; i < protocol::kMaxCheckDisks; ++i) states.push_back(*report);
    const std::string line = protocol::encode(
        protocol::kResult, Json{{"run_id", "r"}, {"output", {{"states", states}}}});
    INFO(line.size());
    CHECK(line.size() <= protocol::kMaxMessageBytes);
    auto decoded = protocol::decode(std::string_view(line).substr(0, line.size() - 1));
    INFO((decoded.ok() ? "" : decoded.error().message));
    REQUIRE(decoded.ok());
    auto checks = parse_crash_checks((*decoded)["output"], protocol::kMaxCheckDisks);
    REQUIRE(checks.ok());
    CHECK(checks->back().present.size() == kMaxReportedRanges);
}

}  // namespace ds::agent

namespace ds::agent {
namespace {

// A crash image that does not mount until `mounts_failing` mounts have
// failed ("Structure needs cleaning", as ext4 says of a damaged image).
class DamagedImageSystem : public testing::FakeGuestSystem {
  public:
    using FakeGuestSystem::FakeGuestSystem;
    Status mount(const std::string& device, const std::string& target, const std::string& fs_type,
                 const std::string& options) override {
        if (mounts_failing > 0) {
            --mounts_failing;
            mounts.push_back({device, target, fs_type, options});
            return make_error(errc::kIo, "mount " + device + ": Structure needs cleaning");
        }
        return FakeGuestSystem::mount(device, target, fs_type, options);
    }
    int mounts_failing = 1;
};

// One checker run on a fake image of `fs_type` holding ledger records 1..5,
// whose tools exit as `exit_codes` says (by "argv[0] argv[1]"; others 0).
struct RepairScenario {
    testing::FakeGuestTree tree;
    testing::FakeProcessRunner runner;
    DamagedImageSystem system{tree.proc()};
    std::map<std::string, int> exit_codes;
    std::string device = (tree.dev() / "sdb").string();

    Json check(const std::string& fs_type) {
        const std::filesystem::path mount_point = tree.mnt() / "crash";
        std::string content;
        for (long long id = 1; id <= 5; ++id) content += ledger_record(id, 32);
        testing::write_text(mount_point / "ledger.dat", content);
        runner.script = [this](const std::vector<std::string>& argv,
                               std::chrono::milliseconds) -> std::optional<Result<ProcessOutput>> {
            const auto code = exit_codes.find(argv[0] + " " + argv[1]);
            if (code == exit_codes.end()) return std::nullopt;
            if (code->second < 0) return make_error(errc::kNotFound, "cannot run " + argv[0]);
            ProcessOutput output;
            output.exit_code = code->second;
            return output;
        };
        auto report = check_file_ledger(tree, runner, system, device, fs_type, mount_point);
        REQUIRE(report.ok());
        return *report;
    }
    // The commands run other than the read-only fscks before and after.
    std::vector<std::string> repair_commands() const {
        std::vector<std::string> run;
        for (const auto& argv : runner.commands()) run.push_back(describe_command(argv));
        REQUIRE(run.size() >= 2);
        return {run.begin() + 1, run.end() - 1};
    }
};

using Commands = std::vector<std::string>;

TEST_CASE("crash repair: ext4 that does not mount gets e2fsck -f -y, then is counted") {
    RepairScenario scenario;
    scenario.exit_codes["e2fsck -f"] = 1;  // "errors corrected"
    const Json report = scenario.check("ext4");
    INFO(report.dump(2));
    CHECK(scenario.repair_commands() == Commands{"e2fsck -f -y " + scenario.device});
    CHECK(report["mounted"] == false);  // the first mount, as the crash left it
    CHECK(report["mount_error"] == "mount " + scenario.device + ": Structure needs cleaning");
    const Json& repair = report["repair"];
    CHECK(repair["steps"] ==
          Json{{{"command", "e2fsck -f -y " + scenario.device}, {"exit_code", 1}, {"output", ""}}});
    CHECK(repair["mounted"] == true);
    CHECK(repair["log_zeroed"] == false);
    CHECK_FALSE(repair.contains("problem"));
    CHECK(report["ledger"] == Json{{"present", {{1, 5}}}, {"torn", 0}});
    CHECK(scenario.system.mounts.size() == 2);
    CHECK(scenario.system.unmounts.size() == 1);

    // The host reads it as "did not mount" and, after repair, nothing lost.
    auto check = parse_crash_check(report);
    REQUIRE(check.ok());
    CHECK(crash_state_result(0, 5, *check).lost == 5);
    CHECK(crash_state_result(0, 5, *check).lost_after_repair == 0);
}

TEST_CASE("crash repair: errors e2fsck leaves, and a mount that still fails, are said") {
    RepairScenario scenario;
    scenario.system.mounts_failing = 2;
    scenario.exit_codes["e2fsck -f"] = 4;  // "errors left uncorrected"
    const Json report = scenario.check("ext4");
    INFO(report.dump(2));
    CHECK(report["repair"]["steps"][0]["exit_code"] == 4);
    CHECK(report["repair"]["mounted"] == false);
    CHECK(report["repair"]["problem"] == "mount " + scenario.device + ": Structure needs cleaning");
    CHECK_FALSE(report.contains("ledger"));
    CHECK(scenario.system.unmounts.empty());
    CHECK(report.contains("fsck_after"));
}

TEST_CASE("crash repair: a state that mounts is not repaired") {
    RepairScenario scenario;
    scenario.system.mounts_failing = 0;
    const Json report = scenario.check("ext4");
    CHECK(report["mounted"] == true);
    CHECK_FALSE(report.contains("repair"));
    CHECK(scenario.repair_commands().empty());
}

TEST_CASE("crash repair: xfs_repair, and -L only when it refuses a dirty log") {
    SECTION("a dirty log: -L zeroes it, no mount in between") {
        RepairScenario scenario;
        scenario.exit_codes["xfs_repair " + scenario.device] = 2;
        const Json report = scenario.check("xfs");
        INFO(report.dump(2));
        CHECK(scenario.repair_commands() ==
              Commands{"xfs_repair " + scenario.device, "xfs_repair -L " + scenario.device});
        CHECK(scenario.system.mounts.size() == 2);
        CHECK(report["repair"]["log_zeroed"] == true);
        CHECK(report["repair"]["mounted"] == true);
        CHECK(report["ledger"]["present"] == Json{{1, 5}});
    }
    SECTION("xfs_repair fixes it: the log stays") {
        RepairScenario scenario;
        const Json report = scenario.check("xfs");
        CHECK(scenario.repair_commands() == Commands{"xfs_repair " + scenario.device});
        CHECK(report["repair"]["log_zeroed"] == false);
        CHECK(report["repair"]["mounted"] == true);
    }
    SECTION("xfs_repair fails otherwise: no -L, the mount is tried") {
        RepairScenario scenario;
        scenario.system.mounts_failing = 2;
        scenario.exit_codes["xfs_repair " + scenario.device] = 1;
        const Json report = scenario.check("xfs");
        CHECK(scenario.repair_commands() == Commands{"xfs_repair " + scenario.device});
        CHECK(report["repair"]["mounted"] == false);
    }
}

TEST_CASE("crash repair: btrfs gets btrfs rescue, never check --repair") {
    SECTION("zero-log is enough") {
        RepairScenario scenario;
        const Json report = scenario.check("btrfs");
        CHECK(scenario.repair_commands() == Commands{"btrfs rescue zero-log " + scenario.device});
        CHECK(report["repair"]["log_zeroed"] == true);
        CHECK(report["repair"]["mounted"] == true);
    }
    SECTION("still no mount: super-recover, then mounted") {
        RepairScenario scenario;
        scenario.system.mounts_failing = 2;
        const Json report = scenario.check("btrfs");
        CHECK(scenario.repair_commands() ==
              Commands{"btrfs rescue zero-log " + scenario.device,
                       "btrfs rescue super-recover -y " + scenario.device});
        CHECK(scenario.system.mounts.size() == 3);
        CHECK(report["repair"]["mounted"] == true);
        CHECK(report["ledger"]["present"] == Json{{1, 5}});
    }
    SECTION("nothing helps") {
        RepairScenario scenario;
        scenario.system.mounts_failing = 3;
        const Json report = scenario.check("btrfs");
        CHECK(report["repair"]["steps"].size() == 2);
        CHECK(report["repair"]["mounted"] == false);
        CHECK_FALSE(report.contains("ledger"));
    }
}

TEST_CASE("crash repair: a repair tool that cannot run ends the repair, said so") {
    RepairScenario scenario;
    scenario.exit_codes["e2fsck -f"] = -1;
    const Json report = scenario.check("ext4");
    INFO(report.dump(2));
    CHECK(report["repair"]["steps"] ==
          Json{{{"command", "e2fsck -f -y " + scenario.device}, {"error", "cannot run e2fsck"}}});
    CHECK(report["repair"]["mounted"] == false);
    CHECK(report["repair"]["problem"] == "cannot run e2fsck");
    CHECK(scenario.system.mounts.size() == 1);
    auto check = parse_crash_check(report);
    REQUIRE(check.ok());
    CHECK(check->repair.exit_code == -1);
}

TEST_CASE("crash repair: every file system the agent formats has a sequence the report fits") {
    for (const char* type : {"ext4", "xfs", "btrfs"}) {
        const RepairSequence* sequence = find_repair_sequence(type);
        REQUIRE(sequence != nullptr);
        CHECK(sequence->steps.size() <= kMaxRepairSteps);
        CHECK(kMaxRepairSteps <= kMaxCheckRepairSteps);  // the host takes what the agent sends
        for (const RepairStep& step : sequence->steps) {
            // btrfs-check(8): --repair is for when a developer advises it.
            CHECK(std::find(step.argv.begin(), step.argv.end(), "--repair") == step.argv.end());
        }
    }
    CHECK(find_repair_sequence("vfat") == nullptr);
}

}  // namespace
}  // namespace ds::agent
