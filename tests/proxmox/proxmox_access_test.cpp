// The Proxmox backend with least-privilege tokens, on PVE 8.4 and 9.1
// (issue 32): the fake follows each release's permission code
// (pve_fake/access.py), and the role under test is built from the daemon's
// own table (pve_version.h), so the two cannot drift apart unnoticed.
//  * a token with exactly the release's role passes the preflight, runs a
//    VM, reads every level back and destroys it, with no request PVE would
//    refuse;
//  * the same role without any one privilege: a required one is refused by
//    the preflight, naming it, its path and the pveum lines that grant it;
//    one only a verification level needs is not, and that level is then
//    reported not checked without asking PVE;
//  * PVE 9.1 refuses the 8.4 role (VM.Monitor no longer exists), a release
//    disksweep does not know is refused, and a 403 during a run ends the
//    agent's wait at once.
// One fake per release serves every token (the access file holds them all).
#include <catch2/catch.hpp>
#include <chrono>
#include <map>

#include "daemon/backends/hypervisor/proxmox/proxmox_hypervisor.h"
#include "proxmox/pve_fake_fixture.h"

namespace ds {
namespace {

using test::FakeRelease;
using test::LeastPrivilegeToken;
using test::PveFake;
using namespace std::chrono_literals;

constexpr int kVmidMin = 5000;
constexpr const char* kFullToken = "full";

std::string without_token(const std::string& privilege) {
    return "without-" + privilege;
}

// The release's whole role for kFullToken, and one token per privilege of
// it that lacks just that one.
std::vector<LeastPrivilegeToken> role_tokens(const PveRelease& rules) {
    std::vector<LeastPrivilegeToken> tokens = {{kFullToken, {}}};
    for (const std::string& privilege : test::least_privilege_role(rules))
        tokens.push_back({without_token(privilege), {privilege}});
    return tokens;
}

ProxmoxHypervisorOptions hypervisor_options() {
    ProxmoxHypervisorOptions options;
    options.node = "pve1";
    options.template_vmid = 9000;
    options.vmid_min = kVmidMin;
    options.vmid_max = kVmidMin + 2;
    options.task_timeout = 60s;
    options.agent_poll_interval = 50ms;
    return options;
}

std::unique_ptr<ProxmoxHypervisor> hypervisor_as(const PveFake& fake, const std::string& token) {
    auto client = PveClient::create(fake.pinned_options(token));
    REQUIRE(client.ok());
    auto made = ProxmoxHypervisor::create(std::move(client).value(), hypervisor_options());
    REQUIRE(made.ok());
    return std::move(made).value();
}

// cache=none, the study's scsi-single disk, throttled (on 9.1 the limits
// are out of `info`'s reach: listed unseen).
VmRequest throttled_request(const std::string& name) {
    VmRequest request;
    request.name = name;
    request.config.hypervisor = "proxmox";
    request.config.bus = Bus::kScsiSingle;
    request.config.cache = CacheMode::kNone;
    request.config.discard = true;
    request.config.ssd = true;
    request.config.iothread = true;
    request.config.iops_limit = 500;
    request.data_disk = HypervisorAllocatedDisk{test::kRoleStorage, 1ull << 30};
    request.vcpus = 1;
    request.memory_mib = 512;
    return request;
}

// Starts a VM as `hypervisor`, returns its applied settings, destroys it.
Json run_vm(ProxmoxHypervisor& hypervisor, const std::string& name) {
    const Status started = hypervisor.start_vm(throttled_request(name));
    INFO((started.ok() ? "" : started.error().message));
    REQUIRE(started.ok());
    auto applied = hypervisor.applied_settings(name);
    INFO((applied.ok() ? "" : applied.error().message));
    REQUIRE(applied.ok());
    CHECK(hypervisor.destroy_vm(name).ok());
    return std::move(applied).value();
}

void check_levels_read(const Json& applied, FakeRelease release) {
    INFO(applied.dump(2));
    CHECK(applied["levels"]["domain_xml"]["checked"] == true);
    CHECK(applied["levels"]["qemu_info_block"]["checked"] == true);
    CHECK(applied["image_format"] == "raw");
    const Json& qemu = applied["qemu_info_block"];
    CHECK(qemu["cache"] == "none");
    CHECK(qemu["image_format"] == "raw");
    if (release == FakeRelease::k9_1) {
        // -blockdev: `info block -n` read too; the throttle group's limits,
        // aio and the IO thread are shown by no `info` command.
        CHECK_THAT(applied["levels"]["qemu_info_block"]["source"].get<std::string>(),
                   Catch::Contains("info block -n"));
        for (const char* unseen : {"iops_limit", "bandwidth_limit", "aio", "iothread"})
            CHECK(qemu["unseen"].contains(unseen));
        CHECK_FALSE(qemu.contains("iops_limit"));
    } else {
        CHECK(qemu["iops_limit"] == 500);
        CHECK_FALSE(qemu.value("unseen", Json::object()).contains("iops_limit"));
    }
}

// The table's first row for `privilege` (its first alternative); its
// string_views are the table's own, static.
PvePrivilege row_of(const PveRelease& rules, const std::string& privilege) {
    for (const PvePrivilege& row : pve_privileges(rules)) {
        if (row.privileges.substr(0, row.privileges.find('|')) == privilege) return row;
    }
    FAIL("the table has no row for " << privilege);
    return {};
}

std::string path_of(PvePathRole role) {
    switch (role) {
        case PvePathRole::kTemplate:
            return "/vms/9000";
        case PvePathRole::kRunVms:
            return "/vms/" + std::to_string(kVmidMin);
        case PvePathRole::kStorage:
            return std::string("/storage/") + test::kRoleStorage;
        case PvePathRole::kBridge:
            return std::string("/sdn/zones/localnetwork/") + test::kRoleBridge;
    }
    return "";
}

// Where the report's pveum lines grant it: the ids through /vms.
std::string grant_path_of(PvePathRole role) {
    return role == PvePathRole::kTemplate || role == PvePathRole::kRunVms ? "/vms" : path_of(role);
}

void check_refused(const Status& access, const PvePrivilege& row, const std::string& token_id) {
    REQUIRE_FALSE(access.ok());
    const std::string& message = access.error().message;
    INFO(message);
    CHECK(access.error().code == errc::kForbidden);
    CHECK_THAT(message, Catch::Contains(std::string(row.privileges) + " on " + path_of(row.role)));
    CHECK_THAT(message, Catch::Contains("pveum role modify DiskSweep --append 1 --privs"));
    CHECK_THAT(message, Catch::Contains("pveum acl modify " + grant_path_of(row.role) +
                                        " --tokens '" + token_id + "' --roles DiskSweep"));
}

// A token lacking a privilege only verification needs: admitted, and a VM
// of it runs without a request PVE refuses; without the monitor's privilege the QEMU level is
// reported forbidden and the monitor is never asked.
void check_admitted(const PveFake& fake, ProxmoxHypervisor& hypervisor, const PveRelease& rules,
                    const std::string& privilege) {
    const std::size_t monitor_calls = fake.requests_to("/monitor").size();
    const std::size_t refused = fake.requests_answered(403).size();
    const Json applied = run_vm(hypervisor, "disksweep-t-" + without_token(privilege));
    INFO(applied.dump(2));
    INFO("refused: " << Json(fake.requests_answered(403)).dump(2));
    CHECK(fake.requests_answered(403).size() == refused);  // nothing asked that PVE refuses
    if (rules.monitor_privilege.starts_with(privilege)) {
        const Json& level = applied["levels"]["qemu_info_block"];
        CHECK(level["checked"] == false);
        CHECK(level["forbidden"] == true);
        CHECK_THAT(level["reason"].get<std::string>(), Catch::Contains(privilege));
        CHECK_FALSE(applied.contains("qemu_info_block"));
        CHECK(fake.requests_to("/monitor").size() == monitor_calls);
    } else {
        CHECK(applied["levels"]["qemu_info_block"]["checked"] == true);
    }
}

}  // namespace

TEST_CASE("proxmox least privilege: the release's role sweeps, each privilege less is named",
          "[proxmox][fake][access]") {
    const FakeRelease release = GENERATE(FakeRelease::k8_4, FakeRelease::k9_1);
    const PveRelease& rules = test::release_rules(release);
    INFO("PVE " << test::fake_version(release));
    PveFake fake(test::least_privilege_fake(release, role_tokens(rules)));

    // Exactly the role: admitted, a VM runs and reads back at every level,
    // and PVE refused nothing.
    const LeastPrivilegeToken full{kFullToken, {}};
    auto hypervisor = hypervisor_as(fake, full.token_id());
    const Status admitted = hypervisor->check_access({test::kRoleStorage});
    INFO((admitted.ok() ? "" : admitted.error().message));
    REQUIRE(admitted.ok());
    check_levels_read(run_vm(*hypervisor, "disksweep-t-full"), release);
    INFO("refused: " << Json(fake.requests_answered(403)).dump(2));
    CHECK(fake.requests_answered(403).empty());

    std::map<std::string, std::string> refusals;
    for (const std::string& privilege : test::least_privilege_role(rules)) {
        const LeastPrivilegeToken token{without_token(privilege), {privilege}};
        INFO("token without " << privilege);
        auto lacking = hypervisor_as(fake, token.token_id());
        const Status access = lacking->check_access({test::kRoleStorage});
        const PvePrivilege row = row_of(rules, privilege);
        if (row.need == PveNeed::kRequired) {
            check_refused(access, row, token.token_id());
            if (!access.ok()) refusals[privilege] = access.error().message;
        } else {
            INFO((access.ok() ? "" : access.error().message));
            REQUIRE(access.ok());
            check_admitted(fake, *lacking, rules, privilege);
        }
    }
    // The issue's own check: on 9.x, no VM.GuestAgent.Unrestricted, no start.
    if (release == FakeRelease::k9_1) {
        CHECK_THAT(refusals["VM.GuestAgent.Unrestricted"],
                   Catch::Contains("VM.GuestAgent.Unrestricted on /vms/5000"));
    }
}

TEST_CASE("proxmox on PVE 9.1: the 8.4 role cannot be created (VM.Monitor is gone)",
          "[proxmox][fake][access]") {
    const PveRelease& rules_84 = test::release_rules(FakeRelease::k8_4);
    test::PveFakeOptions options =
        test::least_privilege_fake(FakeRelease::k9_1, {{kFullToken, {}}});
    options.access =
        test::least_privilege_access(test::least_privilege_role(rules_84), {{kFullToken, {}}});
    CHECK_THAT(PveFake::refusal(options),
               Catch::Contains("create role failed: invalid privilege 'VM.Monitor'"));
}

TEST_CASE("proxmox: a release disksweep does not know is refused at start, with the reason",
          "[proxmox][fake][access]") {
    PveFake fake(std::vector<std::string>{"--version-override", "7.4.3"});
    auto hypervisor = hypervisor_as(fake, PveFake::kTokenId);
    const Status access = hypervisor->check_access({test::kRoleStorage});
    REQUIRE_FALSE(access.ok());
    CHECK(access.error().code == errc::kUnsupported);
    CHECK_THAT(access.error().message, Catch::Contains("Proxmox VE 7.4 is not supported") &&
                                           Catch::Contains("8.4 and 9.x"));
    // The refusal stands before any run, too.
    const Status started = hypervisor->start_vm(throttled_request("disksweep-t-old"));
    REQUIRE_FALSE(started.ok());
    CHECK(started.error().code == errc::kUnsupported);
}

TEST_CASE("proxmox: a 403 on agent/ping ends the wait for the agent at once, naming it",
          "[proxmox][fake][access]") {
    test::PveFakeOptions options;
    options.release = FakeRelease::k9_1;
    options.extra_args = {"--fault", R"json({"method": "POST", "path": "/nodes/*/qemu/*/agent/ping",
        "status": 403, "message": "Permission check failed (/vms/5000, VM.GuestAgent.Audit|VM.GuestAgent.Unrestricted)"})json"};
    PveFake fake(options);
    auto hypervisor = hypervisor_as(fake, PveFake::kTokenId);
    REQUIRE(hypervisor->start_vm(throttled_request("disksweep-t-ping")).ok());
    const auto started = std::chrono::steady_clock::now();
    auto channel = hypervisor->open_agent_channel("disksweep-t-ping",
                                                  std::chrono::steady_clock::now() + 60s, nullptr);
    const auto waited = std::chrono::steady_clock::now() - started;
    REQUIRE_FALSE(channel.ok());
    CHECK(channel.error().code == errc::kForbidden);
    CHECK_THAT(channel.error().message,
               Catch::Contains("/vms/5000, VM.GuestAgent.Audit|VM.GuestAgent.Unrestricted"));
    CHECK(waited < 5s);  // one refusal, not a boot timeout of retries
    CHECK(fake.requests_to("/agent/ping").size() == 1);
}

}  // namespace ds
