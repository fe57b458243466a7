// The RBD storage backend without a cluster: its configuration line, the
// command lines it runs, and how it reads Ceph's answers. Ceph's tools are
// scripted through a fake runner with outputs recorded from Debian 12's
// ceph 16.2 (rbd and ceph CLI) on the test cluster.
#include "daemon/backends/storage/rbd/rbd_storage.h"

#include <catch2/catch.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "support/fakes/process_runner_fakes.h"

using namespace ds;

namespace {

using testing::exited;
using testing::ScriptedProcessRunner;

// A Ceph command's name: its verb ("rbd create" for {"rbd", ...options...,
// "create", ...}, "ceph health").
std::string verb_of(const std::vector<std::string>& argv) {
    static const std::vector<std::string> verbs = {"create", "rm", "ls", "du", "status", "health"};
    for (const auto& arg : argv) {
        for (const auto& verb : verbs) {
            if (arg == verb) return argv[0] + " " + verb;
        }
    }
    return argv[0];
}

RbdStorageOptions full_options() {
    RbdStorageOptions options;
    options.pool = "disksweep";
    options.monitors = {"127.0.0.1:6789"};
    options.user = "disksweep";
    options.keyring = "/etc/ceph/client.disksweep.keyring";
    options.ceph_conf = "/etc/ceph/disksweep.conf";
    return options;
}

struct Fixture {
    std::shared_ptr<ScriptedProcessRunner> ceph = std::make_shared<ScriptedProcessRunner>(verb_of);
    RbdStorage storage{full_options(), ceph};
};

StorageConfig raw_config(std::uint64_t size) {
    StorageConfig config;
    config.storage = "rbd:disksweep";
    config.disk_size_bytes = size;
    return config;
}

// Recorded: `rbd rm` / `rbd du` of an image that does not exist, and of any
// image in a pool that does not exist.
const char* const kImageNotFound =
    "rbd: delete error: (2) No such file or directory\nspecified image x is not found.\n";
const char* const kPoolNotFound =
    "rbd: error opening pool 'nopool': (2) No such file or directory\n";
const char* const kHealthOk = R"({"status":"HEALTH_OK","checks":{},"mutes":[]})";

}  // namespace

TEST_CASE("rbd options: every key parsed", "[rbd]") {
    auto options = rbd_storage_options("disksweep", {{"mon_host", "127.0.0.1:6789;127.0.0.2:6789"},
                                                     {"id", "disksweep"},
                                                     {"keyring", "/etc/ceph/k.keyring"},
                                                     {"conf", "/etc/ceph/c.conf"}});
    REQUIRE(options.ok());
    CHECK(options->pool == "disksweep");
    CHECK(options->monitors == std::vector<std::string>{"127.0.0.1:6789", "127.0.0.2:6789"});
    CHECK(options->user == "disksweep");
    CHECK(options->keyring == "/etc/ceph/k.keyring");
    CHECK(options->ceph_conf == "/etc/ceph/c.conf");

    auto bare = rbd_storage_options("rbd", {});
    REQUIRE(bare.ok());
    CHECK(bare->pool == "rbd");
    CHECK(bare->monitors.empty());
    CHECK(bare->user.empty());
}

TEST_CASE("rbd options: errors name the key", "[rbd]") {
    auto error_of = [](std::string_view pool, std::map<std::string, std::string> options) {
        auto parsed = rbd_storage_options(pool, options);
        REQUIRE_FALSE(parsed.ok());
        CHECK(parsed.error().code == errc::kInvalidArgument);
        return parsed.error().message;
    };
    CHECK_THAT(error_of("p", {{"colour", "blue"}}),
               Catch::Contains("'colour'") && Catch::Contains("mon_host, id, keyring, conf"));
    CHECK_THAT(error_of("p", {{"keyring", "relative/k"}}),
               Catch::Contains("'keyring'") && Catch::Contains("absolute"));
    CHECK_THAT(error_of("p", {{"conf", ""}}), Catch::Contains("'conf'"));
    CHECK_THAT(error_of("p", {{"id", "client.disksweep"}}),
               Catch::Contains("'id'") && Catch::Contains("without 'client.'"));
    CHECK_THAT(error_of("p", {{"mon_host", "127.0.0.1:6789;"}}), Catch::Contains("'mon_host'"));
    CHECK_THAT(error_of("", {{"id", "x"}}), Catch::Contains("pool ''"));
    CHECK_THAT(error_of("a/b", {}), Catch::Contains("pool 'a/b'"));
}

TEST_CASE("rbd options: a key in the config is refused and never echoed", "[rbd]") {
    const std::string key = "AQBxvUtlAAAAABAAkD1Zx4Cr1zvVTmJC4wyU3w==";
    for (const char* option : {"key", "secret"}) {
        auto parsed = rbd_storage_options("p", {{option, key}});
        REQUIRE_FALSE(parsed.ok());
        CHECK_THAT(parsed.error().message, !Catch::Contains(key.substr(0, 12)));
        CHECK_THAT(parsed.error().message, Catch::Contains("keyring=PATH"));
    }
    auto as_pool = rbd_storage_options(key, {});
    REQUIRE_FALSE(as_pool.ok());
    CHECK_THAT(as_pool.error().message, !Catch::Contains(key.substr(0, 12)));
}

TEST_CASE("rbd backend: the option keys are listed once each, with their meaning", "[rbd]") {
    std::vector<std::string> keys;
    for (const auto& key : rbd_option_keys()) {
        keys.emplace_back(key.key);
        CHECK_FALSE(key.help.empty());
    }
    CHECK(keys == std::vector<std::string>{"mon_host", "id", "keyring", "conf"});
}

TEST_CASE("rbd backend: name and kind", "[rbd]") {
    Fixture f;
    CHECK(f.storage.name() == "rbd:disksweep");
    CHECK(f.storage.produces() == DiskSourceKind::kRbd);
}

TEST_CASE("rbd backend: create runs rbd create with the identity and size in bytes", "[rbd]") {
    Fixture f;
    auto volume = f.storage.create_volume("disksweep-r1-data", raw_config(1ull << 30));
    REQUIRE(volume.ok());
    auto argv = f.ceph->command("rbd create");
    REQUIRE(argv);
    CHECK(*argv == std::vector<std::string>{"rbd",
                                            "--conf",
                                            "/etc/ceph/disksweep.conf",
                                            "--id",
                                            "disksweep",
                                            "--keyring",
                                            "/etc/ceph/client.disksweep.keyring",
                                            "--mon_host",
                                            "127.0.0.1:6789",
                                            "--client_mount_timeout",
                                            "30",
                                            "--rados_mon_op_timeout",
                                            "60",
                                            "--rados_osd_op_timeout",
                                            "60",
                                            "create",
                                            "--pool",
                                            "disksweep",
                                            "--image",
                                            "disksweep-r1-data",
                                            "--size",
                                            "1073741824B"});
    CHECK(volume->name == "disksweep-r1-data");
    const auto* disk = std::get_if<RbdDisk>(&volume->source);
    REQUIRE(disk != nullptr);
    CHECK(disk->pool == "disksweep");
    CHECK(disk->image == "disksweep-r1-data");
    CHECK(disk->monitors == std::vector<std::string>{"127.0.0.1:6789"});
    CHECK(disk->user == "disksweep");
    CHECK(disk->keyring == "/etc/ceph/client.disksweep.keyring");
    CHECK(disk->ceph_conf == "/etc/ceph/disksweep.conf");
}

TEST_CASE("rbd backend: options left out are left out of the command line", "[rbd]") {
    auto ceph = std::make_shared<ScriptedProcessRunner>(verb_of);
    RbdStorageOptions pool_only;
    pool_only.pool = "rbd";
    RbdStorage storage(pool_only, ceph);
    ceph->replies["rbd ls"] = exited(0, "[]");
    REQUIRE(storage.list_volumes("").ok());
    auto argv = ceph->command("rbd ls");
    REQUIRE(argv);
    for (const char* flag : {"--conf", "--id", "--keyring", "--mon_host"}) {
        CHECK(std::find(argv->begin(), argv->end(), flag) == argv->end());
    }
    CHECK(argv->front() == "rbd");
    CHECK(argv->back() == "json");
}

TEST_CASE("rbd backend: qcow2, odd names and size 0 are refused before Ceph is asked", "[rbd]") {
    Fixture f;
    StorageConfig qcow2 = raw_config(1ull << 30);
    qcow2.image_format = ImageFormat::kQcow2;
    auto refused = f.storage.create_volume("disksweep-r1-data", qcow2);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == errc::kInvalidArgument);
    CHECK_THAT(refused.error().message, Catch::Contains("must be raw, not qcow2"));

    CHECK_FALSE(f.storage.create_volume("a/b", raw_config(1)).ok());
    CHECK_FALSE(f.storage.create_volume("--pool", raw_config(1)).ok());
    CHECK_FALSE(f.storage.create_volume("disksweep-r1-data", raw_config(0)).ok());
    CHECK_FALSE(f.storage.remove_volume("x@snap").ok());
    CHECK(f.ceph->commands.empty());
}

TEST_CASE("rbd backend: a failed create carries Ceph's message without its log prefixes", "[rbd]") {
    Fixture f;
    // Recorded: rbd create of an image that exists.
    f.ceph->replies["rbd create"] =
        exited(17, "",
               "2026-11-30T09:45:55.014+0000 7ff2b368d380 -1 librbd: rbd image q1 already "
               "exists\nrbd: create error: (17) File exists\n");
    auto created = f.storage.create_volume("q1", raw_config(1ull << 20));
    REQUIRE_FALSE(created.ok());
    CHECK(created.error().code == errc::kStorage);
    CHECK(created.error().message ==
          "rbd:disksweep: cannot create image disksweep/q1: librbd: rbd image q1 already exists; "
          "rbd: create error: (17) File exists (exit code 17)");
}

TEST_CASE("rbd backend: an unreachable cluster is Ceph's timeout message", "[rbd]") {
    Fixture f;
    // Recorded: rbd with a monitor address nothing listens on.
    f.ceph->replies["rbd ls"] =
        exited(110, "",
               "2026-11-30T09:46:18.526+0000 7f754fcb6380  0 monclient(hunting): authenticate "
               "timed out after 5\n\nrbd: couldn't connect to the cluster!\nrbd: listing images "
               "failed: (110) Connection timed out\n");
    auto listed = f.storage.list_volumes("disksweep-");
    REQUIRE_FALSE(listed.ok());
    CHECK_THAT(listed.error().message,
               Catch::StartsWith("rbd:disksweep: cannot list the images of pool disksweep: "
                                 "monclient(hunting): authenticate timed out after 5; "
                                 "rbd: couldn't connect to the cluster!"));
}

TEST_CASE("rbd backend: a cephx key in Ceph's output never reaches an error", "[rbd]") {
    Fixture f;
    const std::string key = "AQBxvUtlAAAAABAAkD1Zx4Cr1zvVTmJC4wyU3w==";
    f.ceph->replies["rbd create"] =
        exited(22, "", "parse error at line 2: key = " + key + "\nrbd: create error\n");
    auto created = f.storage.create_volume("v", raw_config(1ull << 20));
    REQUIRE_FALSE(created.ok());
    CHECK_THAT(created.error().message,
               !Catch::Contains(key) && Catch::Contains("[cephx key redacted]"));

    f.ceph->replies["rbd ls"] = exited(0, "key = " + key);
    auto listed = f.storage.list_volumes("");
    REQUIRE_FALSE(listed.ok());
    CHECK_THAT(listed.error().message, !Catch::Contains(key) && Catch::Contains("no JSON"));
}

TEST_CASE("rbd backend: remove succeeds when the image is gone, not when the pool is", "[rbd]") {
    Fixture f;
    CHECK(f.storage.remove_volume("v").ok());
    auto argv = f.ceph->command("rbd rm");
    REQUIRE(argv);
    CHECK(std::vector<std::string>(argv->end() - 6, argv->end()) ==
          std::vector<std::string>{"rm", "--pool", "disksweep", "--image", "v", "--no-progress"});

    f.ceph->replies["rbd rm"] = exited(2, "", kImageNotFound);
    CHECK(f.storage.remove_volume("v").ok());

    f.ceph->replies["rbd rm"] = exited(2, "", kPoolNotFound);
    auto removed = f.storage.remove_volume("v");
    REQUIRE_FALSE(removed.ok());
    CHECK_THAT(removed.error().message, Catch::Contains("cannot remove image disksweep/v") &&
                                            Catch::Contains("error opening pool 'nopool'"));
}

TEST_CASE("rbd backend: remove of an image a guest holds names its watchers", "[rbd]") {
    Fixture f;
    // Recorded: rbd rm while a QEMU has the image open, then rbd status.
    f.ceph->replies["rbd rm"] = exited(
        16, "",
        "2026-11-30T09:46:01.758+0000 7f61a20986c0 -1 librbd::image::PreRemoveRequest: "
        "0x557f4850c100 check_image_watchers: image has watchers - not removing\n\nrbd: error: "
        "image still has watchers\nThis means the image is still open or the client using it "
        "crashed. Try again after closing/unmapping it or waiting 30s for the crashed client to "
        "timeout.\n");
    f.ceph->replies["rbd status"] = exited(
        0, R"({"watchers":[{"address":"127.0.0.1:0/1168712605","client":4176,"cookie":1}]})");
    auto removed = f.storage.remove_volume("q1");
    REQUIRE_FALSE(removed.ok());
    CHECK(removed.error().code == errc::kStorage);
    CHECK_THAT(removed.error().message,
               Catch::Contains("image disksweep/q1 is still open (watchers: "
                               "127.0.0.1:0/1168712605)") &&
                   Catch::Contains("stop the guest") &&
                   Catch::Contains("rbd: error: image still has watchers") &&
                   Catch::Contains("(exit code 16)"));
}

TEST_CASE("rbd backend: list keeps the images with the prefix", "[rbd]") {
    Fixture f;
    f.ceph->replies["rbd ls"] = exited(0, R"(["disksweep-r1-data","other","disksweep-r2-data"])"
                                          "\n");
    auto listed = f.storage.list_volumes("disksweep-");
    REQUIRE(listed.ok());
    CHECK(*listed == std::vector<std::string>{"disksweep-r1-data", "disksweep-r2-data"});

    f.ceph->replies["rbd ls"] = exited(0, R"({"images":[]})");
    CHECK_FALSE(f.storage.list_volumes("").ok());
}

TEST_CASE("rbd backend: state is the cluster's health and the image's real usage", "[rbd]") {
    Fixture f;
    f.ceph->replies["ceph health"] = exited(0, kHealthOk);
    // Recorded: rbd du of a 1 GiB image after 256 MiB of writes.
    f.ceph->replies["rbd du"] =
        exited(0, R"({"images":[{"name":"t1","id":"101ed7e80dc1","provisioned_size":1073741824,)"
                  R"("used_size":268435456}]})");
    Json state = f.storage.state("t1");
    CHECK(state == Json{{"health", "HEALTH_OK"},
                        {"health_checks", Json::array()},
                        {"volume_used_bytes", 268435456},
                        {"volume_provisioned_bytes", 1073741824}});
    auto health = f.ceph->command("ceph health");
    REQUIRE(health);
    CHECK(std::find(health->begin(), health->end(), "--connect-timeout") != health->end());
}

TEST_CASE("rbd backend: state reads the image's own line of rbd du, not a snapshot's", "[rbd]") {
    Fixture f;
    f.ceph->replies["ceph health"] = exited(
        0, R"({"status":"HEALTH_WARN","checks":{"MON_DISK_LOW":{"severity":"HEALTH_WARN"}}})");
    f.ceph->replies["rbd du"] =
        exited(0, R"({"images":[{"name":"t1","snapshot":"s","provisioned_size":8,"used_size":4},)"
                  R"({"name":"t1","provisioned_size":16,"used_size":12}],)"
                  R"("total_provisioned_size":16,"total_used_size":16})");
    Json state = f.storage.state("t1");
    CHECK(state["health"] == "HEALTH_WARN");
    CHECK(state["health_checks"] == Json::array({"MON_DISK_LOW"}));
    CHECK(state["volume_used_bytes"] == 12);
    CHECK(state["volume_provisioned_bytes"] == 16);
}

TEST_CASE("rbd backend: allocated bytes are rbd du's used size of the image", "[rbd]") {
    Fixture f;
    f.ceph->replies["rbd du"] =
        exited(0, R"({"images":[{"name":"t1","snapshot":"s","provisioned_size":8,"used_size":4},)"
                  R"({"name":"t1","provisioned_size":16,"used_size":12}]})");
    CHECK(f.storage.allocated_bytes("t1").value() == 12);
    f.ceph->replies["rbd du"] = exited(2, "", "rbd: du failed: (2) No such file or directory\n");
    CHECK(f.storage.allocated_bytes("t1").error().code == errc::kNotFound);
    f.ceph->replies["rbd du"] = exited(0, R"({"images":[{"name":"t1","used_size":-3}]})");
    CHECK_FALSE(f.storage.allocated_bytes("t1").ok());
}

TEST_CASE("rbd backend: state of a removed image has no usage and no error", "[rbd]") {
    Fixture f;
    f.ceph->replies["ceph health"] = exited(0, kHealthOk);
    f.ceph->replies["rbd du"] = exited(2, "", "rbd: du failed: (2) No such file or directory\n");
    CHECK(f.storage.state("gone") ==
          Json{{"health", "HEALTH_OK"}, {"health_checks", Json::array()}});
}

TEST_CASE("rbd backend: what state cannot read is in its errors, in Ceph's words", "[rbd]") {
    Fixture f;
    f.ceph->replies["ceph health"] = exited(1, "", "timed out\n");
    f.ceph->replies["rbd du"] = exited(2, "", kPoolNotFound);
    Json state = f.storage.state("t1");
    CHECK_FALSE(state.contains("health"));
    CHECK_FALSE(state.contains("volume_used_bytes"));
    REQUIRE(state["errors"].size() == 2);
    CHECK_THAT(state["errors"][0].get<std::string>(),
               Catch::Contains("cannot read the cluster's health: timed out (exit code 1)"));
    CHECK_THAT(state["errors"][1].get<std::string>(), Catch::Contains("error opening pool"));
}

TEST_CASE("rbd backend: without Ceph's tools the error says which package", "[rbd]") {
    Fixture f;
    f.ceph->cannot_start = true;
    auto created = f.storage.create_volume("v", raw_config(1ull << 20));
    REQUIRE_FALSE(created.ok());
    CHECK_THAT(created.error().message, Catch::Contains("ceph-common"));
}
