// The settings model: a storage configuration is the full, resolved set of
// settings that can change a result. Its identity is the SHA-256 of its
// canonical JSON, so the same configuration from two sweeps lines up.
//
// The axes are declared once, as data (kAxes in settings.cpp): the spec
// parser, validation, `hostctl` help, docs and the stored record all come
// from that one table.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace ds {

using Json = nlohmann::json;

enum class Bus { kVirtioBlk, kScsi, kScsiSingle, kSata };
enum class CacheMode { kNone, kWriteback, kWritethrough, kDirectsync, kUnsafe };
enum class AioMode { kDefault, kThreads, kNative, kIoUring };
enum class DetectZeroes { kOff, kOn, kUnmap };
enum class ImageFormat { kRaw, kQcow2 };
// The guest's I/O scheduler for the data disk; kDefault leaves the kernel's
// choice alone (nothing is written to sysfs).
enum class IoScheduler { kDefault, kNone, kMqDeadline, kBfq, kKyber };

// Spelling of each enum value, as in specs, JSON and libvirt where they agree.
std::string_view to_string(Bus);           // "virtio-blk" "scsi" "scsi-single" "sata"
std::string_view to_string(CacheMode);     // "none" "writeback" ... (libvirt's names)
std::string_view to_string(AioMode);       // "default" "threads" "native" "io_uring"
std::string_view to_string(DetectZeroes);  // "off" "on" "unmap"
std::string_view to_string(ImageFormat);   // "raw" "qcow2"
std::string_view to_string(IoScheduler);   // "default" "none" "mq-deadline" "bfq" "kyber"

// What the guest does to the data disk before the workload.
struct FilesystemSpec {
    std::string label;                      // as named in the spec, e.g. "ext4:barrier=0"
    std::string type;                       // "ext4" | "xfs" | "btrfs"
    std::vector<std::string> mkfs_options;  // extra argv for mkfs.TYPE, in order
    std::string mount_options;              // comma-separated, "" = defaults
    std::vector<std::string> post_format;   // named post-format steps (see docs/spec.md)

    // Equal settings; the label is a name, not a setting.
    bool operator==(const FilesystemSpec& other) const {
        return type == other.type && mkfs_options == other.mkfs_options &&
               mount_options == other.mount_options && post_format == other.post_format;
    }
};

// One resolved storage configuration (every field has a value; defaults are
// filled in by the spec parser).
struct StorageConfig {
    std::string hypervisor = "libvirt";  // hypervisor backend name
    std::string storage = "file";        // storage backend name
    std::string storage_pool;            // backend parameter ("" = backend default)
    ImageFormat image_format = ImageFormat::kRaw;
    std::uint64_t disk_size_bytes = 1ull << 30;
    Bus bus = Bus::kScsiSingle;
    CacheMode cache = CacheMode::kNone;
    AioMode aio = AioMode::kDefault;
    bool discard = false;
    DetectZeroes detect_zeroes = DetectZeroes::kOff;
    bool ssd = false;
    bool iothread = false;
    // Throttling of the data disk (libvirt <iotune>, QEMU's throttle group)
    // and its number of virtio queues. nullopt = none / QEMU's choice; like
    // the block-layer fields below they are left out of the canonical JSON
    // then, so configurations from before these axes existed keep their id.
    std::optional<std::uint64_t> iops_limit;       // total IOPS (>= 1 when set)
    std::optional<std::uint64_t> bandwidth_limit;  // total bytes per second (>= 1 when set)
    std::optional<std::uint64_t> queues;           // virtio queues (>= 1 when set); not on sata
    // Guest block layer of the data disk (/sys/block/DEV/queue/...), set by
    // the agent before mkfs. Defaults leave the kernel's values and are left
    // out of the canonical JSON, so configurations from before these axes
    // existed keep their config_id.
    IoScheduler scheduler = IoScheduler::kDefault;
    std::optional<std::uint64_t> read_ahead_kb;  // nullopt = kernel default
    std::optional<std::uint64_t> nr_requests;    // nullopt = kernel default (>= 1 when set)
    FilesystemSpec filesystem;

    bool operator==(const StorageConfig&) const = default;
};

// A host baseline (spec `host_baseline = true`): no hypervisor and no guest,
// the workload's fio job run from the host on the raw volume (file, thin LV
// or RBD image) that its storage backend makes. Its configuration is the
// StorageConfig with this hypervisor name; only the storage, its pool, the
// volume's size and format are settings of it (to_json leaves out the rest).
inline constexpr std::string_view kHostBaselineHypervisor = "host";
bool is_host_baseline(const StorageConfig&);
// The baseline that measures `config`'s storage bare: same storage, pool and
// size, a raw volume.
StorageConfig host_baseline_for(const StorageConfig& config);

// The non-default block-layer settings as the job message's "block" object:
// {"scheduler":"bfq","read_ahead_kb":512,"nr_requests":64}, only the keys
// that are set (empty object when all are at their defaults).
Json block_settings_json(const StorageConfig&);
// The same for reports, "scheduler=bfq read_ahead_kb=512", from a
// configuration's JSON (to_json(StorageConfig)); "" when all are default.
std::string block_settings_shorthand(const Json& config);

// "TYPE[+step...][:mountopts][ mkfs=ARGS]": how reports name a filesystem.
// Derived from the settings, not from the spec's label, so the same
// filesystem reads the same in every sweep.
std::string filesystem_shorthand(const FilesystemSpec&);
// The same for the "filesystem" object of a configuration's JSON; falls back
// to the JSON text for anything else.
std::string filesystem_shorthand(const Json& filesystem);
// "ext4 cache=none bus=virtio-blk" for a configuration's JSON, "host
// baseline" for one without a filesystem: how a run's configuration is
// named while it runs (the run_started event's config_label, hostctl's
// watch for a run whose start it did not see).
std::string run_config_label(const Json& config);

// Canonical JSON: every field (the filesystem's label excluded: it is the
// spec's name for the filesystem, not a setting), fixed key names, keys sorted (nlohmann's
// default object is sorted), no whitespace when dumped. The optional fields
// (iops_limit, bandwidth_limit, queues, scheduler, read_ahead_kb,
// nr_requests) appear only when they are not at their default. A host
// baseline's holds hypervisor, storage, storage_pool, image_format and
// disk_size_bytes only.
Json to_json(const StorageConfig&);
Result<StorageConfig> storage_config_from_json(const Json&);
std::string canonical_json(const StorageConfig&);
// First 16 hex digits of SHA-256(canonical_json(config)).
std::string config_id(const StorageConfig&);

// Why a combination cannot exist, or "" when it can (e.g. ssd on virtio-blk:
// virtio-blk has no rotation rate).
std::string impossible_reason(const StorageConfig&);

// Settings that trade safety for speed (cache=unsafe, barrier=0 ...), for
// reports. Empty when the configuration is safe.
std::vector<std::string> durability_risks(const StorageConfig&);

// A benchmark to run on a configuration. `params` are the workload kind's own
// options (for fio: fio's option names and meanings, within the guards of
// common/fio_options.h; for io: the table of common/io_options.h).
// Where a run's data disk comes from (spec `dataset`, docs/spec.md): a
// fresh volume the run formats and fills itself, or a clone of a golden
// volume prepared once per sweep and configuration (docs/golden-volumes.md).
enum class DatasetSource { kFresh, kGolden };
std::string_view to_string(DatasetSource);  // "fresh" "golden"

// Spec `durability` (docs/durability.md): the runs of a ledger workload are
// logged (QEMU's blklogwrites) and tried in simulated power cuts.
struct DurabilityOptions {
    // At most this many crash points: every flush of the run, sampled evenly
    // down to this (kMaxCrashPoints at most).
    int crash_points = 50;
    // Crash states also keep a random subset of the writes after the last
    // flush (a volatile disk cache may have persisted any of them).
    bool volatile_cache = true;
    // Keep the run's write log and pre-run copy after it (in the durability
    // directory's "-kept" sibling) for disksweep-replay.
    bool keep_files = false;
    bool operator==(const DurabilityOptions&) const = default;
};
inline constexpr int kMaxCrashPoints = 1000;

struct Workload {
    std::string name;  // unique within a sweep
    std::string kind;  // "fio" | "io" | "mariadb-atis" | "sysbench-oltp"
    Json params;       // object
    // Spec `filesystems`: the matrix.filesystem values (as written) this
    // workload runs on; empty = every configuration.
    std::vector<std::string> filesystems{};
    // Spec `timeout`: the workload's own time limit in seconds; 0 = none
    // (the run's timeout bounds it).
    int timeout_s = 0;
    // A variant of the spec's workload `variant_of` under the matrix's
    // tuning `tuning` ([tunings.NAME], docs/spec.md); both "" for a
    // workload as written (the tuning "defaults").
    std::string tuning{};
    std::string variant_of{};
    // Spec `dataset`: only kinds with a preparation step
    // (WorkloadKind::preparation) may be kGolden.
    DatasetSource dataset = DatasetSource::kFresh;
    // Spec `durability`: only `ledger` workloads carry it (spec.cpp).
    std::optional<DurabilityOptions> durability{};

    bool operator==(const Workload&) const = default;
};
// {"name","kind","params"} plus "filesystems", "timeout_s", "tuning",
// "variant_of", "dataset" ("golden") and "durability" ({"crash_points",
// "volatile_cache"}) when set (so workloads without them serialise as
// before). The agent ignores "durability": it is the host's business.
Json to_json(const Workload&);
Result<Workload> workload_from_json(const Json&);

// One matrix axis, declared as data.
// kDefaultOrCount: the axis's default_value ("default", "none": the setting
// is left out) or an integer (TOML integer or its decimal string); the axis's
// setter checks the range. kDefaultOrSize: the same with a size ("8m").
enum class AxisKind { kEnum, kBool, kString, kSize, kDefaultOrCount, kDefaultOrSize };
struct AxisDef {
    std::string_view name;  // key in [matrix]
    AxisKind kind;
    std::vector<std::string_view> values;  // allowed values for kEnum
    std::string_view default_value;        // as written in a spec
    std::string_view help;
};
std::span<const AxisDef> axes();
const AxisDef* find_axis(std::string_view name);

// Inverse of to_string: false (and `out` untouched) when `text` is not one of
// the enum's spellings.
bool parse_enum(std::string_view text, Bus& out);
bool parse_enum(std::string_view text, CacheMode& out);
bool parse_enum(std::string_view text, AioMode& out);
bool parse_enum(std::string_view text, DetectZeroes& out);
bool parse_enum(std::string_view text, ImageFormat& out);
bool parse_enum(std::string_view text, IoScheduler& out);

// Filesystem types the guest agent can create: "ext4", "xfs", "btrfs".
std::span<const std::string_view> filesystem_types();

// Post-format steps, declared as data: the spec parser validates names and
// fs types against this table; the guest agent executes them by name, in the
// order listed, after mkfs and mount and before the workload.
struct PostFormatStepDef {
    std::string_view name;             // as written after '+' in a spec
    std::string_view filesystem_type;  // the only type the step applies to
    std::string_view help;             // what the agent does
};
std::span<const PostFormatStepDef> post_format_steps();
const PostFormatStepDef* find_post_format_step(std::string_view name);

// Why a filesystem cannot be made as specified regardless of the disk
// settings (unknown type, a step or mount option of another type, a repeated
// step), or "" when it can.
std::string filesystem_problem(const FilesystemSpec&);

}  // namespace ds
