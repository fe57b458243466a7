// A real guest checked against its image's manifest.json (daemon/run/
// image_manifest.h): the image's own manifest passes and the run records the
// guest's release; the same image under a manifest that names another fio
// fails its run, naming fio, before anything is measured. The manifest is
// made wrong for real (a copy beside symlinks to the real image's files);
// the guest is the real one.
#include <SQLiteCpp/SQLiteCpp.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/daemon_fixture.h"
#include "support/run_rows.h"

using ds::Json;
using ds::test::DaemonFixture;
namespace fs = std::filesystem;

namespace {

const char* kOneRun = R"(
name = "e2e-guest-identity"
repetitions = 1
[matrix]
bus = "virtio-blk"
filesystem = "ext4"
disk_size = "256m"
[[workload]]
name = "write"
kind = "fio"
rw = "randwrite"
bs = "4k"
direct = true
size = "8m"
runtime = "1s"
time_based = true
)";

Json read_json(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return Json::parse(text.str());
}

// IMAGE_DIR's base image as `dir`: its files linked, its manifest `manifest`.
void image_with_manifest(const fs::path& image, const fs::path& dir, const Json& manifest) {
    fs::create_directories(dir);
    for (const char* name : {"vmlinux", "vmlinuz", "initrd.img", "root.img"}) {
        if (fs::exists(image / name)) fs::create_symlink(image / name, dir / name);
    }
    std::ofstream(dir / "manifest.json") << manifest.dump(2);
}

struct OneRun {
    ds::test::RunRow row;
    Json versions;
};

// The one run of sweep 1 in a daemon booting the image in `dir`.
OneRun run_one(const fs::path& dir) {
    DaemonFixture daemon({"--image-dir", dir.string(), "--accel", "tcg", "--boot-timeout", "120"});
    REQUIRE(daemon.ready());
    auto path = ds::test::write_temp_file("e2e-guest-identity.toml", kOneRun);
    auto submitted = daemon.hostctl({"sweep", "submit", path, "--wait"}, std::chrono::seconds(600));
    INFO(submitted.out << submitted.err);
    const auto runs = ds::test::runs_of_sweep(daemon.database(), 1);
    REQUIRE(runs.size() == 1);
    SQLite::Database db(daemon.database(), SQLite::OPEN_READONLY);
    const std::string versions =
        db.execAndGet("SELECT coalesce(versions_json, '{}') FROM runs WHERE sweep_id = 1")
            .getString();
    return {runs.front(), Json::parse(versions)};
}

}  // namespace

TEST_CASE("a real guest is checked against its image's manifest, and one that differs fails",
          "[e2e][image_manifest]") {
    const fs::path image = ds::test::test_image_dir();
    if (!fs::exists(image / "manifest.json")) {
        FAIL("guest image missing in " + image.string() + ": run scripts/build-guest-image.sh");
    }
    const Json manifest = read_json(image / "manifest.json");
    const fs::path work =
        fs::temp_directory_path() / ("disksweep-e2e-identity-" + std::to_string(::getpid()));
    fs::remove_all(work);

    image_with_manifest(image, work / "honest", manifest);
    const auto honest = run_one(work / "honest");
    INFO("honest run: " << honest.row.failure_reason);
    CHECK(honest.row.status == "succeeded");
    CHECK(honest.versions.value("image_manifest", "") == (work / "honest/manifest.json").string());
    // The release the guest reports, as its manifest has it.
    const std::string release = manifest.value("/os_release/version_id"_json_pointer, "");
    CHECK_THAT(honest.versions.value("guest_os", ""), Catch::StartsWith("debian " + release));

    Json lying = manifest;
    lying["packages"]["fio"] = "0.1-1";
    image_with_manifest(image, work / "lying", lying);
    const auto lied = run_one(work / "lying");
    CHECK(lied.row.status == "failed");
    CHECK_THAT(lied.row.failure_reason,
               Catch::Contains("the guest is not the build its image's manifest describes"));
    CHECK_THAT(lied.row.failure_reason, Catch::Contains("fio: the guest runs fio-"));
    CHECK_THAT(lied.row.failure_reason, Catch::Contains("says 0.1-1"));
    CHECK(lied.row.metrics.empty());
    fs::remove_all(work);
}
