// The PVE client against the fake PVE API over real HTTPS: authentication,
// TLS trust, errors, tasks, and requests the real schema must accept or
// reject (the fake checks every request against PVE 8.4's API schema).
#include "daemon/backends/hypervisor/proxmox/pve_client.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <thread>

#include "proxmox/pve_fake_fixture.h"

namespace ds {
namespace {

using test::PveFake;
using namespace std::chrono_literals;

constexpr auto kTaskTimeout = 60s;
const std::string kTemplate = pve_path({"nodes", "pve1", "qemu", "9000"});
const std::string kVm = pve_path({"nodes", "pve1", "qemu", "101"});

std::unique_ptr<PveClient> client_for(const PveClientOptions& options) {
    Result<std::unique_ptr<PveClient>> client = PveClient::create(options);
    INFO((client.ok() ? "" : client.error().message));
    REQUIRE(client.ok());
    return std::move(client).value();
}

// The error of a call that must fail, with the secret nowhere in it.
Error failure_of(const Result<Json>& result) {
    INFO((result.ok() ? "unexpected success: " + result->dump() : ""));
    REQUIRE_FALSE(result.ok());
    CHECK_THAT(result.error().message, !Catch::Contains(PveFake::kSecret));
    return result.error();
}

// The first answer of `ask` that `done` accepts, asked again for up to
// kTaskTimeout (plenty on a loaded CI host); the last answer otherwise.
template <class Ask, class Done>
auto poll_until(Ask ask, Done done) {
    const auto deadline = std::chrono::steady_clock::now() + kTaskTimeout;
    auto answer = ask();
    while (!done(answer) && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(50ms);
        answer = ask();
    }
    return answer;
}

void clone_vm_101(PveClient& client) {
    Result<PveTaskEnd> cloned = client.run_task(
        PveMethod::kPost, kTemplate + "/clone",
        PveParams().set_integer("newid", 101).set("name", "disksweep-run-1"), kTaskTimeout);
    INFO((cloned.ok() ? "" : cloned.error().message));
    REQUIRE(cloned.ok());
    CHECK(cloned->exitstatus == "OK");
}

// ---- authentication -----------------------------------------------------------------------------

TEST_CASE("a valid token is accepted", "[proxmox][fake]") {
    PveFake fake;
    auto client = client_for(fake.pinned_options());
    Result<Json> version = client->get("/version");
    INFO((version.ok() ? "" : version.error().message));
    REQUIRE(version.ok());
    CHECK((*version)["release"] == "8.4");
}

TEST_CASE("a wrong token secret gets PVE's 401, and the secret stays out of the error",
          "[proxmox][fake]") {
    PveFake fake;
    PveClientOptions options = fake.pinned_options();
    options.token_secret_file = fake.secret_file("00000000-wrong-secret-0000");
    auto client = client_for(options);
    Error error = failure_of(client->get("/version"));
    CHECK(error.code == errc::kHypervisor);
    CHECK_THAT(error.message, Catch::Contains("HTTP 401") &&
                                  Catch::Contains("authentication failure") &&
                                  Catch::Contains("GET /version"));
    CHECK_THAT(error.message, !Catch::Contains("00000000-wrong-secret-0000"));
}

TEST_CASE("a token secret file others may read is refused before any request", "[proxmox]") {
    char pattern[] = "/tmp/disksweep-pve-secret-XXXXXX";
    int fd = ::mkstemp(pattern);
    REQUIRE(fd >= 0);
    REQUIRE(::write(fd, "s3cret-value\n", 13) == 13);
    ::close(fd);
    PveClientOptions options;
    options.host = "127.0.0.1";
    options.token_id = PveFake::kTokenId;
    options.token_secret_file = pattern;
    options.fingerprint = std::string(95, 'A');
    for (int i = 2; i < 95; i += 3) options.fingerprint[i] = ':';
    for (mode_t mode : {0644, 0640, 0604, 0700}) {
        REQUIRE(::chmod(pattern, mode) == 0);
        Result<std::unique_ptr<PveClient>> client = PveClient::create(options);
        REQUIRE_FALSE(client.ok());
        CHECK(client.error().code == errc::kInvalidArgument);
        CHECK_THAT(client.error().message, Catch::Contains("0600 or stricter"));
        CHECK_THAT(client.error().message, !Catch::Contains("s3cret-value"));
    }
    for (mode_t mode : {0600, 0400}) {
        REQUIRE(::chmod(pattern, mode) == 0);
        CHECK(PveClient::create(options).ok());
    }
    ::unlink(pattern);
}

TEST_CASE("a server echoing the token secret does not get it into the error", "[proxmox][fake]") {
    PveFake fake(
        {"--fault", std::string(R"json({"path": "/version", "status": 500, "message": )json") +
                        "\"bad token " + PveFake::kSecret + "\"}"});
    Error error = failure_of(client_for(fake.pinned_options())->get("/version"));
    CHECK_THAT(error.message, Catch::Contains("bad token [token secret]"));
}

// ---- TLS ----------------------------------------------------------------------------------------

TEST_CASE("the pinned fingerprint of the server's certificate is accepted without a CA",
          "[proxmox][fake]") {
    PveFake fake;
    PveClientOptions options = fake.pinned_options();
    REQUIRE(options.ca_file.empty());
    CHECK(client_for(options)->get("/version").ok());
}

TEST_CASE("a certificate that does not match the pin is refused", "[proxmox][fake]") {
    PveFake fake;
    PveClientOptions options = fake.pinned_options();
    options.fingerprint = fake.other_fingerprint();
    Error error = failure_of(client_for(options)->get("/version"));
    CHECK(error.code == errc::kHypervisor);
    CHECK_THAT(error.message, Catch::Contains("TLS refused") &&
                                  Catch::Contains(fake.fingerprint()) &&
                                  Catch::Contains("not the pinned " + fake.other_fingerprint()));
}

TEST_CASE("a server presenting another certificate is refused, pinned or CA-verified",
          "[proxmox][fake]") {
    PveFake fake({"--tls-fault"});
    PveClientOptions pinned = fake.pinned_options();
    CHECK_THAT(failure_of(client_for(pinned)->get("/version")).message,
               Catch::Contains("fingerprint " + fake.other_fingerprint()));
    PveClientOptions verified = pinned;
    verified.fingerprint.clear();
    verified.ca_file = fake.ca_file();
    CHECK_THAT(failure_of(client_for(verified)->get("/version")).message,
               Catch::Contains("not trusted by the CA file"));
}

TEST_CASE("a CA file verifies the server's chain and name", "[proxmox][fake]") {
    PveFake fake;
    PveClientOptions options = fake.pinned_options();
    options.fingerprint.clear();
    options.ca_file = fake.ca_file();
    CHECK(client_for(options)->get("/version").ok());
    options.fingerprint = fake.fingerprint();  // both: chain and pin
    CHECK(client_for(options)->get("/version").ok());
    options.host = "localhost";  // also named in the certificate
    CHECK(client_for(options)->get("/version").ok());
}

// ---- errors -------------------------------------------------------------------------------------

TEST_CASE("PVE's 400 errors map names every parameter with PVE's message", "[proxmox][fake]") {
    PveFake fake;
    auto client = client_for(fake.pinned_options());
    PveParams params;
    params.set_property_string("scsi1", PvePropertyString("local-lvm:4").set("cache", "fast"));
    params.set_flag("bogus", true);
    Error error = failure_of(client->post(kTemplate + "/config", params));
    CHECK(error.code == errc::kInvalidArgument);
    CHECK_THAT(error.message,
               Catch::Contains("HTTP 400") && Catch::Contains("Parameter verification failed"));
    CHECK_THAT(
        error.message,
        Catch::Contains("scsi1: invalid format - format error; scsi1.cache: value 'fast' does not "
                        "have a value in the enumeration 'none, writethrough, writeback, unsafe, "
                        "directsync'"));
    CHECK_THAT(error.message, Catch::Contains("bogus: property is not defined in schema"));
}

TEST_CASE("a made-up parameter the real schema would reject fails", "[proxmox][fake]") {
    PveFake fake;
    auto client = client_for(fake.pinned_options());
    Error error = failure_of(client->post(
        kTemplate + "/clone", PveParams().set_integer("newid", 101).set("linked", "1")));
    CHECK(error.code == errc::kInvalidArgument);
    CHECK_THAT(error.message, Catch::Contains("linked: property is not defined in schema"));
}

TEST_CASE("403 and 500 come back with PVE's message", "[proxmox][fake]") {
    const std::string forbidden_rule = R"json({"path": "/version", "status": 403,
        "message": "Permission check failed (/, Sys.Audit)"})json";
    const std::string broken_rule = R"json({"path": "/nodes", "status": 500,
        "message": "cluster not ready - no quorum?"})json";
    PveFake fake({"--fault", forbidden_rule, "--fault", broken_rule});
    auto client = client_for(fake.pinned_options());
    Error forbidden = failure_of(client->get("/version"));
    CHECK(forbidden.code == errc::kForbidden);
    CHECK_THAT(forbidden.message, Catch::Contains("HTTP 403 permission denied") &&
                                      Catch::Contains("Permission check failed (/, Sys.Audit)"));
    Error internal = failure_of(client->get("/nodes"));
    CHECK(internal.code == errc::kHypervisor);
    CHECK_THAT(internal.message, Catch::Contains("HTTP 500") && Catch::Contains("no quorum?"));
}

TEST_CASE("a PVE error of a real call carries PVE's message", "[proxmox][fake]") {
    PveFake fake;
    auto client = client_for(fake.pinned_options());
    Error error = failure_of(client->get(pve_path({"nodes", "pve1", "qemu", "4242", "config"})));
    CHECK_THAT(
        error.message,
        Catch::Contains("Configuration file 'nodes/pve1/qemu-server/4242.conf' does not exist"));
    Error unknown = failure_of(client->get("/nodes/pve1/bogus"));
    CHECK(unknown.code == errc::kUnsupported);
    CHECK_THAT(unknown.message, Catch::Contains("not implemented"));
}

TEST_CASE("a server slower than the timeout gives a timeout error", "[proxmox][fake]") {
    PveFake fake({"--fault", R"({"path": "/version", "delay": 5})"});
    PveClientOptions options = fake.pinned_options();
    options.request_timeout = 500ms;
    auto started = std::chrono::steady_clock::now();
    Error error = failure_of(client_for(options)->get("/version"));
    CHECK(error.code == errc::kTimeout);
    CHECK(std::chrono::steady_clock::now() - started < 3s);
}

TEST_CASE("nothing listening is unavailable", "[proxmox]") {
    int probe = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    REQUIRE(::bind(probe, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::getsockname(probe, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    ::close(probe);  // a port nobody listens on
    char secret[] = "/tmp/disksweep-pve-secret-XXXXXX";
    int fd = ::mkstemp(secret);
    REQUIRE(::write(fd, "x\n", 2) == 2);
    ::close(fd);
    PveClientOptions options;
    options.host = "127.0.0.1";
    options.port = ntohs(address.sin_port);
    options.token_id = PveFake::kTokenId;
    options.token_secret_file = secret;
    options.ca_file = "/nonexistent-ca.pem";
    Error error = failure_of(client_for(options)->get("/version"));
    CHECK(error.code == errc::kUnavailable);
    ::unlink(secret);
}

// ---- tasks --------------------------------------------------------------------------------------

TEST_CASE("a task that succeeds is followed to its end", "[proxmox][fake]") {
    PveFake fake;
    auto client = client_for(fake.pinned_options());
    clone_vm_101(*client);
    Result<Json> config = client->get(kVm + "/config");
    REQUIRE(config.ok());
    CHECK((*config)["name"] == "disksweep-run-1");
}

TEST_CASE("a task ending with warnings is a success that counts them", "[proxmox][fake]") {
    PveFake fake;
    auto client = client_for(fake.pinned_options());
    clone_vm_101(*client);
    // iothread on a SCSI disk without virtio-scsi-single: PVE starts the VM and warns.
    PveParams config;
    config.set("scsihw", "virtio-scsi-pci");
    config.set_property_string("scsi1",
                               PvePropertyString("local-lvm:4").set_flag("iothread", true));
    REQUIRE(client->run_task(PveMethod::kPost, kVm + "/config", config, kTaskTimeout).ok());
    Result<PveTaskEnd> started =
        client->run_task(PveMethod::kPost, kVm + "/status/start", {}, kTaskTimeout);
    REQUIRE(started.ok());
    CHECK(started->exitstatus == "WARNINGS: 1");
    CHECK(started->warnings == 1);
}

TEST_CASE("a failed task is an error with the end of its log", "[proxmox][fake]") {
    std::string log_lines;
    for (int i = 1; i <= 30; ++i)
        log_lines += (i > 1 ? ", " : "") + ("\"copy line " + std::to_string(i) + "\"");
    PveFake fake(
        {"--fault", R"({"method": "POST", "path": "/nodes/*/qemu/*/clone", "task": {"exitstatus": )"
                    R"("clone failed: no space left on device", "log": [)" +
                        log_lines + "]}}"});
    auto client = client_for(fake.pinned_options());
    Result<PveTaskEnd> cloned =
        client->run_task(PveMethod::kPost, kTemplate + "/clone",
                         PveParams().set_integer("newid", 101), kTaskTimeout);
    REQUIRE_FALSE(cloned.ok());
    CHECK(cloned.error().code == errc::kHypervisor);
    CHECK_THAT(cloned.error().message,
               Catch::Contains(
                   "PVE task qmclone 9000 on pve1 failed: clone failed: no space left on device") &&
                   Catch::Contains("copy line 30 | TASK ERROR: clone failed") &&
                   Catch::Contains("copy line 20") && !Catch::Contains("copy line 19 "));
}

TEST_CASE("a task still running at the deadline is a timeout", "[proxmox][fake]") {
    PveFake fake({"--task-seconds", "5"});
    auto client = client_for(fake.pinned_options());
    Result<Json> upid = client->post(kTemplate + "/clone", PveParams().set_integer("newid", 101));
    REQUIRE(upid.ok());
    Result<PveTaskEnd> end = client->wait_for_task(upid->get<std::string>(), 300ms);
    REQUIRE_FALSE(end.ok());
    CHECK(end.error().code == errc::kTimeout);
    CHECK_THAT(end.error().message, Catch::Contains("still running"));
}

// ---- what requests look like on the wire --------------------------------------------------------

TEST_CASE("a data disk's property string passes the schema and reads back as PVE prints it",
          "[proxmox][fake]") {
    PveFake fake;
    auto client = client_for(fake.pinned_options());
    clone_vm_101(*client);
    PvePropertyString disk("local-lvm:4");
    disk.set("cache", "unsafe")
        .set("discard", "on")
        .set_flag("ssd", true)
        .set_flag("iothread", true);
    disk.set("aio", "io_uring").set_flag("detect_zeroes", true).set_number("mbps_rd", 12.5);
    disk.set_integer("iops_wr", 500);
    PveParams params;
    params.set("scsihw", "virtio-scsi-single").set_property_string("scsi1", disk);
    Result<PveTaskEnd> applied =
        client->run_task(PveMethod::kPost, kVm + "/config", params, kTaskTimeout);
    INFO((applied.ok() ? "" : applied.error().message));
    REQUIRE(applied.ok());
    CHECK(applied->exitstatus == "OK");
    Result<Json> config = client->get(kVm + "/config");
    REQUIRE(config.ok());
    CHECK(
        (*config)["scsi1"] ==
        "local-lvm:vm-101-disk-1,aio=io_uring,cache=unsafe,detect_zeroes=1,discard=on,iops_wr=500,"
        "iothread=1,mbps_rd=12.5,size=4G,ssd=1");
    CHECK((*config)["scsihw"] == "virtio-scsi-single");
}

TEST_CASE("an array parameter reaches the guest as the command's argv", "[proxmox][fake]") {
    PveFake fake;
    auto client = client_for(fake.pinned_options());
    clone_vm_101(*client);
    REQUIRE(client->run_task(PveMethod::kPost, kVm + "/status/start", {}, kTaskTimeout).ok());
    Result<Json> ping = poll_until([&] { return client->post(kVm + "/agent/ping"); },
                                   [](const Result<Json>& answer) { return answer.ok(); });
    REQUIRE(ping.ok());
    Result<Json> started = client->post(
        kVm + "/agent/exec", PveParams().set_array("command", {"echo", "two words", "x&y=z"}));
    REQUIRE(started.ok());
    PveParams pid = PveParams().set_integer("pid", (*started)["pid"].get<std::int64_t>());
    Result<Json> status = poll_until(
        [&] { return client->get(kVm + "/agent/exec-status", pid); },
        [](const Result<Json>& answer) { return !answer.ok() || (*answer)["exited"] != 0; });
    REQUIRE(status.ok());
    CHECK((*status)["exited"] == 1);
    CHECK((*status)["out-data"] == "two words x&y=z\n");
    // exec-status answers `exited` once; the pid is then forgotten.
    CHECK_THAT(failure_of(client->get(kVm + "/agent/exec-status", pid)).message,
               Catch::Contains("Invalid parameter 'pid'"));
}

}  // namespace
}  // namespace ds

namespace ds {
namespace {

// Issue 16, defect 1: PVE decodes a form with split(/=/), so `content=`
// arrived without its value and PVE answered 400 "content: property is
// missing and it is not optional". Bodies are JSON now, and an empty value
// arrives as it is. The fake decodes forms as pve-http-server does, so this
// fails with a form body.
TEST_CASE("an empty value in a body reaches PVE: agent/file-write of an empty file",
          "[proxmox][fake]") {
    PveFake fake;
    auto client = client_for(fake.pinned_options());
    clone_vm_101(*client);
    REQUIRE(client->run_task(PveMethod::kPost, kVm + "/status/start", {}, kTaskTimeout).ok());
    Result<Json> ping = poll_until([&] { return client->post(kVm + "/agent/ping"); },
                                   [](const Result<Json>& answer) { return answer.ok(); });
    REQUIRE(ping.ok());
    Result<Json> written = client->post(kVm + "/agent/file-write",
                                        PveParams().set("file", "/run/empty").set("content", ""));
    INFO((written.ok() ? "" : written.error().message + "\n" + fake.log()));
    REQUIRE(written.ok());
    Result<Json> read =
        client->get(kVm + "/agent/file-read", PveParams().set("file", "/run/empty"));
    REQUIRE(read.ok());
    CHECK((*read)["content"] == "");
    // In a query string the same value cannot be sent: refused before the call.
    Error refused = failure_of(client->get(kVm + "/agent/file-read", PveParams().set("file", "")));
    CHECK(refused.code == errc::kInvalidArgument);
    CHECK_THAT(refused.message, Catch::Contains("'file'"));
}

}  // namespace
}  // namespace ds
