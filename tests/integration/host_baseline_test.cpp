// Host baselines for real: fio from the host on a raw file volume made by the
// file storage backend (qemu-img), no guest. Checks the layout, that the
// prefill wrote the region the job uses, and that the metrics are fio's own.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "common/process.h"
#include "common/workload_output.h"
#include "daemon/backends/storage/file/file_storage.h"
#include "daemon/run/host_fio.h"
#include "support/temp_dir.h"

using namespace ds;

namespace {

Workload randrw_job(int numjobs) {
    Workload workload;
    workload.name = "randrw";
    workload.kind = "fio";
    workload.params = {{"rw", "randrw"},     {"bs", "4k"},         {"size", "16m"},
                       {"numjobs", numjobs}, {"iodepth", 8},       {"ioengine", "libaio"},
                       {"runtime", "1s"},    {"time_based", true}, {"group_reporting", true}};
    return workload;
}

}  // namespace

TEST_CASE("a host baseline runs fio on the raw file volume, each job in its own region",
          "[integration][host_baseline]") {
    test::TempDir dir("disksweep-baseline");
    auto runner = std::make_shared<RealProcessRunner>();
    FileStorage storage((dir.path() / "volumes").string(), runner);
    StorageConfig config = host_baseline_for(StorageConfig{});
    config.disk_size_bytes = 128ull << 20;
    auto volume = storage.create_volume("disksweep-r1-data", config);
    REQUIRE(volume.ok());

    auto result = run_host_fio(randrw_job(4), volume->source, config.disk_size_bytes, *runner,
                               std::chrono::seconds(120));
    REQUIRE(result.ok());
    // 4 jobs x 16 MiB fit in 128 MiB: separate regions, all prefilled.
    CHECK(result->layout["separate_regions"] == true);
    CHECK(result->layout["prefill_bytes"] == 64ull << 20);
    CHECK(result->layout["job_command"].get<std::string>().find("--offset_increment=16777216") !=
          std::string::npos);
    // The prefill allocated the blocks of the sparse file (not just its size).
    const auto path = std::get<FileDisk>(volume->source).path;
    struct stat info {};
    REQUIRE(::stat(path.c_str(), &info) == 0);
    CHECK(static_cast<std::uint64_t>(info.st_blocks) * 512 >= 64ull << 20);

    auto metrics = metrics_from_workload_output("fio", result->fio_output);
    REQUIRE(metrics.ok());
    CHECK(metrics->at("read_iops") > 0);
    CHECK(metrics->at("write_iops") > 0);
    CHECK(result->fio_output["jobs"][0]["jobname"] == "randrw");
    CHECK(storage.remove_volume("disksweep-r1-data").ok());
}

TEST_CASE("a host baseline fails with fio's own message", "[integration][host_baseline]") {
    test::TempDir dir("disksweep-baseline");
    auto runner = std::make_shared<RealProcessRunner>();
    // A "volume" that is a directory: fio says what is wrong.
    const auto path = dir.path().string();
    auto result = run_host_fio(randrw_job(1), FileDisk{path, ImageFormat::kRaw}, 64ull << 20,
                               *runner, std::chrono::seconds(60));
    REQUIRE_FALSE(result.ok());
    INFO(result.error().message);
    CHECK(result.error().message.find("fio --output-format=json+ --name=prefill") == 0);
    CHECK(result.error().message.find("Is a directory") != std::string::npos);
}
