// The settings check's QEMU level against a real guest: the embedded QEMU
// driver boots the guest image with a non-default disk, QEMU's own view
// (through the QEMU monitor and of its process) must equal the request, and
// a different request must fail verification at the QEMU level. (That a
// setting QEMU really runs differently fails its run: tests/axes/.)
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "daemon/backends/hypervisor/libvirt/libvirt_hypervisor.h"
#include "daemon/run/settings_verify.h"
#include "support/daemon_fixture.h"
#include "support/temp_dir.h"

namespace ds {
namespace {

namespace fs = std::filesystem;

// scsi-single + IO thread + ssd + discard + cache=unsafe, throttled, 2 queues.
StorageConfig non_default_config() {
    StorageConfig config;
    config.bus = Bus::kScsiSingle;
    config.iothread = true;
    config.ssd = true;
    config.discard = true;
    config.detect_zeroes = DetectZeroes::kUnmap;
    config.cache = CacheMode::kUnsafe;
    config.iops_limit = 500;
    config.bandwidth_limit = 8u << 20;
    config.queues = 2;
    return config;
}

}  // namespace

TEST_CASE("embedded QEMU driver: QEMU's own view of the data disk equals the request",
          "[libvirt][integration][boot]") {
    const fs::path image = ds::test::test_image_dir();  // skips without a guest image
    ds::test::TempDir dir;
    // libvirt allows one embedded root per process at a time; this test's
    // connection is closed before any other test opens its own.
    auto connected = LibvirtHypervisor::connect("", (dir.path() / "libvirt").string(),
                                                (dir.path() / "guests").string());
    INFO((connected.ok() ? "" : connected.error().message));
    REQUIRE(connected.ok());
    LibvirtHypervisor& hypervisor = **connected;

    const StorageConfig config = non_default_config();
    VmRequest request;
    request.name = "disksweep-it-qemu-" + std::to_string(::getpid());
    request.config = config;
    const std::string data_path = (dir.path() / "data.img").string();
    std::ofstream(data_path).close();
    fs::resize_file(data_path, 256u << 20);
    request.data_disk = FileDisk{data_path, ImageFormat::kRaw};
    request.image.kernel = (image / "vmlinuz").string();
    request.image.initrd = (image / "initrd.img").string();
    request.image.root_disk = (image / "root.img").string();
    request.accel = Accel::kTcg;
    request.vcpus = 2;

    const Status started = hypervisor.start_vm(request);
    INFO((started.ok() ? "" : started.error().message));
    REQUIRE(started.ok());
    const Result<Json> applied = hypervisor.applied_settings(request.name);
    const Result<Json> counters = hypervisor.disk_counters(request.name);
    const Result<RunningGuest> running = hypervisor.running_guest(request.name, Accel::kTcg);
    const Result<Json> cpu = hypervisor.emulator_cpu_times(request.name);
    REQUIRE(hypervisor.destroy_vm(request.name).ok());

    // QEMU's threads by role, from its /proc here: two vCPU threads that
    // have been booting the guest, one IO thread.
    INFO((cpu.ok() ? cpu->dump() : cpu.error().message));
    REQUIRE(cpu.ok());
    CHECK(cpu->at("vcpu_threads") == 2);
    CHECK(cpu->at("iothreads") == 1);
    CHECK(cpu->at("vcpu_s").get<double>() >= 0);
    CHECK(cpu->at("total_s").get<double>() >=
          cpu->at("vcpu_s").get<double>() + cpu->at("main_loop_s").get<double>());

    INFO((applied.ok() ? applied->dump(2) : applied.error().message));
    REQUIRE(applied.ok());
    REQUIRE(applied->contains("qemu"));
    const Json& qemu = applied->at("qemu");
    CHECK(qemu.at("bus") == "scsi-single");
    CHECK(qemu.at("cache") == "unsafe");
    CHECK(qemu.at("ssd") == true);
    CHECK(qemu.at("iothread") == true);
    CHECK(qemu.at("discard") == true);
    CHECK(qemu.at("queues") == 2);
    CHECK(qemu.at("iops_limit") == 500);
    CHECK(qemu.at("bandwidth_limit") == 8388608);
    // The QEMU process: the block nodes' discard, and QEMU's default aio
    // (the thread pool: no Linux AIO ring, no io_uring).
    REQUIRE(applied->contains("qemu_process"));
    CHECK(applied->at("qemu_process").at("discard") == true);
    CHECK(applied->at("qemu_process").at("aio") == "default");
    // The accelerator as QEMU reports it.
    REQUIRE(running.ok());
    CHECK(running->accel == Accel::kTcg);
    CHECK(running->accel_source.rfind("QEMU query-kvm: enabled=false", 0) == 0);
    // Both levels agree with the request.
    CHECK(verify_settings(config, *applied, nullptr).empty());

    // A deliberately different request fails, at both levels, naming QEMU's.
    StorageConfig other = config;
    other.cache = CacheMode::kNone;
    const std::vector<std::string> mismatches = verify_settings(other, *applied, nullptr);
    CHECK(mismatches ==
          std::vector<std::string>{"cache: requested none, domain XML has unsafe",
                                   "cache: requested none, QEMU has unsafe (query-block "
                                   "cache.direct/writeback/no-flush)"});

    INFO((counters.ok() ? counters->dump() : counters.error().message));
    REQUIRE(counters.ok());
    CHECK(counters->at("wr_operations").is_number_unsigned());
}

}  // namespace ds
