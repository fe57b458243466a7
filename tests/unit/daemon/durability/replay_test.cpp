#include "daemon/durability/replay.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "support/temp_dir.h"
#include "unit/daemon/durability/log_builder.h"

using namespace ds::durability;
using ds::test::LogBuilder;

namespace {

std::string contents(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// A 64 KiB volume of 'o' bytes with a hole in its second half.
void make_volume(const std::string& path) {
    std::ofstream(path, std::ios::binary) << std::string(32768, 'o');
    std::filesystem::resize_file(path, 65536);
}

std::uint64_t allocated_bytes(const std::string& path) {
    struct stat info {};
    REQUIRE(::stat(path.c_str(), &info) == 0);
    return static_cast<std::uint64_t>(info.st_blocks) * 512;
}

}  // namespace

TEST_CASE("a clone has the source's bytes and keeps its holes", "[durability]") {
    ds::test::TempDir dir;
    make_volume(dir.file("volume"));
    auto method = clone_image(dir.file("volume"), dir.file("clone"));
    REQUIRE(method.ok());
    CHECK(contents(dir.file("clone")) == contents(dir.file("volume")));
    // Either way the hole in the second half is not copied.
    CHECK(allocated_bytes(dir.file("clone")) <= allocated_bytes(dir.file("volume")));
}

TEST_CASE("replaying entries writes their data and punches their discards", "[durability]") {
    ds::test::TempDir dir;
    make_volume(dir.file("volume"));
    LogBuilder log;
    log.write(2, 2, 'a').flush().discard(0, 1).write(70, 1, 'b');
    log.save(dir.file("log"));
    auto index = read_log(dir.file("log"));
    REQUIRE(index.ok());
    REQUIRE(clone_image(dir.file("volume"), dir.file("image")).ok());

    SECTION("all entries") {
        REQUIRE(apply_entries(*index, dir.file("log"), dir.file("image"), first_entries(4), 65536)
                    .ok());
        std::string expected = contents(dir.file("volume"));
        expected.replace(1024, 1024, std::string(1024, 'a'));
        expected.replace(0, 512, std::string(512, '\0'));
        expected.replace(70 * 512, 512, std::string(512, 'b'));
        CHECK(contents(dir.file("image")) == expected);
    }
    SECTION("a chosen subset, the others untouched") {
        const std::vector<std::size_t> only_last{3};
        REQUIRE(apply_entries(*index, dir.file("log"), dir.file("image"), only_last, 65536).ok());
        std::string expected = contents(dir.file("volume"));
        expected.replace(70 * 512, 512, std::string(512, 'b'));
        CHECK(contents(dir.file("image")) == expected);
    }
}

TEST_CASE("an entry past the image's limit is refused before anything is written", "[durability]") {
    ds::test::TempDir dir;
    make_volume(dir.file("volume"));
    LogBuilder log;
    log.write(0, 1, 'a').write(128, 1, 'z');  // sector 128 = byte 65536, the end
    log.save(dir.file("log"));
    auto index = read_log(dir.file("log"));
    REQUIRE(index.ok());
    REQUIRE(clone_image(dir.file("volume"), dir.file("image")).ok());
    auto status =
        apply_entries(*index, dir.file("log"), dir.file("image"), first_entries(2), 65536);
    REQUIRE_FALSE(status.ok());
    CHECK_THAT(status.error().message, Catch::Contains("log entry 1 at byte 1536"));
    CHECK_THAT(status.error().message, Catch::Contains("past its limit 65536"));
    CHECK(contents(dir.file("image")) == contents(dir.file("volume")));
}

TEST_CASE("an entry list out of order or out of the log is refused", "[durability]") {
    ds::test::TempDir dir;
    make_volume(dir.file("volume"));
    LogBuilder log;
    log.write(0, 1, 'a').write(1, 1, 'b');
    log.save(dir.file("log"));
    auto index = read_log(dir.file("log"));
    REQUIRE(index.ok());
    const std::vector<std::size_t> backwards{1, 0};
    const std::vector<std::size_t> beyond{0, 2};
    CHECK_FALSE(apply_entries(*index, dir.file("log"), dir.file("volume"), backwards, 65536).ok());
    CHECK_FALSE(apply_entries(*index, dir.file("log"), dir.file("volume"), beyond, 65536).ok());
}

TEST_CASE("a crash image is the pre-run volume with the chosen entries, the volume untouched",
          "[durability]") {
    ds::test::TempDir dir;
    make_volume(dir.file("volume"));
    const std::string before = contents(dir.file("volume"));
    LogBuilder log;
    log.write(0, 1, 'a').flush().write(1, 1, 'b');
    log.save(dir.file("log"));
    auto index = read_log(dir.file("log"));
    REQUIRE(index.ok());
    const std::vector<std::size_t> up_to_flush{0, 1};
    auto method = build_crash_image(dir.file("volume"), *index, dir.file("log"), up_to_flush,
                                    dir.file("crash"), 65536);
    REQUIRE(method.ok());
    std::string expected = before;
    expected.replace(0, 512, std::string(512, 'a'));
    CHECK(contents(dir.file("crash")) == expected);
    CHECK(contents(dir.file("volume")) == before);
    CHECK_FALSE(build_crash_image(dir.file("missing"), *index, dir.file("log"), up_to_flush,
                                  dir.file("crash2"), 65536)
                    .ok());
}
