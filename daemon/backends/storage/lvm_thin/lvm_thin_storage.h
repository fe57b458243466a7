// The lvm-thin storage backend (`lvm-thin:VG/POOL`): each run's data volume
// is a fresh thin LV in an existing thin pool, or a thin snapshot of a golden
// volume when the workload needs a prepared dataset. QEMU attaches the LV as
// a block device (BlockDisk{"/dev/VG/LV"}).
//
// Every LVM command runs through the ProcessRunner as an argument vector,
// never a shell string, and every report is read as `--reportformat json`.
// A failed command is an Error (errc::kStorage) that names the command and
// carries LVM's own stderr; a report that cannot be read is an Error naming
// what was wrong with it. Nothing here throws.
//
// Threading: the backend keeps no state besides its configuration; calls may
// run concurrently as far as LVM itself allows (it serialises changes to one
// VG with its own lock).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/process.h"
#include "common/result.h"
#include "daemon/backends/storage/storage.h"

namespace ds {

// Checks `name` against LVM's rules for a VG name (man lvm, VALID NAMES):
// 1..127 characters of a-z A-Z 0-9 + _ . -, not starting with '-', not "."
// or "..". errc::kInvalidArgument saying which rule it breaks.
Status check_volume_group_name(std::string_view name);
// The same for an LV name, which additionally may not start with "snapshot"
// or "pvmove" nor contain the strings LVM reserves for its hidden sub-LVs
// ("_tdata", "_tmeta", "_rimage", ...). LVM checks more (the length of the
// device-mapper name, clashes): its own message then says why.
Status check_logical_volume_name(std::string_view name);

// A thin pool: the VG it lives in and the pool LV's name.
struct ThinPoolRef {
    std::string volume_group;
    std::string pool;
    // "VG/POOL", as LVM commands take it.
    std::string path() const { return volume_group + "/" + pool; }
};
// "VG/POOL" (the part of `lvm-thin:VG/POOL` after the colon), both names
// checked. errc::kInvalidArgument naming the text and the rule it breaks.
Result<ThinPoolRef> parse_thin_pool(std::string_view text);

// One row of `lvs --reportformat json -o lv_name,pool_lv,data_percent,
// metadata_percent`. The percentages are absent where LVM reports none
// (an LV that is not thin or not active).
struct LvReportRow {
    std::string name;
    std::string pool;  // the thin pool of a thin LV, "" for others
    std::optional<double> data_percent;
    std::optional<double> metadata_percent;
};
// The rows of such a report. Tolerates extra reports, fields and a "log"
// section; LVM writes percentages as strings ("12.34", or "12,34" under a
// locale with a decimal comma), numbers are taken too. errc::kStorage when
// the text is not JSON or lacks the report's shape (each row must be an
// object whose lv_name is a string).
Result<std::vector<LvReportRow>> parse_lv_report(std::string_view json_text);

// How full the thin pool is, and the volume in it, in percent (0..100).
struct ThinPoolFill {
    double pool_data_percent = 0;
    double pool_metadata_percent = 0;
    std::optional<double> volume_data_percent;  // absent when the volume does not exist
};

class LvmThinStorage : public StorageBackend {
  public:
    // How long one LVM command may take before it is killed (lvremove of a
    // large, fully provisioned LV discards every chunk).
    static constexpr std::chrono::milliseconds kCommandTimeout = std::chrono::minutes(5);

    // The pool must exist; nothing is checked until the first command.
    // `runner` must outlive the backend.
    LvmThinStorage(ThinPoolRef pool, ProcessRunner& runner);

    // "lvm-thin:VG/POOL".
    std::string name() const override;
    DiskSourceKind produces() const override { return DiskSourceKind::kBlock; }

    // A fresh thin LV `name` of config.disk_size_bytes (LVM rounds up to its
    // extent size) in the pool, active. A thin LV is a block device:
    // config.image_format must be raw (qcow2 is refused, kInvalidArgument).
    Result<Volume> create_volume(const std::string& name, const StorageConfig& config) override;
    // A thin snapshot `name` of the thin LV `golden` (`lvcreate --snapshot`
    // without a size), activated despite LVM's activation-skip default for
    // snapshots. The golden volume must be a thin LV of this pool
    // (kNotFound / kInvalidArgument otherwise): the snapshot then shares its
    // blocks and lives in the same pool.
    Result<Volume> create_snapshot_volume(const std::string& name, const std::string& golden);
    // A thin LV of size_bytes meant to be filled once with a dataset and then
    // snapshotted per run. Give it a name outside the daemon's run prefix:
    // list_volumes(prefix) would otherwise offer it to crash recovery.
    Result<Volume> create_golden(const std::string& name, std::uint64_t size_bytes);
    // A run's volume of a golden one: create_snapshot_volume (method
    // "thin-snapshot"); raw only. A thin snapshot does not depend on its
    // origin, so remove_golden is remove_volume.
    Result<ClonedVolume> clone_volume(const std::string& golden, const std::string& name,
                                      const StorageConfig& config) override;

    // `lvremove -f VG/NAME`; succeeds when no LV `name` exists.
    Status remove_volume(const std::string& name) override;
    // The thin LVs of this pool whose name starts with `prefix` (not the
    // pool, nor other LVs of the VG).
    Result<std::vector<std::string>> list_volumes(const std::string& prefix) override;

    // The pool's fill and that of the thin LV `volume` when it exists.
    Result<ThinPoolFill> fill(const std::string& volume);
    // fill() as the run record stores it: {"pool_data_percent": 12.5,
    // "pool_metadata_percent": 10.4, "volume_data_percent": 3.1} (the last
    // only while the volume exists), or {"error": "..."} when LVM could not
    // be asked.
    Json state(const std::string& volume) override;
    // The thin LV's data_percent of its size (`lvs --units b`): the pool
    // chunks it holds, to LVM's 0.01 % resolution. errc::kNotFound when the
    // LV is not a thin LV of this pool.
    Result<std::uint64_t> allocated_bytes(const std::string& volume) override;

  private:
    Result<Volume> create_thin(const std::string& name, std::uint64_t size_bytes);
    Result<std::vector<LvReportRow>> report_volume_group();
    Result<std::string> run_lvm(const std::vector<std::string>& argv);
    Volume block_volume(const std::string& name) const;

    ThinPoolRef pool_;
    ProcessRunner& runner_;
};

// The backend for `lvm-thin:TEXT` (TEXT = "VG/POOL"), names checked.
Result<std::unique_ptr<LvmThinStorage>> make_lvm_thin_storage(std::string_view text,
                                                              ProcessRunner& runner);

}  // namespace ds
