// Golden volumes on file storage: a clone has the golden's content and size,
// its holes stay holes (a sparse copy on a file system without reflinks, as
// the test host's ext4; a reflink where the file system has them), the
// method is said, and a failed clone leaves no file behind.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "daemon/backends/storage/file/file_storage.h"
#include "support/temp_dir.h"

namespace ds {
namespace {

constexpr std::uint64_t kMiB = 1u << 20;

// A 64 MiB sparse file with `text` written at 1 MiB and at 40 MiB.
void write_golden(const std::string& path, const std::string& text) {
    std::ofstream(path).close();
    std::filesystem::resize_file(path, 64 * kMiB);
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    for (std::uint64_t offset : {1 * kMiB, 40 * kMiB}) {
        file.seekp(static_cast<std::streamoff>(offset));
        file << text;
    }
}

std::string read_at(const std::string& path, std::uint64_t offset, std::size_t size) {
    std::ifstream file(path, std::ios::binary);
    file.seekg(static_cast<std::streamoff>(offset));
    std::string text(size, '\0');
    file.read(text.data(), static_cast<std::streamsize>(size));
    return text;
}

std::uint64_t allocated(const std::string& path) {
    struct stat info {};
    REQUIRE(::stat(path.c_str(), &info) == 0);
    return static_cast<std::uint64_t>(info.st_blocks) * 512u;
}

StorageConfig raw_config() {
    StorageConfig config;
    config.disk_size_bytes = 64 * kMiB;
    return config;
}

}  // namespace

TEST_CASE("file storage: a clone of a golden volume has its data and its holes",
          "[storage][golden]") {
    test::TempDir dir;
    FileStorage storage(dir.path().string(), nullptr, FileClonePolicy::kSparseCopyOnly);
    const std::string golden = dir.path().string() + "/g.raw";
    write_golden(golden, "prepared dataset");
    auto cloned = storage.clone_volume("g", "run1", raw_config());
    REQUIRE(cloned.ok());
    CHECK(cloned->method == "sparse-copy");
    const std::string path = dir.path().string() + "/run1.raw";
    CHECK(std::get<FileDisk>(cloned->volume.source).path == path);
    CHECK(std::filesystem::file_size(path) == 64 * kMiB);
    CHECK(read_at(path, 1 * kMiB, 16) == "prepared dataset");
    CHECK(read_at(path, 40 * kMiB, 16) == "prepared dataset");
    CHECK(read_at(path, 20 * kMiB, 4) == std::string(4, '\0'));
    // Only the two written blocks are copied: the holes stay holes.
    CHECK(allocated(path) <= allocated(golden) + 64 * 1024);
    CHECK(allocated(path) < 1 * kMiB);
    // A write to the clone leaves the golden as it was.
    {
        std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
        file.seekp(static_cast<std::streamoff>(1 * kMiB));
        file << "run's own change";
    }
    CHECK(read_at(golden, 1 * kMiB, 16) == "prepared dataset");
}

TEST_CASE("file storage: the clone method is a reflink where the file system shares extents",
          "[storage][golden]") {
    test::TempDir dir;
    FileStorage storage(dir.path().string(), nullptr);
    write_golden(dir.path().string() + "/g.raw", "prepared dataset");
    auto cloned = storage.clone_volume("g", "run1", raw_config());
    REQUIRE(cloned.ok());
    // Which one depends on the test host's file system; both are honest.
    CHECK((cloned->method == "reflink" || cloned->method == "sparse-copy"));
    CHECK(read_at(dir.path().string() + "/run1.raw", 40 * kMiB, 16) == "prepared dataset");
}

TEST_CASE("file storage: a clone of a missing golden fails and leaves nothing",
          "[storage][golden]") {
    test::TempDir dir;
    FileStorage storage(dir.path().string(), nullptr);
    auto cloned = storage.clone_volume("nothing", "run1", raw_config());
    REQUIRE_FALSE(cloned.ok());
    CHECK(cloned.error().code == errc::kStorage);
    CHECK_THAT(cloned.error().message, Catch::Contains("nothing.raw"));
    CHECK_FALSE(std::filesystem::exists(dir.path() / "run1.raw"));
}

TEST_CASE("file storage: a clone never overwrites an existing volume", "[storage][golden]") {
    test::TempDir dir;
    FileStorage storage(dir.path().string(), nullptr);
    write_golden(dir.path().string() + "/g.raw", "prepared dataset");
    REQUIRE(storage.create_volume("run1", raw_config()).ok());
    auto cloned = storage.clone_volume("g", "run1", raw_config());
    REQUIRE_FALSE(cloned.ok());
    CHECK_THAT(cloned.error().message, Catch::Contains("File exists"));
    // The run's own volume is still there, untouched (O_EXCL).
    CHECK(std::filesystem::exists(dir.path() / "run1.raw"));
}

}  // namespace ds
