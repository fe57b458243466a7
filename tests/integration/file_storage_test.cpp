// The file storage backend with the real qemu-img: one fresh volume per run,
// raw (sparse) or qcow2, listed by prefix and removed afterwards.
#include "daemon/backends/storage/file/file_storage.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "common/process.h"

namespace fs = std::filesystem;
using namespace ds;

TEST_CASE("file storage creates raw and qcow2 volumes and removes them", "[integration][storage]") {
    char pattern[] = "/tmp/disksweep-volumes-XXXXXX";
    const std::string dir = ::mkdtemp(pattern);
    FileStorage storage(dir + "/volumes", std::make_shared<RealProcessRunner>());

    StorageConfig raw_config;
    raw_config.disk_size_bytes = 256ull << 20;
    auto raw = storage.create_volume("disksweep-r1-data", raw_config);
    REQUIRE(raw.ok());
    const auto* raw_file = std::get_if<FileDisk>(&raw->source);
    REQUIRE(raw_file != nullptr);
    CHECK(raw_file->format == ImageFormat::kRaw);
    CHECK(fs::file_size(raw_file->path) == 256ull << 20);
    struct stat info {};
    REQUIRE(::stat(raw_file->path.c_str(), &info) == 0);
    CHECK(info.st_blocks == 0);  // sparse: nothing allocated yet

    // The same name twice is refused: two runs never share a volume.
    CHECK_FALSE(storage.create_volume("disksweep-r1-data", raw_config).ok());

    StorageConfig qcow2_config = raw_config;
    qcow2_config.image_format = ImageFormat::kQcow2;
    auto qcow2 = storage.create_volume("disksweep-r2-data", qcow2_config);
    REQUIRE(qcow2.ok());
    const auto* qcow2_file = std::get_if<FileDisk>(&qcow2->source);
    REQUIRE(qcow2_file != nullptr);
    CHECK(qcow2_file->format == ImageFormat::kQcow2);
    std::ifstream in(qcow2_file->path, std::ios::binary);
    char magic[4] = {};
    in.read(magic, 4);
    CHECK(std::string(magic, 4) == "QFI\xfb");  // qcow2 header magic

    auto listed = storage.list_volumes("disksweep-r");
    REQUIRE(listed.ok());
    std::sort(listed->begin(), listed->end());
    CHECK(*listed == std::vector<std::string>{"disksweep-r1-data", "disksweep-r2-data"});

    CHECK(storage.remove_volume("disksweep-r1-data").ok());
    CHECK(storage.remove_volume("disksweep-r2-data").ok());
    CHECK(storage.remove_volume("disksweep-r2-data").ok());  // already gone: fine
    CHECK(storage.list_volumes("disksweep-r")->empty());
    fs::remove_all(dir);
}

TEST_CASE("file storage reports a volume it cannot create", "[integration][storage]") {
    FileStorage storage("/proc/disksweep-cannot-exist", std::make_shared<RealProcessRunner>());
    StorageConfig config;
    auto volume = storage.create_volume("disksweep-r1-data", config);
    REQUIRE_FALSE(volume.ok());
    CHECK(volume.error().code == errc::kStorage);
    CHECK(volume.error().message.find("/proc/disksweep-cannot-exist") != std::string::npos);
}
