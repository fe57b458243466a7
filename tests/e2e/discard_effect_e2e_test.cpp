// Discard proven by its effect on the storage, in real TCG guests (issue 18
// §2, §3): after a short fio write the guest removes its files and runs
// fstrim; the volume's allocation must drop with discard on and stay with
// discard off. On file storage (the image file's st_blocks) both ways, and
// on a block device (a loop device given as `block:/dev/loopN`, attached as
// <disk type='block'>, measured by its backing file) with discard on.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "support/daemon_fixture.h"
#include "support/loop_device.h"
#include "support/run_rows.h"
#include "support/skip.h"
#include "support/temp_dir.h"

using ds::Json;
using ds::test::DaemonFixture;
using ds::test::RunRow;

namespace {

constexpr std::uint64_t kMiB = 1u << 20;
// What the fio job writes: well above the rule's 4 MiB minimum and 1 MiB drop.
constexpr std::uint64_t kWrittenBytes = 24 * kMiB;

// A 24 MiB sequential write, about a second in a TCG guest; `storage` and
// `discard` are the matrix.
std::string spec_text(const std::string& name, const std::string& storage,
                      const std::string& discard) {
    return "name = \"" + name + "\"\n" + R"(
repetitions = 1
[matrix]
storage = ")" +
           storage + R"("
bus = "scsi-single"
cache = "none"
discard = )" +
           discard + R"(
filesystem = "ext4"
disk_size = "256m"
[[workload]]
name = "write"
kind = "fio"
rw = "write"
bs = "1m"
size = "24m"
direct = true
ioengine = "libaio"
iodepth = 4
numjobs = 1
)";
}

std::vector<RunRow> run_sweep(const DaemonFixture& daemon, const std::string& spec_name,
                              const std::string& spec) {
    const auto path = ds::test::write_temp_file(spec_name, spec);
    const auto started = std::chrono::steady_clock::now();
    auto submitted = daemon.hostctl({"sweep", "submit", path, "--wait"}, std::chrono::seconds(600));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::printf("%s: sweep took %.1f s\n", spec_name.c_str(), seconds);
    INFO(submitted.out << submitted.err << daemon.log());
    const auto runs = ds::test::runs_of_sweep(daemon.database(), 1);
    for (const auto& run : runs) {
        INFO(run.config.dump() << ": " << run.failure_reason << "\n" << run.applied.dump(1));
        CHECK(run.status == "succeeded");
    }
    CHECK(submitted.exit_code == 0);
    return runs;
}

// The run's stored discard effect: checked, both figures, and whether the
// allocation dropped as `discard` says.
void check_effect(const RunRow& run, bool discard) {
    INFO(run.applied.dump(1));
    REQUIRE(run.applied.contains("discard_effect"));
    const Json& effect = run.applied.at("discard_effect");
    CHECK(effect.at("checked") == true);
    CHECK(effect.at("discard") == discard);
    CHECK(effect.at("in_force") == discard);
    const auto before = effect.at("allocated_before_bytes").get<std::uint64_t>();
    const auto after = effect.at("allocated_after_bytes").get<std::uint64_t>();
    std::printf("%s, discard %s: allocated %llu bytes before fstrim, %llu after\n",
                run.config.at("storage").get<std::string>().c_str(), discard ? "on" : "off",
                static_cast<unsigned long long>(before), static_cast<unsigned long long>(after));
    // Before the trim the storage holds what the guest wrote.
    CHECK(before >= kWrittenBytes);
    CHECK(effect.at("removed_bytes").get<std::uint64_t>() >= kWrittenBytes);
    if (discard) {
        CHECK(before - after >= kWrittenBytes - 2 * kMiB);
    } else {
        CHECK(after >= before);
    }
}

}  // namespace

TEST_CASE("discard on frees the file's blocks after fstrim, discard off keeps them",
          "[e2e][discard]") {
    const std::string image = ds::test::test_image_dir();  // skips without a guest image
    DaemonFixture daemon({"--image-dir", image, "--accel", "tcg", "--boot-timeout", "120"});
    REQUIRE(daemon.ready());
    const auto runs = run_sweep(daemon, "discard-file.toml",
                                spec_text("e2e-discard-file", "file", "[true, false]"));
    REQUIRE(runs.size() == 2);
    for (const auto& run : runs) {
        const bool discard = run.config.at("discard").get<bool>();
        INFO("discard " << discard);
        CHECK(run.applied.at("verified") == true);
        check_effect(run, discard);
    }
}

TEST_CASE("a loop device as a block data disk: fio, three-level verification, discard effect",
          "[e2e][discard][block]") {
    const std::string image = ds::test::test_image_dir();  // skips without a guest image
    if (::geteuid() != 0) ds::test::skip_test("not root: no loop devices");
    ds::test::TempDir dir;
    // Declared before the daemon, so the daemon (which holds the device while
    // a run has it) is gone before the device is detached.
    ds::test::LoopDevice loop(dir.path() / "block-disk.img", 256 * kMiB);
    INFO(loop.error());
    REQUIRE_FALSE(loop.path().empty());
    const std::string storage = "block:" + loop.path();
    DaemonFixture daemon(
        {"--image-dir", image, "--accel", "tcg", "--boot-timeout", "120", "--storage", storage});
    REQUIRE(daemon.ready());
    const auto runs =
        run_sweep(daemon, "discard-block.toml", spec_text("e2e-block", storage, "true"));
    REQUIRE(runs.size() == 1);
    const RunRow& run = runs.front();
    INFO(run.applied.dump(1));
    // The disk was the loop device, as a block disk.
    CHECK(run.applied.at("storage").at("backend") == storage);
    CHECK(run.applied.at("storage").at("source") == Json{{"kind", "block"}, {"path", loop.path()}});
    CHECK(run.applied.at("storage").at("before").at("backing_file") == loop.backing_file());
    // Three levels read back and verified: the live domain XML, QEMU, the guest.
    CHECK(run.applied.at("verified") == true);
    const Json& hypervisor = run.applied.at("hypervisor");
    CHECK(hypervisor.at("discard") == true);
    CHECK(hypervisor.at("bus") == "scsi-single");
    CHECK(hypervisor.at("qemu").at("cache") == "none");
    CHECK(run.applied.at("guest").at("serial") == "disksweep-data");
    CHECK(run.applied.at("guest").at("fs_type") == "ext4");
    CHECK(run.metrics.at("write_iops") > 0);
    // The guest's writes and its trim reached the loop device's backing file.
    check_effect(run, true);
    CHECK(loop.allocated_bytes() < kWrittenBytes);
    // The daemon let go of the device: another program may claim it now.
    CHECK(ds::test::qemu_processes_mentioning(daemon.state_dir()).empty());
}
