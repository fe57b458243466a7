// The checker's scan of a ledger file and its fsck table (the integration
// tier runs the checker on real file systems).
#include "guestagent/crash_check.h"

#include <catch2/catch.hpp>
#include <fstream>

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
