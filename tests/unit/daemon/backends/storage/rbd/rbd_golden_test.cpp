// RBD golden volumes without a cluster: the commands that seal a golden
// image (snapshot, protect), clone it per run and remove it (unprotect,
// snapshot removal, image removal), in that order, and what Ceph's refusals
// become. tests/backend/rbd_ceph_test.cpp runs them against a real Ceph.
#include <catch2/catch.hpp>
#include <cerrno>
#include <string>
#include <vector>

#include "daemon/backends/storage/rbd/rbd_storage.h"
#include "support/fakes/process_runner_fakes.h"

using namespace ds;

namespace {

using testing::exited;
using testing::ScriptedProcessRunner;

// A command's name: the first one or two words after the options ("snap
// create", "clone", "rm").
std::string verb_of(const std::vector<std::string>& argv) {
    for (std::size_t i = 1; i < argv.size(); ++i) {
        if (argv[i] == "snap" && i + 1 < argv.size()) return "snap " + argv[i + 1];
        if (argv[i] == "clone" || argv[i] == "rm" || argv[i] == "create") return argv[i];
    }
    return argv.front();
}

struct Fixture {
    std::shared_ptr<ScriptedProcessRunner> rbd = std::make_shared<ScriptedProcessRunner>(verb_of);
    RbdStorage storage{RbdStorageOptions{"disksweep", {}, "", "", ""}, rbd};

    // Every `verb` exits with `code` and says so, as rbd does.
    void fail(const std::string& verb, int code) {
        rbd->replies[verb] =
            exited(code, "", "rbd: " + verb + " failed: (" + std::to_string(code) + ")\n");
    }
};

StorageConfig raw_config() {
    StorageConfig config;
    config.storage = "rbd:disksweep";
    config.disk_size_bytes = 64ull << 20;
    return config;
}

bool has_args(const std::vector<std::string>& argv, const std::vector<std::string>& wanted) {
    for (std::size_t i = 0; i + wanted.size() <= argv.size(); ++i) {
        if (std::equal(wanted.begin(), wanted.end(), argv.begin() + static_cast<long>(i)))
            return true;
    }
    return false;
}

}  // namespace

TEST_CASE("rbd golden: sealed by a protected snapshot, cloned from it", "[rbd][golden]") {
    Fixture f;
    const Status sealed = f.storage.seal_golden("ds-g1-golden");
    INFO((sealed.ok() ? "" : sealed.error().message));
    REQUIRE(sealed.ok());
    auto cloned = f.storage.clone_volume("ds-g1-golden", "ds-r5-data", raw_config());
    REQUIRE(cloned.ok());
    CHECK(f.rbd->names() == std::vector<std::string>{"snap create", "snap protect", "clone"});
    CHECK(has_args(f.rbd->commands[0],
                   {"--pool", "disksweep", "--image", "ds-g1-golden", "--snap", "golden"}));
    CHECK(has_args(f.rbd->commands[2], {"--image", "ds-g1-golden", "--snap", "golden",
                                        "--dest-pool", "disksweep", "--dest", "ds-r5-data"}));
    CHECK(cloned->method == "rbd-clone");
    const auto& disk = std::get<RbdDisk>(cloned->volume.source);
    CHECK(disk.pool == "disksweep");
    CHECK(disk.image == "ds-r5-data");
}

TEST_CASE("rbd golden: removal unprotects and removes the snapshot before the image",
          "[rbd][golden]") {
    Fixture f;
    REQUIRE(f.storage.remove_golden("ds-g1-golden").ok());
    CHECK(f.rbd->names() == std::vector<std::string>{"snap unprotect", "snap rm", "rm"});
}

TEST_CASE("rbd golden: a golden never sealed, or already gone, is removed all the same",
          "[rbd][golden]") {
    Fixture f;
    f.fail("snap unprotect", ENOENT);
    f.fail("snap rm", ENOENT);
    CHECK(f.storage.remove_golden("ds-g1-golden").ok());
    CHECK(f.rbd->names().back() == "rm");
}

TEST_CASE("rbd golden: with clones left, removal stops at the unprotect and says why",
          "[rbd][golden]") {
    Fixture f;
    f.fail("snap unprotect", EBUSY);
    const Status removed = f.storage.remove_golden("ds-g1-golden");
    REQUIRE_FALSE(removed.ok());
    CHECK_THAT(removed.error().message, Catch::Contains("clones of it still exist"));
    CHECK(f.rbd->names() == std::vector<std::string>{"snap unprotect"});
}

TEST_CASE("rbd golden: a failed clone is the run's error, qcow2 is refused before Ceph",
          "[rbd][golden]") {
    Fixture f;
    f.fail("clone", ENOENT);
    auto cloned = f.storage.clone_volume("ds-g1-golden", "ds-r5-data", raw_config());
    REQUIRE_FALSE(cloned.ok());
    CHECK_THAT(cloned.error().message,
               Catch::Contains("cannot clone disksweep/ds-g1-golden@golden"));
    StorageConfig qcow2 = raw_config();
    qcow2.image_format = ImageFormat::kQcow2;
    f.rbd->commands.clear();
    CHECK_FALSE(f.storage.clone_volume("ds-g1-golden", "ds-r6-data", qcow2).ok());
    CHECK(f.rbd->commands.empty());
}
