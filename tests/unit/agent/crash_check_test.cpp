// The checker's scan of a ledger file and its fsck table (the integration
// tier runs the checker on real file systems).
#include "guestagent/crash_check.h"

#include <catch2/catch.hpp>
#include <fstream>

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
    WorkloadContext ctx{runner,
                        "",
                        (tree.mnt() / "scratch").string(),
                        std::chrono::seconds(60),
                        {},
                        &real_clock(),
                        {},
                        DatasetMode::kFresh};
    Workload ledger{"ledger", "ledger", Json{{"variant", "file"}, {"record_size", 32}}};
    auto report = check_crash_state(
        CrashCheckRequest{(tree.dev() / "sdb").string(), "ext4", mount_point.string(), ledger},
        system, ctx);
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
