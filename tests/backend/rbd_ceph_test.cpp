// The RBD storage backend against a real Ceph: the throwaway single-node
// cluster of tests/support/ceph/ceph-up.sh, which ctest starts once as the
// fixture rbd/ceph_up; DISKSWEEP_TEST_CEPH_DIR names its directory. Every
// case here is tagged [ceph] and skips when there is no cluster to use.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/process.h"
#include "daemon/backends/storage/rbd/rbd_storage.h"
#include "support/ceph/test_ceph.h"
#include "support/skip.h"
#include "support/temp_dir.h"

extern char** environ;

using namespace ds;

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

using test::test_ceph_or_skip;
using test::TestCeph;

// The backend's options for the test Ceph, as its client user.
RbdStorageOptions storage_options(const TestCeph& ceph) {
    return {ceph.pool, {ceph.mon_host}, ceph.user, ceph.keyring, ceph.conf};
}

// "dstest-PID-what": image names no other test process uses.
std::string image_name(const std::string& what) {
    return "dstest-" + std::to_string(::getpid()) + "-" + what;
}

// Runs a tool of the test and returns its stdout; the test fails with the
// tool's stderr if it fails.
std::string run_ok(const std::vector<std::string>& argv) {
    RealProcessRunner runner;
    auto output = runner.run(argv, std::chrono::seconds(120));
    REQUIRE(output.ok());
    INFO(describe_command(argv) << "\n" << output->stderr_text);
    REQUIRE(output->exit_code == 0);
    return output->stdout_text;
}

std::vector<std::string> rbd_as_test_user(const TestCeph& ceph, std::vector<std::string> args) {
    std::vector<std::string> argv{"rbd", "--conf", ceph.conf, "--id", ceph.user};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
}

// QEMU's legacy rbd filename for an RbdDisk, with the cephx user and the
// client ceph.conf that names the keyring: what libvirt's <source
// protocol='rbd'> with <config file> and <auth username> amounts to.
std::string qemu_rbd_filename(const RbdDisk& disk, const std::string& conf) {
    return "rbd:" + disk.pool + "/" + disk.image + ":id=" + disk.user + ":conf=" + conf;
}

// A child process killed (SIGTERM, then waited for) when the test ends.
class Child {
  public:
    explicit Child(const std::vector<std::string>& argv) {
        std::vector<char*> args;
        for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
        args.push_back(nullptr);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
        const int rc = ::posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        if (rc != 0) pid_ = -1;
    }
    ~Child() { stop(); }
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

    bool started() const { return pid_ > 0; }
    bool running() const { return pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0; }
    void stop() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGTERM);
        ::waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }

  private:
    pid_t pid_ = -1;
};

// The addresses of the clients watching (holding open) an image.
std::vector<std::string> watchers(const TestCeph& ceph, const std::string& image) {
    Json status = Json::parse(run_ok(rbd_as_test_user(
        ceph, {"status", "--pool", ceph.pool, "--image", image, "--format", "json"})));
    std::vector<std::string> addresses;
    for (const Json& watcher : status["watchers"]) {
        addresses.push_back(watcher["address"].get<std::string>());
    }
    return addresses;
}

}  // namespace

TEST_CASE("an RBD image is created, listed, measured and removed on a real Ceph", "[ceph]") {
    const TestCeph ceph = test_ceph_or_skip();
    RbdStorage storage(storage_options(ceph), std::make_shared<RealProcessRunner>());
    const std::string name = image_name("life");
    StorageConfig config;
    config.disk_size_bytes = 64 * kMiB;

    auto volume = storage.create_volume(name, config);
    REQUIRE(volume.ok());
    const auto* disk = std::get_if<RbdDisk>(&volume->source);
    REQUIRE(disk != nullptr);
    CHECK(disk->pool == ceph.pool);
    CHECK(disk->image == name);

    auto listed = storage.list_volumes(image_name(""));
    REQUIRE(listed.ok());
    CHECK(*listed == std::vector<std::string>{name});

    Json fresh = storage.state(name);
    INFO(fresh.dump());
    CHECK_THAT(fresh["health"].get<std::string>(), Catch::StartsWith("HEALTH_"));
    CHECK(fresh["volume_provisioned_bytes"] == 64 * kMiB);
    CHECK(fresh["volume_used_bytes"] == 0);

    // Two 4 MiB objects written: rbd du counts them exactly (fast-diff).
    run_ok(rbd_as_test_user(ceph, {"bench", "--io-type", "write", "--io-size", "4M", "--io-total",
                                   "8M", "--pool", ceph.pool, "--image", name}));
    Json written = storage.state(name);
    INFO(written.dump());
    CHECK(written["volume_used_bytes"] == 8 * kMiB);
    CHECK_FALSE(written.contains("errors"));

    REQUIRE(storage.remove_volume(name).ok());
    listed = storage.list_volumes(image_name(""));
    REQUIRE(listed.ok());
    CHECK(listed->empty());
    Json after = storage.state(name);
    INFO(after.dump());
    CHECK(after.contains("health"));
    CHECK_FALSE(after.contains("volume_used_bytes"));
    CHECK_FALSE(after.contains("errors"));
    // Removing what is already gone succeeds (crash recovery may retry).
    CHECK(storage.remove_volume(name).ok());
}

TEST_CASE("a golden RBD image is sealed, cloned per run and removed after its clones",
          "[ceph][golden]") {
    const TestCeph ceph = test_ceph_or_skip();
    RbdStorage storage(storage_options(ceph), std::make_shared<RealProcessRunner>());
    const std::string golden = image_name("golden");
    const std::string clone = image_name("clone");
    StorageConfig config;
    config.disk_size_bytes = 64 * kMiB;
    REQUIRE(storage.create_volume(golden, config).ok());
    // The prepared data: two 4 MiB objects.
    run_ok(rbd_as_test_user(ceph, {"bench", "--io-type", "write", "--io-size", "4M", "--io-total",
                                   "8M", "--pool", ceph.pool, "--image", golden}));
    const Status sealed = storage.seal_golden(golden);
    INFO((sealed.ok() ? "" : sealed.error().message));
    REQUIRE(sealed.ok());
    const auto started = std::chrono::steady_clock::now();
    auto cloned = storage.clone_volume(golden, clone, config);
    const double clone_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    INFO((cloned.ok() ? "" : cloned.error().message));
    REQUIRE(cloned.ok());
    std::printf("rbd clone of a 64 MiB golden image: %.2f s\n", clone_s);
    CHECK(cloned->method == "rbd-clone");
    // The clone is a child of the protected snapshot and holds no data of
    // its own until written: it reads its parent's.
    const Json info = Json::parse(run_ok(rbd_as_test_user(
        ceph, {"info", "--pool", ceph.pool, "--image", clone, "--format", "json"})));
    INFO(info.dump());
    CHECK(info.at("parent").at("image") == golden);
    CHECK(info.at("parent").at("snapshot") == "golden");
    CHECK(storage.allocated_bytes(clone).value() == 0);
    // While the clone exists, the golden cannot go: Ceph refuses the unprotect.
    const Status early = storage.remove_golden(golden);
    REQUIRE_FALSE(early.ok());
    CHECK_THAT(early.error().message, Catch::Contains("clones of it still exist"));
    REQUIRE(storage.remove_volume(clone).ok());
    const Status removed = storage.remove_golden(golden);
    INFO((removed.ok() ? "" : removed.error().message));
    CHECK(removed.ok());
    CHECK(storage.list_volumes(image_name("")).value().empty());
    // Removing it again succeeds (recovery may retry).
    CHECK(storage.remove_golden(golden).ok());
}

TEST_CASE("an RBD pool that does not exist is an error naming it, in Ceph's words", "[ceph]") {
    const TestCeph ceph = test_ceph_or_skip();
    RbdStorageOptions options = storage_options(ceph);
    options.pool = "no-such-pool";
    RbdStorage storage(options, std::make_shared<RealProcessRunner>());
    StorageConfig config;
    config.disk_size_bytes = 64 * kMiB;

    auto created = storage.create_volume(image_name("nopool"), config);
    REQUIRE_FALSE(created.ok());
    CHECK(created.error().code == errc::kStorage);
    CHECK_THAT(created.error().message,
               Catch::Contains("no-such-pool") && Catch::Contains("(2) No such file or directory"));
    auto listed = storage.list_volumes("");
    REQUIRE_FALSE(listed.ok());
    CHECK_THAT(listed.error().message, Catch::Contains("error opening pool 'no-such-pool'"));
    // Not "already gone": the configuration is wrong.
    auto removed = storage.remove_volume(image_name("nopool"));
    REQUIRE_FALSE(removed.ok());
    CHECK_THAT(removed.error().message, Catch::Contains("error opening pool 'no-such-pool'"));
}

TEST_CASE(
    "QEMU reaches the RBD image with cephx through the client ceph.conf, and not without "
    "the keyring",
    "[ceph]") {
    const TestCeph ceph = test_ceph_or_skip();
    RbdStorage storage(storage_options(ceph), std::make_shared<RealProcessRunner>());
    const std::string name = image_name("qemu");
    StorageConfig config;
    config.disk_size_bytes = 64 * kMiB;
    auto volume = storage.create_volume(name, config);
    REQUIRE(volume.ok());
    const RbdDisk& disk = std::get<RbdDisk>(volume->source);

    run_ok({"qemu-io", "-f", "raw", "-c", "write -P 0xab 0 1M",
            qemu_rbd_filename(disk, disk.ceph_conf)});
    Json state = storage.state(name);
    INFO(state.dump());
    CHECK(state["volume_used_bytes"] == 4 * kMiB);  // the one 4 MiB object QEMU wrote into

    // The same ceph.conf without its keyring line: cephx has no key to offer.
    test::TempDir temp("disksweep-rbd");
    {
        std::ifstream in(disk.ceph_conf);
        std::ofstream out(temp.file("nokey.conf"));
        for (std::string line; std::getline(in, line);) {
            if (line.find("keyring") == std::string::npos) out << line << "\n";
        }
    }
    RealProcessRunner runner;
    auto refused =
        runner.run({"qemu-img", "info", qemu_rbd_filename(disk, temp.file("nokey.conf"))},
                   std::chrono::seconds(60));
    REQUIRE(refused.ok());
    CHECK(refused->exit_code != 0);
    CHECK_THAT(refused->stderr_text, Catch::Contains("error connecting"));

    CHECK(storage.remove_volume(name).ok());
}

TEST_CASE("removing an RBD image a QEMU holds open fails and names the watcher", "[ceph]") {
    const TestCeph ceph = test_ceph_or_skip();
    RbdStorage storage(storage_options(ceph), std::make_shared<RealProcessRunner>());
    const std::string name = image_name("held");
    StorageConfig config;
    config.disk_size_bytes = 64 * kMiB;
    auto volume = storage.create_volume(name, config);
    REQUIRE(volume.ok());
    const RbdDisk& disk = std::get<RbdDisk>(volume->source);

    // A paused QEMU with the image as a drive: it opens the image and keeps a
    // watch on it, as a guest's QEMU does.
    Child qemu({"qemu-system-x86_64", "-machine", "none", "-nodefaults", "-display", "none", "-S",
                "-drive",
                "file=" + qemu_rbd_filename(disk, disk.ceph_conf) + ",format=raw,if=none,id=d0"});
    REQUIRE(qemu.started());
    std::vector<std::string> held_by;
    for (int tries = 0; tries < 100 && held_by.empty() && qemu.running(); ++tries) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        held_by = watchers(ceph, name);
    }
    REQUIRE(held_by.size() == 1);

    auto refused = storage.remove_volume(name);
    REQUIRE_FALSE(refused.ok());
    CHECK_THAT(refused.error().message,
               Catch::Contains("is still open (watchers: " + held_by[0] + ")") &&
                   Catch::Contains("image still has watchers"));

    // Guests stop first, then the image goes.
    qemu.stop();
    CHECK(storage.remove_volume(name).ok());
    auto listed = storage.list_volumes(name);
    REQUIRE(listed.ok());
    CHECK(listed->empty());
}
