// The libvirt backend against real libvirt: its schema (virt-xml-validate),
// its test driver (test:///default), and the embedded QEMU driver (opening
// it; booting a guest when a guest image is available).
#include <libvirt/libvirt.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/process.h"
#include "daemon/backends/hypervisor/libvirt/domain_xml.h"
#include "daemon/backends/hypervisor/libvirt/libvirt_hypervisor.h"
#include "daemon/run/agent_session.h"
#include "support/daemon_fixture.h"
#include "support/disk_settings.h"
#include "support/skip.h"
#include "support/temp_dir.h"

namespace ds {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using ds::test::TempDir;

VmRequest request_for(const std::string& name, const StorageConfig& config, const fs::path& dir) {
    VmRequest request;
    request.name = name;
    request.config = config;
    request.data_disk = FileDisk{(dir / "data.img").string(), config.image_format};
    request.image.kernel = (dir / "vmlinuz").string();
    request.image.initrd = (dir / "initrd.img").string();
    request.image.root_disk = (dir / "root.img").string();
    return request;
}

// Where the hypervisors of these tests keep agent sockets and console logs.
const std::string& guest_files_dir() {
    static const TempDir dir;
    static const std::string path = dir.path().string();
    return path;
}

// A spread of combinations: every bus, cache, aio and detect_zeroes value,
// with and without IO thread and SSD where libvirt can express them.
std::vector<StorageConfig> sample_configs() {
    std::vector<StorageConfig> configs;
    const Bus buses[] = {Bus::kVirtioBlk, Bus::kScsi, Bus::kScsiSingle, Bus::kSata};
    const CacheMode caches[] = {CacheMode::kNone, CacheMode::kWriteback, CacheMode::kWritethrough,
                                CacheMode::kDirectsync, CacheMode::kUnsafe};
    int index = 0;
    for (Bus bus : buses) {
        for (CacheMode cache : caches) {
            StorageConfig config;
            config.bus = bus;
            config.cache = cache;
            config.aio = static_cast<AioMode>(index % 4);
            if (config.aio == AioMode::kNative) config.aio = AioMode::kIoUring;
            config.discard = index % 2 == 0;
            config.detect_zeroes =
                config.discard ? static_cast<DetectZeroes>(index % 3) : DetectZeroes::kOn;
            config.iothread = bus != Bus::kSata && index % 3 != 1;
            config.ssd = bus != Bus::kVirtioBlk && index % 2 == 1;
            config.image_format = index % 4 == 3 ? ImageFormat::kQcow2 : ImageFormat::kRaw;
            REQUIRE(libvirt_unsupported_reason(config).empty());
            configs.push_back(config);
            ++index;
        }
    }
    StorageConfig native;
    native.cache = CacheMode::kDirectsync;
    native.aio = AioMode::kNative;
    configs.push_back(native);
    return configs;
}

using ds::test::expected_applied;

// libvirt allows one embedded QEMU driver root per process, so every test
// here shares this one (a space in it checks the URI's escaping).
const fs::path& embedded_root() {
    static TempDir dir;
    static const fs::path root = dir.path() / "state dir" / "libvirt";
    return root;
}

std::string read_file(const fs::path& path) {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool tool_available(const std::string& name) {
    const char* path = std::getenv("PATH");
    std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
    std::size_t start = 0;
    while (start <= dirs.size()) {
        std::size_t end = dirs.find(':', start);
        if (end == std::string::npos) end = dirs.size();
        if (::access((dirs.substr(start, end - start) + "/" + name).c_str(), X_OK) == 0)
            return true;
        start = end + 1;
    }
    return false;
}

// Ends the test as skipped unless `tool` is on PATH (scripts/install-deps.sh
// installs it from `package`).
void skip_unless_installed(const std::string& tool, const std::string& package) {
    if (!tool_available(tool))
        ds::test::skip_test(tool + " not installed (package " + package + ")");
}

}  // namespace

TEST_CASE("virt-xml-validate accepts the generated domain XML", "[libvirt][integration]") {
    skip_unless_installed("virt-xml-validate", "libvirt-clients");
    TempDir dir;
    RealProcessRunner runner;
    int index = 0;
    for (const StorageConfig& config : sample_configs()) {
        for (Accel accel : {Accel::kTcg, Accel::kKvm}) {
            VmRequest request =
                request_for("disksweep-validate-" + std::to_string(index), config, dir.path());
            request.accel = accel;
            request.kernel_cmdline_extra = "root=/dev/vda ro quiet";
            const fs::path file = dir.path() / ("domain-" + std::to_string(index++) + ".xml");
            std::ofstream(file) << build_domain_xml(request, LocalGuestFiles{guest_files_dir()});
            const Result<ProcessOutput> output =
                runner.run({"virt-xml-validate", file.string(), "domain"}, 60s);
            REQUIRE(output.ok());
            INFO(canonical_json(config) << "\n" << output->stdout_text << output->stderr_text);
            CHECK(output->exit_code == 0);
        }
    }
}

TEST_CASE("test driver: start, read back, list, destroy", "[libvirt][integration]") {
    TempDir dir;
    auto connected = LibvirtHypervisor::connect("test:///default", "", guest_files_dir());
    REQUIRE(connected.ok());
    LibvirtHypervisor& hypervisor = **connected;
    CHECK(hypervisor.dialect() == DomainXmlDialect::kTestDriver);
    const std::string prefix = "disksweep-it-" + std::to_string(::getpid()) + "-";

    std::vector<std::string> started;
    int index = 0;
    for (const StorageConfig& config : sample_configs()) {
        const std::string name = prefix + std::to_string(index++);
        const VmRequest request = request_for(name, config, dir.path());
        const Status status = hypervisor.start_vm(request);
        INFO(canonical_json(config));
        INFO((status.ok() ? "" : status.error().message));
        REQUIRE(status.ok());
        started.push_back(name);

        const Result<bool> running = hypervisor.is_running(name);
        REQUIRE(running.ok());
        CHECK(*running);

        Result<Json> applied = hypervisor.applied_settings(name);
        REQUIRE(applied.ok());
        Json settings = *applied;
        settings.erase("controller_model");
        CHECK(settings == expected_applied(config));
    }

    // Starting a second guest of the same name is a conflict, not a crash.
    const Status again =
        hypervisor.start_vm(request_for(started.front(), StorageConfig{}, dir.path()));
    REQUIRE_FALSE(again.ok());
    CHECK(again.error().code == errc::kConflict);

    Result<std::vector<std::string>> listed = hypervisor.list_vms(prefix);
    REQUIRE(listed.ok());
    std::vector<std::string> expected = started;
    std::sort(expected.begin(), expected.end());
    CHECK(*listed == expected);
    // The test driver's own sample domain does not carry our prefix.
    Result<std::vector<std::string>> everything = hypervisor.list_vms("");
    REQUIRE(everything.ok());
    CHECK(everything->size() > listed->size());

    for (const std::string& name : started) {
        REQUIRE(hypervisor.destroy_vm(name).ok());
        const Result<bool> running = hypervisor.is_running(name);
        REQUIRE(running.ok());
        CHECK_FALSE(*running);
        // Destroying what is gone succeeds.
        CHECK(hypervisor.destroy_vm(name).ok());
    }
    listed = hypervisor.list_vms(prefix);
    REQUIRE(listed.ok());
    CHECK(listed->empty());

    const Result<Json> gone = hypervisor.applied_settings(started.front());
    REQUIRE_FALSE(gone.ok());
    CHECK(gone.error().code == errc::kNotFound);
    CHECK(gone.error().message.find("libvirt: ") == 0);
    CHECK(gone.error().message.find("test:///default, domain " + started.front()) !=
          std::string::npos);
}

TEST_CASE("test driver: destroy_vm also removes a persistent domain", "[libvirt][integration]") {
    TempDir dir;
    auto connected = LibvirtHypervisor::connect("test:///default", "", guest_files_dir());
    REQUIRE(connected.ok());
    LibvirtHypervisor& hypervisor = **connected;
    const std::string name = "disksweep-persistent-" + std::to_string(::getpid());

    // Defined and started behind the backend's back, as an older daemon or a
    // person might have done; test:///default is one shared state per process.
    virConnectPtr raw = virConnectOpen("test:///default");
    REQUIRE(raw != nullptr);
    const std::string xml =
        build_domain_xml(request_for(name, StorageConfig{}, dir.path()),
                         LocalGuestFiles{guest_files_dir()}, DomainXmlDialect::kTestDriver);
    virDomainPtr domain = virDomainDefineXML(raw, xml.c_str());
    REQUIRE(domain != nullptr);
    REQUIRE(virDomainCreate(domain) == 0);
    virDomainFree(domain);

    Result<std::vector<std::string>> listed = hypervisor.list_vms(name);
    REQUIRE(listed.ok());
    CHECK(*listed == std::vector<std::string>{name});
    Result<bool> running = hypervisor.is_running(name);
    REQUIRE(running.ok());
    CHECK(*running);

    REQUIRE(hypervisor.destroy_vm(name).ok());
    listed = hypervisor.list_vms(name);
    REQUIRE(listed.ok());
    CHECK(listed->empty());  // not merely stopped: undefined
    CHECK(hypervisor.destroy_vm(name).ok());

    // A defined but stopped domain is removed too.
    domain = virDomainDefineXML(raw, xml.c_str());
    REQUIRE(domain != nullptr);
    virDomainFree(domain);
    running = hypervisor.is_running(name);
    REQUIRE(running.ok());
    CHECK_FALSE(*running);
    REQUIRE(hypervisor.destroy_vm(name).ok());
    listed = hypervisor.list_vms(name);
    REQUIRE(listed.ok());
    CHECK(listed->empty());
    virConnectClose(raw);
}

TEST_CASE("test driver: parallel starts and destroys", "[libvirt][integration]") {
    TempDir dir;
    auto connected = LibvirtHypervisor::connect("test:///default", "", guest_files_dir());
    REQUIRE(connected.ok());
    LibvirtHypervisor& hypervisor = **connected;
    const std::string prefix = "disksweep-parallel-" + std::to_string(::getpid()) + "-";
    constexpr int kThreads = 4;
    constexpr int kRounds = 10;
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int round = 0; round < kRounds; ++round) {
                const std::string name = prefix + std::to_string(t) + "-" + std::to_string(round);
                StorageConfig config;
                config.bus = static_cast<Bus>((t + round) % 4);
                if (config.bus == Bus::kSata) config.iothread = false;
                if (!hypervisor.start_vm(request_for(name, config, dir.path())).ok()) ++failures;
                Result<Json> applied = hypervisor.applied_settings(name);
                if (!applied.ok() || applied->at("bus") != std::string(to_string(config.bus)))
                    ++failures;
                if (!hypervisor.destroy_vm(name).ok()) ++failures;
            }
        });
    }
    for (std::thread& thread : threads) thread.join();
    CHECK(failures.load() == 0);
    Result<std::vector<std::string>> listed = hypervisor.list_vms(prefix);
    REQUIRE(listed.ok());
    CHECK(listed->empty());
}

TEST_CASE("test driver: versions", "[libvirt][integration]") {
    auto connected = LibvirtHypervisor::connect("test:///default", "", guest_files_dir());
    REQUIRE(connected.ok());
    const Json versions = (*connected)->versions();
    INFO(versions.dump());
    CHECK(versions.at("hypervisor_uri") == "test:///default");
    CHECK(versions.at("hypervisor_type") == "TEST");
    const std::string libvirt = versions.at("libvirt");
    CHECK(std::count(libvirt.begin(), libvirt.end(), '.') == 2);
    CHECK_FALSE(versions.contains("qemu"));
}

// A checker guest's request: the data disk and kMaxExtraDisks crash images.
VmRequest checker_request(const std::string& name, const fs::path& dir) {
    VmRequest request = request_for(name, StorageConfig{}, dir);
    for (std::size_t i = 0; i < kMaxExtraDisks; ++i) {
        request.extra_disks.push_back(
            {FileDisk{(dir / ("crash-" + std::to_string(i) + ".img")).string(), ImageFormat::kRaw},
             protocol::crash_disk_serial(i)});
    }
    return request;
}

TEST_CASE("virt-xml-validate accepts a checker guest's extra disks", "[libvirt][integration]") {
    skip_unless_installed("virt-xml-validate", "libvirt-clients");
    TempDir dir;
    RealProcessRunner runner;
    VmRequest request = checker_request("disksweep-validate-checker", dir.path());
    request.extra_disks[1].source = BlockDisk{"/dev/loop7"};
    const fs::path file = dir.path() / "checker.xml";
    std::ofstream(file) << build_domain_xml(request, LocalGuestFiles{guest_files_dir()});
    const Result<ProcessOutput> output =
        runner.run({"virt-xml-validate", file.string(), "domain"}, 60s);
    REQUIRE(output.ok());
    INFO(output->stdout_text << output->stderr_text);
    CHECK(output->exit_code == 0);
}

TEST_CASE("test driver: a guest takes 16 extra disks and refuses a 17th or an RBD one",
          "[libvirt][integration]") {
    TempDir dir;
    auto connected = LibvirtHypervisor::connect("test:///default", "", guest_files_dir());
    REQUIRE(connected.ok());
    LibvirtHypervisor& hypervisor = **connected;
    const std::string name = "disksweep-it-checker-" + std::to_string(::getpid());

    VmRequest request = checker_request(name, dir.path());
    request.extra_disks.push_back(
        {FileDisk{(dir.path() / "one-too-many.img").string(), ImageFormat::kRaw}, "one-too-many"});
    Status refused = hypervisor.start_vm(request);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == errc::kInvalidArgument);
    CHECK_THAT(refused.error().message, Catch::Contains("at most 16"));

    request.extra_disks.pop_back();
    request.extra_disks[3].source = RbdDisk{"pool", "image", {}, "", "", ""};
    refused = hypervisor.start_vm(request);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == errc::kUnsupported);
    CHECK_THAT(refused.error().message, Catch::Contains("extra disk disksweep-crash-3 is rbd"));
    Result<std::vector<std::string>> listed = hypervisor.list_vms(name);
    REQUIRE(listed.ok());
    CHECK(listed->empty());  // nothing was defined

    const Status started = hypervisor.start_vm(checker_request(name, dir.path()));
    INFO((started.ok() ? "" : started.error().message));
    REQUIRE(started.ok());
    // The data disk is still the one whose settings are read back.
    Result<Json> applied = hypervisor.applied_settings(name);
    REQUIRE(applied.ok());
    Json settings = *applied;
    settings.erase("controller_model");
    CHECK(settings == expected_applied(StorageConfig{}));
    CHECK(hypervisor.destroy_vm(name).ok());
}

TEST_CASE("connect: errors are values with libvirt's reason", "[libvirt][integration]") {
    auto bogus = LibvirtHypervisor::connect("bogus-driver:///nowhere", "", guest_files_dir());
    REQUIRE_FALSE(bogus.ok());
    CHECK(bogus.error().code == errc::kUnavailable);
    CHECK(bogus.error().message.find("libvirt: ") == 0);
    CHECK(bogus.error().message.find("bogus-driver:///nowhere") != std::string::npos);

    auto relative = LibvirtHypervisor::connect("", "relative/root", guest_files_dir());
    REQUIRE_FALSE(relative.ok());
    CHECK(relative.error().code == errc::kInvalidArgument);
}

TEST_CASE("embedded QEMU driver: its URI and qemu.conf", "[libvirt][integration]") {
    const fs::path& root = embedded_root();
    CHECK(LibvirtHypervisor::embedded_uri(root.string()).find("state%20dir/libvirt") !=
          std::string::npos);

    // qemu.conf is written before connecting, with or without QEMU.
    (void)LibvirtHypervisor::connect("", root.string(), guest_files_dir());
    const std::string text = read_file(root / "etc" / "qemu.conf");
    CHECK(text.find("stdio_handler = \"file\"") != std::string::npos);
    CHECK(text.find("security_driver = \"none\"") != std::string::npos);
    CHECK(text.find("namespaces = []") != std::string::npos);
}

TEST_CASE("embedded QEMU driver: connection", "[libvirt][integration]") {
    skip_unless_installed("qemu-system-x86_64", "qemu-system-x86");
    auto connected = LibvirtHypervisor::connect("", embedded_root().string(), guest_files_dir());
    INFO((connected.ok() ? "" : connected.error().message));
    REQUIRE(connected.ok());
    LibvirtHypervisor& hypervisor = **connected;
    CHECK(hypervisor.dialect() == DomainXmlDialect::kQemu);
    const Json versions = hypervisor.versions();
    INFO(versions.dump());
    CHECK(versions.at("hypervisor_type") == "QEMU");
    CHECK(versions.contains("qemu"));
    Result<std::vector<std::string>> listed = hypervisor.list_vms("disksweep-");
    REQUIRE(listed.ok());
    CHECK(listed->empty());
    CHECK(hypervisor.destroy_vm("disksweep-never-started").ok());
}

TEST_CASE("embedded QEMU driver: the guest image boots with our XML",
          "[libvirt][integration][boot]") {
    const fs::path image = ds::test::test_image_dir();
    // scripts/test.sh builds the image where DISKSWEEP_TEST_IMAGE_DIR points.
    INFO("guest image in " << image.string() << " (scripts/build-guest-image.sh builds it)");
    REQUIRE(fs::exists(image / "vmlinuz"));
    REQUIRE(fs::exists(image / "initrd.img"));
    REQUIRE(fs::exists(image / "root.img"));
    auto connected = LibvirtHypervisor::connect("", embedded_root().string(), guest_files_dir());
    INFO((connected.ok() ? "" : connected.error().message));
    REQUIRE(connected.ok());
    LibvirtHypervisor& hypervisor = **connected;

    TempDir dir;
    // The reference Ceph study's disk settings, under TCG (KVM is not usable
    // for guests on every host; the lead's probe decides elsewhere).
    StorageConfig config = ds::test::reference_disk_config();
    const std::string name = "disksweep-it-boot-" + std::to_string(::getpid());
    VmRequest request = request_for(name, config, dir.path());
    request.image.kernel = (image / "vmlinuz").string();
    request.image.initrd = (image / "initrd.img").string();
    request.image.root_disk = (image / "root.img").string();
    const std::string data_path = std::get<FileDisk>(request.data_disk).path;
    std::ofstream(data_path).close();
    fs::resize_file(data_path, 256u << 20);
    request.accel = Accel::kTcg;

    const Status started = hypervisor.start_vm(request);
    INFO((started.ok() ? "" : started.error().message));
    REQUIRE(started.ok());
    const Result<Json> applied = hypervisor.applied_settings(name);
    REQUIRE(applied.ok());
    Json settings = *applied;
    settings.erase("controller_model");
    // QEMU's own views (qemu_monitor.h, qemu_process.h) beside the live XML's.
    const Json qemu = settings["qemu"];
    const Json process = settings["qemu_process"];
    settings.erase("qemu");
    settings.erase("qemu_process");
    // Every level of a local QEMU guest is read (settings_verify.h).
    const Json levels = settings["levels"];
    settings.erase("levels");
    CHECK(settings == expected_applied(config));
    CHECK(levels.at("qemu_process").at("checked") == true);
    CHECK(qemu.value("cache", "") == "unsafe");
    CHECK(qemu.value("iothread", false) == true);
    CHECK(process.value("aio", "") == "io_uring");
    CHECK(process.value("discard", false) == true);
    // The agent channel the hypervisor opens reaches the guest's agent (the
    // initramfs found the root disk by its serial and handed over to it).
    const auto deadline = std::chrono::steady_clock::now() + 180s;
    auto channel = hypervisor.open_agent_channel(name, deadline, nullptr);
    REQUIRE(channel.ok());
    auto hello = AgentSession(std::move(channel.value())).receive_hello(deadline);
    const std::string console = hypervisor.console_tail(name, 3000);
    INFO(console);
    REQUIRE(hello.ok());
    CHECK(hello->protocol == protocol::kVersion);
    CHECK(console.find("switch_root") != std::string::npos);
    CHECK(hypervisor.console_location(name) == guest_files_dir() + "/" + name + ".console.log");

    REQUIRE(hypervisor.destroy_vm(name).ok());
    const Result<std::vector<std::string>> listed = hypervisor.list_vms(name);
    REQUIRE(listed.ok());
    CHECK(listed->empty());
}

}  // namespace ds
