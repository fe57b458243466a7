// The file storage's one tool, qemu-img, comes through the process seam
// (ProcessRunner): a qcow2 volume is made by the runner it was given, with the
// command line and the size asked for, and refused without one; a raw volume
// needs no tool. (tests/integration/file_storage_test.cpp runs the real
// qemu-img.)
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memory>

#include "daemon/backends/storage/file/file_storage.h"
#include "support/fakes/process_runner_fakes.h"
#include "support/temp_dir.h"

namespace ds {
namespace {

using testing::exited;
using testing::ScriptedProcessRunner;

StorageConfig qcow2_config() {
    StorageConfig config;
    config.image_format = ImageFormat::kQcow2;
    config.disk_size_bytes = 1ull << 30;
    return config;
}

TEST_CASE("file storage: qemu-img makes qcow2 volumes through the process seam", "[storage]") {
    test::TempDir dir;
    auto runner = std::make_shared<ScriptedProcessRunner>();
    FileStorage storage(dir.path().string(), runner);
    auto volume = storage.create_volume("v1", qcow2_config());
    REQUIRE(volume.ok());
    const std::string path = dir.path().string() + "/v1.qcow2";
    REQUIRE(runner->commands.size() == 1);
    CHECK(runner->commands[0] ==
          std::vector<std::string>{"qemu-img", "create", "-q", "-f", "qcow2", path, "1073741824"});
}

TEST_CASE("file storage: a failed qemu-img is the volume's error, with its stderr", "[storage]") {
    test::TempDir dir;
    auto runner = std::make_shared<ScriptedProcessRunner>();
    runner->replies["qemu-img"] = exited(1, "", "qemu-img: disk full\n");
    FileStorage storage(dir.path().string(), runner);
    auto volume = storage.create_volume("v1", qcow2_config());
    REQUIRE_FALSE(volume.ok());
    CHECK(volume.error().code == errc::kStorage);
    CHECK_THAT(volume.error().message, Catch::Contains("qemu-img create"));
    CHECK_THAT(volume.error().message, Catch::Contains("disk full"));
}

TEST_CASE("file storage: without a process runner raw volumes work and qcow2 is refused",
          "[storage]") {
    test::TempDir dir;
    FileStorage storage(dir.path().string(), nullptr);
    StorageConfig raw;
    raw.disk_size_bytes = 1 << 20;
    auto made = storage.create_volume("raw1", raw);
    REQUIRE(made.ok());
    CHECK(std::filesystem::file_size(dir.path() / "raw1.raw") == 1u << 20);
    auto refused = storage.create_volume("v1", qcow2_config());
    REQUIRE_FALSE(refused.ok());
    CHECK_THAT(refused.error().message, Catch::Contains("this file storage runs no qemu-img"));
}

}  // namespace
}  // namespace ds

namespace ds {

TEST_CASE("file storage: allocated bytes are the file's blocks, holes not counted",
          "[file_storage]") {
    test::TempDir dir;
    FileStorage storage(dir.path().string(), nullptr);
    StorageConfig config;
    config.disk_size_bytes = 64u << 20;
    auto volume = storage.create_volume("v1", config);
    REQUIRE(volume.ok());
    auto empty = storage.allocated_bytes("v1");
    REQUIRE(empty.ok());
    CHECK(*empty < (64u << 10));  // sparse: (next to) nothing allocated
    {
        std::ofstream data(std::get<FileDisk>(volume->source).path,
                           std::ios::in | std::ios::out | std::ios::binary);
        const std::string chunk(1u << 20, 'x');
        data.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    }
    CHECK(storage.allocated_bytes("v1").value() >= (1u << 20));
    CHECK(storage.allocated_bytes("gone").error().code == errc::kNotFound);
}

}  // namespace ds
