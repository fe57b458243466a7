// RBD disks authenticated through a libvirt secret (issue 7 §3, path b): the
// daemon on qemu:///system, served by the tests' own libvirtd (fixture
// rbd/libvirtd_up, libvirtd-up.sh), QEMU running as libvirt-qemu, the data
// disk an RBD image on the test Ceph (fixture rbd/ceph_up) as the dedicated
// user client.disksweep, whose keyring only root can read. The embedded
// driver's path (a ceph.conf with client.admin's key) is what
// rbd_guest_e2e_test.cpp runs.
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <pwd.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "common/process.h"
#include "daemon/backends/hypervisor/libvirt/libvirt_hypervisor.h"
#include "daemon/backends/hypervisor/libvirt/libvirt_secret.h"
#include "support/ceph/test_ceph.h"
#include "support/daemon_fixture.h"
#include "support/run_rows.h"
#include "support/skip.h"
#include "support/temp_dir.h"

using ds::Json;
using ds::test::DaemonFixture;
using ds::test::TestCeph;
using namespace std::chrono_literals;

namespace {

// The instance of the daemon under test: every guest, volume and secret it
// creates starts with kResourcePrefix (ds::ResourceNames,
// "disksweep-INSTANCE-"); the hypervisor-level cases name theirs alike.
constexpr const char* kInstance = "rbdsecret";
constexpr const char* kResourcePrefix = "disksweep-rbdsecret-";
constexpr const char* kSystemUri = "qemu:///system";

// The test libvirtd of libvirtd-up.sh, or a skip that says why there is none.
// Call it before anything the test must clean up (skip.h).
void test_libvirtd_or_skip() {
    const char* dir = std::getenv("DISKSWEEP_TEST_LIBVIRTD_DIR");
    if (dir == nullptr || *dir == '\0') {
        ds::test::skip_test(
            "DISKSWEEP_TEST_LIBVIRTD_DIR is not set: run through ctest (fixture "
            "rbd/libvirtd_up) or start tests/backend/rbd/libvirtd-up.sh DIR and set it to DIR");
    }
    const auto env = ds::test::read_assignments(std::filesystem::path(dir) / "env");
    if (env.empty()) {
        ds::test::skip_test(std::string("no test libvirtd in ") + dir +
                            " (libvirtd-up.sh skipped: see its output)");
    }
}

// $DISKSWEEP_TEST_IMAGE_DIR, else the daemon's default; a skip when the base
// image is not there (scripts/build-guest-image.sh builds it).
std::string image_dir_or_skip() {
    const char* env = std::getenv("DISKSWEEP_TEST_IMAGE_DIR");
    const std::string dir = env && *env ? env : "/var/lib/disksweep/images";
    if (!std::filesystem::exists(dir + "/manifest.json")) {
        ds::test::skip_test("no guest image in " + dir + " (scripts/build-guest-image.sh)");
    }
    return dir;
}

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

// The base64 key in the keyring (to check that it shows up nowhere).
std::string key_text(const TestCeph& ceph) {
    std::ifstream in(ceph.keyring);
    for (std::string line; std::getline(in, line);) {
        const auto equals = line.find('=');
        if (line.find("key") != std::string::npos && equals != std::string::npos) {
            std::string value = line.substr(equals + 1);
            value.erase(0, value.find_first_not_of(" \t"));
            return value;
        }
    }
    FAIL("no key in " << ceph.keyring);
    return "";
}

// The daemon's storage line: the dedicated user with its root-only keyring.
std::string storage_line(const TestCeph& ceph) {
    return "rbd:" + ceph.pool + ",mon_host=" + ceph.mon_host + ",id=" + ceph.user +
           ",keyring=" + ceph.keyring + ",conf=" + ceph.conf;
}

// One short fio run on ext4 on the RBD disk.
std::string one_run_spec(const TestCeph& ceph) {
    return "name = \"rbd-secret\"\n"
           "repetitions = 1\n"
           "boot_timeout = \"5m\"\n"
           "run_timeout = \"10m\"\n"
           "[hypervisor]\nbackend = \"libvirt\"\n"
           "[matrix]\n"
           "storage = \"rbd:" +
           ceph.pool +
           "\"\n"
           "disk_size = \"1g\"\nbus = \"scsi-single\"\ncache = \"none\"\n"
           "discard = true\nssd = true\niothread = true\nfilesystem = \"ext4\"\n"
           "[[workload]]\nname = \"randrw-4k\"\nkind = \"fio\"\nrw = \"randrw\"\nbs = \"4k\"\n"
           "direct = true\nioengine = \"libaio\"\niodepth = 16\nnumjobs = 1\n"
           "size = \"16m\"\nruntime = \"3s\"\ntime_based = true\n";
}

// A connection of the test's own to the test libvirtd, for looking.
class Libvirt {
  public:
    Libvirt() {
        // Errors are looked at where they matter, not printed (a lookup of a
        // domain that is gone is one).
        virSetErrorFunc(nullptr, [](void*, virErrorPtr) {});
        connection_ = virConnectOpen(kSystemUri);
        INFO(virGetLastErrorMessage());
        REQUIRE(connection_ != nullptr);
    }
    ~Libvirt() { virConnectClose(connection_); }
    Libvirt(const Libvirt&) = delete;
    Libvirt& operator=(const Libvirt&) = delete;

    struct Secret {
        std::string uuid;
        std::string usage;
        std::string xml;
    };
    // Every secret libvirt has, with its usage name and XML.
    std::vector<Secret> secrets() const {
        virSecretPtr* list = nullptr;
        const int count = virConnectListAllSecrets(connection_, &list, 0);
        REQUIRE(count >= 0);
        std::vector<Secret> secrets;
        for (int i = 0; i < count; ++i) {
            char uuid[VIR_UUID_STRING_BUFLEN] = {};
            virSecretGetUUIDString(list[i], uuid);
            const char* usage = virSecretGetUsageID(list[i]);
            char* xml = virSecretGetXMLDesc(list[i], 0);
            secrets.push_back({uuid, usage ? usage : "", xml ? xml : ""});
            std::free(xml);
            virSecretFree(list[i]);
        }
        std::free(list);
        return secrets;
    }
    // Names of the running domains.
    std::vector<std::string> domains() const {
        virDomainPtr* list = nullptr;
        const int count = virConnectListAllDomains(connection_, &list, 0);
        REQUIRE(count >= 0);
        std::vector<std::string> names;
        for (int i = 0; i < count; ++i) {
            names.emplace_back(virDomainGetName(list[i]));
            virDomainFree(list[i]);
        }
        std::free(list);
        return names;
    }
    // The live XML of a domain, "" when it is gone.
    std::string domain_xml(const std::string& name) const {
        virDomainPtr domain = virDomainLookupByName(connection_, name.c_str());
        if (domain == nullptr) return "";
        char* xml = virDomainGetXMLDesc(domain, 0);
        std::string text = xml ? xml : "";
        std::free(xml);
        virDomainFree(domain);
        return text;
    }
    // Defines a secret of `usage` holding `value` (a leftover to be found).
    void define_secret(const std::string& usage, const std::string& value) const {
        const std::string xml = "<secret ephemeral='yes' private='yes'><usage type='ceph'><name>" +
                                usage + "</name></usage></secret>";
        virSecretPtr secret = virSecretDefineXML(connection_, xml.c_str(), 0);
        INFO(virGetLastErrorMessage());
        REQUIRE(secret != nullptr);
        REQUIRE(virSecretSetValue(secret, reinterpret_cast<const unsigned char*>(value.data()),
                                  value.size(), 0) == 0);
        virSecretFree(secret);
    }

  private:
    virConnectPtr connection_ = nullptr;
};

std::vector<Libvirt::Secret> secrets_with_prefix(const Libvirt& libvirt) {
    std::vector<Libvirt::Secret> ours;
    for (auto& secret : libvirt.secrets())
        if (secret.usage.starts_with(kResourcePrefix)) ours.push_back(secret);
    return ours;
}

// What the test saw of the run's guest while it ran.
struct Observed {
    std::string vm_name;
    std::string domain_xml;
    std::vector<Libvirt::Secret> secrets;
    uid_t qemu_uid = 0;
};

// The uid QEMU of `vm_name` runs as (libvirt's pid file), or -1.
uid_t qemu_uid_of(const std::string& vm_name) {
    std::ifstream pid_file("/run/libvirt/qemu/" + vm_name + ".pid");
    std::string pid;
    if (!(pid_file >> pid)) return static_cast<uid_t>(-1);
    struct stat status {};
    if (::stat(("/proc/" + pid).c_str(), &status) != 0) return static_cast<uid_t>(-1);
    return status.st_uid;
}

// Polls libvirt until the daemon's guest runs, then records its XML, the
// secrets and QEMU's user; gives up when `finished` is ready.
Observed observe_guest(const Libvirt& libvirt,
                       const std::future<ds::test::HostctlResult>& finished) {
    Observed seen;
    while (finished.wait_for(200ms) != std::future_status::ready) {
        for (const auto& name : libvirt.domains()) {
            if (!name.starts_with(kResourcePrefix)) continue;
            seen.vm_name = name;
            seen.domain_xml = libvirt.domain_xml(name);
            seen.secrets = secrets_with_prefix(libvirt);
            seen.qemu_uid = qemu_uid_of(name);
            return seen;
        }
    }
    return seen;
}

std::vector<std::string> images_in_pool(const TestCeph& ceph) {
    ds::RealProcessRunner runner;
    const std::vector<std::string> argv{"rbd", "--conf", ceph.conf, "--id",     ceph.user,
                                        "ls",  "--pool", ceph.pool, "--format", "json"};
    auto output = runner.run(argv, std::chrono::seconds(120));
    REQUIRE(output.ok());
    INFO(output->stderr_text);
    REQUIRE(output->exit_code == 0);
    return Json::parse(output->stdout_text).get<std::vector<std::string>>();
}

void check_guest_while_running(const Observed& seen, const TestCeph& ceph) {
    INFO(seen.domain_xml);
    REQUIRE_FALSE(seen.vm_name.empty());
    // <auth> with the secret, and no ceph.conf for QEMU to read the key from.
    CHECK(contains(seen.domain_xml, "<source protocol='rbd'"));
    CHECK(contains(seen.domain_xml, "<auth username='" + ceph.user + "'>"));
    CHECK_FALSE(contains(seen.domain_xml, "<config"));
    // Exactly one secret of ours: the guest's, the one the XML names.
    REQUIRE(seen.secrets.size() == 1);
    const auto& secret = seen.secrets.front();
    CHECK(secret.usage == ds::rbd_secret_usage(seen.vm_name));
    CHECK(contains(seen.domain_xml, "<secret type='ceph' uuid='" + secret.uuid + "'/>"));
    CHECK(contains(secret.xml, "ephemeral='yes'"));
    CHECK(contains(secret.xml, "private='yes'"));
    // QEMU is libvirt's QEMU user, who cannot read the root-only keyring:
    // the key reached it through the secret.
    const struct passwd* qemu_user = ::getpwnam("libvirt-qemu");
    REQUIRE(qemu_user != nullptr);
    CHECK(seen.qemu_uid == qemu_user->pw_uid);
    struct stat keyring {};
    REQUIRE(::stat(ceph.keyring.c_str(), &keyring) == 0);
    CHECK((keyring.st_mode & 0077) == 0);
}

}  // namespace

TEST_CASE("on qemu:///system an RBD disk authenticates through an ephemeral libvirt secret",
          "[rbd][guest][libvirtd]") {
    const TestCeph ceph = ds::test::test_ceph_or_skip();
    test_libvirtd_or_skip();
    const std::string image_dir = image_dir_or_skip();
    const auto started = std::chrono::steady_clock::now();
    DaemonFixture daemon({"--image-dir", image_dir, "--accel", "tcg", "--hypervisor-uri",
                          kSystemUri, "--storage", storage_line(ceph), "--instance", kInstance});
    if (!daemon.ready()) FAIL("disksweepd did not start: " << daemon.log());
    const Libvirt libvirt;
    REQUIRE(secrets_with_prefix(libvirt).empty());
    const auto spec = ds::test::write_temp_file("rbd-secret.toml", one_run_spec(ceph));

    auto finished = std::async(std::launch::async, [&] {
        return daemon.hostctl({"sweep", "submit", spec, "--wait"}, std::chrono::seconds(900));
    });
    const Observed seen = observe_guest(libvirt, finished);
    const auto submitted = finished.get();
    const auto runs = ds::test::runs_of_sweep(daemon.database(), 1);
    INFO("hostctl: " << submitted.out << submitted.err << "\ndaemon log: " << daemon.log());
    check_guest_while_running(seen, ceph);

    // The run: succeeded on the RBD disk, verified, and says how it authenticated.
    CHECK(submitted.exit_code == 0);
    REQUIRE(runs.size() == 1);
    const auto& run = runs.front();
    INFO(run.failure_reason);
    REQUIRE(run.status == "succeeded");
    CHECK(run.applied["verified"] == true);
    CHECK(run.applied["hypervisor"]["rbd_auth"] == "libvirt-secret");
    CHECK(run.applied["storage"]["source"]["kind"] == "rbd");
    CHECK(run.metrics.at("read_iops") > 0);
    CHECK(run.metrics.at("write_iops") > 0);

    // Torn down: no guest, no secret, no image; and the key was never written
    // anywhere the test can see.
    CHECK(libvirt.domain_xml(seen.vm_name).empty());
    CHECK(secrets_with_prefix(libvirt).empty());
    for (const auto& image : images_in_pool(ceph)) CHECK_FALSE(image.starts_with(kResourcePrefix));
    const std::string key = key_text(ceph);
    CHECK_FALSE(contains(daemon.log(), key));
    CHECK_FALSE(contains(seen.domain_xml, key));
    std::cout << "rbd secret run: "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()
              << " s" << std::endl;
}

TEST_CASE("on qemu:///system a failed start and a crashed daemon leave no RBD secret",
          "[rbd][libvirtd]") {
    const TestCeph ceph = ds::test::test_ceph_or_skip();
    test_libvirtd_or_skip();
    const ds::test::TempDir guest_files;
    auto hypervisor = ds::LibvirtHypervisor::connect(kSystemUri, "", guest_files.path().string());
    REQUIRE(hypervisor.ok());
    CHECK((*hypervisor)->has_secret_driver());
    const Libvirt libvirt;
    REQUIRE(secrets_with_prefix(libvirt).empty());

    SECTION("a start that fails undefines the secret it defined") {
        ds::VmRequest request;
        request.name = std::string(kResourcePrefix) + "secret-failed-start";
        // A real key and cluster, an image that does not exist and a kernel
        // that does not either: libvirt takes the secret, QEMU then fails.
        request.data_disk = ds::RbdDisk{ceph.pool, "no-such-image", {ceph.mon_host},
                                        ceph.user, ceph.keyring,    ceph.conf};
        request.image = {"/nonexistent/vmlinuz", "/nonexistent/initrd.img",
                         "/nonexistent/root.img"};
        const ds::Status started = (*hypervisor)->start_vm(request);
        INFO((started.ok() ? "" : started.error().message));
        CHECK_FALSE(started.ok());
        CHECK(secrets_with_prefix(libvirt).empty());
        CHECK(libvirt.domain_xml(request.name).empty());
    }
    SECTION("a keyring without the user's key is refused before anything is defined") {
        const ds::test::TempDir dir;
        const std::string keyring = dir.file("other.keyring");
        std::ofstream(keyring) << "[client.someone-else]\n\tkey = AQAAAAAAAAAAAAAAAAAAAAAAAAAA"
                                  "AAAAAAAAAAAA==\n";
        ds::VmRequest request;
        request.name = std::string(kResourcePrefix) + "secret-bad-keyring";
        request.data_disk =
            ds::RbdDisk{ceph.pool, "no-such-image", {ceph.mon_host}, ceph.user, keyring, ""};
        const ds::Status started = (*hypervisor)->start_vm(request);
        REQUIRE_FALSE(started.ok());
        CHECK(contains(started.error().message, keyring));
        CHECK(contains(started.error().message, "client." + ceph.user));
        CHECK(secrets_with_prefix(libvirt).empty());
    }
    SECTION("a secret whose guest is gone is found by prefix and removed by destroy_vm") {
        // What a daemon killed between start and destroy leaves once libvirt
        // has ended its guest: the secret alone.
        const std::string vm = std::string(kResourcePrefix) + "secret-leftover";
        libvirt.define_secret(ds::rbd_secret_usage(vm), "not a real key");
        auto leftovers = (*hypervisor)->list_vms(kResourcePrefix);
        REQUIRE(leftovers.ok());
        CHECK(*leftovers == std::vector<std::string>{vm});
        REQUIRE((*hypervisor)->destroy_vm(vm).ok());
        CHECK(secrets_with_prefix(libvirt).empty());
        leftovers = (*hypervisor)->list_vms(kResourcePrefix);
        REQUIRE(leftovers.ok());
        CHECK(leftovers->empty());
    }
}

// Placement across hosts (issue 8 §4), with the two connections this
// machine can have at once: the daemon's own embedded driver (host "local")
// and qemu:///system through the test libvirtd (host "system"), one run at a
// time each, both reaching the same RBD pool. The two rounds start together
// and a round stays on one host, so each host takes one; every result names
// its host, and a sweep pinned to one host runs only there.
TEST_CASE("a sweep runs on two libvirt hosts at once and each result names its host",
          "[rbd][guest][libvirtd][placement]") {
    const TestCeph ceph = ds::test::test_ceph_or_skip();
    test_libvirtd_or_skip();
    const std::string image_dir = image_dir_or_skip();
    // As client.admin: under the embedded driver QEMU authenticates through
    // the admin client config (the root-only way, docs/storage-rbd.md), on
    // the libvirtd through a secret made from the admin keyring.
    const std::string admin_keyring =
        (std::filesystem::path(ceph.admin_conf).parent_path() / "admin.keyring").string();
    const std::string admin_storage = "rbd:" + ceph.pool + ",mon_host=" + ceph.mon_host +
                                      ",id=admin,keyring=" + admin_keyring +
                                      ",conf=" + ceph.admin_conf;
    DaemonFixture daemon(
        {"--image-dir", image_dir, "--accel", "tcg", "--storage", admin_storage, "--host",
         "libvirt:system,uri=qemu+unix:///system?socket=/run/libvirt/libvirt-sock,parallel=1"});
    if (!daemon.ready()) FAIL("disksweepd did not start: " << daemon.log());

    std::string spec_text = one_run_spec(ceph);
    // Two rounds: placement keeps a whole round on one host, and the two
    // rounds start together, so each host takes one.
    spec_text.replace(spec_text.find("repetitions = 1"), 15, "repetitions = 2");
    const auto spec = ds::test::write_temp_file("two-hosts.toml", spec_text);
    auto submitted = daemon.hostctl({"sweep", "submit", spec, "--wait"}, std::chrono::seconds(900));
    INFO("hostctl: " << submitted.out << submitted.err << "\ndaemon log: " << daemon.log());
    CHECK(submitted.exit_code == 0);
    auto shown = daemon.hostctl({"--json", "sweep", "show", "1"});
    REQUIRE(shown.exit_code == 0);
    std::set<std::string> hosts;
    const ds::Json shown_runs = ds::Json::parse(shown.out)["runs"];
    REQUIRE(shown_runs.size() == 2);
    for (const auto& run : shown_runs) {
        CHECK(run["status"] == "succeeded");
        hosts.insert(run["versions"].value("host", ""));
    }
    CHECK(hosts == std::set<std::string>{"local", "system"});

    // Pinned: [hypervisor] hosts = ["system"] keeps every run there.
    std::string pinned_text = one_run_spec(ceph);
    pinned_text.replace(pinned_text.find("backend = \"libvirt\""), 19,
                        "backend = \"libvirt\"\nhosts = [\"system\"]");
    const auto pinned = ds::test::write_temp_file("pinned.toml", pinned_text);
    submitted = daemon.hostctl({"sweep", "submit", pinned, "--wait"}, std::chrono::seconds(900));
    CHECK(submitted.exit_code == 0);
    shown = daemon.hostctl({"--json", "sweep", "show", "2"});
    REQUIRE(shown.exit_code == 0);
    const ds::Json pinned_runs = ds::Json::parse(shown.out)["runs"];
    REQUIRE(pinned_runs.size() == 1);
    for (const auto& run : pinned_runs) {
        CHECK(run["versions"]["host"] == "system");
    }
    // A host the daemon does not have is refused at submission, by name.
    pinned_text.replace(pinned_text.find("[\"system\"]"), 10, "[\"nowhere\"]");
    const auto nowhere = ds::test::write_temp_file("nowhere.toml", pinned_text);
    submitted = daemon.hostctl({"sweep", "submit", nowhere});
    CHECK(submitted.exit_code == 1);
    CHECK(contains(submitted.err, "nowhere"));
}
