// Finding the channel port and the data disk, and reading back what the
// guest sees, on a fake sysfs/procfs tree.
#include "guestagent/discovery.h"

#include "unit/agent/fakes.h"

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
                               {"rotational", 0},
                               {"discard_max_bytes", 1073741824},
                               {"logical_block_size", 512},
                               {"read_ahead_kb", 128},
                               {"scheduler", "none"}});

    // Unreadable values are left out; a scheduler file without brackets.
    write_text(tree.sys() / "block/vdc/queue/scheduler", "none\n");
    write_text(tree.sys() / "block/vdc/queue/rotational", "garbage\n");
    const ds::Json partial = read_disk_readback(tree.roots(), "vdc", "/mnt/elsewhere");
    CHECK(partial == ds::Json{{"device", "vdc"}, {"scheduler", "none"}});
}
