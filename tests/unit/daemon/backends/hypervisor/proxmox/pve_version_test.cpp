// The releases' table and the preflight (pve_version.h) against a scripted
// PVE: its /version and /access/permissions answers are the test's.
#include "daemon/backends/hypervisor/proxmox/pve_version.h"

#include <catch2/catch.hpp>
#include <map>
#include <set>

namespace ds {
namespace {

// PVE as far as the preflight asks it: a version and, per ACL path, the
// privileges the token holds there. Every path asked is remembered.
class ScriptedPve : public PveApi {
  public:
    ScriptedPve(std::string version, std::map<std::string, std::set<std::string>> held)
        : version_(std::move(version)), held_(std::move(held)) {}

    Result<Json> call(PveMethod method, std::string_view path, const PveParams& params) override {
        if (method != PveMethod::kGet) return make_error(errc::kUnsupported, "not scripted");
        if (path == "/version") {
            return Json{
                {"version", version_}, {"release", version_.substr(0, 3)}, {"repoid", "0123abcd"}};
        }
        if (path != "/access/permissions") return make_error(errc::kNotFound, std::string(path));
        auto body = params.encode_json();
        if (!body) return body.error();
        const std::string asked = Json::parse(*body).value("path", "");
        asked_.insert(asked);
        Json privileges = Json::object();
        for (const std::string& privilege : held_[asked]) privileges[privilege] = 1;
        return Json{{asked, privileges}};
    }

    std::set<std::string> asked_;

  private:
    std::string version_;
    std::map<std::string, std::set<std::string>> held_;
};

const PvePreflightTargets kTargets{"pve1", 9000, 5000, 5099, {"local-lvm"}, {"vmbr0"}};

// Every privilege the release's table asks for, on the paths of kTargets.
std::map<std::string, std::set<std::string>> all_needed(const PveRelease& release) {
    std::map<std::string, std::set<std::string>> held;
    const std::map<PvePathRole, std::vector<std::string>> paths = {
        {PvePathRole::kTemplate, {"/vms/9000"}},
        {PvePathRole::kRunVms, {"/vms/5000", "/vms/5099"}},
        {PvePathRole::kStorage, {"/storage/local-lvm"}},
        {PvePathRole::kBridge, {"/sdn/zones/localnetwork/vmbr0"}}};
    for (const PvePrivilege& need : pve_privileges(release)) {
        const std::string first(need.privileges.substr(0, need.privileges.find('|')));
        for (const std::string& path : paths.at(need.role)) held[path].insert(first);
    }
    return held;
}

const PveRelease& release_named(std::string_view name) {
    for (const PveRelease& release : pve_releases()) {
        if (release.name == name) return release;
    }
    FAIL("no release " << name);
    return pve_releases().front();
}

}  // namespace

TEST_CASE("pve_version: 8.4 and 9.x are supported, other releases refused with the reason",
          "[proxmox][pve_version]") {
    CHECK((*pve_release_of(Json{{"version", "8.4.1"}, {"release", "8.4"}}))->name == "8.4");
    CHECK((*pve_release_of(Json{{"version", "9.1.2"}, {"release", "9.1"}}))->name == "9.x");
    CHECK((*pve_release_of(Json{{"version", "9.0.3"}}))->name == "9.x");
    for (const char* other : {"8.3", "7.4", "10.0", "nine"}) {
        auto refused = pve_release_of(Json{{"release", other}});
        REQUIRE_FALSE(refused.ok());
        CHECK(refused.error().code == errc::kUnsupported);
        CHECK_THAT(refused.error().message,
                   Catch::Contains(other) && Catch::Contains("8.4 and 9.x"));
    }
}

TEST_CASE("pve_version: the releases differ where PVE's code does", "[proxmox][pve_version]") {
    const PveRelease& pve8 = release_named("8.4");
    const PveRelease& pve9 = release_named("9.x");
    const std::string role8 = pve_role_command(pve8);
    const std::string role9 = pve_role_command(pve9);
    CHECK_THAT(role8, Catch::Contains("VM.Monitor"));
    CHECK_THAT(role9, !Catch::Contains("VM.Monitor"));
    CHECK_THAT(role9,
               Catch::Contains("VM.GuestAgent.Unrestricted") && Catch::Contains("Sys.Audit"));
    for (const std::string& role : {role8, role9}) CHECK_THAT(role, Catch::Contains("SDN.Use"));
    CHECK(pve8.drive_model == PveDriveModel::kDrive);
    CHECK(pve9.drive_model == PveDriveModel::kBlockdev);
    CHECK_FALSE(pve8.file_read_has_offset);
    CHECK(pve9.file_read_has_offset);
}

TEST_CASE("pve_version: a token with exactly the table's privileges passes the preflight",
          "[proxmox][pve_version]") {
    for (const char* version : {"8.4.1", "9.1.2"}) {
        auto release = pve_release_of(Json{{"version", version}});
        REQUIRE(release.ok());
        ScriptedPve pve(version, all_needed(**release));
        auto preflight = pve_preflight(pve, kTargets);
        REQUIRE(preflight.ok());
        CHECK(preflight->ready());
        CHECK(preflight->missing.empty());
        CHECK(preflight->monitor_allowed);
        CHECK(pve_preflight_report(*preflight, "disksweep@pve!sweeps").empty());
        CHECK(pve.asked_ == std::set<std::string>{"/vms/9000", "/vms/5000", "/vms/5099",
                                                  "/storage/local-lvm",
                                                  "/sdn/zones/localnetwork/vmbr0"});
    }
}

TEST_CASE("pve_version: each privilege taken away is named, with the pveum lines that grant it",
          "[proxmox][pve_version]") {
    for (const char* version : {"8.4.1", "9.1.2"}) {
        const PveRelease& release = **pve_release_of(Json{{"version", version}});
        for (const PvePrivilege& need : pve_privileges(release)) {
            const std::string privilege(need.privileges.substr(0, need.privileges.find('|')));
            auto held = all_needed(release);
            for (auto& [path, privileges] : held) privileges.erase(privilege);
            ScriptedPve pve(version, held);
            auto preflight = pve_preflight(pve, kTargets);
            REQUIRE(preflight.ok());
            CAPTURE(version, privilege);
            REQUIRE_FALSE(preflight->missing.empty());
            CHECK(preflight->ready() == (need.need == PveNeed::kForVerifying));
            const std::string report = pve_preflight_report(*preflight, "disksweep@pve!sweeps");
            CHECK_THAT(report, Catch::Contains(std::string(need.privileges)));
            CHECK_THAT(report, Catch::Contains("pveum role modify DiskSweep --append 1 --privs \"" +
                                               privilege));
            CHECK_THAT(report,
                       Catch::Contains("--tokens 'disksweep@pve!sweeps' --roles DiskSweep"));
            CHECK_THAT(report, Catch::Contains("--users disksweep@pve"));
        }
    }
}

TEST_CASE(
    "pve_version: without the monitor privilege the QEMU level is not allowed, but runs may go",
    "[proxmox][pve_version]") {
    const PveRelease& pve9 = **pve_release_of(Json{{"version", "9.1.2"}});
    auto held = all_needed(pve9);
    held["/vms/5099"].erase("Sys.Audit");
    ScriptedPve pve("9.1.2", held);
    auto preflight = pve_preflight(pve, kTargets);
    REQUIRE(preflight.ok());
    CHECK(preflight->ready());
    CHECK_FALSE(preflight->monitor_allowed);
    CHECK_THAT(preflight->monitor_reason, Catch::Contains("Sys.Audit|Sys.Modify on /vms/5099"));
}

TEST_CASE("pve_version: an unsupported release is refused before any permission is asked",
          "[proxmox][pve_version]") {
    ScriptedPve pve("7.4.3", {});
    auto preflight = pve_preflight(pve, kTargets);
    REQUIRE_FALSE(preflight.ok());
    CHECK(preflight.error().code == errc::kUnsupported);
    CHECK(pve.asked_.empty());
}

}  // namespace ds
