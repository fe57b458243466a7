#include "daemon/durability/log_writes.h"

#include <catch2/catch.hpp>
#include <random>

#include "support/temp_dir.h"
#include "unit/daemon/durability/log_builder.h"

using ds::durability::LogIndex;
using ds::durability::read_log;
using ds::test::LogBuilder;
namespace log_format = ds::durability::log_format;

namespace {

// write 2 sectors at 8, flush, discard 4 at 100, write 1 at 0: the byte
// layout QEMU gives it (one header sector before each entry's data).
LogBuilder four_entries() {
    LogBuilder log;
    log.write(8, 2, 'a').flush().discard(100, 4).write(0, 1, 'b');
    return log;
}

std::string error_of(const std::string& path) {
    auto index = read_log(path);
    REQUIRE_FALSE(index.ok());
    return index.error().message;
}

}  // namespace

TEST_CASE("a well-formed log is indexed entry by entry", "[durability]") {
    ds::test::TempDir dir;
    four_entries().save(dir.file("log"));
    auto index = read_log(dir.file("log"));
    REQUIRE(index.ok());
    CHECK(index->sector_size == 512);
    CHECK(index->file_size == 4096);
    CHECK(index->uncounted_bytes == 0);
    REQUIRE(index->entries.size() == 4);
    const auto& e = index->entries;
    CHECK((e[0].sector == 8 && e[0].nr_sectors == 2 && e[0].flags == 0));
    CHECK((e[0].offset == 512 && e[0].data_offset == 1024 && e[0].data_bytes == 1024));
    CHECK(e[0].end_offset == 2048);
    CHECK((e[1].is_flush() && e[1].offset == 2048 && e[1].end_offset == 2560));
    CHECK_FALSE(e[1].changes_device());
    CHECK((e[2].is_discard() && e[2].data_bytes == 0 && e[2].end_offset == 3072));
    CHECK(e[2].changes_device());
    CHECK((e[3].offset == 3072 && e[3].data_offset == 3584 && e[3].end_offset == 4096));
}

TEST_CASE("the entries complete at a log size are those that end at or before it", "[durability]") {
    ds::test::TempDir dir;
    four_entries().save(dir.file("log"));
    auto index = read_log(dir.file("log"));
    REQUIRE(index.ok());
    CHECK(index->entries_complete_at(512) == 0);
    CHECK(index->entries_complete_at(2047) == 0);
    CHECK(index->entries_complete_at(2048) == 1);
    CHECK(index->entries_complete_at(3071) == 2);
    CHECK(index->entries_complete_at(4096) == 4);
    CHECK(index->entries_complete_at(1u << 30) == 4);
}

TEST_CASE("entries the super block does not count are left as uncounted bytes", "[durability]") {
    ds::test::TempDir dir;
    four_entries().save(dir.file("log"), 2);
    auto index = read_log(dir.file("log"));
    REQUIRE(index.ok());
    CHECK(index->entries.size() == 2);
    CHECK(index->uncounted_bytes == 4096 - 2560);
}

TEST_CASE("a truncated log names the entry and byte where it breaks", "[durability]") {
    ds::test::TempDir dir;
    const std::string whole = four_entries().bytes();
    SECTION("inside the last entry's data") {
        ds::test::save_bytes(dir.file("log"), whole.substr(0, whole.size() - 1));
        const std::string error = error_of(dir.file("log"));
        CHECK_THAT(error, Catch::Contains("log entry 3 at byte 3072"));
        CHECK_THAT(error, Catch::Contains("truncated"));
    }
    SECTION("inside the last entry's sector") {
        ds::test::save_bytes(dir.file("log"), whole.substr(0, 3072 + 100));
        CHECK_THAT(error_of(dir.file("log")), Catch::Contains("log entry 3 at byte 3072"));
    }
    SECTION("inside the super block") {
        ds::test::save_bytes(dir.file("log"), whole.substr(0, 20));
        CHECK_THAT(error_of(dir.file("log")), Catch::Contains("shorter than its super block"));
    }
    SECTION("empty (QEMU wrote nothing yet)") {
        ds::test::save_bytes(dir.file("log"), "");
        CHECK_THAT(error_of(dir.file("log")), Catch::Contains("is 0 bytes"));
    }
}

TEST_CASE("lying lengths are refused before anything is read or allocated for them",
          "[durability]") {
    ds::test::TempDir dir;
    LogBuilder log;
    SECTION("more data sectors than the file holds") {
        log.write(0, 1, 'x').entry(0, std::uint64_t{1} << 40, 0, 0);
        log.save(dir.file("log"));
        const std::string error = error_of(dir.file("log"));
        CHECK_THAT(error, Catch::Contains("log entry 1 at byte 1536"));
        CHECK_THAT(error, Catch::Contains("1099511627776 sectors of data"));
    }
    SECTION("a device range past 2^64 bytes") {
        log.entry(~std::uint64_t{0} / 1024, ~std::uint64_t{0} / 512, log_format::kFlagDiscard, 0);
        log.save(dir.file("log"));
        CHECK_THAT(error_of(dir.file("log")), Catch::Contains("log entry 0 at byte 512"));
        CHECK_THAT(error_of(dir.file("log")), Catch::Contains("overflows"));
    }
    SECTION("a data_len that disagrees with nr_sectors") {
        log.entry(0, 0, 0, 4096);
        log.save(dir.file("log"));
        CHECK_THAT(error_of(dir.file("log")), Catch::Contains("data_len 4096 disagrees"));
    }
    SECTION("a mark longer than its sector") {
        log.entry(0, 0, log_format::kFlagMark, 600);
        log.save(dir.file("log"));
        CHECK_THAT(error_of(dir.file("log")), Catch::Contains("mark of 600 bytes"));
    }
    SECTION("unknown flags") {
        log.entry(0, 0, 16, 0);
        log.save(dir.file("log"));
        CHECK_THAT(error_of(dir.file("log")), Catch::Contains("unknown flags 16"));
    }
}

TEST_CASE("a huge nr_entries is refused from the file's size", "[durability]") {
    ds::test::TempDir dir;
    four_entries().save(dir.file("log"), std::int64_t{1} << 60);
    const std::string error = error_of(dir.file("log"));
    CHECK_THAT(error, Catch::Contains("counts 1152921504606846976 entries"));
    CHECK_THAT(error, Catch::Contains("holds at most 7"));
}

TEST_CASE("a super block that is not a log's is refused", "[durability]") {
    ds::test::TempDir dir;
    std::string bytes = four_entries().bytes();
    SECTION("magic") {
        bytes[0] ^= 1;
        ds::test::save_bytes(dir.file("log"), bytes);
        CHECK_THAT(error_of(dir.file("log")), Catch::Contains("magic"));
    }
    SECTION("version") {
        LogBuilder::put(bytes, 8, 2, 8);
        ds::test::save_bytes(dir.file("log"), bytes);
        CHECK_THAT(error_of(dir.file("log")), Catch::Contains("unsupported version 2"));
    }
    SECTION("sector size not a power of two") {
        LogBuilder::put(bytes, 24, 1000, 4);
        ds::test::save_bytes(dir.file("log"), bytes);
        CHECK_THAT(error_of(dir.file("log")), Catch::Contains("invalid sector size 1000"));
    }
    SECTION("sector size too small for an entry") {
        LogBuilder::put(bytes, 24, 16, 4);
        ds::test::save_bytes(dir.file("log"), bytes);
        CHECK_THAT(error_of(dir.file("log")), Catch::Contains("invalid sector size 16"));
    }
}

TEST_CASE("a dm-log-writes mark's text is read from its entry sector", "[durability]") {
    ds::test::TempDir dir;
    LogBuilder log;
    log.entry(0, 0, log_format::kFlagMark, 5);
    std::string bytes = log.bytes();
    bytes.replace(512 + log_format::kEntryHeaderBytes, 5, "mkfs.");
    ds::test::save_bytes(dir.file("log"), bytes);
    auto index = read_log(dir.file("log"));
    REQUIRE(index.ok());
    CHECK(index->entries.at(0).mark == "mkfs.");
    CHECK_FALSE(index->entries.at(0).changes_device());
}

TEST_CASE("no corruption of a log crashes the reader", "[durability]") {
    ds::test::TempDir dir;
    const std::string whole = four_entries().bytes();
    std::mt19937_64 random(19);
    int refused = 0;
    for (int round = 0; round < 2000; ++round) {
        std::string bytes = whole;
        for (int flips = 0; flips < 4; ++flips) {
            // Header fields are where lies matter: flip bytes of the first
            // 40 bytes of one of the sectors.
            const std::size_t sector = random() % (bytes.size() / 512);
            bytes[sector * 512 + random() % 40] = static_cast<char>(random());
        }
        if (random() % 4 == 0) bytes.resize(random() % bytes.size());
        ds::test::save_bytes(dir.file("log"), bytes);
        auto index = read_log(dir.file("log"));
        if (!index.ok()) {
            ++refused;
            CHECK_THAT(index.error().message, Catch::StartsWith("write log: "));
            continue;
        }
        for (const auto& entry : index->entries) CHECK(entry.end_offset <= index->file_size);
    }
    CHECK(refused > 0);
}
