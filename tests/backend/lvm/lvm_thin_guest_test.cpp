// lvm_thin_guest_test: the lvm-thin storage backend's own code against a
// real dm-thin pool. The host kernel has no device-mapper, so this runs
// inside a guest of the base image (guest/build-image.sh):
// run-lvm-guest-test.sh boots it with this program in place of the agent
// (PID 1) and a blank disk whose serial is kPhysicalVolumeSerial. The
// program first gives LVM a configuration directory of its own (the image's
// /etc/lvm is on its read-only root), makes a VG and a thin pool on that
// disk, then drives LvmThinStorage: create, fill read-back, a golden
// volume's snapshot, discard (fstrim, and the `discard` mount option),
// LVM's errors, list and remove, each checked against what the kernel and
// LVM then report.
//
// Output on stdout (the guest's console), one line per check:
//   PASS <check> (<what was measured>)
//   FAIL <check>: <why>
// then the summary "lvm_thin_guest_test: N passed, M failed". Exit status 0
// only when every check passed. As PID 1 it powers the guest off when done.
// It only touches the disk with that serial: run by hand in a guest, it
// needs such a blank disk too.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/process.h"
#include "daemon/backends/storage/lvm_thin/lvm_thin_storage.h"
#include "guestagent/discovery.h"
#include "guestagent/guest_system.h"
#include "guestagent/init.h"

namespace ds::lvm_guest_test {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kMiB = 1ull << 20;
// The blank disk run-lvm-guest-test.sh attaches (1 GiB) for the VG.
constexpr std::string_view kPhysicalVolumeSerial = "disksweep-lvm-pv";
constexpr const char* kVolumeGroup = "dsguest";
constexpr const char* kPool = "pool";
// A whole number of LVM's 4 MiB extents, so the pool is exactly this big and
// a write of N MiB is N / 768 of it.
constexpr std::uint64_t kPoolBytes = 768 * kMiB;
constexpr const char* kRunPrefix = "dsguest-run-";
// Outside kRunPrefix, as the backend asks of golden volumes.
constexpr const char* kGolden = "golden-dataset";
constexpr std::chrono::seconds kToolTimeout(300);
// LVM prints percentages with two decimals; thin chunks (64 KiB) make the
// real fill differ from the bytes written by less than this.
constexpr double kPercentTolerance = 0.5;
// Share of a deleted file's blocks that discard must give back to the pool.
constexpr double kDiscardShareRequired = 0.8;

std::string run_name(int number) {
    return kRunPrefix + std::to_string(number);
}

std::string device_of(const std::string& volume) {
    return std::string("/dev/") + kVolumeGroup + "/" + volume;
}

std::string percent_text(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f%%", value);
    return text;
}

// Percent of the pool that `bytes` of data occupy.
double pool_share(std::uint64_t bytes) {
    return 100.0 * static_cast<double>(bytes) / static_cast<double>(kPoolBytes);
}

Error check_failed(std::string why) {
    return make_error(errc::kInternal, std::move(why));
}

Error os_error(const std::string& what) {
    return make_error(errc::kIo, what + ": " + std::strerror(errno));
}

// ---- data: a pattern that is different at every offset and per seed --------

std::uint64_t pattern_word(std::uint64_t seed, std::uint64_t offset) {
    // splitmix64 of (seed, offset): cheap, and no two blocks alike.
    std::uint64_t z = seed * 0x9e3779b97f4a7c15ull + offset;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

constexpr std::size_t kIoBytes = kMiB;  // one O_DIRECT request

struct AlignedBuffer {
    AlignedBuffer() : data(static_cast<std::uint64_t*>(std::aligned_alloc(4096, kIoBytes))) {}
    ~AlignedBuffer() { std::free(data); }
    AlignedBuffer(const AlignedBuffer&) = delete;
    AlignedBuffer& operator=(const AlignedBuffer&) = delete;
    void fill(std::uint64_t seed, std::uint64_t offset) {
        for (std::size_t i = 0; i < kIoBytes / 8; ++i) data[i] = pattern_word(seed, offset + i * 8);
    }
    std::uint64_t* data;
};

class Fd {
  public:
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd() {
        if (fd_ >= 0) ::close(fd_);
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const { return fd_; }

  private:
    int fd_;
};

// Writes `length` bytes of the pattern `seed` at `offset` of `path` (a block
// device or a file, created if missing) with O_DIRECT, then fdatasync: the
// data is in the pool, not in the page cache.
Status write_pattern(const std::string& path, std::uint64_t offset, std::uint64_t length,
                     std::uint64_t seed) {
    Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_DIRECT | O_CLOEXEC, 0644));
    if (fd.get() < 0) return os_error("open " + path);
    AlignedBuffer buffer;
    for (std::uint64_t done = 0; done < length; done += kIoBytes) {
        buffer.fill(seed, offset + done);
        if (::pwrite(fd.get(), buffer.data, kIoBytes, static_cast<off_t>(offset + done)) !=
            static_cast<ssize_t>(kIoBytes)) {
            return os_error("write " + path + " at " + std::to_string(offset + done));
        }
    }
    if (::fdatasync(fd.get()) != 0) return os_error("fdatasync " + path);
    return ok_status();
}

// Reads the range back with O_DIRECT and compares it with the pattern.
Status expect_pattern(const std::string& path, std::uint64_t offset, std::uint64_t length,
                      std::uint64_t seed) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC));
    if (fd.get() < 0) return os_error("open " + path);
    AlignedBuffer got;
    AlignedBuffer want;
    for (std::uint64_t done = 0; done < length; done += kIoBytes) {
        if (::pread(fd.get(), got.data, kIoBytes, static_cast<off_t>(offset + done)) !=
            static_cast<ssize_t>(kIoBytes)) {
            return os_error("read " + path + " at " + std::to_string(offset + done));
        }
        want.fill(seed, offset + done);
        if (std::memcmp(got.data, want.data, kIoBytes) != 0) {
            return check_failed(path + ": the MiB at offset " + std::to_string(offset + done) +
                                " is not what was written (pattern " + std::to_string(seed) + ")");
        }
    }
    return ok_status();
}

Result<std::uint64_t> block_device_bytes(const std::string& path) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return os_error("open " + path);
    std::uint64_t bytes = 0;
    if (::ioctl(fd.get(), BLKGETSIZE64, &bytes) != 0) return os_error("BLKGETSIZE64 " + path);
    return bytes;
}

bool is_block_device(const std::string& path) {
    struct stat info {};
    return ::stat(path.c_str(), &info) == 0 && S_ISBLK(info.st_mode);
}

// ---- LVM's configuration: a directory of this program's own ----------------

// The image's /etc/lvm is on its read-only root and holds Debian's lvm.conf,
// which sets nothing (LVM's built-in defaults). Every LVM tool this program
// starts reads kLvmSystemDir instead: LVM_SYSTEM_DIR is set in this
// process, and the runner's children inherit it. It lies on the tmpfs that
// the image's initramfs mounts on /run, where LVM also keeps its lock
// directory (/run/lock/lvm).
constexpr const char* kLvmSystemDir = "/run/disksweep-lvm";

struct LvmSetting {
    const char* section;
    const char* key;
    const char* value;
};

// Written to kLvmSystemDir/lvm.conf in this order (a section's keys next to
// each other).
constexpr LvmSetting kLvmSettings[] = {
    // No metadata backups or archives: nothing restores them in a guest that
    // is thrown away after the run. (With LVM's defaults, which write them
    // below the read-only /etc/lvm, `lvcreate --type thin-pool` fails with
    // only "Command failed with status code 5".)
    {"backup", "backup", "0"},
    {"backup", "archive", "0"},
    // No udev in the guest: libdevmapper makes /dev/VG/LV itself.
    {"activation", "udev_sync", "0"},
    {"activation", "udev_rules", "0"},
    // No dmeventd: nothing may grow the pool behind a check's back.
    {"activation", "monitoring", "0"},
};

std::string lvm_conf_text() {
    std::string text = "# Written by lvm_thin_guest_test (LVM_SYSTEM_DIR).\n";
    std::string_view open_section;
    for (const LvmSetting& setting : kLvmSettings) {
        if (setting.section != open_section) {
            if (!open_section.empty()) text += "}\n";
            open_section = setting.section;
            text += std::string(open_section) + " {\n";
        }
        text += std::string("\t") + setting.key + " = " + setting.value + "\n";
    }
    if (!open_section.empty()) text += "}\n";
    return text;
}

Status write_text_file(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) return os_error("write " + path);
    return ok_status();
}

// Writes kLvmSystemDir/lvm.conf and points every tool started from now on
// at it.
Status use_own_lvm_config(agent::GuestSystem& system) {
    DS_TRY(system.make_directories(kLvmSystemDir));
    DS_TRY(write_text_file(std::string(kLvmSystemDir) + "/lvm.conf", lvm_conf_text()));
    if (::setenv("LVM_SYSTEM_DIR", kLvmSystemDir, /*overwrite=*/1) != 0) {
        return os_error("setenv LVM_SYSTEM_DIR");
    }
    return ok_status();
}

// ---- the fixture: the tools, the pool, the backend ---------------------------

struct Fixture {
    RealProcessRunner runner;
    agent::RealGuestSystem system;
    std::string physical_volume;
    std::optional<LvmThinStorage> storage;
    double empty_pool_data_percent = 0;

    Status run(const std::vector<std::string>& argv) {
        return run_checked(runner, argv, kToolTimeout);
    }
    Result<ThinPoolFill> fill(const std::string& volume) { return storage->fill(volume); }
};

// `volume` as the device QEMU would attach.
Result<std::string> block_path(const Result<Volume>& volume) {
    if (!volume.ok()) return volume.error();
    const auto* block = std::get_if<BlockDisk>(&volume->source);
    if (!block) return check_failed("the volume's disk source is not a BlockDisk");
    if (!is_block_device(block->path)) {
        return check_failed(block->path + " is not a block device after creation");
    }
    return block->path;
}

// Makes ext4 on `device` with its inode tables and journal written now
// (not by a background thread that would fill the pool during the check)
// and mounts it at `mount_point` with `options`.
Status make_mounted_ext4(Fixture& fixture, const std::string& device,
                         const std::string& mount_point, const std::string& options) {
    DS_TRY(fixture.run(
        {"mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", device}));
    DS_TRY(fixture.system.make_directories(mount_point));
    return fixture.system.mount(device, mount_point, "ext4", options);
}

// ---- the checks, in order -----------------------------------------------------

// Each returns what it measured, or why it failed.
using CheckResult = Result<std::string>;

// Gives LVM its configuration, then asks LVM what it read: `lvmconfig
// section/key...` prints "key=value" per setting, and fails on a key the
// files it reads do not set (Debian's lvm.conf sets none).
CheckResult check_lvm_config(Fixture& fixture) {
    DS_TRY(use_own_lvm_config(fixture.system));
    std::vector<std::string> argv = {"lvmconfig"};
    std::string want;
    for (const LvmSetting& setting : kLvmSettings) {
        argv.push_back(std::string(setting.section) + "/" + setting.key);
        want += std::string(setting.key) + "=" + setting.value + "\n";
    }
    auto output = fixture.runner.run(argv, kToolTimeout);
    if (!output.ok()) return output.error();
    if (output->exit_code != 0 || output->stdout_text != want) {
        return check_failed("LVM does not read " + std::string(kLvmSystemDir) +
                            "/lvm.conf: " + describe_command(argv) + " exited " +
                            std::to_string(output->exit_code) + ", printed '" +
                            output->stdout_text + "', stderr '" + output->stderr_text + "'");
    }
    std::string measured = std::string("LVM_SYSTEM_DIR=") + kLvmSystemDir + ":";
    for (const LvmSetting& setting : kLvmSettings) {
        measured += std::string(" ") + setting.section + "/" + setting.key + "=" + setting.value;
    }
    return measured;
}

CheckResult check_dm_thin_pool_module(Fixture& fixture) {
    DS_TRY(fixture.run({"modprobe", "dm_thin_pool"}));
    if (!fs::exists("/sys/module/dm_thin_pool")) {
        return check_failed("modprobe succeeded but /sys/module/dm_thin_pool is missing");
    }
    return "kernel " + fixture.system.kernel_release();
}

CheckResult check_disk_by_serial(Fixture& fixture) {
    auto disk = agent::find_disk_by_serial(agent::SystemRoots{}, kPhysicalVolumeSerial);
    if (!disk.ok()) return disk.error();
    fixture.physical_volume = "/dev/" + *disk;
    if (!is_block_device(fixture.physical_volume)) {
        return check_failed(fixture.physical_volume + " is not a block device node");
    }
    return fixture.physical_volume;
}

CheckResult check_thin_pool_setup(Fixture& fixture) {
    DS_TRY(fixture.run({"pvcreate", fixture.physical_volume}));
    DS_TRY(fixture.run({"vgcreate", kVolumeGroup, fixture.physical_volume}));
    DS_TRY(fixture.run({"lvcreate", "--type", "thin-pool", "--size",
                        std::to_string(kPoolBytes) + "b", "--name", kPool, kVolumeGroup}));
    auto pool = parse_thin_pool(std::string(kVolumeGroup) + "/" + kPool);
    if (!pool.ok()) return pool.error();
    fixture.storage.emplace(*pool, fixture.runner);
    auto fill = fixture.fill("");
    if (!fill.ok()) return fill.error();
    fixture.empty_pool_data_percent = fill->pool_data_percent;
    return "pool data " + percent_text(fill->pool_data_percent) + ", metadata " +
           percent_text(fill->pool_metadata_percent);
}

CheckResult check_name_and_kind(Fixture& fixture) {
    const std::string want = std::string("lvm-thin:") + kVolumeGroup + "/" + kPool;
    if (fixture.storage->name() != want) {
        return check_failed("name() is '" + fixture.storage->name() + "', not '" + want + "'");
    }
    if (fixture.storage->produces() != DiskSourceKind::kBlock) {
        return check_failed("produces() is not block");
    }
    return want + ", block";
}

CheckResult check_create_volume(Fixture& fixture) {
    StorageConfig config;
    config.disk_size_bytes = 256 * kMiB;
    auto path = block_path(fixture.storage->create_volume(run_name(1), config));
    if (!path.ok()) return path.error();
    if (*path != device_of(run_name(1))) return check_failed("device path " + *path);
    auto bytes = block_device_bytes(*path);
    if (!bytes.ok()) return bytes.error();
    if (*bytes != config.disk_size_bytes) {
        return check_failed(*path + " has " + std::to_string(*bytes) + " bytes, not " +
                            std::to_string(config.disk_size_bytes));
    }
    auto fill = fixture.fill(run_name(1));
    if (!fill.ok()) return fill.error();
    if (fill->volume_data_percent != 0.0) {
        return check_failed("a fresh thin LV is not empty: data " +
                            percent_text(fill->volume_data_percent.value_or(-1)));
    }
    return *path + ", " + std::to_string(*bytes / kMiB) + " MiB, data 0.00%";
}

CheckResult check_qcow2_refused(Fixture& fixture) {
    StorageConfig config;
    config.image_format = ImageFormat::kQcow2;
    auto refused = fixture.storage->create_volume(run_name(9), config);
    if (refused.ok()) return check_failed("a qcow2 volume was created");
    if (refused.error().code != errc::kInvalidArgument) {
        return check_failed("wrong error: " + refused.error().message);
    }
    if (fs::exists(device_of(run_name(9)))) return check_failed("an LV was made anyway");
    return refused.error().message;
}

// Writes a quarter of run 1 and reads back both the data and the fill LVM
// reports for the volume and for the pool.
CheckResult check_fill_read_back(Fixture& fixture) {
    constexpr std::uint64_t kWritten = 64 * kMiB;
    const std::string volume = run_name(1);
    auto before = fixture.fill(volume);
    if (!before.ok()) return before.error();
    DS_TRY(write_pattern(device_of(volume), 0, kWritten, 1));
    auto after = fixture.fill(volume);
    if (!after.ok()) return after.error();
    DS_TRY(expect_pattern(device_of(volume), 0, kWritten, 1));

    const double volume_percent = after->volume_data_percent.value_or(-1);
    const double pool_growth = after->pool_data_percent - before->pool_data_percent;
    const std::string measured =
        "volume data " + percent_text(before->volume_data_percent.value_or(-1)) + " -> " +
        percent_text(volume_percent) + ", pool data " + percent_text(before->pool_data_percent) +
        " -> " + percent_text(after->pool_data_percent) + " after writing 64 MiB";
    if (std::abs(volume_percent - 25.0) > kPercentTolerance) {
        return check_failed("volume fill is not 25%: " + measured);
    }
    if (std::abs(pool_growth - pool_share(kWritten)) > kPercentTolerance) {
        return check_failed("pool fill did not grow by " + percent_text(pool_share(kWritten)) +
                            ": " + measured);
    }
    return measured;
}

CheckResult check_state_json(Fixture& fixture) {
    const Json state = fixture.storage->state(run_name(1));
    for (const char* key : {"pool_data_percent", "pool_metadata_percent", "volume_data_percent"}) {
        if (!state.contains(key) || !state.at(key).is_number()) {
            return check_failed(std::string("state() has no number ") + key + ": " + state.dump());
        }
    }
    const Json gone = fixture.storage->state("dsguest-no-such-volume");
    if (gone.contains("volume_data_percent") || !gone.contains("pool_data_percent")) {
        return check_failed("state() of a missing volume: " + gone.dump());
    }
    return state.dump();
}

// The golden volume gets data; a thin snapshot of it, made per run, reads
// that data back and shares its blocks (the pool does not grow).
CheckResult check_golden_snapshot(Fixture& fixture) {
    auto golden = block_path(fixture.storage->create_golden(kGolden, 64 * kMiB));
    if (!golden.ok()) return golden.error();
    DS_TRY(write_pattern(*golden, 0, 8 * kMiB, 2));
    DS_TRY(write_pattern(*golden, 32 * kMiB, 8 * kMiB, 3));
    auto before = fixture.fill(kGolden);
    if (!before.ok()) return before.error();

    auto snapshot = block_path(fixture.storage->create_snapshot_volume(run_name(2), kGolden));
    if (!snapshot.ok()) return snapshot.error();
    DS_TRY(expect_pattern(*snapshot, 0, 8 * kMiB, 2));
    DS_TRY(expect_pattern(*snapshot, 32 * kMiB, 8 * kMiB, 3));
    auto after = fixture.fill(run_name(2));
    if (!after.ok()) return after.error();

    const double snapshot_percent = after->volume_data_percent.value_or(-1);
    const std::string measured = "snapshot " + *snapshot + " reads the golden data back, data " +
                                 percent_text(snapshot_percent) + " (golden " +
                                 percent_text(before->volume_data_percent.value_or(-1)) +
                                 "), pool " + percent_text(before->pool_data_percent) + " -> " +
                                 percent_text(after->pool_data_percent);
    if (std::abs(snapshot_percent - 25.0) > kPercentTolerance) {
        return check_failed("the snapshot does not map the golden volume's 16 of 64 MiB: " +
                            measured);
    }
    if (after->pool_data_percent - before->pool_data_percent > kPercentTolerance) {
        return check_failed("the snapshot copied blocks instead of sharing them: " + measured);
    }
    return measured;
}

CheckResult check_snapshot_is_independent(Fixture& fixture) {
    const std::string snapshot = device_of(run_name(2));
    DS_TRY(write_pattern(snapshot, 0, kMiB, 4));
    DS_TRY(expect_pattern(snapshot, 0, kMiB, 4));
    DS_TRY(expect_pattern(device_of(kGolden), 0, 8 * kMiB, 2));
    return std::string("a write to the snapshot left the golden volume unchanged");
}

// A file written, measured, deleted, then discarded by `discard` (fstrim, or
// nothing when the mount option does it): the pool must get its blocks back.
struct DiscardCase {
    int run;
    const char* mount_options;
    std::uint64_t file_bytes;
    std::vector<std::string> discard_command;  // with the mount point appended; empty = none
};

Result<ThinPoolFill> wait_for_pool_drop(Fixture& fixture, const std::string& volume,
                                        double threshold_percent) {
    // Online discard is issued when ext4 commits the freeing transaction
    // (sync forces that); give the pool a few seconds in case it lags.
    constexpr int kPolls = 20;
    Result<ThinPoolFill> fill = fixture.fill(volume);
    for (int poll = 0; poll < kPolls && fill.ok() && fill->pool_data_percent > threshold_percent;
         ++poll) {
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        fill = fixture.fill(volume);
    }
    return fill;
}

struct DiscardMeasurement {
    ThinPoolFill written;
    ThinPoolFill discarded;
    // StorageBackend::allocated_bytes, what the run's discard check reads.
    std::uint64_t allocated_written = 0;
    std::uint64_t allocated_discarded = 0;
};

// On the mounted file system: write the file, measure, delete, discard,
// measure again.
Result<DiscardMeasurement> measure_discard(Fixture& fixture, const std::string& volume,
                                           const std::string& mount_point,
                                           const DiscardCase& discard) {
    const std::string file = mount_point + "/data";
    DS_TRY(write_pattern(file, 0, discard.file_bytes, 5));
    fixture.system.sync();
    auto written = fixture.fill(volume);
    if (!written.ok()) return written.error();
    auto allocated_written = fixture.storage->allocated_bytes(volume);
    if (!allocated_written.ok()) return allocated_written.error();

    if (::unlink(file.c_str()) != 0) return os_error("unlink " + file);
    fixture.system.sync();
    if (!discard.discard_command.empty()) {
        auto command = discard.discard_command;
        command.push_back(mount_point);
        DS_TRY(fixture.run(command));
    }
    const double required_drop = kDiscardShareRequired * pool_share(discard.file_bytes);
    auto discarded =
        wait_for_pool_drop(fixture, volume, written->pool_data_percent - required_drop);
    if (!discarded.ok()) return discarded.error();
    auto allocated_discarded = fixture.storage->allocated_bytes(volume);
    if (!allocated_discarded.ok()) return allocated_discarded.error();
    return DiscardMeasurement{*written, *discarded, *allocated_written, *allocated_discarded};
}

CheckResult check_discard(Fixture& fixture, const DiscardCase& discard) {
    StorageConfig config;
    config.disk_size_bytes = 512 * kMiB;
    const std::string volume = run_name(discard.run);
    auto device = block_path(fixture.storage->create_volume(volume, config));
    if (!device.ok()) return device.error();
    const std::string mount_point = "/mnt/" + volume;
    DS_TRY(make_mounted_ext4(fixture, *device, mount_point, discard.mount_options));
    auto measured = measure_discard(fixture, volume, mount_point, discard);
    DS_TRY(fixture.system.unmount(mount_point));
    if (!measured.ok()) return measured.error();

    const ThinPoolFill& written = measured->written;
    const ThinPoolFill& discarded = measured->discarded;
    const double required_drop = kDiscardShareRequired * pool_share(discard.file_bytes);
    const std::string text = "pool data " + percent_text(written.pool_data_percent) + " -> " +
                             percent_text(discarded.pool_data_percent) + ", volume data " +
                             percent_text(written.volume_data_percent.value_or(-1)) + " -> " +
                             percent_text(discarded.volume_data_percent.value_or(-1)) +
                             " after deleting a " + std::to_string(discard.file_bytes / kMiB) +
                             " MiB file (" + percent_text(pool_share(discard.file_bytes)) +
                             " of the pool); allocated_bytes " +
                             std::to_string(measured->allocated_written) + " -> " +
                             std::to_string(measured->allocated_discarded);
    if (written.pool_data_percent - discarded.pool_data_percent < required_drop) {
        return check_failed("the pool did not get at least " + percent_text(required_drop) +
                            " back: " + text);
    }
    const double allocated_drop = static_cast<double>(measured->allocated_written) -
                                  static_cast<double>(measured->allocated_discarded);
    if (allocated_drop < kDiscardShareRequired * static_cast<double>(discard.file_bytes)) {
        return check_failed("allocated_bytes did not drop by the file's share: " + text);
    }
    return text;
}

CheckResult check_discard_fstrim(Fixture& fixture) {
    return check_discard(fixture, DiscardCase{3, "", 128 * kMiB, {"fstrim", "--verbose"}});
}

CheckResult check_discard_mount_option(Fixture& fixture) {
    return check_discard(fixture, DiscardCase{4, "discard", 64 * kMiB, {}});
}

// LVM's own refusal reaches the caller: the same name twice, and a snapshot
// of a golden volume that does not exist.
CheckResult check_lvm_error_text(Fixture& fixture) {
    StorageConfig config;
    config.disk_size_bytes = 64 * kMiB;
    auto twice = fixture.storage->create_volume(run_name(1), config);
    if (twice.ok()) return check_failed("the same LV name was created twice");
    const std::string& message = twice.error().message;
    if (twice.error().code != errc::kStorage ||
        message.find("already exists") == std::string::npos ||
        message.find("lvcreate") == std::string::npos) {
        return check_failed("the error does not carry LVM's text and command: " + message);
    }
    auto orphan = fixture.storage->create_snapshot_volume(run_name(8), "golden-missing");
    if (orphan.ok() || orphan.error().code != errc::kNotFound) {
        return check_failed("a snapshot of a missing golden volume was not refused as not found");
    }
    return message;
}

CheckResult check_list_volumes(Fixture& fixture) {
    auto listed = fixture.storage->list_volumes(kRunPrefix);
    if (!listed.ok()) return listed.error();
    std::sort(listed->begin(), listed->end());
    const std::vector<std::string> want = {run_name(1), run_name(2), run_name(3), run_name(4)};
    std::string names;
    for (const auto& name : *listed) names += (names.empty() ? "" : " ") + name;
    if (*listed != want) return check_failed("listed: " + names);
    return names;
}

CheckResult check_remove(Fixture& fixture) {
    auto listed = fixture.storage->list_volumes(kRunPrefix);
    if (!listed.ok()) return listed.error();
    listed->push_back(kGolden);
    for (const std::string& volume : *listed) {
        DS_TRY(fixture.storage->remove_volume(volume));
        if (fs::exists(device_of(volume))) {
            return check_failed(device_of(volume) + " still exists after removal");
        }
    }
    DS_TRY(fixture.storage->remove_volume(run_name(1)));  // already gone: success
    auto left = fixture.storage->list_volumes("");
    if (!left.ok()) return left.error();
    if (!left->empty()) return check_failed(left->front() + " is still in the pool");
    auto fill = fixture.fill("");
    if (!fill.ok()) return fill.error();
    if (fill->pool_data_percent > fixture.empty_pool_data_percent + kPercentTolerance) {
        return check_failed("the pool still holds data: " + percent_text(fill->pool_data_percent));
    }
    return "removed " + std::to_string(listed->size()) + " volumes, pool data back to " +
           percent_text(fill->pool_data_percent);
}

struct Check {
    const char* name;
    CheckResult (*run)(Fixture&);
    // A failure here leaves nothing for the later checks to work on.
    bool later_checks_need_it;
};

constexpr Check kChecks[] = {
    {"lvm_config", check_lvm_config, true},
    {"dm_thin_pool_module", check_dm_thin_pool_module, true},
    {"disk_by_serial", check_disk_by_serial, true},
    {"thin_pool_setup", check_thin_pool_setup, true},
    {"name_and_kind", check_name_and_kind, false},
    {"create_volume", check_create_volume, false},
    {"qcow2_refused", check_qcow2_refused, false},
    {"fill_read_back", check_fill_read_back, false},
    {"state_json", check_state_json, false},
    {"golden_snapshot", check_golden_snapshot, false},
    {"snapshot_is_independent", check_snapshot_is_independent, false},
    {"discard_fstrim", check_discard_fstrim, false},
    {"discard_mount_option", check_discard_mount_option, false},
    {"lvm_error_text", check_lvm_error_text, false},
    {"list_volumes", check_list_volumes, false},
    {"remove", check_remove, false},
};

void print_line(const std::string& line) {
    std::fputs((line + "\n").c_str(), stdout);
    std::fflush(stdout);
}

int run_checks() {
    Fixture fixture;
    int passed = 0;
    int failed = 0;
    std::string blocker;  // the required check that failed
    for (const Check& check : kChecks) {
        if (!blocker.empty()) {
            print_line(std::string("FAIL ") + check.name + ": not run (" + blocker + " failed)");
            ++failed;
            continue;
        }
        const auto started = std::chrono::steady_clock::now();
        CheckResult result = check.run(fixture);
        const auto seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started);
        char took[32];
        std::snprintf(took, sizeof took, "%.1f s", seconds.count());
        if (result.ok()) {
            print_line(std::string("PASS ") + check.name + " (" + *result + "; " + took + ")");
            ++passed;
        } else {
            print_line(std::string("FAIL ") + check.name + ": " + result.error().message);
            ++failed;
            if (check.later_checks_need_it) blocker = check.name;
        }
    }
    print_line("lvm_thin_guest_test: " + std::to_string(passed) + " passed, " +
               std::to_string(failed) + " failed");
    return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace ds::lvm_guest_test

int main() {
    // Started by the initramfs as the guest's init (with --pid1, ignored):
    // the checks run in a child, PID 1 powers off when it ends.
    if (ds::agent::is_pid1()) ds::agent::run_as_init(ds::lvm_guest_test::run_checks);
    return ds::lvm_guest_test::run_checks();
}
