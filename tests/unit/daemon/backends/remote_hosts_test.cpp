// Remote libvirt hosts (issue 20): which URIs name another machine, what a
// remote host line must and may say (refused at start with the reason, not
// at the first boot), the storages it reaches, a host that is down at start,
// the guest image's volume names, and the domain XML whose channel and
// console are reached through libvirt streams.
#include <catch2/catch.hpp>
#include <fstream>

#include "common/sha256.h"
#include "daemon/backends/hosts.h"
#include "daemon/backends/hypervisor/libvirt/domain_xml.h"
#include "daemon/backends/hypervisor/libvirt/libvirt_hypervisor.h"
#include "daemon/backends/hypervisor/libvirt/libvirt_pool.h"
#include "daemon/backends/registry.h"
#include "support/temp_dir.h"

using namespace ds;

namespace {

// Nothing listens on port 1 of loopback: libvirt's connect is refused at once.
constexpr const char* kRefusedUri = "qemu+tcp://127.0.0.1:1/system";

HostContext context_in(const test::TempDir& dir) {
    return HostContext{dir.file("libvirt"), dir.file("runs"), "disksweep-test-"};
}

}  // namespace

TEST_CASE("a libvirt URI with a host part names another machine", "[hosts][remote]") {
    CHECK(is_remote_libvirt_uri("qemu+ssh://node2/system"));
    CHECK(is_remote_libvirt_uri("qemu+tcp://127.0.0.1:16509/system"));
    CHECK(is_remote_libvirt_uri("qemu://node2/system"));
    CHECK_FALSE(is_remote_libvirt_uri("qemu:///system"));
    CHECK_FALSE(is_remote_libvirt_uri("qemu+unix:///system?socket=/run/x.sock"));
    CHECK_FALSE(is_remote_libvirt_uri("qemu:///embed?root=/var/lib/disksweep/libvirt"));
    CHECK_FALSE(is_remote_libvirt_uri("test:///default"));
    CHECK_FALSE(is_remote_libvirt_uri(""));
}

TEST_CASE(
    "a remote libvirt host is refused at start without a pool, of another driver, or "
    "with a storage out of its reach",
    "[hosts][remote]") {
    test::TempDir dir;
    const HostContext context = context_in(dir);
    auto no_pool = make_configured_hosts(std::string("libvirt:node2,uri=") + kRefusedUri, context);
    REQUIRE_FALSE(no_pool.ok());
    CHECK_THAT(no_pool.error().message, Catch::Contains("host 'node2'"));
    CHECK_THAT(no_pool.error().message, Catch::Contains("name a dir pool with pool=NAME"));

    auto lxc = make_configured_hosts("libvirt:box,uri=lxc:///system", context);
    REQUIRE_FALSE(lxc.ok());
    CHECK_THAT(lxc.error().message, Catch::Contains("of driver 'lxc'"));

    auto thin = make_configured_hosts(std::string("libvirt:node2,uri=") + kRefusedUri +
                                          ",pool=disksweep,storages=file|lvm-thin:vg0/pool0",
                                      context);
    REQUIRE_FALSE(thin.ok());
    CHECK_THAT(thin.error().message,
               Catch::Contains("storage 'lvm-thin:vg0/pool0' is out of its reach"));
    CHECK_THAT(thin.error().message, Catch::Contains("lvcreate"));
}

TEST_CASE("the daemon's own host is refused when hypervisor-uri names another machine",
          "[hosts][remote]") {
    test::TempDir dir;
    auto remote = make_local_host("qemu+ssh://node2/system", 1, context_in(dir));
    REQUIRE_FALSE(remote.ok());
    CHECK_THAT(remote.error().message, Catch::Contains("host = libvirt:NAME,uri="));
}

TEST_CASE(
    "a remote host that is down at start is kept, reported unreachable, and reaches file "
    "through its pool but no block or lvm-thin storage",
    "[hosts][remote]") {
    test::TempDir dir;
    auto hosts = make_configured_hosts(
        std::string("libvirt:node2,uri=") + kRefusedUri + ",pool=disksweep", context_in(dir));
    INFO((hosts.ok() ? "" : hosts.error().message));
    REQUIRE(hosts.ok());
    REQUIRE(hosts->size() == 1);
    Host& host = *(*hosts)[0];
    const Json reach = host.hypervisor->reachability();
    CHECK(reach.value("state", "") == "unreachable");
    CHECK_THAT(reach.value("error", ""), Catch::Contains("127.0.0.1:1"));
    CHECK_FALSE(host.hypervisor->take_reconnected());
    // Its `file` is its pool; what tools on this machine make is out of reach.
    REQUIRE(host.own_storage("file") != nullptr);
    CHECK(host.description.reaches("file"));
    CHECK(host.description.reaches("rbd:rbd"));
    CHECK_FALSE(host.description.reaches("lvm-thin:vg0/pool0"));
    CHECK_FALSE(host.description.reaches("block:/dev/sdb"));
    // Calls fail with the reason instead of crashing on the missing connection.
    auto started = host.hypervisor->list_vms("disksweep-test-");
    REQUIRE_FALSE(started.ok());
    CHECK_THAT(started.error().message, Catch::Contains("host unreachable"));
}

TEST_CASE("a local libvirt host reaches every storage and has no own storage without a pool",
          "[hosts][remote]") {
    test::TempDir dir;
    auto hosts = make_configured_hosts("libvirt:t,uri=test:///default", context_in(dir));
    REQUIRE(hosts.ok());
    Host& host = *(*hosts)[0];
    CHECK(host.own_storage("file") == nullptr);
    CHECK(host.description.reaches("lvm-thin:vg0/pool0"));
    CHECK(host.hypervisor->reachability().value("state", "") == "connected");
}

TEST_CASE("guest image volumes are told from run volumes by the instance prefix and img-",
          "[hosts][remote]") {
    CHECK(PoolImages::is_image_volume("disksweep-a1-img-0011aabb-0123456789abcdef-root",
                                      "disksweep-a1-"));
    CHECK_FALSE(PoolImages::is_image_volume("disksweep-a1-r12-data", "disksweep-a1-"));
    // Another instance's image is not this one's.
    CHECK_FALSE(PoolImages::is_image_volume("disksweep-b2-img-0011aabb-0123456789abcdef-root",
                                            "disksweep-a1-"));
}

TEST_CASE("a file's SHA-256 is its content's", "[hosts][remote]") {
    test::TempDir dir;
    const std::string path = dir.file("image");
    std::string content(3 << 20, 'x');
    content[12345] = 'y';
    { std::ofstream(path, std::ios::binary) << content; }
    auto hashed = sha256_file_hex(path);
    REQUIRE(hashed.ok());
    CHECK(*hashed == sha256_hex(content));
    CHECK_FALSE(sha256_file_hex(dir.file("missing")).ok());
}

TEST_CASE(
    "with libvirt streams the agent channel's socket path is libvirt's and the console a "
    "pty",
    "[hosts][remote][domain_xml]") {
    VmRequest request;
    request.name = "disksweep-t-r1";
    request.data_disk = FileDisk{"/pool/disksweep-t-r1-data"};
    request.image = {"/pool/k", "/pool/i", "/pool/r"};
    const LocalGuestFiles files{"/run/here"};
    const std::string streamed = build_domain_xml(request, files, DomainXmlDialect::kQemu, "",
                                                  GuestEndpoints::kLibvirtStreams);
    CHECK_THAT(streamed, Catch::Contains("<serial type='pty'>"));
    CHECK_THAT(streamed, Catch::Contains("<channel type='unix'>"));
    CHECK_THAT(streamed, Catch::Contains("<source mode='bind'/>"));
    CHECK_THAT(streamed, Catch::Contains("org.disksweep.agent.0"));
    // Nothing of this machine's files: a remote host has no /run/here.
    CHECK_THAT(streamed, !Catch::Contains("/run/here"));
    const std::string local = build_domain_xml(request, files);
    CHECK_THAT(local, Catch::Contains("<serial type='unix'>"));
    CHECK_THAT(local, Catch::Contains("/run/here/disksweep-t-r1.agent.sock"));
}
