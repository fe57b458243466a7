// Guest image variants: which image a sweep's workloads need, where the
// daemon looks for it, and that a sweep needing a missing variant is refused
// when it is submitted rather than failing every run later.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "daemon/api/api.h"
#include "daemon/daemon.h"
#include "support/temp_dir.h"

namespace ds {
namespace {

using Catch::Matchers::Contains;
using ds::test::TempDir;

const char* kMixedSpec = R"(name = "mixed"
[matrix]
filesystem = ["ext4", "btrfs"]
[[workload]]
kind = "fio"
[[workload]]
name = "atis"
kind = "mariadb-atis"
filesystems = ["btrfs"]
)";

void touch(const std::filesystem::path& path) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << "x";
}

void make_image(const std::filesystem::path& dir) {
    for (const char* name : {"vmlinuz", "initrd.img", "root.img"}) touch(dir / name);
}

}  // namespace

TEST_CASE("plan_submission lists the image variants and the pairs left out", "[image_variant]") {
    auto submission = plan_submission(kMixedSpec, "mixed.toml", SweepTimeouts{60, 900});
    REQUIRE(submission.ok());
    CHECK(submission->images ==
          std::vector<ImageChoice>{{"bookworm", ""}, {"bookworm", "mariadb"}});
    CHECK(submission->skipped_pairs == 1);  // atis on ext4
    CHECK(submission->runs.size() == 3);
    CHECK(submission->sweep.total_runs == 3);
}

TEST_CASE("locate_guest_image finds a variant below the image dir or says how to build it",
          "[image_variant]") {
    TempDir dir;
    DaemonConfig config;
    config.image_dir = dir.file("images");
    make_image(config.image_dir);

    auto base = locate_guest_image(config, {});
    REQUIRE(base.ok());
    CHECK(base->root_disk == config.image_dir + "/root.img");
    CHECK(base->manifest.empty());  // none written: the run says so

    auto missing = locate_guest_image(config, {"bookworm", "mariadb"});
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().code == errc::kUnavailable);
    CHECK(missing.error().message ==
          "guest image variant 'mariadb' (bookworm) incomplete: " + config.image_dir +
              "/mariadb/vmlinuz is missing; build it with: scripts/build-guest-image.sh " +
              config.image_dir);

    make_image(config.image_dir + "/mariadb");
    touch(config.image_dir + "/mariadb/vmlinux");
    touch(config.image_dir + "/mariadb/manifest.json");
    auto variant = locate_guest_image(config, {"bookworm", "mariadb"});
    REQUIRE(variant.ok());
    CHECK(variant->kernel == config.image_dir + "/mariadb/vmlinux");
    CHECK(variant->root_disk == config.image_dir + "/mariadb/root.img");
    CHECK(variant->manifest == config.image_dir + "/mariadb/manifest.json");
}

TEST_CASE("a trixie guest's images live below the image dir's trixie/, side by side",
          "[image_variant]") {
    TempDir dir;
    DaemonConfig config;
    config.image_dir = dir.file("images");
    make_image(config.image_dir);

    auto missing = locate_guest_image(config, {"trixie", ""});
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().message == "guest image (trixie) incomplete: " + config.image_dir +
                                         "/trixie/vmlinuz is missing; build it with: "
                                         "scripts/build-guest-image.sh --suite trixie " +
                                         config.image_dir);
    make_image(config.image_dir + "/trixie/mariadb");
    auto variant = locate_guest_image(config, {"trixie", "mariadb"});
    REQUIRE(variant.ok());
    CHECK(variant->root_disk == config.image_dir + "/trixie/mariadb/root.img");
    // The bookworm image beside it is untouched and still found.
    CHECK(locate_guest_image(config, {})->root_disk == config.image_dir + "/root.img");

    auto submission = plan_submission(std::string(kMixedSpec) + "[guest]\nsuite = \"trixie\"\n",
                                      "mixed.toml", SweepTimeouts{60, 900});
    REQUIRE(submission.ok());
    CHECK(submission->images == std::vector<ImageChoice>{{"trixie", ""}, {"trixie", "mariadb"}});
}

TEST_CASE("a sweep needing a missing image variant is refused at submission", "[image_variant]") {
    TempDir dir;
    DaemonConfig config;
    config.image_dir = dir.file("images");
    make_image(config.image_dir);
    auto store = Store::open(dir.file("results.db"));
    REQUIRE(store.ok());

    ApiContext context;
    context.store = store->get();
    context.default_timeouts = SweepTimeouts{60, 900};
    context.variant_image_problem = [&config](const ImageChoice& image) -> std::string {
        auto located = locate_guest_image(config, image);
        return located.ok() ? "" : located.error().message;
    };
    http::Handler handler = make_api_handler(context);
    http::Request request;
    request.method = "POST";
    request.path = "/v1/sweeps";
    request.target = "/v1/sweeps";
    request.headers["content-type"] = "application/toml";
    request.headers["x-spec-name"] = "mixed.toml";
    request.body = kMixedSpec;

    const http::Response response = handler(request);
    CHECK(response.status == 503);
    const Json body = Json::parse(response.body);
    CHECK(body.at("error").at("code") == "unavailable");
    const std::string message = body.at("error").at("message");
    CHECK_THAT(message, Contains("cannot run sweep 'mixed': its workloads need guest image "
                                 "variant 'mariadb' (bookworm) incomplete: " +
                                 config.image_dir + "/mariadb/vmlinuz is missing"));
    CHECK_THAT(message, Contains("scripts/build-guest-image.sh"));
    // Nothing was stored.
    CHECK(store.value()->list_sweeps()->empty());
}

}  // namespace ds
