// The guest a run boots must be the build its image's manifest describes:
// its Debian release, kernel, fio and MariaDB versions (daemon/run/
// image_manifest.h), checked from what the guest reports in its hello and
// result. Each tool is made wrong for real here and must fail the run,
// naming it; the sweep's [guest] suite picks the image.
#include <catch2/catch.hpp>
#include <fstream>
#include <optional>

#include "daemon/run/image_manifest.h"
#include "daemon/run/run_executor.h"
#include "support/fakes/daemon_fakes.h"
#include "support/temp_dir.h"

namespace ds {
namespace {

using namespace ds::testing;
using Catch::Matchers::Contains;

// A trixie mariadb image's manifest as guest/build-image.sh writes it.
Json trixie_manifest() {
    return Json{{"format", 1},
                {"suite", "trixie"},
                {"os_release", {{"id", "debian"}, {"version_id", "13"}, {"codename", "trixie"}}},
                {"kernel", {{"release", "6.12.57+deb13-amd64"}}},
                {"packages",
                 {{"fio", "3.39-1"},
                  {"mariadb-server", "1:11.8.3-0+deb13u1"},
                  {"postgresql", "17+278"},
                  {"qemu-guest-agent", "1:10.0.6+ds-0+deb13u2"}}}};
}

// What a guest of that image says in its hello.
Json trixie_hello() {
    return Json{{"kernel", "6.12.57+deb13-amd64"},
                {"fio_version", "fio-3.39"},
                {"os", {{"id", "debian"}, {"version_id", "13"}, {"codename", "trixie"}}}};
}

struct IdentityFixture {
    test::TempDir dir;
    ExecutorFixture executor;
    std::vector<ImageChoice> asked;

    explicit IdentityFixture(const Json& manifest) {
        const std::string path = dir.file("manifest.json");
        std::ofstream(path) << manifest.dump();
        executor.guest_suite = [](std::int64_t) { return std::string("trixie"); };
        executor.image_for = [this, path](const ImageChoice& image) -> Result<GuestImage> {
            asked.push_back(image);
            const std::string root = "/img/" + image_subdir(image);
            return GuestImage{root + "/vmlinux", root + "/initrd.img", root + "/root.img", path};
        };
    }
    RunRecord run(GuestBehaviour behaviour, std::optional<Workload> workload = std::nullopt) {
        executor.hypervisor.set_guest_script(well_behaved_guest(std::move(behaviour)));
        return executor.execute(workload ? executor.pending_run(reference_config(), *workload)
                                         : executor.pending_run());
    }
};

}  // namespace

TEST_CASE("upstream_version drops the epoch, the Debian revision and repack suffixes",
          "[image_manifest]") {
    CHECK(upstream_version("1:11.8.3-0+deb13u1") == "11.8.3");
    CHECK(upstream_version("3.39-1") == "3.39");
    CHECK(upstream_version("3.33-3") == "3.33");
    CHECK(upstream_version("1:10.0.6+ds-0+deb13u2") == "10.0.6");
    CHECK(upstream_version("1:7.2+dfsg-7+deb12u18+b3") == "7.2");
    CHECK(upstream_version("2.38.1") == "2.38.1");
}

TEST_CASE("a manifest without kernel.release, or not JSON, is refused naming the file",
          "[image_manifest]") {
    auto not_json = parse_image_manifest("{", "/img/manifest.json");
    REQUIRE_FALSE(not_json.ok());
    CHECK_THAT(not_json.error().message, Contains("/img/manifest.json is not a JSON object"));
    auto no_kernel = parse_image_manifest(R"({"suite": "trixie"})", "/img/manifest.json");
    REQUIRE_FALSE(no_kernel.ok());
    CHECK_THAT(no_kernel.error().message, Contains("has no kernel.release"));
    CHECK_FALSE(read_image_manifest("/nonexistent/manifest.json").ok());
}

TEST_CASE("manifest_mismatches names each tool the guest runs in another version",
          "[image_manifest]") {
    auto manifest = parse_image_manifest(trixie_manifest().dump(), "/img/manifest.json");
    REQUIRE(manifest.ok());
    CHECK(manifest->os_version_id == "13");
    const GuestReport honest = {{"os", "13"},
                                {"kernel", "6.12.57+deb13-amd64"},
                                {"fio", "fio-3.39"},
                                {"mariadb", "11.8.3-MariaDB-0+deb13u1 from Debian"},
                                {"postgresql", "17.7 (Debian 17.7-0+deb13u1)"}};
    CHECK(manifest_mismatches(*manifest, honest).empty());
    // Debian's postgresql pins the major version: another major is named.
    GuestReport other_major = honest;
    other_major["postgresql"] = "15.20 (Debian 15.20-0+deb12u1)";
    CHECK(manifest_mismatches(*manifest, other_major) ==
          std::vector<std::string>{"postgresql: the guest runs 15.20 (Debian 15.20-0+deb12u1), its "
                                   "image's manifest (/img/manifest.json) says 17+278"});
    CHECK(manifest_unchecked(*manifest, honest).empty());

    GuestReport stale = honest;
    stale["fio"] = "fio-3.33";
    stale["os"] = "12";
    const auto mismatches = manifest_mismatches(*manifest, stale);
    REQUIRE(mismatches.size() == 2);
    CHECK(mismatches[0] ==
          "os: the guest runs 12, its image's manifest (/img/manifest.json) says 13");
    CHECK(mismatches[1] ==
          "fio: the guest runs fio-3.33, its image's manifest (/img/manifest.json) says 3.39-1");

    GuestReport no_fio = honest;
    no_fio["fio"] = "";
    CHECK_THAT(manifest_mismatches(*manifest, no_fio).at(0), Contains("fio: the guest runs none"));

    // An older manifest (no os_release) cannot check the release: said, not dropped.
    Json old = trixie_manifest();
    old.erase("os_release");
    auto older = parse_image_manifest(old.dump(), "/img/manifest.json");
    REQUIRE(older.ok());
    CHECK(manifest_mismatches(*older, stale).size() == 1);
    CHECK(manifest_unchecked(*older, stale) == std::vector<std::string>{"os"});
}

TEST_CASE("executor: a trixie sweep boots the trixie image and records the guest's release",
          "[run_executor][image_manifest]") {
    IdentityFixture fixture(trixie_manifest());
    GuestBehaviour behaviour;
    behaviour.hello_patch = trixie_hello();
    const RunRecord finished = fixture.run(behaviour);
    INFO("failure reason: " << finished.failure_reason);
    REQUIRE(finished.status == RunStatus::kSucceeded);
    CHECK(fixture.asked == std::vector<ImageChoice>{{"trixie", ""}});
    CHECK(finished.versions.at("guest_os") == "debian 13 (trixie)");
    CHECK(finished.versions.at("kernel") == "6.12.57+deb13-amd64");
    CHECK(finished.versions.at("image_manifest") == fixture.dir.file("manifest.json"));
    CHECK_FALSE(finished.versions.contains("image_manifest_unchecked"));
}

TEST_CASE("executor: a guest whose fio, kernel or release differs from its manifest fails",
          "[run_executor][image_manifest]") {
    const std::pair<Json, std::string> lies[] = {
        {Json{{"fio_version", "fio-3.33"}}, "fio: the guest runs fio-3.33"},
        {Json{{"kernel", "6.1.0-57-amd64"}}, "kernel: the guest runs 6.1.0-57-amd64"},
        {Json{{"os", {{"version_id", "12"}}}}, "os: the guest runs 12"},
    };
    for (const auto& lie : lies) {
        IdentityFixture fixture(trixie_manifest());
        GuestBehaviour behaviour;
        behaviour.hello_patch = trixie_hello();
        behaviour.hello_patch.merge_patch(lie.first);
        const RunRecord finished = fixture.run(behaviour);
        INFO(lie.second);
        CHECK(finished.status == RunStatus::kFailed);
        CHECK_THAT(finished.failure_reason,
                   Contains("not the build its image's manifest describes"));
        CHECK_THAT(finished.failure_reason, Contains(lie.second));
        CHECK(finished.metrics.empty());
    }
}

TEST_CASE("executor: a MariaDB server other than the manifest's fails the run at its result",
          "[run_executor][image_manifest]") {
    IdentityFixture fixture(trixie_manifest());
    GuestBehaviour behaviour;
    behaviour.kind = "mariadb-atis";
    behaviour.output =
        Json{{"stdout", sqlbench_atis_stdout(20)}, {"server_version", "10.11.6-MariaDB-0+deb12u1"}};
    behaviour.hello_patch = trixie_hello();
    // Bookworm's 10.11 server: not the manifest's 11.8.
    behaviour.readback_patch = Json{{"server_version", "10.11.6-MariaDB-0+deb12u1"}};
    const RunRecord finished = fixture.run(behaviour, atis_workload());
    CHECK(fixture.asked == std::vector<ImageChoice>{{"trixie", "mariadb"}});
    CHECK(finished.status == RunStatus::kFailed);
    CHECK_THAT(finished.failure_reason,
               Contains("mariadb: the guest runs 10.11.6-MariaDB-0+deb12u1, its image's manifest"));

    IdentityFixture honest(trixie_manifest());
    behaviour.readback_patch = Json{{"server_version", "11.8.3-MariaDB-0+deb13u1 from Debian"}};
    const RunRecord passed = honest.run(behaviour, atis_workload());
    INFO("failure reason: " << passed.failure_reason);
    CHECK(passed.status == RunStatus::kSucceeded);
}

TEST_CASE("executor: an image without a manifest says its tool versions were not checked",
          "[run_executor][image_manifest]") {
    ExecutorFixture fixture;
    fixture.hypervisor.set_guest_script(well_behaved_guest());
    const RunRecord finished = fixture.execute(fixture.pending_run());
    REQUIRE(finished.status == RunStatus::kSucceeded);
    CHECK(finished.versions.at("image_manifest") ==
          "none: the guest's tool versions were not checked");
}

}  // namespace ds
