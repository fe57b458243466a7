// Finding the channel port and the data disk, and reading back what the
// guest sees, on a fake sysfs/procfs tree.
#include "guestagent/discovery.h"

#include "support/fakes/agent_fakes.h"

using namespace ds::agent;
using namespace ds::agent::testing;

TEST_CASE("discovery: the agent's virtio-serial port by name", "[discovery]") {
    FakeGuestTree tree;
    auto port = find_virtio_port(tree.roots(), "org.disksweep.agent.0");
    REQUIRE(port.ok());
    CHECK(*port == "vport0p1");

    auto missing = find_virtio_port(tree.roots(), "org.example.other");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().code == ds::errc::kNotFound);
    CHECK(missing.error().message.find("vport0p0(name='org.qemu.guest_agent.0')") !=
          std::string::npos);
}

TEST_CASE("discovery: data disk by serial on SCSI (VPD 0x80) and virtio-blk", "[discovery]") {
    FakeGuestTree tree;
    auto scsi = find_disk_by_serial(tree.roots(), "disksweep-data");
    REQUIRE(scsi.ok());
    CHECK(*scsi == "sdb");
    auto root = find_disk_by_serial(tree.roots(), "disksweep-root");
    REQUIRE(root.ok());
    CHECK(*root == "vda");

    write_text(tree.sys() / "block/vdb/serial", "other-disk\n");
    auto none = find_disk_by_serial(tree.roots(), "nope");
    REQUIRE_FALSE(none.ok());
    CHECK(none.error().message ==
          "no disk with serial nope in " + (tree.sys() / "block").string() +
              "; disks: sdb(serial='disksweep-data') vda(serial='disksweep-root') "
              "vdb(serial='other-disk')");
}

TEST_CASE("discovery: VPD page 0x80 parsing", "[discovery]") {
    using namespace std::string_literals;
    CHECK(serial_from_vpd_page80("\0\x80\0\x0e"s
                                 "disksweep-data"s) == "disksweep-data");
    // Length covers padding; padding and trailing NULs are stripped.
    CHECK(serial_from_vpd_page80("\0\x80\0\x12"s
                                 "disksweep-data  \0\0"s) == "disksweep-data");
    // Length shorter than the bytes present: only `length` bytes count.
    CHECK(serial_from_vpd_page80("\0\x80\0\x04"s
                                 "abcdefgh"s) == "abcd");
    // Length longer than the page: clamp to what is there.
    CHECK(serial_from_vpd_page80("\0\x80\x01\x00"s
                                 "abc"s) == "abc");
    CHECK(serial_from_vpd_page80("\0\x80"s) == "");
}

TEST_CASE("discovery: /proc/mounts lookup decodes escapes and takes the top mount", "[discovery]") {
    FakeGuestTree tree;
    write_text(tree.proc() / "mounts",
               "/dev/vda / ext4 ro,relatime 0 0\n"
               "tmpfs /mnt tmpfs rw 0 0\n"
               "/dev/sdb /mnt/disk\\040sweep ext4 rw,noatime 0 0\n"
               "/dev/sdc /mnt/disk\\040sweep btrfs rw,nodatacow 0 0\n");
    auto entry = find_mount(tree.roots(), "/mnt/disk sweep");
    REQUIRE(entry.has_value());
    CHECK(entry->device == "/dev/sdc");
    CHECK(entry->fs_type == "btrfs");
    CHECK(entry->options == "rw,nodatacow");
    CHECK_FALSE(find_mount(tree.roots(), "/mnt/disksweep").has_value());
}

TEST_CASE("discovery: /proc/filesystems", "[discovery]") {
    FakeGuestTree tree;
    CHECK(filesystem_registered(tree.roots(), "ext4"));
    CHECK(filesystem_registered(tree.roots(), "btrfs"));
    CHECK(filesystem_registered(tree.roots(), "sysfs"));
    CHECK_FALSE(filesystem_registered(tree.roots(), "xfs"));
    CHECK_FALSE(filesystem_registered(tree.roots(), "ext"));
}

TEST_CASE("discovery: readback of the disk's settings", "[discovery]") {
    FakeGuestTree tree;
    write_text(tree.proc() / "mounts", "/dev/sdb /mnt/disksweep xfs rw,noatime,discard 0 0\n");
    const ds::Json readback = read_disk_readback(tree.roots(), "sdb", "/mnt/disksweep");
    CHECK(readback == ds::Json{{"device", "sdb"},
                               {"fs_type", "xfs"},
                               {"mount_options", "rw,noatime,discard"},
                               {"mount_source", "/dev/sdb"},
                               {"serial", "disksweep-data"},
                               {"rotational", 0},
                               {"discard_max_bytes", 1073741824},
                               {"logical_block_size", 512},
                               {"read_ahead_kb", 128},
                               {"nr_requests", 256},
                               {"scheduler", "none"}});

    // Unreadable values are left out; a scheduler file without brackets.
    write_text(tree.sys() / "block/vdc/queue/scheduler", "none\n");
    write_text(tree.sys() / "block/vdc/queue/rotational", "garbage\n");
    const ds::Json partial = read_disk_readback(tree.roots(), "vdc", "/mnt/elsewhere");
    CHECK(partial == ds::Json{{"device", "vdc"}, {"scheduler", "none"}});
}

TEST_CASE("discovery: driver, write cache, hardware queues and CPUs of the data disk",
          "[discovery]") {
    // The sysfs shape a Linux 6.1 guest showed for scsi-hd on virtio-scsi:
    // /sys/block/sda/device -> .../virtio0/host0/target0:0:0/0:0:0:0, whose
    // driver is sd, with virtio_scsi bound to virtio0 above it.
    FakeGuestTree tree;
    const fs::path pci = tree.sys() / "devices/pci0000:00/0000:01:00.0";
    const fs::path disk = pci / "virtio0/host0/target0:0:0/0:0:0:0";
    fs::create_directories(disk);
    fs::create_directories(tree.sys() / "bus/scsi/drivers/sd");
    fs::create_directories(tree.sys() / "bus/virtio/drivers/virtio_scsi");
    fs::create_directories(tree.sys() / "bus/pci/drivers/virtio-pci");
    fs::create_symlink(tree.sys() / "bus/scsi/drivers/sd", disk / "driver");
    fs::create_symlink(tree.sys() / "bus/virtio/drivers/virtio_scsi", pci / "virtio0/driver");
    fs::create_symlink(tree.sys() / "bus/pci/drivers/virtio-pci", pci / "driver");
    fs::create_directories(tree.sys() / "block/sda/mq/0");
    fs::create_directories(tree.sys() / "block/sda/mq/1");
    fs::create_symlink(disk, tree.sys() / "block/sda/device");
    write_text(tree.sys() / "block/sda/queue/write_cache", "write back\n");
    write_text(tree.sys() / "devices/system/cpu/online", "0-1\n");
    const ds::Json readback = read_disk_readback(tree.roots(), "sda", "/mnt/disksweep");
    CHECK(readback.at("driver") == "virtio_scsi");
    CHECK(readback.at("write_cache") == "write back");
    CHECK(readback.at("hw_queues") == 2);
    CHECK(readback.at("online_cpus") == 2);

    // A lone CPU and a list of ranges.
    write_text(tree.sys() / "devices/system/cpu/online", "0\n");
    CHECK(read_disk_readback(tree.roots(), "sda", "/mnt/x").at("online_cpus") == 1);
    write_text(tree.sys() / "devices/system/cpu/online", "0-3,6,8-9\n");
    CHECK(read_disk_readback(tree.roots(), "sda", "/mnt/x").at("online_cpus") == 7);
    write_text(tree.sys() / "devices/system/cpu/online", "3-1\n");
    CHECK_FALSE(read_disk_readback(tree.roots(), "sda", "/mnt/x").contains("online_cpus"));
}

TEST_CASE("discovery: queue/scheduler lists what is offered and what is active", "[discovery]") {
    // As this host's loop devices show it (kernel 6.18), before and after
    // `echo bfq > scheduler`.
    SchedulerList fresh = parse_scheduler_list("[none] mq-deadline kyber bfq \n");
    CHECK(fresh.offered == std::vector<std::string>{"none", "mq-deadline", "kyber", "bfq"});
    CHECK(fresh.active == "none");
    SchedulerList switched = parse_scheduler_list("none mq-deadline kyber [bfq] \n");
    CHECK(switched.active == "bfq");
    CHECK(switched.offered.size() == 4);
    // A queue without an elevator choice: a lone "none".
    SchedulerList lone = parse_scheduler_list("none\n");
    CHECK(lone.offered == std::vector<std::string>{"none"});
    CHECK(lone.active == "none");
    CHECK(parse_scheduler_list("").active.empty());
    CHECK(parse_scheduler_list("mq-deadline none").active.empty());
}

TEST_CASE("discovery: btrfs filesystem df profiles, from real output", "[discovery]") {
    // btrfs-progs v6.2 on a 300 MB loop device, kernel 6.18.
    SECTION("mkfs.btrfs -m dup") {
        auto profiles = parse_btrfs_df_profiles(kBtrfsDfMetadataDup);
        REQUIRE(profiles.ok());
        CHECK(to_json(*profiles) ==
              ds::Json{{"data", "single"}, {"metadata", "dup"}, {"system", "dup"}});
    }
    SECTION("after btrfs balance start -f -mconvert=single -sconvert=single") {
        auto profiles = parse_btrfs_df_profiles(
            "Data, single: total=8.00MiB, used=0.00B\n"
            "System, single: total=32.00MiB, used=16.00KiB\n"
            "Metadata, single: total=32.00MiB, used=128.00KiB\n"
            "GlobalReserve, single: total=5.50MiB, used=0.00B\n");
        REQUIRE(profiles.ok());
        CHECK(to_json(*profiles) ==
              ds::Json{{"data", "single"}, {"metadata", "single"}, {"system", "single"}});
    }
    SECTION("mkfs.btrfs -d raid1 -m raid1 on two devices") {
        auto profiles = parse_btrfs_df_profiles(
            "Data, RAID1: total=64.00MiB, used=0.00B\n"
            "System, RAID1: total=8.00MiB, used=16.00KiB\n"
            "Metadata, RAID1: total=32.00MiB, used=128.00KiB\n"
            "GlobalReserve, single: total=5.50MiB, used=0.00B\n");
        REQUIRE(profiles.ok());
        CHECK(to_json(*profiles) ==
              ds::Json{{"data", "raid1"}, {"metadata", "raid1"}, {"system", "raid1"}});
    }
    SECTION("mkfs.btrfs --mixed: one Data+Metadata group") {
        auto profiles = parse_btrfs_df_profiles(
            "System, single: total=4.00MiB, used=4.00KiB\n"
            "Data+Metadata, single: total=8.00MiB, used=32.00KiB\n"
            "GlobalReserve, single: total=1.38MiB, used=0.00B\n");
        REQUIRE(profiles.ok());
        CHECK(to_json(*profiles) ==
              ds::Json{{"data", "single"}, {"metadata", "single"}, {"system", "single"}});
    }
    SECTION("a half-done conversion shows both profiles") {
        auto profiles = parse_btrfs_df_profiles(
            "Data, single: total=8.00MiB, used=0.00B\n"
            "System, DUP: total=8.00MiB, used=16.00KiB\n"
            "System, single: total=32.00MiB, used=0.00B\n"
            "Metadata, DUP: total=32.00MiB, used=128.00KiB\n");
        REQUIRE(profiles.ok());
        CHECK(profiles->system == "dup,single");
        CHECK(profiles->metadata == "dup");
    }
    SECTION("errors name the line or the missing type") {
        auto garbled = parse_btrfs_df_profiles("Data, single: total=1\nERROR: not a btrfs\n");
        REQUIRE_FALSE(garbled.ok());
        CHECK(garbled.error().message ==
              "btrfs filesystem df line 2 is not 'TYPE, PROFILE: ...': 'ERROR: not a btrfs'");
        auto partial = parse_btrfs_df_profiles("Data, single: total=1\nSystem, DUP: total=2\n");
        REQUIRE_FALSE(partial.ok());
        CHECK(partial.error().message == "btrfs filesystem df shows no metadata profile");
        CHECK_FALSE(parse_btrfs_df_profiles("").ok());
    }
}

TEST_CASE("discovery: lsattr -d flags, from real output", "[discovery]") {
    // e2fsprogs 1.47.0: btrfs after chattr +C, btrfs fresh, ext4, xfs.
    CHECK(parse_lsattr_flags(kLsattrNocow).value() == "---------------C------");
    CHECK(parse_lsattr_flags("---------------------- m\n").value() == "----------------------");
    CHECK(parse_lsattr_flags("--------------e------- m\n").value() == "--------------e-------");
    CHECK(parse_lsattr_flags("---------------------- /mnt/disk sweep\n").value() ==
          "----------------------");
    auto failed = parse_lsattr_flags("lsattr: Operation not supported While reading flags\n");
    REQUIRE_FALSE(failed.ok());
    CHECK(failed.error().message.find("printed no attribute flags") != std::string::npos);
    CHECK_FALSE(parse_lsattr_flags("").ok());
}

TEST_CASE("discovery: the guest's os-release, quoted or not", "[discovery]") {
    const OsRelease trixie = parse_os_release(
        "PRETTY_NAME=\"Debian GNU/Linux 13 (trixie)\"\nNAME=\"Debian GNU/Linux\"\n"
        "VERSION_ID=\"13\"\nVERSION=\"13 (trixie)\"\nVERSION_CODENAME=trixie\nID=debian\n");
    CHECK(trixie.id == "debian");
    CHECK(trixie.version_id == "13");
    CHECK(trixie.codename == "trixie");
    // Debian testing has no VERSION_ID: left empty, not guessed.
    const OsRelease testing = parse_os_release("ID='debian'\nVERSION_CODENAME=forky\n");
    CHECK(testing.id == "debian");
    CHECK(testing.version_id.empty());

    FakeGuestTree tree;
    const auto read = read_os_release(tree.roots().os_release);
    REQUIRE(read);
    CHECK(read->version_id == "12");
    CHECK_FALSE(read_os_release((tree.sys().parent_path() / "missing").string()));
}
