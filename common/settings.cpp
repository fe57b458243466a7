// The settings model: the axis table, canonical JSON and identity, and the
// rules about which combinations can exist and which trade safety for speed.
#include "common/settings.h"

#include <algorithm>
#include <array>
#include <limits>
#include <set>

#include "common/sha256.h"
#include "common/text.h"

namespace ds {
namespace {

// Enum spellings, indexed by the enum's underlying value. The axis table's
// `values` lists are built from these, so the two cannot disagree.
constexpr std::array<std::string_view, 4> kBusNames = {"virtio-blk", "scsi", "scsi-single", "sata"};
constexpr std::array<std::string_view, 5> kCacheNames = {"none", "writeback", "writethrough",
                                                         "directsync", "unsafe"};
constexpr std::array<std::string_view, 4> kAioNames = {"default", "threads", "native", "io_uring"};
constexpr std::array<std::string_view, 3> kDetectZeroesNames = {"off", "on", "unmap"};
constexpr std::array<std::string_view, 2> kImageFormatNames = {"raw", "qcow2"};
constexpr std::array<std::string_view, 5> kIoSchedulerNames = {"default", "none", "mq-deadline",
                                                               "bfq", "kyber"};

constexpr std::array<std::string_view, 3> kFilesystemTypes = {"ext4", "xfs", "btrfs"};

template <std::size_t N>
std::vector<std::string_view> as_vector(const std::array<std::string_view, N>& names) {
    return {names.begin(), names.end()};
}

template <class Enum, std::size_t N>
bool parse_by_name(std::string_view text, const std::array<std::string_view, N>& names, Enum& out) {
    for (std::size_t i = 0; i < N; ++i) {
        if (names[i] == text) {
            out = static_cast<Enum>(i);
            return true;
        }
    }
    return false;
}

const std::vector<AxisDef>& axis_table() {
    // Order matters: it is the order of expansion (first axis outermost), of
    // `hostctl` help and of docs/spec.md.
    static const std::vector<AxisDef> table = {
        {"storage",
         AxisKind::kString,
         {},
         "file",
         "storage backend for the data disk, NAME or NAME:POOL (file, block, lvm-thin, rbd)"},
        {"image_format", AxisKind::kEnum, as_vector(kImageFormatNames), "raw",
         "disk image format; qcow2 only on file storage"},
        {"disk_size",
         AxisKind::kSize,
         {},
         "1g",
         "size of the data disk: bytes, or a number with k, m, g, t or p (each a power of 1024, "
         "also when written KiB, MiB, ...)"},
        {"bus", AxisKind::kEnum, as_vector(kBusNames), "scsi-single",
         "disk bus: virtio-blk, scsi (shared virtio-scsi controller), scsi-single (one "
         "virtio-scsi controller per disk), sata"},
        {"cache", AxisKind::kEnum, as_vector(kCacheNames), "none",
         "QEMU cache mode; unsafe ignores guest flushes"},
        {"aio", AxisKind::kEnum, as_vector(kAioNames), "default",
         "QEMU aio mode; native needs cache none or directsync (O_DIRECT)"},
        {"discard", AxisKind::kBool, {}, "false", "pass guest discard/TRIM to the storage"},
        {"detect_zeroes", AxisKind::kEnum, as_vector(kDetectZeroesNames), "off",
         "QEMU zero-write detection; unmap needs discard"},
        {"ssd", AxisKind::kBool, {}, "false", "SSD emulation (rotation rate 1); not on virtio-blk"},
        {"iothread",
         AxisKind::kBool,
         {},
         "false",
         "a dedicated QEMU IO thread for the disk (or its controller); not on sata"},
        {"iops_limit",
         AxisKind::kDefaultOrCount,
         {},
         "none",
         "throttle the data disk to this many I/O operations per second, reads and writes "
         "together (libvirt iotune total_iops_sec, integer >= 1); none = unthrottled"},
        {"bandwidth_limit",
         AxisKind::kDefaultOrSize,
         {},
         "none",
         "throttle the data disk to this many bytes per second, reads and writes together "
         "(libvirt iotune total_bytes_sec): a size like disk_size's, \"8m\" = 8 MiB/s; none = "
         "unthrottled"},
        {"queues",
         AxisKind::kDefaultOrCount,
         {},
         "default",
         "number of virtio queues of the disk (virtio-blk) or its virtio-scsi controller "
         "(integer >= 1); default leaves QEMU's choice (one per vCPU); not on sata"},
        {"scheduler", AxisKind::kEnum, as_vector(kIoSchedulerNames), "default",
         "the guest's I/O scheduler for the data disk; default leaves the kernel's choice"},
        {"read_ahead_kb",
         AxisKind::kDefaultOrCount,
         {},
         "default",
         "the data disk's read-ahead in KiB (integer >= 0); default leaves the kernel's value"},
        {"nr_requests",
         AxisKind::kDefaultOrCount,
         {},
         "default",
         "the data disk's request queue depth (integer >= 1); default leaves the kernel's value"},
        {"filesystem",
         AxisKind::kString,
         {},
         "ext4",
         "guest filesystem: TYPE[+STEP...][:MOUNTOPTS] or a name from [filesystems]"},
    };
    return table;
}

constexpr std::array<PostFormatStepDef, 2> kPostFormatSteps = {{
    {"single", "btrfs",
     "convert metadata and system chunks to the single profile "
     "(btrfs balance start -f -mconvert=single -sconvert=single), as in the reference study"},
    {"nocow", "btrfs",
     "chattr +C on the still-empty workload directory, so files the workload creates are "
     "nodatacow"},
}};

// Mount options that only some filesystem types accept. `pattern` ending in
// '=' matches any "name=value"; otherwise the option must match exactly.
// Options not listed (noatime, discard, ...) are accepted for every type.
struct MountOptionRule {
    std::string_view pattern;
    std::vector<std::string_view> filesystem_types;
};

const std::vector<MountOptionRule>& mount_option_rules() {
    static const std::vector<MountOptionRule> rules = {
        {"data=", {"ext4"}},
        // btrfs knows only the flags barrier/nobarrier, not barrier=N.
        {"barrier=", {"ext4"}},
        // xfs removed barrier/nobarrier in Linux 4.19; mount fails with them.
        {"barrier", {"ext4", "btrfs"}},
        {"nobarrier", {"ext4", "btrfs"}},
        {"commit=", {"ext4", "btrfs"}},
        {"journal_checksum", {"ext4"}},
        {"journal_async_commit", {"ext4"}},
        {"delalloc", {"ext4"}},
        {"nodelalloc", {"ext4"}},
        {"dioread_nolock", {"ext4"}},
        {"dioread_lock", {"ext4"}},
        {"auto_da_alloc", {"ext4"}},
        {"noauto_da_alloc", {"ext4"}},
        {"errors=", {"ext4"}},
        {"nodatacow", {"btrfs"}},
        {"datacow", {"btrfs"}},
        {"nodatasum", {"btrfs"}},
        {"datasum", {"btrfs"}},
        {"compress", {"btrfs"}},
        {"compress=", {"btrfs"}},
        {"compress-force", {"btrfs"}},
        {"compress-force=", {"btrfs"}},
        {"autodefrag", {"btrfs"}},
        {"noautodefrag", {"btrfs"}},
        {"space_cache", {"btrfs"}},
        {"space_cache=", {"btrfs"}},
        {"nospace_cache", {"btrfs"}},
        {"ssd", {"btrfs"}},
        {"nossd", {"btrfs"}},
        {"ssd_spread", {"btrfs"}},
        {"logbufs=", {"xfs"}},
        {"logbsize=", {"xfs"}},
        {"allocsize=", {"xfs"}},
        {"largeio", {"xfs"}},
        {"nolargeio", {"xfs"}},
        {"inode32", {"xfs"}},
        {"inode64", {"xfs"}},
        {"nouuid", {"xfs"}},
        {"swalloc", {"xfs"}},
        {"wsync", {"xfs"}},
    };
    return rules;
}

const MountOptionRule* find_mount_option_rule(std::string_view option) {
    for (const auto& rule : mount_option_rules()) {
        const bool prefix_rule = rule.pattern.ends_with('=');
        if (prefix_rule ? option.starts_with(rule.pattern) : option == rule.pattern) return &rule;
    }
    return nullptr;
}

// "a,b" -> {"a", "b"}; "" -> {}; empty items are kept so they can be refused.
std::vector<std::string> split_mount_options(std::string_view options) {
    std::vector<std::string> parts;
    if (options.empty()) return parts;
    while (true) {
        const std::size_t comma = options.find(',');
        parts.emplace_back(options.substr(0, comma));
        if (comma == std::string_view::npos) return parts;
        options.remove_prefix(comma + 1);
    }
}

// mkfs.xfs (xfsprogs >= 5.19) refuses filesystems under 300 MiB;
// mkfs.btrfs refuses devices under 114294784 bytes with its default profiles.
constexpr std::uint64_t kXfsMinimumBytes = 300ull << 20;
constexpr std::uint64_t kBtrfsMinimumBytes = 114294784ull;

// Typed accessors for storage_config_from_json: each names the key it reads.
Status read_string(const Json& object, const char* key, std::string& out) {
    const auto it = object.find(key);
    if (it == object.end()) return ok_status();
    if (!it->is_string())
        return make_error(errc::kInvalidArgument, std::string("'") + key + "' must be a string");
    out = it->get<std::string>();
    return ok_status();
}

Status read_bool(const Json& object, const char* key, bool& out) {
    const auto it = object.find(key);
    if (it == object.end()) return ok_status();
    if (!it->is_boolean())
        return make_error(errc::kInvalidArgument, std::string("'") + key + "' must be a boolean");
    out = it->get<bool>();
    return ok_status();
}

Status read_string_list(const Json& object, const char* key, std::vector<std::string>& out) {
    const auto it = object.find(key);
    if (it == object.end()) return ok_status();
    const std::string message = std::string("'") + key + "' must be an array of strings";
    if (!it->is_array()) return make_error(errc::kInvalidArgument, message);
    std::vector<std::string> values;
    for (const auto& element : *it) {
        if (!element.is_string()) return make_error(errc::kInvalidArgument, message);
        values.push_back(element.get<std::string>());
    }
    out = std::move(values);
    return ok_status();
}

template <class Enum, std::size_t N>
Status read_enum(const Json& object, const char* key, const std::array<std::string_view, N>& names,
                 Enum& out) {
    const auto it = object.find(key);
    if (it == object.end()) return ok_status();
    if (!it->is_string() || !parse_by_name(it->get<std::string>(), names, out)) {
        return make_error(errc::kInvalidArgument, std::string("'") + key + "' must be one of " +
                                                      join(as_vector(names), ", ") + ", not " +
                                                      it->dump());
    }
    return ok_status();
}

// An optional unsigned integer >= minimum; absent leaves `out` as it is.
Status read_optional_count(const Json& object, const char* key, std::uint64_t minimum,
                           std::optional<std::uint64_t>& out) {
    const auto it = object.find(key);
    if (it == object.end()) return ok_status();
    if (!it->is_number_unsigned() || it->get<std::uint64_t>() < minimum) {
        return make_error(
            errc::kInvalidArgument,
            std::string("'") + key + "' must be an integer >= " + std::to_string(minimum));
    }
    out = it->get<std::uint64_t>();
    return ok_status();
}

Status reject_unknown_keys(const Json& object, const std::set<std::string_view>& known,
                           std::string_view where) {
    for (const auto& [key, value] : object.items()) {
        if (!known.contains(key)) {
            return make_error(errc::kInvalidArgument,
                              "unknown key '" + key + "' in " + std::string(where));
        }
    }
    return ok_status();
}

}  // namespace

std::string_view to_string(Bus value) {
    return kBusNames.at(static_cast<std::size_t>(value));
}
std::string_view to_string(CacheMode value) {
    return kCacheNames.at(static_cast<std::size_t>(value));
}
std::string_view to_string(AioMode value) {
    return kAioNames.at(static_cast<std::size_t>(value));
}
std::string_view to_string(DetectZeroes value) {
    return kDetectZeroesNames.at(static_cast<std::size_t>(value));
}
std::string_view to_string(ImageFormat value) {
    return kImageFormatNames.at(static_cast<std::size_t>(value));
}
std::string_view to_string(IoScheduler value) {
    return kIoSchedulerNames.at(static_cast<std::size_t>(value));
}

bool parse_enum(std::string_view text, Bus& out) {
    return parse_by_name(text, kBusNames, out);
}
bool parse_enum(std::string_view text, CacheMode& out) {
    return parse_by_name(text, kCacheNames, out);
}
bool parse_enum(std::string_view text, AioMode& out) {
    return parse_by_name(text, kAioNames, out);
}
bool parse_enum(std::string_view text, DetectZeroes& out) {
    return parse_by_name(text, kDetectZeroesNames, out);
}
bool parse_enum(std::string_view text, ImageFormat& out) {
    return parse_by_name(text, kImageFormatNames, out);
}
bool parse_enum(std::string_view text, IoScheduler& out) {
    return parse_by_name(text, kIoSchedulerNames, out);
}

std::span<const AxisDef> axes() {
    return axis_table();
}

const AxisDef* find_axis(std::string_view name) {
    for (const auto& axis : axis_table())
        if (axis.name == name) return &axis;
    return nullptr;
}

std::span<const std::string_view> filesystem_types() {
    return kFilesystemTypes;
}

std::span<const PostFormatStepDef> post_format_steps() {
    return kPostFormatSteps;
}

const PostFormatStepDef* find_post_format_step(std::string_view name) {
    for (const auto& step : kPostFormatSteps)
        if (step.name == name) return &step;
    return nullptr;
}

std::string filesystem_problem(const FilesystemSpec& filesystem) {
    const std::string& type = filesystem.type;
    if (std::find(kFilesystemTypes.begin(), kFilesystemTypes.end(), type) ==
        kFilesystemTypes.end()) {
        return "unknown filesystem type '" + type +
               "'; valid types: " + join(as_vector(kFilesystemTypes), ", ");
    }
    std::set<std::string> seen_steps;
    for (const auto& step_name : filesystem.post_format) {
        const PostFormatStepDef* step = find_post_format_step(step_name);
        if (step == nullptr) {
            std::vector<std::string_view> names;
            for (const auto& known : kPostFormatSteps) names.push_back(known.name);
            return "unknown post-format step '" + step_name +
                   "'; valid steps: " + join(names, ", ");
        }
        if (step->filesystem_type != type) {
            return "post-format step '" + step_name + "' is for " +
                   std::string(step->filesystem_type) + ", not " + type;
        }
        if (!seen_steps.insert(step_name).second)
            return "post-format step '" + step_name + "' is listed twice";
    }
    for (const auto& option : split_mount_options(filesystem.mount_options)) {
        if (option.empty()) return "empty mount option in '" + filesystem.mount_options + "'";
        const MountOptionRule* rule = find_mount_option_rule(option);
        if (rule == nullptr) continue;
        const auto& types = rule->filesystem_types;
        if (std::find(types.begin(), types.end(), type) == types.end()) {
            std::string reason =
                "mount option '" + option + "' is for " + join(types, " and ") + ", not " + type;
            if (type == "xfs" && (option == "nobarrier" || option == "barrier"))
                reason += " (xfs removed it in Linux 4.19)";
            return reason;
        }
    }
    for (const auto& option : filesystem.mkfs_options)
        if (option.empty()) return "empty mkfs option";
    return "";
}

Json block_settings_json(const StorageConfig& config) {
    Json block = Json::object();
    if (config.scheduler != IoScheduler::kDefault)
        block["scheduler"] = std::string(to_string(config.scheduler));
    if (config.read_ahead_kb) block["read_ahead_kb"] = *config.read_ahead_kb;
    if (config.nr_requests) block["nr_requests"] = *config.nr_requests;
    return block;
}

std::string block_settings_shorthand(const Json& config) {
    std::string text;
    if (!config.is_object()) return text;
    for (const char* key : {"scheduler", "read_ahead_kb", "nr_requests"}) {
        const auto it = config.find(key);
        if (it == config.end() || it->is_null()) continue;
        if (it->is_string() && it->get<std::string>() == "default") continue;
        if (!text.empty()) text += ' ';
        text += std::string(key) + "=" + (it->is_string() ? it->get<std::string>() : it->dump());
    }
    return text;
}

bool is_host_baseline(const StorageConfig& config) {
    return config.hypervisor == kHostBaselineHypervisor;
}

StorageConfig host_baseline_for(const StorageConfig& config) {
    StorageConfig baseline;
    baseline.hypervisor = std::string(kHostBaselineHypervisor);
    baseline.storage = config.storage;
    baseline.storage_pool = config.storage_pool;
    baseline.disk_size_bytes = config.disk_size_bytes;
    baseline.image_format = ImageFormat::kRaw;
    return baseline;
}

Json to_json(const StorageConfig& config) {
    if (is_host_baseline(config)) {
        return {{"hypervisor", config.hypervisor},
                {"storage", config.storage},
                {"storage_pool", config.storage_pool},
                {"image_format", to_string(config.image_format)},
                {"disk_size_bytes", config.disk_size_bytes}};
    }
    const FilesystemSpec& filesystem = config.filesystem;
    Json json{
        {"hypervisor", config.hypervisor},
        {"storage", config.storage},
        {"storage_pool", config.storage_pool},
        {"image_format", to_string(config.image_format)},
        {"disk_size_bytes", config.disk_size_bytes},
        {"bus", to_string(config.bus)},
        {"cache", to_string(config.cache)},
        {"aio", to_string(config.aio)},
        {"discard", config.discard},
        {"detect_zeroes", to_string(config.detect_zeroes)},
        {"ssd", config.ssd},
        {"iothread", config.iothread},
        {"filesystem",
         Json{
             {"type", filesystem.type},
             {"mkfs_options", filesystem.mkfs_options},
             {"mount_options", filesystem.mount_options},
             {"post_format", filesystem.post_format},
         }},
    };
    // Only when set: a configuration that leaves these alone hashes exactly as
    // it did before the fields existed.
    if (config.iops_limit) json["iops_limit"] = *config.iops_limit;
    if (config.bandwidth_limit) json["bandwidth_limit"] = *config.bandwidth_limit;
    if (config.queues) json["queues"] = *config.queues;
    const Json block = block_settings_json(config);  // named: items() does not extend its life
    for (const auto& [key, value] : block.items()) json[key] = value;
    return json;
}

std::string filesystem_shorthand(const FilesystemSpec& filesystem) {
    std::string text = filesystem.type;
    for (const auto& step : filesystem.post_format) text += "+" + step;
    if (!filesystem.mount_options.empty()) text += ":" + filesystem.mount_options;
    if (!filesystem.mkfs_options.empty()) {
        text += " mkfs=";
        for (std::size_t i = 0; i < filesystem.mkfs_options.size(); ++i) {
            text += (i ? " " : "") + filesystem.mkfs_options[i];
        }
    }
    return text;
}

std::string run_config_label(const Json& config) {
    if (!config.is_object() || !config.contains("filesystem")) return "host baseline";
    const auto text = [&](const char* key) {
        return config.contains(key) && config[key].is_string() ? config[key].get<std::string>()
                                                               : std::string("?");
    };
    return filesystem_shorthand(config["filesystem"]) + " cache=" + text("cache") +
           " bus=" + text("bus");
}

std::string filesystem_shorthand(const Json& filesystem) {
    if (!filesystem.is_object() || !filesystem.contains("type") ||
        !filesystem["type"].is_string()) {
        return filesystem.dump();
    }
    FilesystemSpec spec;
    spec.type = filesystem["type"].get<std::string>();
    auto strings = [&](const char* key, std::vector<std::string>& out) {
        if (!filesystem.contains(key) || !filesystem[key].is_array()) return;
        for (const auto& item : filesystem[key]) {
            if (item.is_string()) out.push_back(item.get<std::string>());
        }
    };
    strings("mkfs_options", spec.mkfs_options);
    strings("post_format", spec.post_format);
    if (filesystem.contains("mount_options") && filesystem["mount_options"].is_string()) {
        spec.mount_options = filesystem["mount_options"].get<std::string>();
    }
    return filesystem_shorthand(spec);
}

// Missing keys keep their defaults, so records written before a field
// existed still load; unknown keys are refused, because a configuration we
// cannot represent would hash to a different identity.
Result<StorageConfig> storage_config_from_json(const Json& json) {
    if (!json.is_object())
        return make_error(errc::kInvalidArgument, "storage configuration must be a JSON object");
    DS_TRY(reject_unknown_keys(
        json,
        {"hypervisor", "storage", "storage_pool", "image_format", "disk_size_bytes", "bus", "cache",
         "aio", "discard", "detect_zeroes", "ssd", "iothread", "iops_limit", "bandwidth_limit",
         "queues", "scheduler", "read_ahead_kb", "nr_requests", "filesystem"},
        "storage configuration"));
    StorageConfig config;
    DS_TRY(read_string(json, "hypervisor", config.hypervisor));
    DS_TRY(read_string(json, "storage", config.storage));
    DS_TRY(read_string(json, "storage_pool", config.storage_pool));
    DS_TRY(read_enum(json, "image_format", kImageFormatNames, config.image_format));
    if (const auto it = json.find("disk_size_bytes"); it != json.end()) {
        if (!it->is_number_unsigned() || it->get<std::uint64_t>() == 0)
            return make_error(errc::kInvalidArgument,
                              "'disk_size_bytes' must be a positive integer");
        config.disk_size_bytes = it->get<std::uint64_t>();
    }
    DS_TRY(read_enum(json, "bus", kBusNames, config.bus));
    DS_TRY(read_enum(json, "cache", kCacheNames, config.cache));
    DS_TRY(read_enum(json, "aio", kAioNames, config.aio));
    DS_TRY(read_bool(json, "discard", config.discard));
    DS_TRY(read_enum(json, "detect_zeroes", kDetectZeroesNames, config.detect_zeroes));
    DS_TRY(read_bool(json, "ssd", config.ssd));
    DS_TRY(read_bool(json, "iothread", config.iothread));
    DS_TRY(read_optional_count(json, "iops_limit", 1, config.iops_limit));
    DS_TRY(read_optional_count(json, "bandwidth_limit", 1, config.bandwidth_limit));
    DS_TRY(read_optional_count(json, "queues", 1, config.queues));
    DS_TRY(read_enum(json, "scheduler", kIoSchedulerNames, config.scheduler));
    DS_TRY(read_optional_count(json, "read_ahead_kb", 0, config.read_ahead_kb));
    DS_TRY(read_optional_count(json, "nr_requests", 1, config.nr_requests));
    if (const auto it = json.find("filesystem"); it != json.end()) {
        const Json& filesystem = *it;
        if (!filesystem.is_object())
            return make_error(errc::kInvalidArgument, "'filesystem' must be an object");
        DS_TRY(reject_unknown_keys(
            filesystem, {"type", "label", "mkfs_options", "mount_options", "post_format"},
            "'filesystem'"));
        DS_TRY(read_string(filesystem, "type", config.filesystem.type));
        DS_TRY(read_string(filesystem, "label", config.filesystem.label));
        DS_TRY(read_string_list(filesystem, "mkfs_options", config.filesystem.mkfs_options));
        DS_TRY(read_string(filesystem, "mount_options", config.filesystem.mount_options));
        DS_TRY(read_string_list(filesystem, "post_format", config.filesystem.post_format));
    }
    return config;
}

std::string canonical_json(const StorageConfig& config) {
    // nlohmann's default object is a std::map, so keys come out sorted; dump()
    // without indent adds no whitespace.
    return to_json(config).dump();
}

std::string config_id(const StorageConfig& config) {
    return sha256_hex(canonical_json(config)).substr(0, 16);
}

std::string impossible_reason(const StorageConfig& config) {
    if (config.ssd && config.bus == Bus::kVirtioBlk)
        return "virtio-blk has no rotation rate; ssd needs scsi, scsi-single or sata";
    if (config.iothread && config.bus == Bus::kSata)
        return "QEMU's sata (AHCI) controller cannot use an IO thread; iothread needs "
               "virtio-blk, scsi or scsi-single";
    if (config.queues && config.bus == Bus::kSata)
        return "a sata (AHCI) disk has no virtio queues; queues needs virtio-blk, scsi or "
               "scsi-single";
    if (config.aio == AioMode::kNative && config.cache != CacheMode::kNone &&
        config.cache != CacheMode::kDirectsync) {
        return "aio=native needs O_DIRECT, which QEMU uses only with cache=none or "
               "cache=directsync, not cache=" +
               std::string(to_string(config.cache));
    }
    if (config.detect_zeroes == DetectZeroes::kUnmap && !config.discard)
        return "detect_zeroes=unmap turns zero writes into discards, so it needs discard=true";
    if (config.image_format == ImageFormat::kQcow2 && config.storage != "file") {
        return "qcow2 is an image file format; " + config.storage +
               " volumes are raw block devices";
    }
    if (config.disk_size_bytes == 0) return "the data disk needs a size above 0 bytes";
    if (std::string problem = filesystem_problem(config.filesystem); !problem.empty())
        return problem;
    if (config.filesystem.type == "xfs" && config.disk_size_bytes < kXfsMinimumBytes)
        return "mkfs.xfs refuses filesystems smaller than 300 MiB";
    if (config.filesystem.type == "btrfs" && config.disk_size_bytes < kBtrfsMinimumBytes)
        return "mkfs.btrfs refuses devices smaller than 114294784 bytes (109 MiB)";
    return "";
}

std::vector<std::string> durability_risks(const StorageConfig& config) {
    std::vector<std::string> risks;
    // The host acknowledges flushes without writing: a host crash or power
    // cut loses data the guest believes is durable.
    if (config.cache == CacheMode::kUnsafe) risks.emplace_back("cache=unsafe");
    const bool is_ext4 = config.filesystem.type == "ext4";
    for (const auto& option : split_mount_options(config.filesystem.mount_options)) {
        // Without barriers the journal's commit can reach the disk before the
        // blocks it commits; a power cut can then corrupt the filesystem.
        if (option == "barrier=0" || option == "nobarrier") risks.push_back(option);
        // ext4 data=writeback drops data ordering: after a crash, files can
        // contain stale blocks.
        if (is_ext4 && option == "data=writeback") risks.push_back(option);
    }
    for (const auto& option : config.filesystem.mkfs_options) {
        if (is_ext4 && option.find("^has_journal") != std::string::npos)
            risks.emplace_back("no journal (mkfs -O ^has_journal)");
    }
    return risks;
}

Json to_json(const Workload& workload) {
    Json json{{"name", workload.name},
              {"kind", workload.kind},
              {"params", workload.params.is_null() ? Json::object() : workload.params}};
    if (!workload.filesystems.empty()) json["filesystems"] = workload.filesystems;
    if (workload.timeout_s > 0) json["timeout_s"] = workload.timeout_s;
    if (!workload.tuning.empty()) json["tuning"] = workload.tuning;
    if (!workload.variant_of.empty()) json["variant_of"] = workload.variant_of;
    if (workload.dataset != DatasetSource::kFresh) json["dataset"] = to_string(workload.dataset);
    if (workload.durability) {
        json["durability"] = {{"crash_points", workload.durability->crash_points},
                              {"volatile_cache", workload.durability->volatile_cache}};
        if (workload.durability->keep_files) json["durability"]["keep_files"] = true;
    }
    return json;
}

std::string_view to_string(DatasetSource source) {
    return source == DatasetSource::kGolden ? "golden" : "fresh";
}

namespace {

Status read_dataset(const Json& json, DatasetSource& into) {
    std::string text = "fresh";
    DS_TRY(read_string(json, "dataset", text));
    if (text != "fresh" && text != "golden") {
        return make_error(errc::kInvalidArgument,
                          "workload 'dataset' is \"" + text + "\", expected fresh or golden");
    }
    into = text == "golden" ? DatasetSource::kGolden : DatasetSource::kFresh;
    return ok_status();
}

Status read_durability(const Json& json, std::optional<DurabilityOptions>& into) {
    const auto found = json.find("durability");
    if (found == json.end()) return ok_status();
    const Json& durability = *found;
    const auto points = durability.is_object() ? durability.find("crash_points") : durability.end();
    const auto rule = durability.is_object() ? durability.find("volatile_cache") : durability.end();
    if (points == durability.end() || !points->is_number_integer() ||
        points->get<std::int64_t>() < 1 || points->get<std::int64_t>() > kMaxCrashPoints ||
        rule == durability.end() || !rule->is_boolean()) {
        return make_error(errc::kInvalidArgument,
                          "workload 'durability' must be {\"crash_points\": 1.." +
                              std::to_string(kMaxCrashPoints) +
                              ", \"volatile_cache\": true|false}, not " + durability.dump());
    }
    const auto keep = durability.find("keep_files");
    if (keep != durability.end() && !keep->is_boolean()) {
        return make_error(
            errc::kInvalidArgument,
            "workload 'durability' keep_files must be true or false, not " + keep->dump());
    }
    into = DurabilityOptions{static_cast<int>(points->get<std::int64_t>()), rule->get<bool>(),
                             keep != durability.end() && keep->get<bool>()};
    return ok_status();
}

}  // namespace

Result<Workload> workload_from_json(const Json& json) {
    if (!json.is_object()) return make_error(errc::kInvalidArgument, "workload must be an object");
    DS_TRY(reject_unknown_keys(json,
                               {"name", "kind", "params", "filesystems", "timeout_s", "tuning",
                                "variant_of", "dataset", "durability"},
                               "workload"));
    Workload workload;
    DS_TRY(read_string(json, "name", workload.name));
    DS_TRY(read_string(json, "kind", workload.kind));
    DS_TRY(read_string(json, "tuning", workload.tuning));
    DS_TRY(read_string(json, "variant_of", workload.variant_of));
    DS_TRY(read_string_list(json, "filesystems", workload.filesystems));
    DS_TRY(read_dataset(json, workload.dataset));
    DS_TRY(read_durability(json, workload.durability));
    if (const auto it = json.find("timeout_s"); it != json.end()) {
        if (!it->is_number_integer() || it->get<std::int64_t>() < 0 ||
            it->get<std::int64_t>() > std::numeric_limits<int>::max())
            return make_error(errc::kInvalidArgument,
                              "workload 'timeout_s' must be a non-negative integer of seconds");
        workload.timeout_s = static_cast<int>(it->get<std::int64_t>());
    }
    if (workload.name.empty()) return make_error(errc::kInvalidArgument, "workload has no 'name'");
    if (workload.kind.empty()) return make_error(errc::kInvalidArgument, "workload has no 'kind'");
    workload.params = Json::object();
    if (const auto it = json.find("params"); it != json.end()) {
        if (!it->is_object())
            return make_error(errc::kInvalidArgument, "workload 'params' must be an object");
        workload.params = *it;
    }
    return workload;
}

}  // namespace ds
