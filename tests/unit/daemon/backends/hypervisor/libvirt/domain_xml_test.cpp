#include "daemon/backends/hypervisor/libvirt/domain_xml.h"

#include <catch2/catch.hpp>

#include "common/protocol.h"
#include "support/disk_settings.h"

namespace ds {
namespace {

VmRequest sample_request() {
    VmRequest request;
    request.name = "disksweep-test-1";
    request.data_disk = FileDisk{"/var/lib/disksweep/volumes/data.img", ImageFormat::kRaw};
    request.image.kernel = "/images/vmlinuz";
    request.image.initrd = "/images/initrd.img";
    request.image.root_disk = "/images/root.img";
    request.kernel_cmdline_extra = "extra=1";
    request.vcpus = 2;
    request.memory_mib = 768;
    return request;
}

using ds::test::expected_applied;

// Where the sample guest's sockets are served.
const LocalGuestFiles kFiles{"/run/disksweep"};

Json without_controller_model(Json applied) {
    applied.erase("controller_model");
    return applied;
}

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("domain XML: the fixed parts of the guest", "[domain_xml]") {
    VmRequest request = sample_request();
    request.accel = Accel::kTcg;
    const std::string xml = build_domain_xml(request, kFiles);

    CHECK(contains(xml, "<domain type='qemu'>"));
    CHECK(contains(xml, "<name>disksweep-test-1</name>"));
    CHECK(contains(xml, "<memory unit='MiB'>768</memory>"));
    CHECK(contains(xml, "<vcpu>2</vcpu>"));
    CHECK(contains(xml, "<type arch='x86_64' machine='q35'>hvm</type>"));
    CHECK(contains(xml, "<kernel>/images/vmlinuz</kernel>"));
    CHECK(contains(xml, "<initrd>/images/initrd.img</initrd>"));
    CHECK(contains(xml,
                   "<cmdline>console=ttyS0 panic=-1 quiet cryptomgr.notests no_timer_check "
                   "extra=1</cmdline>"));
    CHECK(contains(xml, "<on_poweroff>destroy</on_poweroff>"));
    CHECK(contains(xml, "<on_reboot>destroy</on_reboot>"));
    CHECK(contains(xml, "<on_crash>destroy</on_crash>"));
    CHECK(contains(xml, "<memballoon model='none'/>"));
    // The host's entropy, so mkfs does not wait for the guest's random pool.
    CHECK(contains(xml, "<rng model='virtio'>"));
    CHECK(contains(xml, "<backend model='random'>/dev/urandom</backend>"));
    CHECK_FALSE(contains(xml, "<graphics"));
    CHECK_FALSE(contains(xml, "<interface"));
    CHECK_FALSE(contains(xml, "host-passthrough"));
    // Serial console served by QEMU on a socket; the daemon captures it.
    CHECK(contains(xml, "<serial type='unix'>"));
    CHECK(contains(
        xml, "<source mode='bind' path='/run/disksweep/disksweep-test-1.console.log.sock'/>"));
    // The agent channel and its controller.
    CHECK(contains(xml, "<controller type='virtio-serial' index='0'/>"));
    CHECK(contains(xml, "<source mode='bind' path='/run/disksweep/disksweep-test-1.agent.sock'/>"));
    CHECK(contains(xml,
                   "<target type='virtio' name='" + std::string(protocol::kChannelName) + "'/>"));
    // The root disk: read-only virtio-blk, found by its serial.
    CHECK(contains(xml, "<source file='/images/root.img'/>"));
    CHECK(contains(xml, "<target dev='vda' bus='virtio'/>"));
    CHECK(contains(xml, "<readonly/>"));
    CHECK(contains(xml, "<serial>" + std::string(protocol::kRootDiskSerial) + "</serial>"));
    CHECK(contains(xml, "<serial>" + std::string(protocol::kDataDiskSerial) + "</serial>"));
}

TEST_CASE("domain XML: acceleration and dialect choose the domain type", "[domain_xml]") {
    VmRequest request = sample_request();
    request.accel = Accel::kKvm;
    const std::string kvm = build_domain_xml(request, kFiles);
    CHECK(contains(kvm, "<domain type='kvm'>"));
    CHECK(contains(kvm, "<cpu mode='host-passthrough'/>"));

    const std::string test_driver =
        build_domain_xml(request, kFiles, DomainXmlDialect::kTestDriver);
    CHECK(contains(test_driver, "<domain type='test'>"));
    CHECK(contains(test_driver, "<type>hvm</type>"));
    CHECK_FALSE(contains(test_driver, "q35"));
}

TEST_CASE("domain XML: empty extra cmdline leaves no trailing space", "[domain_xml]") {
    VmRequest request = sample_request();
    request.kernel_cmdline_extra.clear();
    CHECK(contains(build_domain_xml(request, kFiles),
                   "<cmdline>console=ttyS0 panic=-1 quiet cryptomgr.notests "
                   "no_timer_check</cmdline>"));
}

TEST_CASE("domain XML: data disk settings per bus", "[domain_xml]") {
    VmRequest request = sample_request();
    StorageConfig& config = request.config;
    config.cache = CacheMode::kUnsafe;
    config.discard = true;
    config.detect_zeroes = DetectZeroes::kUnmap;

    SECTION("virtio-blk with IO thread and io_uring") {
        config.bus = Bus::kVirtioBlk;
        config.iothread = true;
        config.aio = AioMode::kIoUring;
        const std::string xml = build_domain_xml(request, kFiles);
        CHECK(contains(xml, "<iothreads>1</iothreads>"));
        CHECK(
            contains(xml,
                     "<driver name='qemu' type='raw' cache='unsafe' io='io_uring' discard='unmap' "
                     "detect_zeroes='unmap' iothread='1'/>"));
        CHECK(contains(xml, "<target dev='vdb' bus='virtio'/>"));
        CHECK_FALSE(contains(xml, "type='scsi'"));
    }
    SECTION("scsi on the shared controller") {
        config.bus = Bus::kScsi;
        config.ssd = true;
        const std::string xml = build_domain_xml(request, kFiles);
        CHECK(contains(xml, "<target dev='sda' bus='scsi' rotation_rate='1'/>"));
        CHECK(contains(xml, "<controller type='scsi' index='0' model='virtio-scsi'>"));
        CHECK(contains(xml, "<alias name='" + std::string(kSharedScsiControllerAlias) + "'/>"));
        CHECK(contains(xml, "<address type='drive' controller='0' bus='0' target='0' unit='0'/>"));
        CHECK_FALSE(contains(xml, "iothread"));
        // aio default: no io attribute at all.
        CHECK_FALSE(contains(xml, " io="));
    }
    SECTION("scsi-single with IO thread on its own controller") {
        config.bus = Bus::kScsiSingle;
        config.iothread = true;
        const std::string xml = build_domain_xml(request, kFiles);
        CHECK(contains(xml, "<iothreads>1</iothreads>"));
        CHECK(contains(xml,
                       "<controller type='scsi' index='0' model='virtio-scsi'>\n      <driver "
                       "iothread='1'/>"));
        CHECK(contains(xml, "<alias name='" + std::string(kDataDiskScsiControllerAlias) + "'/>"));
        // The IO thread belongs to the controller, not to the SCSI disk.
        CHECK_FALSE(contains(xml, "detect_zeroes='unmap' iothread='1'"));
    }
    SECTION("sata with ssd, discard off") {
        config.bus = Bus::kSata;
        config.ssd = true;
        config.discard = false;
        config.detect_zeroes = DetectZeroes::kOn;
        const std::string xml = build_domain_xml(request, kFiles);
        CHECK(contains(xml, "<target dev='sda' bus='sata' rotation_rate='1'/>"));
        CHECK(contains(xml, "discard='ignore' detect_zeroes='on'"));
        CHECK_FALSE(contains(xml, "<controller type='scsi'"));
        CHECK_FALSE(contains(xml, "<iothreads>"));
    }
}

TEST_CASE("domain XML: with the shared SCSI controller the root disk shares it", "[domain_xml]") {
    VmRequest request = sample_request();
    request.config.bus = Bus::kScsi;
    const std::string shared = build_domain_xml(request, kFiles);
    CHECK(contains(shared, "<target dev='sdb' bus='scsi'/>"));
    CHECK(contains(shared, "<address type='drive' controller='0' bus='0' target='1' unit='0'/>"));
    CHECK_FALSE(contains(shared, "bus='virtio'/>"));
    // Its own controller (scsi-single) and the other buses: a virtio-blk root.
    for (Bus bus : {Bus::kScsiSingle, Bus::kVirtioBlk, Bus::kSata}) {
        request.config.bus = bus;
        INFO(to_string(bus));
        CHECK(contains(build_domain_xml(request, kFiles), "<target dev='vda' bus='virtio'/>"));
    }
}

TEST_CASE("domain XML: data volume format and block devices", "[domain_xml]") {
    VmRequest request = sample_request();
    std::get<FileDisk>(request.data_disk).format = ImageFormat::kQcow2;
    std::string xml = build_domain_xml(request, kFiles);
    CHECK(
        contains(xml, "<disk type='file' device='disk'>\n      <driver name='qemu' type='qcow2'"));
    CHECK(contains(xml, "<source file='/var/lib/disksweep/volumes/data.img'/>"));

    // The disk's kind comes from its type, not from the path.
    request.data_disk = BlockDisk{"/dev/vg0/disksweep-thin-1"};
    xml = build_domain_xml(request, kFiles);
    CHECK(contains(xml, "<disk type='block' device='disk'>\n      <driver name='qemu' type='raw'"));
    CHECK(contains(xml, "<source dev='/dev/vg0/disksweep-thin-1'/>"));
    request.data_disk = FileDisk{"/dev/shm/a-file-not-a-device.raw", ImageFormat::kRaw};
    xml = build_domain_xml(request, kFiles);
    CHECK(contains(xml, "<disk type='file' device='disk'>"));
    CHECK(contains(xml, "<source file='/dev/shm/a-file-not-a-device.raw'/>"));
}

TEST_CASE("domain XML: an RBD disk is a network disk with its monitors and auth", "[domain_xml]") {
    VmRequest request = sample_request();
    request.data_disk = RbdDisk{"disksweep", "disksweep-r7-data", {"127.0.0.1:6789", "[::1]:3300"},
                                "disksweep", "/etc/ceph/k",       "/etc/ceph/ceph.conf"};
    std::string xml = build_domain_xml(request, kFiles);
    CHECK(
        contains(xml, "<disk type='network' device='disk'>\n      <driver name='qemu' type='raw'"));
    CHECK(contains(xml, "<source protocol='rbd' name='disksweep/disksweep-r7-data'>"));
    CHECK(contains(xml, "<host name='127.0.0.1' port='6789'/>"));
    CHECK(contains(xml, "<host name='::1' port='3300'/>"));
    CHECK(contains(xml, "<config file='/etc/ceph/ceph.conf'/>"));
    CHECK_FALSE(contains(xml, "<auth"));  // no libvirt secret: the conf's keyring
    xml = build_domain_xml(request, kFiles, DomainXmlDialect::kQemu,
                           "0f6b1c64-5b7c-4bd2-9c34-7b1f2a3e4d5c");
    CHECK(contains(xml,
                   "<auth username='disksweep'>\n          <secret type='ceph' "
                   "uuid='0f6b1c64-5b7c-4bd2-9c34-7b1f2a3e4d5c'/>"));
    // The key comes from the secret and the monitors are listed: QEMU (as
    // libvirt's QEMU user) is not pointed at the root-only conf.
    CHECK_FALSE(contains(xml, "<config"));
}

TEST_CASE("domain XML: with a secret, the ceph.conf is named only for its monitors",
          "[domain_xml]") {
    VmRequest request = sample_request();
    request.data_disk = RbdDisk{"disksweep", "disksweep-r7-data", {},
                                "disksweep", "/etc/ceph/k",       "/etc/ceph/c.conf"};
    const std::string xml = build_domain_xml(request, kFiles, DomainXmlDialect::kQemu,
                                             "0f6b1c64-5b7c-4bd2-9c34-7b1f2a3e4d5c");
    CHECK(contains(xml, "<config file='/etc/ceph/c.conf'/>"));
    CHECK(contains(xml, "<auth username='disksweep'>"));
    // Without a user there is no <auth> to write: the conf carries everything.
    request.data_disk =
        RbdDisk{"disksweep", "disksweep-r7-data", {"127.0.0.1:6789"}, "", "", "/etc/ceph/c.conf"};
    const std::string no_user = build_domain_xml(request, kFiles, DomainXmlDialect::kQemu,
                                                 "0f6b1c64-5b7c-4bd2-9c34-7b1f2a3e4d5c");
    CHECK_FALSE(contains(no_user, "<auth"));
    CHECK(contains(no_user, "<config file='/etc/ceph/c.conf'/>"));
}

TEST_CASE("parse_applied_disk_settings reports how an RBD disk authenticates", "[domain_xml]") {
    VmRequest request = sample_request();
    request.data_disk = RbdDisk{"disksweep", "disksweep-r7-data", {"127.0.0.1:6789"},
                                "disksweep", "/etc/ceph/k",       "/etc/ceph/ceph.conf"};
    const Result<Json> with_conf = parse_applied_disk_settings(build_domain_xml(request, kFiles));
    REQUIRE(with_conf.ok());
    CHECK(with_conf->at("rbd_auth") == "ceph-conf");
    const Result<Json> with_secret = parse_applied_disk_settings(build_domain_xml(
        request, kFiles, DomainXmlDialect::kQemu, "0f6b1c64-5b7c-4bd2-9c34-7b1f2a3e4d5c"));
    REQUIRE(with_secret.ok());
    CHECK(with_secret->at("rbd_auth") == "libvirt-secret");
    // Not an RBD disk: nothing to report.
    const Result<Json> file =
        parse_applied_disk_settings(build_domain_xml(sample_request(), kFiles));
    REQUIRE(file.ok());
    CHECK_FALSE(file->contains("rbd_auth"));
}

TEST_CASE("domain XML: every inserted string is escaped", "[domain_xml]") {
    VmRequest request = sample_request();
    request.name = "disksweep-<odd>&'name\"";
    request.data_disk = FileDisk{"/tmp/a dir/it's <data>&.img", ImageFormat::kRaw};
    request.image.kernel = "/k/<kernel>";
    request.kernel_cmdline_extra = "root=LABEL=x&y init=</bin/sh>";
    const std::string xml = build_domain_xml(request, LocalGuestFiles{"/tmp/a&b \"quoted\""});

    CHECK(contains(xml, "<name>disksweep-&lt;odd&gt;&amp;&apos;name&quot;</name>"));
    CHECK(contains(xml, "<source file='/tmp/a dir/it&apos;s &lt;data&gt;&amp;.img'/>"));
    CHECK(contains(xml,
                   "path='/tmp/a&amp;b &quot;quoted&quot;/disksweep-&lt;odd&gt;&amp;&apos;"
                   "name&quot;.console.log.sock'"));
    CHECK(contains(xml,
                   "path='/tmp/a&amp;b &quot;quoted&quot;/disksweep-&lt;odd&gt;&amp;&apos;"
                   "name&quot;.agent.sock'"));
    CHECK(contains(xml, "<kernel>/k/&lt;kernel&gt;</kernel>"));
    CHECK(contains(xml, "root=LABEL=x&amp;y init=&lt;/bin/sh&gt;</cmdline>"));
    // And the document still parses, with the data disk where it should be.
    REQUIRE(parse_applied_disk_settings(xml).ok());
}

TEST_CASE("xml_escape", "[domain_xml]") {
    CHECK(xml_escape("plain/path-1.img") == "plain/path-1.img");
    CHECK(xml_escape("<a href=\"x\">'&'</a>") ==
          "&lt;a href=&quot;x&quot;&gt;&apos;&amp;&apos;&lt;/a&gt;");
    CHECK(xml_escape("") == "");
}

TEST_CASE("domain XML round trip: every bus x cache x iothread x ssd", "[domain_xml]") {
    const Bus buses[] = {Bus::kVirtioBlk, Bus::kScsi, Bus::kScsiSingle, Bus::kSata};
    const CacheMode caches[] = {CacheMode::kNone, CacheMode::kWriteback, CacheMode::kWritethrough,
                                CacheMode::kDirectsync, CacheMode::kUnsafe};
    int combination = 0;
    int checked = 0;
    for (Bus bus : buses) {
        for (CacheMode cache : caches) {
            for (bool iothread : {false, true}) {
                for (bool ssd : {false, true}) {
                    ++combination;
                    VmRequest request = sample_request();
                    StorageConfig& config = request.config;
                    config.bus = bus;
                    config.cache = cache;
                    config.iothread = iothread;
                    config.ssd = ssd;
                    // Vary the remaining settings along the way so that each
                    // value of each appears in some combination.
                    config.aio = static_cast<AioMode>(combination % 4);
                    config.discard = combination % 3 != 0;
                    config.detect_zeroes = config.discard
                                               ? static_cast<DetectZeroes>(combination % 3)
                                               : DetectZeroes::kOn;
                    config.image_format =
                        combination % 2 == 0 ? ImageFormat::kRaw : ImageFormat::kQcow2;
                    std::get<FileDisk>(request.data_disk).format = config.image_format;
                    if (!libvirt_unsupported_reason(config).empty()) continue;

                    const std::string xml = build_domain_xml(request, kFiles);
                    const Result<Json> applied = parse_applied_disk_settings(xml);
                    INFO(xml);
                    REQUIRE(applied.ok());
                    CHECK(without_controller_model(*applied) == expected_applied(config));
                    const std::string model = applied->at("controller_model");
                    if (bus == Bus::kScsi || bus == Bus::kScsiSingle) CHECK(model == "virtio-scsi");
                    if (bus == Bus::kSata) CHECK(model == "ahci");
                    if (bus == Bus::kVirtioBlk) CHECK(model.empty());
                    ++checked;
                }
            }
        }
    }
    // virtio-blk without ssd (10) + scsi (20) + scsi-single (20) + sata
    // without iothread (10), less aio=native with caching modes.
    CHECK(checked > 40);
}

TEST_CASE("libvirt_unsupported_reason names what libvirt/QEMU refuse", "[domain_xml]") {
    StorageConfig config;
    config.cache = CacheMode::kNone;
    config.bus = Bus::kScsiSingle;
    config.ssd = true;
    config.iothread = true;
    CHECK(libvirt_unsupported_reason(config).empty());

    config.bus = Bus::kVirtioBlk;
    CHECK(contains(libvirt_unsupported_reason(config), "ssd"));
    config.ssd = false;
    CHECK(libvirt_unsupported_reason(config).empty());

    config.bus = Bus::kSata;
    CHECK(contains(libvirt_unsupported_reason(config), "iothread"));
    config.iothread = false;

    config.aio = AioMode::kNative;
    CHECK(libvirt_unsupported_reason(config).empty());
    config.cache = CacheMode::kWriteback;
    CHECK(contains(libvirt_unsupported_reason(config), "aio native"));
    config.cache = CacheMode::kDirectsync;
    CHECK(libvirt_unsupported_reason(config).empty());

    config.detect_zeroes = DetectZeroes::kUnmap;
    config.discard = false;
    CHECK(contains(libvirt_unsupported_reason(config), "detect_zeroes"));
}

TEST_CASE("parse_applied_disk_settings reads what libvirt writes", "[domain_xml]") {
    // Shaped like libvirt 9.0's live XML: aliases, addresses, extra elements.
    const std::string live = R"(<domain type='kvm' id='3'>
  <name>disksweep-x</name>
  <devices>
    <disk type='file' device='disk'>
      <driver name='qemu' type='raw'/>
      <source file='/images/root.img' index='2'/>
      <target dev='vda' bus='virtio'/>
      <readonly/>
      <serial>disksweep-root</serial>
      <alias name='virtio-disk0'/>
    </disk>
    <disk type='file' device='disk'>
      <driver name='qemu' type='raw' cache='writeback' detect_zeroes='unmap'/>
      <source file='/v/data.img' index='1'/>
      <target dev='sda' bus='scsi' rotation_rate='1'/>
      <serial>disksweep-data</serial>
      <alias name='scsi1-0-0-0'/>
      <address type='drive' controller='1' bus='0' target='0' unit='0'/>
    </disk>
    <controller type='scsi' index='0' model='lsilogic'>
      <alias name='scsi0'/>
    </controller>
    <controller type='scsi' index='1' model='virtio-scsi'>
      <driver iothread='1'/>
      <alias name='scsi1'/>
    </controller>
  </devices>
</domain>)";
    const Result<Json> applied = parse_applied_disk_settings(live);
    REQUIRE(applied.ok());
    // A SCSI controller with an IO thread and no alias of ours: scsi-single.
    CHECK(applied->at("bus") == "scsi-single");
    CHECK(applied->at("iothread") == true);
    CHECK(applied->at("controller_model") == "virtio-scsi");
    CHECK(applied->at("cache") == "writeback");
    CHECK(applied->at("aio") == "default");
    CHECK(applied->at("discard") == false);
    // unmap without discard=unmap is passed to QEMU as "on".
    CHECK(applied->at("detect_zeroes") == "on");
    CHECK(applied->at("ssd") == true);
    CHECK(applied->at("image_format") == "raw");
}

TEST_CASE("parse_applied_disk_settings reports what is wrong", "[domain_xml]") {
    const Result<Json> not_xml = parse_applied_disk_settings("<domain><devices>");
    REQUIRE_FALSE(not_xml.ok());
    CHECK(not_xml.error().code == errc::kHypervisor);
    CHECK(contains(not_xml.error().message, "does not parse"));

    const Result<Json> no_data_disk = parse_applied_disk_settings(
        "<domain><devices><disk><serial>disksweep-root</serial></disk></devices></domain>");
    REQUIRE_FALSE(no_data_disk.ok());
    CHECK(contains(no_data_disk.error().message, "no disk with serial disksweep-data"));

    const Result<Json> missing_controller = parse_applied_disk_settings(
        "<domain><devices><disk><target bus='scsi'/><serial>disksweep-data</serial>"
        "<address type='drive' controller='2'/></disk></devices></domain>");
    REQUIRE_FALSE(missing_controller.ok());
    CHECK(contains(missing_controller.error().message, "no SCSI controller 2"));

    const Result<Json> ide = parse_applied_disk_settings(
        "<domain><devices><disk><target "
        "bus='ide'/><serial>disksweep-data</serial></disk></devices></domain>");
    REQUIRE(ide.ok());
    CHECK(ide->at("bus") == "ide");  // reported as libvirt names it, never matches a request
}

}  // namespace ds

namespace ds {

TEST_CASE("domain XML: throttling and queues are written and read back", "[domain_xml]") {
    VmRequest request = sample_request();
    request.config.iops_limit = 500;
    request.config.bandwidth_limit = 8u << 20;
    request.config.queues = 2;
    for (const Bus bus : {Bus::kVirtioBlk, Bus::kScsi, Bus::kScsiSingle}) {
        request.config.bus = bus;
        request.config.iothread = bus != Bus::kScsi;
        const std::string xml = build_domain_xml(request, kFiles);
        INFO(xml);
        CHECK(contains(xml, "<iotune>"));
        CHECK(contains(xml, "<total_bytes_sec>8388608</total_bytes_sec>"));
        CHECK(contains(xml, "<total_iops_sec>500</total_iops_sec>"));
        CHECK(contains(xml, "queues='2'"));
        const Result<Json> applied = parse_applied_disk_settings(xml);
        REQUIRE(applied.ok());
        CHECK(applied->at("iops_limit") == 500);
        CHECK(applied->at("bandwidth_limit") == 8388608);
        CHECK(applied->at("queues") == 2);
    }
    // On virtio-scsi the queues belong to the controller, beside its IO thread.
    request.config.bus = Bus::kScsiSingle;
    CHECK(contains(build_domain_xml(request, kFiles), "<driver queues='2' iothread='1'/>"));
}

TEST_CASE("domain XML: no throttling or queues unless asked", "[domain_xml]") {
    const std::string xml = build_domain_xml(sample_request(), kFiles);
    CHECK_FALSE(contains(xml, "iotune"));
    CHECK_FALSE(contains(xml, "queues="));
    const Result<Json> applied = parse_applied_disk_settings(xml);
    REQUIRE(applied.ok());
    for (const char* key : {"iops_limit", "bandwidth_limit", "queues"})
        CHECK_FALSE(applied->contains(key));
}

TEST_CASE("domain XML: queues on sata are written for libvirt to refuse", "[domain_xml]") {
    StorageConfig config;
    config.bus = Bus::kSata;
    config.queues = 2;
    CHECK(libvirt_unsupported_reason(config) == "queues: SATA (AHCI) disks have no virtio queues");
    VmRequest request = sample_request();
    request.config = config;
    CHECK(contains(build_domain_xml(request, kFiles), "queues='2'"));
}

TEST_CASE("parse_applied_disk_settings refuses a malformed limit", "[domain_xml]") {
    VmRequest request = sample_request();
    request.config.iops_limit = 500;
    std::string xml = build_domain_xml(request, kFiles);
    xml.replace(xml.find(">500<"), 5, ">5x0<");
    const Result<Json> applied = parse_applied_disk_settings(xml);
    REQUIRE_FALSE(applied.ok());
    CHECK(applied.error().message == "domain XML: iops_limit is not a positive integer: 5x0");
}

}  // namespace ds

namespace ds {
namespace {

// The <disk> element holding `serial`, "" when there is none.
std::string disk_element_with_serial(const std::string& xml, const std::string& serial) {
    const std::size_t at = xml.find("<serial>" + serial + "</serial>");
    if (at == std::string::npos) return "";
    const std::size_t open = xml.rfind("<disk ", at);
    const std::size_t close = xml.find("</disk>", at);
    return xml.substr(open, close + std::string("</disk>").size() - open);
}

}  // namespace

TEST_CASE("domain XML: extra disks are unsafe virtio-blk disks after the data disk",
          "[domain_xml]") {
    VmRequest request = sample_request();
    request.config.cache = CacheMode::kNone;
    request.extra_disks = {
        {FileDisk{"/var/tmp/crash-0.img", ImageFormat::kRaw}, protocol::crash_disk_serial(0)},
        {BlockDisk{"/dev/loop7"}, protocol::crash_disk_serial(1)},
    };
    const std::string xml = build_domain_xml(request, kFiles);
    CHECK(disk_element_with_serial(xml, "disksweep-crash-0") ==
          "<disk type='file' device='disk'>\n"
          "      <driver name='qemu' type='raw' cache='unsafe'/>\n"
          "      <source file='/var/tmp/crash-0.img'/>\n"
          "      <target dev='vdc' bus='virtio'/>\n"
          "      <serial>disksweep-crash-0</serial>\n"
          "    </disk>");
    CHECK(disk_element_with_serial(xml, "disksweep-crash-1") ==
          "<disk type='block' device='disk'>\n"
          "      <driver name='qemu' type='raw' cache='unsafe'/>\n"
          "      <source dev='/dev/loop7'/>\n"
          "      <target dev='vdd' bus='virtio'/>\n"
          "      <serial>disksweep-crash-1</serial>\n"
          "    </disk>");
    // The data disk keeps its own settings and comes first.
    const std::string data = disk_element_with_serial(xml, std::string(protocol::kDataDiskSerial));
    CHECK(contains(data, "cache='none'"));
    CHECK(xml.find(data) < xml.find("disksweep-crash-0"));
    // What the data disk's settings are read from is still the data disk.
    auto applied = parse_applied_disk_settings(xml);
    REQUIRE(applied.ok());
    CHECK((*applied)["cache"] == "none");
}

TEST_CASE("domain XML: sixteen extra disks take vdc to vdr, none adds no disk", "[domain_xml]") {
    VmRequest request = sample_request();
    const std::size_t disks_without = [&] {
        const std::string xml = build_domain_xml(request, kFiles);
        std::size_t count = 0;
        for (std::size_t at = xml.find("<disk "); at != std::string::npos;
             at = xml.find("<disk ", at + 1))
            ++count;
        return count;
    }();
    CHECK(disks_without == 2);  // root and data
    for (std::size_t i = 0; i < kMaxExtraDisks; ++i) {
        request.extra_disks.push_back(
            {FileDisk{"/var/tmp/crash-" + std::to_string(i) + ".img", ImageFormat::kRaw},
             protocol::crash_disk_serial(i)});
    }
    const std::string xml = build_domain_xml(request, kFiles);
    const std::string targets = "cdefghijklmnopqr";
    REQUIRE(targets.size() == kMaxExtraDisks);
    for (std::size_t i = 0; i < kMaxExtraDisks; ++i) {
        INFO(i);
        CHECK(contains(disk_element_with_serial(xml, protocol::crash_disk_serial(i)),
                       std::string("<target dev='vd") + targets[i] + "' bus='virtio'/>"));
    }
}

TEST_CASE("domain XML: extra disks follow a SCSI or logged data disk on virtio targets",
          "[domain_xml]") {
    VmRequest request = sample_request();
    request.extra_disks = {{FileDisk{"/var/tmp/crash-0.img", ImageFormat::kRaw}, "checked-0"}};
    for (Bus bus : {Bus::kScsi, Bus::kScsiSingle, Bus::kSata}) {
        request.config.bus = bus;
        INFO(to_string(bus));
        CHECK(contains(disk_element_with_serial(build_domain_xml(request, kFiles), "checked-0"),
                       "<target dev='vdc' bus='virtio'/>"));
    }
    request.config.bus = Bus::kVirtioBlk;
    request.write_log_path = "/var/tmp/data.log";
    const std::string logged = build_domain_xml(request, kFiles);
    CHECK(disk_element_with_serial(logged, std::string(protocol::kDataDiskSerial)).empty());
    CHECK(contains(disk_element_with_serial(logged, "checked-0"), "<target dev='vdc'"));
}

TEST_CASE("check_extra_disks: the bound, the serials, no repeats", "[domain_xml]") {
    const auto disk = [](std::string serial) {
        return ExtraDisk{FileDisk{"/var/tmp/x.img", ImageFormat::kRaw}, std::move(serial)};
    };
    std::vector<ExtraDisk> disks;
    for (std::size_t i = 0; i < kMaxExtraDisks; ++i)
        disks.push_back(disk(protocol::crash_disk_serial(i)));
    CHECK(check_extra_disks(disks).ok());
    CHECK(check_extra_disks({}).ok());

    disks.push_back(disk("disksweep-crash-99"));
    Status refused = check_extra_disks(disks);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == errc::kInvalidArgument);
    CHECK_THAT(refused.error().message,
               Catch::Contains("17 extra disks") && Catch::Contains("at most 16"));

    const std::pair<std::vector<ExtraDisk>, std::string> bad[] = {
        {{disk("a"), disk("a")}, "extra disk 1: serial a is already taken"},
        {{disk(std::string(protocol::kDataDiskSerial))}, "extra disk 0: serial disksweep-data"},
        {{disk(std::string(protocol::kRootDiskSerial))}, "extra disk 0: serial disksweep-root"},
        {{disk("ok"), disk("twenty-one-bytes-long")}, "extra disk 1: serial 'twenty-one"},
        {{disk("no spaces")}, "extra disk 0: serial 'no spaces' holds"},
    };
    for (const auto& [disks_in, message] : bad) {
        INFO(message);
        refused = check_extra_disks(disks_in);
        REQUIRE_FALSE(refused.ok());
        CHECK(refused.error().code == errc::kInvalidArgument);
        CHECK_THAT(refused.error().message, Catch::Contains(message));
    }
}

}  // namespace ds
