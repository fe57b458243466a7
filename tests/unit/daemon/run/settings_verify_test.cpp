#include "daemon/run/settings_verify.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>

#include "support/disk_settings.h"

namespace ds {
namespace {

// The reference Ceph study's configuration: scsi-single, IO thread, SSD
// emulation, discard, ext4 with barrier=0,data=writeback.
StorageConfig reference_config() {
    StorageConfig config = ds::test::reference_disk_config();
    config.filesystem.label = "ext4:barrier=0,data=writeback";
    config.filesystem.type = "ext4";
    config.filesystem.mount_options = "barrier=0,data=writeback";
    return config;
}

Json matching_hypervisor() {
    return Json{
        {"bus", "scsi-single"}, {"cache", "unsafe"},        {"aio", "io_uring"},
        {"discard", true},      {"detect_zeroes", "unmap"}, {"ssd", true},
        {"iothread", true},     {"image_format", "raw"},    {"controller_model", "virtio-scsi"}};
}

Json matching_guest() {
    return Json{{"device", "sda"},
                {"fs_type", "ext4"},
                {"mount_options", "rw,relatime,nobarrier,data=writeback"},
                {"rotational", 0},
                {"discard_max_bytes", 1073741824},
                {"scheduler", "[mq-deadline] none"},
                {"logical_block_size", 512},
                {"driver", "virtio_scsi"},
                {"write_cache", "write back"},
                {"serial", "disksweep-data"},
                {"mount_source", "/dev/sda"},
                {"hw_queues", 2},
                {"online_cpus", 2}};
}

}  // namespace

TEST_CASE("verify_settings: everything in force", "[settings_verify]") {
    CHECK(verify_settings(reference_config(), matching_hypervisor(), matching_guest()).empty());
}

TEST_CASE("verify_settings: null readbacks skip their checks", "[settings_verify]") {
    CHECK(verify_settings(reference_config(), nullptr, nullptr).empty());
    CHECK(verify_settings(reference_config(), matching_hypervisor(), nullptr).empty());
    CHECK(verify_settings(reference_config(), nullptr, matching_guest()).empty());
}

TEST_CASE("verify_settings: hypervisor mismatches, one line each", "[settings_verify]") {
    Json applied = matching_hypervisor();
    applied["cache"] = "none";
    applied["discard"] = false;
    applied["bus"] = "scsi";
    applied.erase("aio");
    const std::vector<std::string> mismatches =
        verify_settings(reference_config(), applied, nullptr);
    REQUIRE(mismatches.size() == 4);
    CHECK(mismatches[0] == "bus: requested scsi-single, domain XML has scsi");
    CHECK(mismatches[1] == "cache: requested unsafe, domain XML has none");
    CHECK(mismatches[2] == "aio: requested io_uring, not reported by domain XML");
    CHECK(mismatches[3] == "discard: requested on, domain XML has off");
}

TEST_CASE("verify_settings: every hypervisor key is compared", "[settings_verify]") {
    const std::vector<std::pair<std::string, Json>> wrong_values = {
        {"bus", "sata"},     {"cache", "writeback"},    {"aio", "threads"},
        {"discard", false},  {"detect_zeroes", "on"},   {"ssd", false},
        {"iothread", false}, {"image_format", "qcow2"},
    };
    for (const auto& [key, value] : wrong_values) {
        Json applied = matching_hypervisor();
        applied[key] = value;
        const std::vector<std::string> mismatches =
            verify_settings(reference_config(), applied, nullptr);
        INFO(key);
        REQUIRE(mismatches.size() == 1);
        CHECK(mismatches[0].rfind(key + ": requested ", 0) == 0);
    }
    // controller_model is informational: not part of the request.
    Json applied = matching_hypervisor();
    applied["controller_model"] = "lsilogic";
    CHECK(verify_settings(reference_config(), applied, nullptr).empty());
}

TEST_CASE("verify_settings: guest mismatches", "[settings_verify]") {
    SECTION("wrong filesystem") {
        Json guest = matching_guest();
        guest["fs_type"] = "xfs";
        const auto mismatches = verify_settings(reference_config(), nullptr, guest);
        REQUIRE(mismatches.size() == 1);
        CHECK(mismatches[0] == "filesystem: requested ext4, guest has xfs");
    }
    SECTION("mount option not in force") {
        Json guest = matching_guest();
        guest["mount_options"] = "rw,relatime,data=writeback";
        const auto mismatches = verify_settings(reference_config(), nullptr, guest);
        REQUIRE(mismatches.size() == 1);
        CHECK(mismatches[0] ==
              "mount option barrier=0: requested, guest mounted with rw,relatime,data=writeback");
    }
    SECTION("rotational disk despite ssd") {
        Json guest = matching_guest();
        guest["rotational"] = 1;
        const auto mismatches = verify_settings(reference_config(), nullptr, guest);
        REQUIRE(mismatches.size() == 1);
        CHECK(mismatches[0] == "ssd: requested on, guest sees a rotational disk (rotational=1)");
    }
    SECTION("no discard support despite discard") {
        Json guest = matching_guest();
        guest["discard_max_bytes"] = 0;
        const auto mismatches = verify_settings(reference_config(), nullptr, guest);
        REQUIRE(mismatches.size() == 1);
        CHECK(mismatches[0] ==
              "discard: requested on, guest sees no discard support (discard_max_bytes=0)");
    }
    SECTION("keys the checks need are missing") {
        const auto mismatches = verify_settings(reference_config(), nullptr, Json::object());
        REQUIRE(mismatches.size() == 8);
        CHECK(mismatches[0] == "filesystem: requested ext4, guest has none reported");
        CHECK(mismatches[3] == "ssd: requested on, guest did not report rotational");
        CHECK(mismatches[4] == "discard: requested on, guest did not report discard_max_bytes");
        CHECK(mismatches[5] ==
              "bus scsi-single: expected driver virtio_scsi, guest did not report it");
        CHECK(mismatches[6] ==
              "cache unsafe: expected write_cache write back, guest did not report it");
        CHECK(mismatches[7] ==
              "data disk: expected serial disksweep-data, guest did not report it");
    }
    SECTION("not an object") {
        const auto mismatches = verify_settings(reference_config(), Json::array(), Json("x"));
        REQUIRE(mismatches.size() == 2);
    }
}

TEST_CASE("verify_settings: what the guest cannot tell is not demanded", "[settings_verify]") {
    StorageConfig config = reference_config();
    config.ssd = false;
    config.discard = false;
    config.filesystem.mount_options = "";
    Json guest = matching_guest();
    // QEMU keeps advertising discard with discard='ignore' (measured: 1 GiB
    // on scsi-hd), so discard off demands nothing of the guest.
    guest["discard_max_bytes"] = 1073741824;
    guest["rotational"] = 1;
    guest["mount_options"] = "rw,relatime";
    CHECK(verify_settings(config, nullptr, guest).empty());
    guest["discard_max_bytes"] = 0;
    CHECK(verify_settings(config, nullptr, guest).empty());
    // The agent may report the flag as a boolean.
    guest["rotational"] = true;
    CHECK(verify_settings(config, nullptr, guest).empty());
}

TEST_CASE("verify_settings: a non-rotational disk without ssd is a mismatch", "[settings_verify]") {
    StorageConfig config = reference_config();
    config.ssd = false;
    Json guest = matching_guest();
    guest["rotational"] = 0;
    const auto mismatches = verify_settings(config, nullptr, guest);
    REQUIRE(mismatches.size() == 1);
    CHECK(mismatches[0] == "ssd: requested off, guest sees a non-rotational disk (rotational=0)");
}

TEST_CASE("verify_settings: the reference btrfs configurations", "[settings_verify]") {
    StorageConfig config = reference_config();
    config.filesystem.type = "btrfs";
    config.filesystem.mount_options = "nodatacow,discard";
    Json guest = matching_guest();
    guest["fs_type"] = "btrfs";
    guest["mount_options"] =
        "rw,relatime,ssd,discard=async,nodatasum,nodatacow,space_cache=v2,subvolid=5,subvol=/";
    CHECK(verify_settings(config, nullptr, guest).empty());
}

TEST_CASE("mount options: the equivalence table", "[settings_verify]") {
    using Shown = std::vector<std::string>;
    // ext4 shows barrier=0 as nobarrier.
    CHECK(mount_option_in_force("barrier=0", Shown{"rw", "relatime", "nobarrier"}));
    CHECK_FALSE(mount_option_in_force("barrier=0", Shown{"rw", "relatime"}));
    CHECK_FALSE(mount_option_in_force("barrier=0", Shown{"rw", "barrier=0x"}));
    CHECK(mount_option_in_force("nobarrier", Shown{"nobarrier"}));
    // Barriers on is the default and not shown.
    CHECK(mount_option_in_force("barrier", Shown{"rw", "relatime"}));
    CHECK(mount_option_in_force("barrier=1", Shown{"rw"}));
    CHECK_FALSE(mount_option_in_force("barrier=1", Shown{"rw", "nobarrier"}));
    // btrfs shows nodatacow together with nodatasum.
    CHECK(mount_option_in_force("nodatacow", Shown{"rw", "nodatasum", "nodatacow"}));
    CHECK_FALSE(mount_option_in_force("nodatacow", Shown{"rw", "nodatasum"}));
    // discard: plain, sync or async all discard.
    CHECK(mount_option_in_force("discard", Shown{"rw", "discard"}));
    CHECK(mount_option_in_force("discard", Shown{"rw", "discard=async"}));
    CHECK(mount_option_in_force("discard", Shown{"rw", "discard=sync"}));
    CHECK_FALSE(mount_option_in_force("discard", Shown{"rw", "nodiscard"}));
    // An explicit discard mode must be the one shown.
    CHECK(mount_option_in_force("discard=async", Shown{"discard=async"}));
    CHECK_FALSE(mount_option_in_force("discard=async", Shown{"discard"}));
    // ext4 defaults that are not printed.
    CHECK(mount_option_in_force("data=ordered", Shown{"rw", "relatime"}));
    CHECK(mount_option_in_force("data=ordered", Shown{"rw", "data=ordered"}));
    CHECK_FALSE(mount_option_in_force("data=ordered", Shown{"rw", "data=writeback"}));
    CHECK(mount_option_in_force("delalloc", Shown{"rw"}));
    CHECK_FALSE(mount_option_in_force("delalloc", Shown{"rw", "nodelalloc"}));
    CHECK(mount_option_in_force("defaults", Shown{}));
    // Everything else verbatim...
    CHECK(mount_option_in_force("data=writeback", Shown{"rw", "data=writeback"}));
    CHECK(mount_option_in_force("noatime", Shown{"rw", "noatime"}));
    CHECK_FALSE(mount_option_in_force("noatime", Shown{"rw", "relatime"}));
    CHECK_FALSE(mount_option_in_force("commit=60", Shown{"rw", "commit=600"}));
    // ...except a compression algorithm, which btrfs prints with its level.
    CHECK(mount_option_in_force("compress=zstd", Shown{"rw", "compress=zstd:3"}));
    CHECK(mount_option_in_force("compress=zstd:1", Shown{"rw", "compress=zstd:1"}));
    CHECK_FALSE(mount_option_in_force("compress=zstd:1", Shown{"rw", "compress=zstd:3"}));
    CHECK_FALSE(mount_option_in_force("compress=zstd", Shown{"rw", "compress=lzo"}));
}

TEST_CASE("mount options: as a Linux 6.1 guest really showed them", "[settings_verify]") {
    // Requested options and the /proc/mounts line, measured by mounting each
    // on a disksweep data disk in a Debian 12 guest (kernel 6.1.0-57).
    const std::vector<std::pair<std::string, std::string>> measured = {
        {"defaults", "rw,relatime"},
        {"barrier=0,data=writeback", "rw,relatime,nobarrier,data=writeback"},
        {"nobarrier,data=ordered", "rw,relatime,nobarrier,data=ordered"},
        {"discard,noatime,commit=60", "rw,noatime,discard,commit=60"},
        {"barrier=1,nodelalloc", "rw,relatime,nodelalloc"},
        {"nodatacow,discard",
         "rw,relatime,nodatasum,nodatacow,ssd,discard,space_cache=v2,subvolid=5,subvol=/"},
        {"discard=async,compress=zstd",
         "rw,relatime,compress=zstd:3,ssd,discard=async,space_cache=v2,subvolid=5,subvol=/"},
        {"ssd,space_cache=v2,commit=120",
         "rw,relatime,ssd,space_cache=v2,commit=120,subvolid=5,subvol=/"},
        {"nobarrier", "rw,relatime,nobarrier,space_cache=v2,subvolid=5,subvol=/"},
        {"discard,noatime", "rw,noatime,attr2,discard,inode64,logbufs=8,logbsize=32k,noquota"},
    };
    for (const auto& [requested, shown] : measured) {
        const std::vector<std::string> shown_options = split_mount_options(shown);
        for (const std::string& option : split_mount_options(requested)) {
            INFO(option << " in " << shown);
            CHECK(mount_option_in_force(option, shown_options));
        }
    }
}

TEST_CASE("split_mount_options", "[settings_verify]") {
    CHECK(split_mount_options("") == std::vector<std::string>{});
    CHECK(split_mount_options("rw") == std::vector<std::string>{"rw"});
    CHECK(split_mount_options("rw,, relatime ,") == std::vector<std::string>{"rw", "relatime"});
}

}  // namespace ds

namespace ds {
namespace {

StorageConfig btrfs_config(std::vector<std::string> mkfs, std::vector<std::string> steps) {
    StorageConfig config = ds::test::reference_disk_config();
    config.filesystem.type = "btrfs";
    config.filesystem.mkfs_options = std::move(mkfs);
    config.filesystem.post_format = std::move(steps);
    return config;
}

Json btrfs_guest(Json profiles, bool nocow) {
    Json guest = matching_guest();
    guest["fs_type"] = "btrfs";
    guest["mount_options"] = "rw,relatime,ssd,discard=async,space_cache=v2";
    guest["btrfs"] = std::move(profiles);
    guest["nocow"] = nocow;
    guest["work_dir_attributes"] = nocow ? "---------------C------" : "----------------------";
    return guest;
}

}  // namespace

TEST_CASE("verify_settings: block-layer settings against the readback", "[settings_verify]") {
    StorageConfig config = reference_config();
    config.scheduler = IoScheduler::kBfq;
    config.read_ahead_kb = 512;
    config.nr_requests = 64;
    Json guest = matching_guest();
    guest["scheduler"] = "bfq";
    guest["read_ahead_kb"] = 512;
    guest["nr_requests"] = 64;
    CHECK(verify_settings(config, nullptr, guest).empty());

    guest["scheduler"] = "mq-deadline";
    guest["read_ahead_kb"] = 128;
    guest.erase("nr_requests");
    CHECK(verify_settings(config, nullptr, guest) ==
          std::vector<std::string>{"scheduler: requested bfq, guest has mq-deadline",
                                   "read_ahead_kb: requested 512, guest has 128",
                                   "nr_requests: requested 64, guest did not report it"});
    // At their defaults nothing is checked: the kernel's values are whatever they are.
    CHECK(verify_settings(reference_config(), nullptr, guest).empty());
}

TEST_CASE("verify_settings: btrfs profiles from mkfs options and the single step",
          "[settings_verify]") {
    const Json defaults = {{"data", "single"}, {"metadata", "dup"}, {"system", "dup"}};
    const Json all_single = {{"data", "single"}, {"metadata", "single"}, {"system", "single"}};
    CHECK(verify_settings(btrfs_config({}, {}), nullptr, btrfs_guest(defaults, false)).empty());
    CHECK(verify_settings(btrfs_config({}, {"single"}), nullptr, btrfs_guest(all_single, false))
              .empty());
    CHECK(verify_settings(btrfs_config({}, {"single"}), nullptr, btrfs_guest(defaults, false)) ==
          std::vector<std::string>{"btrfs metadata profile: requested single, guest has dup",
                                   "btrfs system profile: requested single, guest has dup"});
    // Every spelling of mkfs.btrfs's profile options.
    for (const auto& mkfs :
         std::vector<std::vector<std::string>>{{"-d", "dup", "-m", "single"},
                                               {"--data", "DUP", "--metadata", "single"},
                                               {"--data=dup", "--metadata=single"}}) {
        INFO(mkfs[0]);
        const Json wanted = {{"data", "dup"}, {"metadata", "single"}, {"system", "dup"}};
        CHECK(verify_settings(btrfs_config(mkfs, {}), nullptr, btrfs_guest(wanted, false)).empty());
        CHECK(verify_settings(btrfs_config(mkfs, {}), nullptr, btrfs_guest(defaults, false)) ==
              std::vector<std::string>{"btrfs data profile: requested dup, guest has single",
                                       "btrfs metadata profile: requested single, guest has dup"});
    }
    Json unreported = btrfs_guest(defaults, false);
    unreported.erase("btrfs");
    CHECK(verify_settings(btrfs_config({}, {"single"}), nullptr, unreported) ==
          std::vector<std::string>{
              "btrfs metadata profile: requested single, guest did not report it",
              "btrfs system profile: requested single, guest did not report it"});
}

TEST_CASE("verify_settings: the nocow step needs a No_COW work directory", "[settings_verify]") {
    const Json defaults = {{"data", "single"}, {"metadata", "dup"}, {"system", "dup"}};
    CHECK(
        verify_settings(btrfs_config({}, {"nocow"}), nullptr, btrfs_guest(defaults, true)).empty());
    CHECK(verify_settings(btrfs_config({}, {"nocow"}), nullptr, btrfs_guest(defaults, false)) ==
          std::vector<std::string>{"nocow: requested, the work directory is not No_COW (lsattr: "
                                   "----------------------)"});
    Json unreported = btrfs_guest(defaults, true);
    unreported.erase("nocow");
    CHECK(verify_settings(btrfs_config({}, {"nocow"}), nullptr, unreported) ==
          std::vector<std::string>{
              "nocow: requested, guest did not report the work directory's attributes"});
}

TEST_CASE("verify_settings: each requested server variable against SHOW VARIABLES",
          "[settings_verify]") {
    Workload workload{.name = "atis",
                      .kind = "mariadb-atis",
                      .params = Json{{"server",
                                      {{"innodb_doublewrite", 0},
                                       {"innodb_flush_method", "O_DSYNC"},
                                       {"innodb_buffer_pool_size", "256M"}}}}};
    Json guest = matching_guest();
    guest["server_version"] = "10.11.19-MariaDB-0+deb12u1";
    guest["server_variables"] = {{"innodb_doublewrite", "OFF"},
                                 {"innodb_flush_method", "O_DSYNC"},
                                 {"innodb_buffer_pool_size", "268435456"}};
    CHECK(verify_settings(reference_config(), workload, nullptr, guest).empty());

    guest["server_variables"]["innodb_flush_method"] = "fsync";
    guest["server_variables"].erase("innodb_buffer_pool_size");
    CHECK(verify_settings(reference_config(), workload, nullptr, guest) ==
          std::vector<std::string>{
              "server variable innodb_buffer_pool_size: requested 256M, SHOW VARIABLES did not "
              "list it",
              "server variable innodb_flush_method: requested O_DSYNC, server has fsync"});
    // A workload without a server table checks none.
    CHECK(verify_settings(reference_config(),
                          Workload{.name = "w", .kind = "fio", .params = Json::object()}, nullptr,
                          guest)
              .empty());
}

TEST_CASE("verify_settings: a server variable as the guest's MariaDB version reads it",
          "[settings_verify]") {
    // 11.8.9's readback of the seed study's tunings (SHOW VARIABLES as
    // recorded in tests/data/mariadb/innodb_flush_settings_11.8.txt).
    const auto tuned = [](Json server) {
        return Workload{.name = "atis", .kind = "mariadb-atis", .params = {{"server", server}}};
    };
    Json guest = matching_guest();
    guest["server_version"] = "11.8.9-MariaDB-0+deb13u1";
    guest["server_variables"] = {
        {"innodb_doublewrite", "OFF"},         {"innodb_flush_method", "O_DSYNC"},
        {"innodb_data_file_buffering", "OFF"}, {"innodb_data_file_write_through", "ON"},
        {"innodb_log_file_buffering", "OFF"},  {"innodb_log_file_write_through", "ON"}};
    const Workload odsync = tuned({{"innodb_doublewrite", 0}, {"innodb_flush_method", "O_DSYNC"}});
    CHECK(verify_settings(reference_config(), odsync, nullptr, guest).empty());

    // The same request on a guest whose Boolean says otherwise.
    Json lying = guest;
    lying["server_variables"]["innodb_log_file_write_through"] = "OFF";
    CHECK(verify_settings(reference_config(), odsync, nullptr, lying) ==
          std::vector<std::string>{
              "server variable innodb_flush_method: requested O_DSYNC, which MariaDB 11.8 applies "
              "as innodb_log_file_write_through = ON, but the server has OFF"});

    // nosync: 11.8 shows it back and syncs anyway; never recorded as applied.
    Json nosync = guest;
    nosync["server_variables"]["innodb_flush_method"] = "nosync";
    const auto refused = verify_settings(
        reference_config(), tuned({{"innodb_doublewrite", 0}, {"innodb_flush_method", "nosync"}}),
        nullptr, nosync);
    REQUIRE(refused.size() == 1);
    CHECK_THAT(refused[0], Catch::StartsWith("server variable innodb_flush_method: requested "
                                             "nosync, refused on MariaDB 11.8: "));
    // ... which 10.11 does apply.
    nosync["server_version"] = "10.11.19-MariaDB-0+deb12u1";
    CHECK(verify_settings(reference_config(), tuned({{"innodb_flush_method", "nosync"}}), nullptr,
                          nosync)
              .empty());
    // A guest that does not say its version cannot vouch for a versioned value.
    nosync.erase("server_version");
    CHECK_THAT(verify_settings(reference_config(), tuned({{"innodb_flush_method", "nosync"}}),
                               nullptr, nosync)
                   .at(0),
               Catch::Contains("whose effect depends on the MariaDB version"));
}

}  // namespace ds

namespace ds {

TEST_CASE("verify_settings: never throws, whatever JSON the readbacks hold",
          "[settings_verify][regression]") {
    // Issue 9: guest.value("fs_type", std::string()) threw nlohmann's
    // type_error for "fs_type": 1, on a scheduler worker, killing the daemon.
    StorageConfig requested = btrfs_config({"-d", "dup"}, {"single", "nocow"});
    requested.discard = true;
    requested.ssd = true;
    requested.scheduler = IoScheduler::kBfq;
    requested.read_ahead_kb = 512;
    requested.nr_requests = 64;
    const Workload workload{.name = "atis",
                            .kind = "mariadb-atis",
                            .params = Json{{"server", {{"innodb_flush_method", "O_DSYNC"}}}}};
    const std::vector<Json> strange_values = {
        1,
        -1,
        1.5,
        "1",
        true,
        nullptr,
        Json::array({1, "x"}),
        Json{{"nested", {{"deeper", 1}}}},
        std::numeric_limits<std::uint64_t>::max(),
        std::string("bad \xff\xfe utf-8"),  // a hand-built Json can hold it
    };
    const Json honest =
        btrfs_guest({{"data", "dup"}, {"metadata", "single"}, {"system", "single"}}, true);
    for (const Json& strange : strange_values) {
        INFO(strange.dump(-1, ' ', false, Json::error_handler_t::replace));
        // Each readback key, then the readback and the hypervisor's settings
        // as a whole, replaced by the strange value.
        std::vector<Json> guests;
        for (const char* key : {"fs_type", "mount_options", "rotational", "discard_max_bytes",
                                "scheduler", "read_ahead_kb", "nr_requests", "btrfs",
                                "work_dir_attributes", "nocow", "server_variables"}) {
            Json guest = honest;
            guest[key] = strange;
            guests.push_back(guest);
        }
        Json nested_strange = honest;
        nested_strange["btrfs"]["data"] = strange;
        nested_strange["server_variables"] = {{"innodb_flush_method", strange}};
        guests.push_back(nested_strange);
        guests.push_back(strange);
        for (const Json& guest : guests) {
            std::vector<std::string> mismatches;
            CHECK_NOTHROW(mismatches = verify_settings(requested, workload, strange, guest));
            // The strange hypervisor settings at least (null skips their checks).
            if (!strange.is_null()) CHECK_FALSE(mismatches.empty());
            for (const std::string& line : mismatches) CHECK(line.size() < 600);
        }
    }
}

TEST_CASE("verify_settings: a readback value of the wrong type is a mismatch, shown as JSON",
          "[settings_verify]") {
    Json guest = matching_guest();
    guest["fs_type"] = 1;
    CHECK(verify_settings(reference_config(), nullptr, guest) ==
          std::vector<std::string>{"filesystem: requested ext4, guest has 1"});
}

}  // namespace ds

namespace ds {
namespace {

// QEMU's view as read_qemu_disk_settings gives it for reference_config().
Json matching_qemu() {
    return Json{{"bus", "scsi-single"},
                {"cache", "unsafe"},
                {"detect_zeroes", "unmap"},
                {"discard", true},
                {"ssd", true},
                {"iothread", true},
                {"queues", 2},
                {"image_format", "raw"},
                {"qdev", "scsi0-0-0-0"},
                {"sources",
                 {{"cache", "query-block cache.direct/writeback/no-flush"},
                  {"bus", "qom-get parent_bus, qom-list of that bus"}}}};
}

Json with_qemu(Json qemu) {
    Json applied = matching_hypervisor();
    applied["qemu"] = std::move(qemu);
    return applied;
}

}  // namespace

TEST_CASE("verify_settings: the QEMU level is compared too, naming its source",
          "[settings_verify]") {
    CHECK(verify_settings(reference_config(), with_qemu(matching_qemu()), nullptr).empty());
    Json qemu = matching_qemu();
    qemu["cache"] = "none";
    qemu["bus"] = "scsi";
    const auto mismatches = verify_settings(reference_config(), with_qemu(qemu), nullptr);
    REQUIRE(mismatches.size() == 2);
    CHECK(mismatches[0] ==
          "bus: requested scsi-single, QEMU has scsi (qom-get parent_bus, qom-list of that bus)");
    CHECK(mismatches[1] ==
          "cache: requested unsafe, QEMU has none (query-block cache.direct/writeback/no-flush)");
}

TEST_CASE("verify_settings: both levels report their own mismatch", "[settings_verify]") {
    Json applied = with_qemu(matching_qemu());
    applied["iothread"] = false;
    applied["qemu"]["iothread"] = false;
    const auto mismatches = verify_settings(reference_config(), applied, nullptr);
    REQUIRE(mismatches.size() == 2);
    CHECK(mismatches[0] == "iothread: requested on, domain XML has off");
    CHECK(mismatches[1] == "iothread: requested on, QEMU has off");
}

TEST_CASE("verify_settings: what QEMU cannot show is not demanded of it", "[settings_verify]") {
    // QEMU 7.2's QMP has no aio and shows discard only as detect_zeroes=unmap
    // (the QEMU process level shows both).
    Json qemu = matching_qemu();
    qemu.erase("discard");
    CHECK(verify_settings(reference_config(), with_qemu(qemu), nullptr).empty());
    // A key QEMU always shows is a mismatch when missing.
    qemu.erase("ssd");
    const auto mismatches = verify_settings(reference_config(), with_qemu(qemu), nullptr);
    REQUIRE(mismatches.size() == 1);
    CHECK(mismatches[0] == "ssd: requested on, not reported by QEMU");
    // discard shown by QEMU though not requested is a mismatch.
    StorageConfig config = reference_config();
    config.discard = false;
    config.detect_zeroes = DetectZeroes::kOff;
    Json applied = with_qemu(matching_qemu());
    applied["discard"] = false;
    applied["detect_zeroes"] = "off";
    applied["qemu"]["detect_zeroes"] = "off";
    config.filesystem.mount_options = "";
    const auto discard = verify_settings(config, applied, nullptr);
    REQUIRE(discard.size() == 1);
    CHECK(discard[0] == "discard: requested off, QEMU has on");
}

TEST_CASE("verify_settings: the QEMU process shows aio and discard", "[settings_verify]") {
    // reference_config(): aio io_uring, discard on.
    Json applied = with_qemu(matching_qemu());
    applied["qemu_process"] = Json{{"aio", "io_uring"},
                                   {"discard", true},
                                   {"pid", 4242},
                                   {"sources",
                                    {{"aio", "/proc/4242 maps and fds: io_uring in use"},
                                     {"discard", "-blockdev libvirt-1-format"}}}};
    CHECK(verify_settings(reference_config(), applied, nullptr).empty());
    // Another engine in use, and discards dropped by the block node: named
    // at that level alone (the domain XML still reads as requested).
    applied["qemu_process"]["aio"] = "threads";
    applied["qemu_process"]["discard"] = false;
    const auto mismatches = verify_settings(reference_config(), applied, nullptr);
    REQUIRE(mismatches.size() == 2);
    CHECK(mismatches[0] ==
          "aio: requested io_uring, QEMU process has threads (/proc/4242 maps and fds: io_uring in "
          "use)");
    CHECK(mismatches[1] ==
          "discard: requested on, QEMU process has off (-blockdev libvirt-1-format)");
    // Both must be reported: a level that is there but silent is a mismatch.
    applied["qemu_process"].erase("aio");
    applied["qemu_process"]["discard"] = true;
    const auto silent = verify_settings(reference_config(), applied, nullptr);
    REQUIRE(silent.size() == 1);
    CHECK(silent[0] == "aio: requested io_uring, not reported by QEMU process");
}

TEST_CASE("verify_settings: throttling and queues at both levels", "[settings_verify]") {
    StorageConfig config = reference_config();
    config.iops_limit = 500;
    config.bandwidth_limit = 8u << 20;
    config.queues = 2;
    Json applied = with_qemu(matching_qemu());
    for (Json* level : {&applied, &applied["qemu"]}) {
        (*level)["iops_limit"] = 500;
        (*level)["bandwidth_limit"] = 8u << 20;
        (*level)["queues"] = 2;
    }
    CHECK(verify_settings(config, applied, nullptr).empty());

    Json unthrottled_qemu = applied;
    unthrottled_qemu["qemu"].erase("iops_limit");
    unthrottled_qemu["qemu"]["queues"] = 1;
    const auto mismatches = verify_settings(config, unthrottled_qemu, nullptr);
    REQUIRE(mismatches.size() == 2);
    CHECK(mismatches[0] == "iops_limit: requested 500, QEMU has none");
    CHECK(mismatches[1] == "queues: requested 2, QEMU has 1");

    // Not requested: a limit in force is a mismatch, queues are QEMU's choice.
    const StorageConfig plain = reference_config();
    const auto unrequested = verify_settings(plain, applied, nullptr);
    REQUIRE(unrequested.size() == 4);
    CHECK(unrequested[0] == "iops_limit: requested none, domain XML has 500");
    CHECK(unrequested[1] == "bandwidth_limit: requested none, domain XML has 8388608");
}

TEST_CASE("verify_settings: the guest's driver, write cache, queues and data disk",
          "[settings_verify]") {
    SECTION("the driver follows the bus") {
        StorageConfig config = reference_config();
        Json guest = matching_guest();
        for (const auto& [bus, driver] :
             std::vector<std::pair<Bus, std::string>>{{Bus::kVirtioBlk, "virtio_blk"},
                                                      {Bus::kScsi, "virtio_scsi"},
                                                      {Bus::kScsiSingle, "virtio_scsi"},
                                                      {Bus::kSata, "ahci"}}) {
            config.bus = bus;
            guest["driver"] = driver;
            INFO(driver);
            CHECK(verify_settings(config, nullptr, guest).empty());
        }
        guest["driver"] = "virtio_blk";
        config.bus = Bus::kScsiSingle;
        const auto mismatches = verify_settings(config, nullptr, guest);
        REQUIRE(mismatches.size() == 1);
        CHECK(mismatches[0] ==
              "bus scsi-single: expected driver virtio_scsi, guest has virtio_blk");
    }
    SECTION("write cache per cache mode, as QEMU 7.2 showed it") {
        StorageConfig config = reference_config();
        Json guest = matching_guest();
        for (const auto& [cache, shown] : std::vector<std::pair<CacheMode, std::string>>{
                 {CacheMode::kNone, "write back"},
                 {CacheMode::kWriteback, "write back"},
                 {CacheMode::kUnsafe, "write back"},
                 {CacheMode::kWritethrough, "write through"},
                 {CacheMode::kDirectsync, "write through"}}) {
            config.cache = cache;
            guest["write_cache"] = shown;
            INFO(shown);
            CHECK(verify_settings(config, nullptr, guest).empty());
        }
        config.cache = CacheMode::kWritethrough;
        guest["write_cache"] = "write back";
        const auto mismatches = verify_settings(config, nullptr, guest);
        REQUIRE(mismatches.size() == 1);
        CHECK(mismatches[0] ==
              "cache writethrough: expected write_cache write through, guest has write back");
    }
    SECTION("hardware queues: at most one per guest CPU") {
        StorageConfig config = reference_config();
        config.queues = 4;
        Json guest = matching_guest();  // 2 CPUs, 2 queues: measured with queues=4
        CHECK(verify_settings(config, nullptr, guest).empty());
        config.queues = 1;
        const auto mismatches = verify_settings(config, nullptr, guest);
        REQUIRE(mismatches.size() == 1);
        CHECK(mismatches[0] ==
              "queues: requested 1 (1 with 2 guest CPUs), guest has 2 hardware queues");
        guest.erase("online_cpus");
        CHECK(verify_settings(config, nullptr, guest) ==
              std::vector<std::string>{
                  "queues: requested 1, guest did not report hw_queues and online_cpus"});
    }
    SECTION("the filesystem is mounted from the data disk found by serial") {
        Json guest = matching_guest();
        guest["mount_source"] = "/dev/vda";
        guest["serial"] = "disksweep-root";
        const auto mismatches = verify_settings(reference_config(), nullptr, guest);
        REQUIRE(mismatches.size() == 2);
        CHECK(mismatches[0] ==
              "data disk: expected serial disksweep-data, guest has disksweep-root");
        CHECK(mismatches[1] == "data disk: expected mount_source /dev/sda, guest has /dev/vda");
    }
}

}  // namespace ds

namespace ds {

TEST_CASE("verify_settings: QEMU's `info block` (Proxmox) is compared on what it shows",
          "[settings_verify]") {
    // parse_info_block of the data disk of reference_config(): the block node
    // only, no device properties (bus, ssd, iothread, queues).
    const Json info_block = {{"cache", "unsafe"},
                             {"detect_zeroes", "unmap"},
                             {"discard", true},
                             {"image_format", "raw"},
                             {"sources", {{"cache", "info block Cache mode"}}}};
    Json applied = matching_hypervisor();
    applied["qemu_info_block"] = info_block;
    CHECK(verify_settings(reference_config(), applied, nullptr).empty());
    applied["qemu_info_block"]["cache"] = "none";
    const auto mismatches = verify_settings(reference_config(), applied, nullptr);
    REQUIRE(mismatches.size() == 1);
    CHECK(mismatches[0] ==
          "cache: requested unsafe, QEMU (info block) has none (info block Cache mode)");
}

}  // namespace ds

namespace ds {
namespace {

// What ProxmoxHypervisor::applied_settings reports for a throttled,
// multi-queue scsi-single disk: the PVE config level (flat keys, limits from
// iops=/mbps=/queues=, image_format from the storage) and `info block`.
Json proxmox_applied(const StorageConfig& config) {
    Json applied = to_json(config);
    for (const char* key : {"hypervisor", "storage", "storage_pool", "disk_size_bytes", "scheduler",
                            "read_ahead_kb", "nr_requests", "filesystem"}) {
        applied.erase(key);
    }
    applied["sources"] = {{"image_format", "PVE storage type lvmthin (raw volumes only)"}};
    applied["qemu_info_block"] = {{"cache", applied["cache"]},
                                  {"detect_zeroes", applied["detect_zeroes"]},
                                  {"image_format", applied["image_format"]},
                                  {"iops_limit", applied["iops_limit"]},
                                  {"bandwidth_limit", applied["bandwidth_limit"]}};
    return applied;
}

StorageConfig throttled_multi_queue() {
    StorageConfig config;
    config.hypervisor = "proxmox";
    config.bus = Bus::kScsiSingle;
    config.iothread = true;
    config.iops_limit = 500;
    config.bandwidth_limit = 8ull << 20;
    config.queues = 2;
    return config;
}

}  // namespace

TEST_CASE("verify_settings: a throttled multi-queue Proxmox disk verifies, each mismatch fails",
          "[settings_verify][proxmox]") {
    const StorageConfig config = throttled_multi_queue();
    CHECK(verify_settings(config, proxmox_applied(config), nullptr).empty());

    // Without the limits and queues at the config level (PVE holds them
    // only as its own drive keys): every one is a mismatch.
    Json unread = proxmox_applied(config);
    for (const char* key : {"iops_limit", "bandwidth_limit", "queues"}) unread.erase(key);
    CHECK(verify_settings(config, unread, nullptr).size() == 3);

    Json other = proxmox_applied(config);
    other["bandwidth_limit"] = 4ull << 20;
    const auto mismatches = verify_settings(config, other, nullptr);
    REQUIRE(mismatches.size() == 1);
    CHECK_THAT(mismatches[0], Catch::Contains("bandwidth_limit"));

    // image_format stays required, and compared, whatever the source.
    Json no_format = proxmox_applied(config);
    no_format.erase("image_format");
    CHECK_THAT(verify_settings(config, no_format, nullptr).at(0),
               Catch::Contains("image_format") && Catch::Contains("not reported"));
    StorageConfig qcow2 = config;
    qcow2.image_format = ImageFormat::kQcow2;
    const auto format_lines = verify_settings(qcow2, proxmox_applied(config), nullptr);
    REQUIRE(format_lines.size() == 2);  // the config level and info block
    CHECK_THAT(format_lines[0], Catch::Contains("image_format: requested qcow2") &&
                                    Catch::Contains("PVE storage type lvmthin"));
}

}  // namespace ds

// ---------------------------------------------------------------------------
// Levels not checked (issue 32): each is listed, and the sweep's
// unchecked_levels decides whether it fails the run.

namespace ds {
namespace {

// The HMP level of reference_config() as parse_info_block gives it.
Json matching_info_block() {
    return Json{{"cache", "unsafe"},
                {"detect_zeroes", "unmap"},
                {"image_format", "raw"},
                {"sources", {{"cache", "info block -n: Cache mode"}}}};
}

// A Proxmox-shaped readback: the VM config's flat keys, and `info_block`
// reported as `report` in "levels".
Json with_info_block_level(Json report) {
    Json applied = matching_hypervisor();
    applied["levels"] = {{"domain_xml", {{"checked", true}, {"source", "GET config"}}},
                         {"qemu_info_block", std::move(report)}};
    return applied;
}

SettingsVerification verify(const Json& applied) {
    return verify_applied_settings(reference_config(), Workload{}, applied, matching_guest());
}

// Whether any entry of `entries` fails its run under `policy`.
bool any_fails(const std::vector<NotChecked>& entries, UncheckedLevelPolicy policy) {
    return std::any_of(entries.begin(), entries.end(),
                       [&](const NotChecked& entry) { return fails_run(entry, policy); });
}

const Json kForbidden = {{"checked", false},
                         {"reason", "the monitor answered 403 (Sys.Audit on /)"},
                         {"forbidden", true}};
const Json kReaderError = {{"checked", false},
                           {"reason", "info block: no device drive-scsi1 in the answer"},
                           {"forbidden", false}};

}  // namespace

TEST_CASE("unchecked levels: a level the host forbids is listed and passes by default",
          "[settings_verify][not_checked]") {
    const SettingsVerification result = verify(with_info_block_level(kForbidden));
    CHECK(result.mismatches.empty());
    REQUIRE(result.not_checked.size() == 1);
    const NotChecked& entry = result.not_checked.front();
    CHECK(entry.level == "QEMU (info block)");
    CHECK(entry.setting.empty());
    CHECK(entry.forbidden);
    CHECK(not_checked_line(entry) ==
          "QEMU (info block): not checked: the monitor answered 403 (Sys.Audit on /)");
    CHECK_FALSE(any_fails(result.not_checked, UncheckedLevelPolicy::kFailUnlessForbidden));
    CHECK(any_fails(result.not_checked, UncheckedLevelPolicy::kFail));
    CHECK_FALSE(any_fails(result.not_checked, UncheckedLevelPolicy::kReport));
}

TEST_CASE("unchecked levels: a level not checked for another reason fails by default",
          "[settings_verify][not_checked]") {
    const SettingsVerification result = verify(with_info_block_level(kReaderError));
    CHECK(result.mismatches.empty());
    REQUIRE(result.not_checked.size() == 1);
    CHECK_FALSE(result.not_checked.front().forbidden);
    CHECK(any_fails(result.not_checked, UncheckedLevelPolicy::kFailUnlessForbidden));
    CHECK(any_fails(result.not_checked, UncheckedLevelPolicy::kFail));
    CHECK_FALSE(any_fails(result.not_checked, UncheckedLevelPolicy::kReport));
    // A report without a reason or "forbidden" is still listed, and fails.
    const SettingsVerification bare = verify(with_info_block_level({{"checked", false}}));
    REQUIRE(bare.not_checked.size() == 1);
    CHECK(bare.not_checked.front().reason == "no reason given");
    CHECK(fails_run(bare.not_checked.front(), UncheckedLevelPolicy::kFailUnlessForbidden));
}

TEST_CASE("unchecked levels: a level not checked is not compared, even if a readback is there",
          "[settings_verify][not_checked]") {
    Json applied = with_info_block_level(kForbidden);
    applied["qemu_info_block"] = matching_info_block();
    applied["qemu_info_block"]["cache"] = "writeback";  // half-read: not to be trusted
    CHECK(verify(applied).mismatches.empty());
}

TEST_CASE("unchecked levels: a level reported read but without its readback is listed",
          "[settings_verify][not_checked]") {
    const SettingsVerification result =
        verify(with_info_block_level({{"checked", true}, {"source", "info block"}}));
    REQUIRE(result.not_checked.size() == 1);
    CHECK(result.not_checked.front().reason == "reported as read, but its readback is missing");
    CHECK(fails_run(result.not_checked.front(), UncheckedLevelPolicy::kFailUnlessForbidden));
    // Read and back: compared, nothing listed.
    Json applied = with_info_block_level({{"checked", true}, {"source", "info block"}});
    applied["qemu_info_block"] = matching_info_block();
    const SettingsVerification read = verify(applied);
    CHECK(read.not_checked.empty());
    CHECK(read.mismatches.empty());
    applied["qemu_info_block"]["cache"] = "none";
    CHECK(verify(applied).mismatches.size() == 1);
}

TEST_CASE("unchecked levels: libvirt's remote process level is listed, forbidden",
          "[settings_verify][not_checked]") {
    Json applied = matching_hypervisor();
    applied["qemu"] = matching_qemu();
    applied["levels"] = {{"domain_xml", {{"checked", true}}},
                         {"qemu", {{"checked", true}}},
                         {"qemu_process",
                          {{"checked", false},
                           {"reason", "QEMU runs on the remote host: its process is out of reach"},
                           {"forbidden", true}}}};
    const SettingsVerification result = verify(applied);
    CHECK(result.mismatches.empty());
    REQUIRE(result.not_checked.size() == 1);
    CHECK(not_checked_line(result.not_checked.front()) ==
          "QEMU process: not checked: QEMU runs on the remote host: its process is out of reach");
    CHECK_FALSE(any_fails(result.not_checked, UncheckedLevelPolicy::kFailUnlessForbidden));
}

TEST_CASE("unchecked levels: unseen keys are skipped at their level, listed, never failing",
          "[settings_verify][not_checked]") {
    StorageConfig throttled = reference_config();
    throttled.iops_limit = 500;
    Json applied = matching_hypervisor();
    applied["iops_limit"] = 500;
    applied["qemu_info_block"] = matching_info_block();  // shows no iops_limit
    const auto mismatches = [&](const Json& hypervisor) {
        return verify_applied_settings(throttled, Workload{}, hypervisor, matching_guest())
            .mismatches;
    };
    REQUIRE(mismatches(applied).size() == 1);  // "iops_limit: requested 500, ... has none"
    applied["qemu_info_block"]["unseen"] = {
        {"iops_limit", "QEMU 10 keeps it in a throttle group: qom-get needs Sys.Modify"}};
    const SettingsVerification result =
        verify_applied_settings(throttled, Workload{}, applied, matching_guest());
    CHECK(result.mismatches.empty());
    REQUIRE(result.not_checked.size() == 1);
    const NotChecked& entry = result.not_checked.front();
    CHECK(entry.setting == "iops_limit");
    CHECK(not_checked_line(entry) ==
          "QEMU (info block), iops_limit: not checked: QEMU 10 keeps it in a throttle group: "
          "qom-get needs Sys.Modify");
    for (const auto policy : {UncheckedLevelPolicy::kFailUnlessForbidden,
                              UncheckedLevelPolicy::kFail, UncheckedLevelPolicy::kReport})
        CHECK_FALSE(fails_run(entry, policy));
    // Still compared at the other levels: the VM config's 400 is a mismatch.
    applied["iops_limit"] = 400;
    CHECK(mismatches(applied).size() == 1);
}

TEST_CASE("unchecked levels: per-direction and burst limits nobody requested are mismatches",
          "[settings_verify][not_checked]") {
    for (const char* key : {"iops_read_limit", "iops_write_limit", "bandwidth_read_limit",
                            "bandwidth_write_limit", "iops_burst_limit", "bandwidth_burst_limit"}) {
        INFO(key);
        Json applied = matching_hypervisor();
        applied["qemu_info_block"] = matching_info_block();
        applied["qemu_info_block"][key] = 500;
        const auto at_info_block = verify(applied).mismatches;
        REQUIRE(at_info_block.size() == 1);
        CHECK(at_info_block.front() ==
              std::string(key) + ": requested none, QEMU (info block) has 500");
        CHECK(verify(with_qemu([&] {
                  Json qemu = matching_qemu();
                  qemu[key] = 1048576;
                  return qemu;
              }()))
                  .mismatches.size() == 1);
        // The flat level (domain XML, PVE config) does not show them.
        Json flat = matching_hypervisor();
        flat[key] = 500;
        CHECK(verify(flat).mismatches.empty());
    }
}

TEST_CASE("unchecked levels: the stored record and unknown or malformed reports",
          "[settings_verify][not_checked]") {
    Json applied = with_info_block_level(kForbidden);
    applied["levels"]["qemu_future"] = {{"checked", false}, {"reason", "new level"}};
    const SettingsVerification result = verify(applied);
    REQUIRE(result.not_checked.size() == 2);
    CHECK(result.not_checked[1].level == "qemu_future");
    const Json record =
        verification_record(result.not_checked, UncheckedLevelPolicy::kFailUnlessForbidden);
    CHECK(record.at("policy") == "fail-unless-forbidden");
    REQUIRE(record.at("not_checked").size() == 2);
    CHECK(record.at("not_checked")[0] ==
          Json{{"level", "QEMU (info block)"},
               {"reason", "the monitor answered 403 (Sys.Audit on /)"},
               {"forbidden", true},
               {"fails_run", false}});
    CHECK(record.at("not_checked")[1].at("fails_run") == true);
    // "levels" that is not an object is a mismatch; a level's report that is
    // not an object is a level not checked.
    Json broken = matching_hypervisor();
    broken["levels"] = "all fine";
    CHECK(verify(broken).mismatches.size() == 1);
    const SettingsVerification odd = verify(with_info_block_level("yes"));
    REQUIRE(odd.not_checked.size() == 1);
    CHECK(fails_run(odd.not_checked.front(), UncheckedLevelPolicy::kFailUnlessForbidden));
}

TEST_CASE("unchecked levels: the spec's unchecked_levels values", "[settings_verify][spec]") {
    CHECK(unchecked_level_policies().front().policy == UncheckedLevelPolicy::kFailUnlessForbidden);
    for (const UncheckedLevelPolicyDef& def : unchecked_level_policies())
        CHECK(find_unchecked_level_policy(def.name) == def.policy);
    CHECK_FALSE(find_unchecked_level_policy("allowed"));
}

}  // namespace ds
