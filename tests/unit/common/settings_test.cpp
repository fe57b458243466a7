#include "common/settings.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <set>

using namespace ds;

namespace {

StorageConfig ext4_config() {
    StorageConfig config;
    config.filesystem.type = "ext4";
    config.filesystem.label = "ext4";
    return config;
}

// A configuration with no field at its default, to catch a field that the
// JSON codec forgets.
StorageConfig unusual_config() {
    StorageConfig config;
    config.hypervisor = "libvirt";
    config.storage = "file";
    config.storage_pool = "fast";
    config.image_format = ImageFormat::kQcow2;
    config.disk_size_bytes = 3ull << 30;
    config.bus = Bus::kSata;
    config.cache = CacheMode::kDirectsync;
    config.aio = AioMode::kIoUring;
    config.discard = true;
    config.detect_zeroes = DetectZeroes::kUnmap;
    config.ssd = true;
    config.iothread = false;
    config.filesystem = FilesystemSpec{"xfs-nocrc", "xfs", {"-m", "crc=0"}, "noatime", {}};
    return config;
}

}  // namespace

TEST_CASE("the axis table declares every axis once, with a valid default", "[settings]") {
    std::vector<std::string> names;
    for (const auto& axis : axes()) names.emplace_back(axis.name);
    CHECK(names == std::vector<std::string>{"storage", "image_format", "disk_size", "bus", "cache",
                                            "aio", "discard", "detect_zeroes", "ssd", "iothread",
                                            "iops_limit", "bandwidth_limit", "queues", "scheduler",
                                            "read_ahead_kb", "nr_requests", "filesystem"});
    for (const auto& axis : axes()) {
        INFO(axis.name);
        CHECK(find_axis(axis.name) == &axis);
        CHECK_FALSE(axis.help.empty());
        if (axis.kind == AxisKind::kEnum) {
            CHECK(std::find(axis.values.begin(), axis.values.end(), axis.default_value) !=
                  axis.values.end());
        }
        if (axis.kind == AxisKind::kBool) CHECK(axis.default_value == "false");
    }
    CHECK(find_axis("bus")->values ==
          std::vector<std::string_view>{"virtio-blk", "scsi", "scsi-single", "sata"});
    CHECK(find_axis("cache")->default_value == "none");
    CHECK(find_axis("bus")->default_value == "scsi-single");
    CHECK(find_axis("cach") == nullptr);
}

TEST_CASE("enum spellings round-trip through parse_enum", "[settings]") {
    for (auto value : {Bus::kVirtioBlk, Bus::kScsi, Bus::kScsiSingle, Bus::kSata}) {
        Bus parsed = Bus::kSata;
        REQUIRE(parse_enum(to_string(value), parsed));
        CHECK(parsed == value);
    }
    for (auto value : {CacheMode::kNone, CacheMode::kWriteback, CacheMode::kWritethrough,
                       CacheMode::kDirectsync, CacheMode::kUnsafe}) {
        CacheMode parsed = CacheMode::kNone;
        REQUIRE(parse_enum(to_string(value), parsed));
        CHECK(parsed == value);
    }
    CHECK(to_string(AioMode::kIoUring) == "io_uring");
    CHECK(to_string(DetectZeroes::kUnmap) == "unmap");
    CHECK(to_string(ImageFormat::kQcow2) == "qcow2");
    AioMode aio = AioMode::kThreads;
    CHECK_FALSE(parse_enum("iouring", aio));
    CHECK(aio == AioMode::kThreads);  // untouched on failure
}

TEST_CASE("canonical JSON has every field under fixed, sorted keys", "[settings]") {
    // Pinned: stored results are keyed by the hash of this text, so any change
    // here changes every configuration's identity.
    CHECK(canonical_json(ext4_config()) ==
          R"({"aio":"default","bus":"scsi-single","cache":"none","detect_zeroes":"off",)"
          R"("discard":false,"disk_size_bytes":1073741824,"filesystem":{)"
          R"("mkfs_options":[],"mount_options":"","post_format":[],"type":"ext4"},)"
          R"("hypervisor":"libvirt","image_format":"raw","iothread":false,"ssd":false,)"
          R"("storage":"file","storage_pool":""})");
}

TEST_CASE("config_id is the first 16 hex digits of SHA-256 and is stable", "[settings]") {
    const std::string id = config_id(ext4_config());
    CHECK(id.size() == 16);
    CHECK(id.find_first_not_of("0123456789abcdef") == std::string::npos);
    CHECK(id == config_id(ext4_config()));
    // Pinned for the same reason as the canonical JSON.
    CHECK(id == "311b155d20da09a7");  // computed independently with Python's hashlib
}

TEST_CASE("config_id differs when any single field differs", "[settings]") {
    const StorageConfig base = ext4_config();
    std::vector<std::function<void(StorageConfig&)>> changes = {
        [](StorageConfig& c) { c.hypervisor = "proxmox"; },
        [](StorageConfig& c) { c.storage = "rbd"; },
        [](StorageConfig& c) { c.storage_pool = "pool"; },
        [](StorageConfig& c) { c.image_format = ImageFormat::kQcow2; },
        [](StorageConfig& c) { c.disk_size_bytes += 1; },
        [](StorageConfig& c) { c.bus = Bus::kScsi; },
        [](StorageConfig& c) { c.cache = CacheMode::kUnsafe; },
        [](StorageConfig& c) { c.aio = AioMode::kNative; },
        [](StorageConfig& c) { c.discard = true; },
        [](StorageConfig& c) { c.detect_zeroes = DetectZeroes::kOn; },
        [](StorageConfig& c) { c.ssd = true; },
        [](StorageConfig& c) { c.iothread = true; },
        [](StorageConfig& c) { c.filesystem.type = "btrfs"; },
        [](StorageConfig& c) {
            c.filesystem.mkfs_options = {"-E", "lazy_itable_init=0"};
        },
        [](StorageConfig& c) { c.filesystem.mount_options = "noatime"; },
        [](StorageConfig& c) { c.filesystem.post_format = {"nocow"}; },
        [](StorageConfig& c) { c.scheduler = IoScheduler::kBfq; },
        [](StorageConfig& c) { c.read_ahead_kb = 0; },
        [](StorageConfig& c) { c.nr_requests = 64; },
    };
    std::set<std::string> ids = {config_id(base)};
    for (std::size_t i = 0; i < changes.size(); ++i) {
        StorageConfig changed = base;
        changes[i](changed);
        INFO("change #" << i);
        CHECK(ids.insert(config_id(changed)).second);
    }
    CHECK(ids.size() == changes.size() + 1);

    // The spec's name for a filesystem is not part of the identity: the same
    // settings line up across sweeps whatever they were called.
    StorageConfig renamed = base;
    renamed.filesystem.label = "called-something-else";
    CHECK(config_id(renamed) == config_id(base));
    CHECK(filesystem_shorthand(renamed.filesystem) == "ext4");
}

TEST_CASE("canonical JSON round-trips through storage_config_from_json", "[settings]") {
    for (const StorageConfig& config : {ext4_config(), unusual_config()}) {
        Result<StorageConfig> parsed =
            storage_config_from_json(Json::parse(canonical_json(config)));
        REQUIRE(parsed.ok());
        CHECK(parsed.value() == config);
        CHECK(config_id(parsed.value()) == config_id(config));
    }
}

TEST_CASE("storage_config_from_json: missing keys take defaults, bad input is an error",
          "[settings]") {
    Result<StorageConfig> partial = storage_config_from_json(Json{{"cache", "unsafe"}});
    REQUIRE(partial.ok());
    CHECK(partial->cache == CacheMode::kUnsafe);
    CHECK(partial->bus == Bus::kScsiSingle);
    CHECK(partial->disk_size_bytes == 1ull << 30);

    auto error_of = [](const Json& json) {
        Result<StorageConfig> result = storage_config_from_json(json);
        REQUIRE_FALSE(result.ok());
        CHECK(result.error().code == errc::kInvalidArgument);
        return result.error().message;
    };
    CHECK(error_of(Json::array()) == "storage configuration must be a JSON object");
    CHECK(error_of(Json{{"cach", "none"}}) == "unknown key 'cach' in storage configuration");
    CHECK(error_of(Json{{"bus", "ide"}}) ==
          "'bus' must be one of virtio-blk, scsi, scsi-single, sata, not \"ide\"");
    CHECK(error_of(Json{{"discard", "yes"}}) == "'discard' must be a boolean");
    CHECK(error_of(Json{{"disk_size_bytes", -5}}) ==
          "'disk_size_bytes' must be a positive integer");
    CHECK(error_of(Json{{"filesystem", Json{{"type", "ext4"}, {"mkfs_options", {1, 2}}}}}) ==
          "'mkfs_options' must be an array of strings");
    CHECK(error_of(Json{{"filesystem", Json{{"typ", "ext4"}}}}) ==
          "unknown key 'typ' in 'filesystem'");
}

TEST_CASE("impossible_reason explains each impossible combination", "[settings]") {
    CHECK(impossible_reason(ext4_config()) == "");
    CHECK(impossible_reason(unusual_config()) == "");

    StorageConfig config = ext4_config();
    config.bus = Bus::kVirtioBlk;
    config.ssd = true;
    CHECK(impossible_reason(config) ==
          "virtio-blk has no rotation rate; ssd needs scsi, scsi-single or sata");

    config = ext4_config();
    config.bus = Bus::kSata;
    config.iothread = true;
    CHECK_THAT(impossible_reason(config), Catch::Contains("sata") && Catch::Contains("IO thread"));

    config = ext4_config();
    config.aio = AioMode::kNative;
    config.cache = CacheMode::kWriteback;
    CHECK(impossible_reason(config) ==
          "aio=native needs O_DIRECT, which QEMU uses only with cache=none or "
          "cache=directsync, not cache=writeback");
    config.cache = CacheMode::kDirectsync;
    CHECK(impossible_reason(config) == "");

    config = ext4_config();
    config.detect_zeroes = DetectZeroes::kUnmap;
    CHECK(impossible_reason(config) ==
          "detect_zeroes=unmap turns zero writes into discards, so it needs discard=true");
    config.discard = true;
    CHECK(impossible_reason(config) == "");

    config = ext4_config();
    config.storage = "rbd";
    config.image_format = ImageFormat::kQcow2;
    CHECK(impossible_reason(config) ==
          "qcow2 is an image file format; rbd volumes are raw block devices");

    config = ext4_config();
    config.filesystem.post_format = {"single"};
    CHECK(impossible_reason(config) == "post-format step 'single' is for btrfs, not ext4");

    config = ext4_config();
    config.filesystem.type = "xfs";
    config.disk_size_bytes = 256ull << 20;
    CHECK(impossible_reason(config) == "mkfs.xfs refuses filesystems smaller than 300 MiB");
    config.filesystem.type = "btrfs";
    config.disk_size_bytes = 64ull << 20;
    CHECK_THAT(impossible_reason(config), Catch::StartsWith("mkfs.btrfs refuses devices"));
}

TEST_CASE("filesystem_problem checks steps and mount options against the type", "[settings]") {
    CHECK(filesystem_problem({"b", "btrfs", {}, "noatime,nodatacow", {"single", "nocow"}}) == "");
    CHECK(filesystem_problem({"e", "ext4", {}, "barrier=0,data=writeback", {}}) == "");
    CHECK(filesystem_problem({"z", "zfs", {}, "", {}}) ==
          "unknown filesystem type 'zfs'; valid types: ext4, xfs, btrfs");
    CHECK(filesystem_problem({"e", "ext4", {}, "nodatacow", {}}) ==
          "mount option 'nodatacow' is for btrfs, not ext4");
    CHECK(filesystem_problem({"b", "btrfs", {}, "data=writeback", {}}) ==
          "mount option 'data=writeback' is for ext4, not btrfs");
    CHECK(filesystem_problem({"b", "btrfs", {}, "barrier=0", {}}) ==
          "mount option 'barrier=0' is for ext4, not btrfs");
    CHECK(filesystem_problem({"x", "xfs", {}, "nobarrier", {}}) ==
          "mount option 'nobarrier' is for ext4 and btrfs, not xfs (xfs removed it in Linux "
          "4.19)");
    CHECK(filesystem_problem({"x", "xfs", {}, "noatime,,", {}}) ==
          "empty mount option in 'noatime,,'");
    CHECK(filesystem_problem({"b", "btrfs", {}, "", {"nocow", "nocow"}}) ==
          "post-format step 'nocow' is listed twice");
    CHECK(filesystem_problem({"b", "btrfs", {}, "", {"defrag"}}) ==
          "unknown post-format step 'defrag'; valid steps: single, nocow");
    REQUIRE(find_post_format_step("single") != nullptr);
    CHECK(find_post_format_step("single")->filesystem_type == "btrfs");
}

TEST_CASE("durability_risks lists the settings that trade safety for speed", "[settings]") {
    CHECK(durability_risks(ext4_config()).empty());

    StorageConfig config = ext4_config();
    config.cache = CacheMode::kUnsafe;
    config.filesystem.mount_options = "barrier=0,data=writeback";
    CHECK(durability_risks(config) ==
          std::vector<std::string>{"cache=unsafe", "barrier=0", "data=writeback"});

    config = ext4_config();
    config.filesystem = {"btrfs:nobarrier", "btrfs", {}, "nobarrier,nodatacow", {}};
    CHECK(durability_risks(config) == std::vector<std::string>{"nobarrier"});

    config = ext4_config();
    config.cache = CacheMode::kWriteback;  // honours guest flushes: safe
    config.filesystem.mkfs_options = {"-O", "^has_journal"};
    CHECK(durability_risks(config) ==
          std::vector<std::string>{"no journal (mkfs -O ^has_journal)"});
}

TEST_CASE("workloads round-trip through JSON", "[settings]") {
    const Workload workload{.name = "randrw",
                            .kind = "fio",
                            .params = Json{{"bs", "4k"}, {"iodepth", 64}, {"direct", true}}};
    Result<Workload> parsed = workload_from_json(to_json(workload));
    REQUIRE(parsed.ok());
    CHECK(parsed.value() == workload);
    CHECK_FALSE(workload_from_json(Json{{"kind", "fio"}}).ok());  // no name
    CHECK_FALSE(workload_from_json(Json{{"name", "a"}, {"kind", "fio"}, {"params", 3}}).ok());
}

TEST_CASE("block-layer settings at their default leave canonical JSON and config_id unchanged",
          "[settings]") {
    StorageConfig config = ext4_config();
    config.scheduler = IoScheduler::kDefault;
    config.read_ahead_kb.reset();
    config.nr_requests.reset();
    // The id stored for this configuration before the block axes existed.
    CHECK(config_id(config) == "311b155d20da09a7");
    CHECK(to_json(config).contains("scheduler") == false);
    CHECK(block_settings_json(config) == Json::object());
    CHECK(block_settings_shorthand(to_json(config)).empty());
}

TEST_CASE("block-layer settings that are set appear in JSON and round-trip", "[settings]") {
    StorageConfig config = ext4_config();
    config.scheduler = IoScheduler::kMqDeadline;
    config.read_ahead_kb = 0;  // 0 is a setting (no read-ahead), not the default
    config.nr_requests = 64;
    const Json json = to_json(config);
    CHECK(json.at("scheduler") == "mq-deadline");
    CHECK(json.at("read_ahead_kb") == 0);
    CHECK(json.at("nr_requests") == 64);
    CHECK(block_settings_json(config) ==
          Json{{"scheduler", "mq-deadline"}, {"read_ahead_kb", 0}, {"nr_requests", 64}});
    CHECK(block_settings_shorthand(json) == "scheduler=mq-deadline read_ahead_kb=0 nr_requests=64");

    auto parsed = storage_config_from_json(json);
    REQUIRE(parsed.ok());
    CHECK(parsed.value() == config);
    CHECK(config_id(parsed.value()) == config_id(config));
    CHECK(config_id(config) != "311b155d20da09a7");

    Json bad = json;
    bad["nr_requests"] = 0;
    auto refused = storage_config_from_json(bad);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message == "'nr_requests' must be an integer >= 1");
    bad = json;
    bad["scheduler"] = "cfq";
    refused = storage_config_from_json(bad);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message ==
          "'scheduler' must be one of default, none, mq-deadline, bfq, kyber, not \"cfq\"");
}

TEST_CASE("a workload's filesystems and timeout serialise only when set", "[settings]") {
    Workload plain{.name = "randrw", .kind = "fio", .params = Json{{"rw", "randrw"}}};
    CHECK(to_json(plain) ==
          Json{{"name", "randrw"}, {"kind", "fio"}, {"params", Json{{"rw", "randrw"}}}});

    Workload limited{"atis",
                     "mariadb-atis",
                     Json{{"server", {{"innodb_doublewrite", 0}}}},
                     {"ext4", "btrfs"},
                     600};
    const Json json = to_json(limited);
    CHECK(json.at("filesystems") == Json{"ext4", "btrfs"});
    CHECK(json.at("timeout_s") == 600);
    auto parsed = workload_from_json(json);
    REQUIRE(parsed.ok());
    CHECK(parsed.value() == limited);

    Json bad = json;
    bad["timeout_s"] = "10m";
    REQUIRE_FALSE(workload_from_json(bad).ok());
}

namespace ds {

TEST_CASE("throttling and queues: canonical JSON only when set, ids of others unchanged",
          "[settings]") {
    const StorageConfig plain;
    const Json json = to_json(plain);
    for (const char* key : {"iops_limit", "bandwidth_limit", "queues"})
        CHECK_FALSE(json.contains(key));
    // The default configuration's canonical JSON exactly as before these axes.
    CHECK(
        canonical_json(plain) ==
        "{\"aio\":\"default\",\"bus\":\"scsi-single\",\"cache\":\"none\",\"detect_zeroes\":\"off\","
        "\"discard\":false,\"disk_size_bytes\":1073741824,\"filesystem\":{\"mkfs_options\":[],"
        "\"mount_options\":\"\",\"post_format\":[],\"type\":\"\"},\"hypervisor\":\"libvirt\","
        "\"image_format\":\"raw\",\"iothread\":false,\"ssd\":false,\"storage\":\"file\","
        "\"storage_pool\":\"\"}");

    StorageConfig throttled;
    throttled.iops_limit = 500;
    throttled.bandwidth_limit = 8u << 20;
    throttled.queues = 2;
    const Json set = to_json(throttled);
    CHECK(set.at("iops_limit") == 500);
    CHECK(set.at("bandwidth_limit") == 8388608);
    CHECK(set.at("queues") == 2);
    CHECK(config_id(throttled) != config_id(plain));
    const Result<StorageConfig> back = storage_config_from_json(set);
    REQUIRE(back.ok());
    CHECK(*back == throttled);
    CHECK_FALSE(storage_config_from_json(Json{{"queues", 0}}).ok());
    CHECK_FALSE(storage_config_from_json(Json{{"iops_limit", -1}}).ok());
}

TEST_CASE("queues are impossible on sata", "[settings]") {
    StorageConfig config;
    config.filesystem.type = "ext4";
    config.bus = Bus::kSata;
    config.queues = 2;
    CHECK(impossible_reason(config) ==
          "a sata (AHCI) disk has no virtio queues; queues needs virtio-blk, scsi or scsi-single");
    config.bus = Bus::kVirtioBlk;
    CHECK(impossible_reason(config).empty());
}

}  // namespace ds

TEST_CASE("run_config_label names a configuration as run_started does", "[settings]") {
    const ds::Json config = {{"filesystem", {{"type", "btrfs"}, {"mount_options", {"noatime"}}}},
                             {"cache", "unsafe"},
                             {"bus", "scsi-single"}};
    CHECK(ds::run_config_label(config) ==
          ds::filesystem_shorthand(config["filesystem"]) + " cache=unsafe bus=scsi-single");
    CHECK(ds::run_config_label({{"cache", "none"}}) == "host baseline");
    CHECK(ds::run_config_label({{"filesystem", {{"type", "ext4"}}}}) == "ext4 cache=? bus=?");
}
