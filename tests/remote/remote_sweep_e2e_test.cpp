// Real sweeps on two libvirt hosts at once (issue 20): the daemon's own
// embedded driver ("local") and the remote test libvirtd ("remote",
// qemu+tcp, fixture remote/libvirtd_up), which disksweepd reaches only
// through libvirt's API: the agent channel and console are streams, the
// volumes and the guest image live in the remote pool, which this process
// cannot see as files. The test reads the remote host through libvirt's C
// API too, as the daemon does.
#include <SQLiteCpp/SQLiteCpp.h>
#include <libvirt/libvirt.h>
#include <signal.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/json_fields.h"
#include "support/daemon_fixture.h"
#include "support/remote_libvirtd.h"
#include "support/temp_dir.h"

using ds::Json;
using ds::test::DaemonFixture;
using ds::test::TestRemoteLibvirtd;

namespace {

constexpr const char* kRemoteHost = "remote";

// Skips without a guest image (DISKSWEEP_TEST_IMAGE_DIR).
void require_image() {
    if (!std::filesystem::exists(ds::test::test_image_dir() + "/root.img")) {
        ds::test::skip_test("no guest image: set DISKSWEEP_TEST_IMAGE_DIR");
    }
}

std::vector<std::string> daemon_args(const TestRemoteLibvirtd& remote) {
    return {"--image-dir",
            ds::test::test_image_dir(),
            "--accel",
            "tcg",
            "--boot-timeout",
            "180",
            "--host",
            std::string("libvirt:") + kRemoteHost + ",uri=" + remote.uri + ",pool=" + remote.pool};
}

// Two configurations; `runtime` seconds of fio each; `rounds` rounds.
std::string two_host_spec(const std::string& name, int rounds, const std::string& runtime) {
    return "name = \"" + name + "\"\nrepetitions = " + std::to_string(rounds) +
           "\nseed = 3\n"
           "[matrix]\nbus = \"virtio-blk\"\ncache = [\"none\", \"unsafe\"]\n"
           "filesystem = \"ext4\"\ndisk_size = \"512m\"\n"
           "[[workload]]\nname = \"randrw\"\nkind = \"fio\"\nrw = \"randrw\"\nbs = \"4k\"\n"
           "direct = true\nioengine = \"libaio\"\niodepth = 8\nnumjobs = 1\nsize = \"32m\"\n"
           "runtime = \"" +
           runtime + "\"\ntime_based = true\n";
}

std::string write_spec(const ds::test::TempDir& dir, const std::string& text) {
    const std::string path = (dir.path() / "spec.toml").string();
    std::ofstream(path) << text;
    return path;
}

// The remote host as libvirt shows it: its domains and pool volumes whose
// names start with `prefix`.
struct RemoteView {
    std::vector<std::string> domains;
    std::vector<std::string> volumes;
    std::string pool_path;
};

RemoteView look_at(const TestRemoteLibvirtd& remote, const std::string& prefix) {
    RemoteView view;
    virConnectPtr connection = virConnectOpen(remote.uri.c_str());
    REQUIRE(connection != nullptr);
    virDomainPtr* domains = nullptr;
    const int domain_count = virConnectListAllDomains(connection, &domains, 0);
    for (int i = 0; i < domain_count; ++i) {
        const std::string name = virDomainGetName(domains[i]);
        if (name.starts_with(prefix)) view.domains.push_back(name);
        virDomainFree(domains[i]);
    }
    free(domains);
    virStoragePoolPtr pool = virStoragePoolLookupByName(connection, remote.pool.c_str());
    REQUIRE(pool != nullptr);
    virStoragePoolRefresh(pool, 0);
    virStorageVolPtr* volumes = nullptr;
    const int volume_count = virStoragePoolListAllVolumes(pool, &volumes, 0);
    for (int i = 0; i < volume_count; ++i) {
        const std::string name = virStorageVolGetName(volumes[i]);
        if (name.starts_with(prefix)) view.volumes.push_back(name);
        virStorageVolFree(volumes[i]);
    }
    free(volumes);
    virStoragePoolFree(pool);
    virConnectClose(connection);
    return view;
}

std::string instance_prefix(const DaemonFixture& daemon) {
    auto status = daemon.hostctl({"--json", "status"});
    REQUIRE(status.exit_code == 0);
    return Json::parse(status.out)["instance"]["resource_prefix"].get<std::string>();
}

bool is_image_volume(const std::string& volume, const std::string& prefix) {
    return volume.starts_with(prefix + "img-");
}

std::vector<std::string> run_volumes(const RemoteView& view, const std::string& prefix) {
    std::vector<std::string> out;
    for (const auto& volume : view.volumes) {
        if (!is_image_volume(volume, prefix)) out.push_back(volume);
    }
    return out;
}

struct RunRow {
    std::int64_t id;
    std::string status;
    std::string reason;
    std::string host;
    std::string started;
    std::string finished;
    std::string volume_path;
    std::string console_log;
};

std::vector<RunRow> runs_of(const DaemonFixture& daemon, int sweep_id) {
    SQLite::Database db(daemon.database(), SQLite::OPEN_READONLY);
    SQLite::Statement query(
        db,
        "SELECT id, status, coalesce(failure_reason, ''), "
        "coalesce(json_extract(versions_json, '$.host'), ''), coalesce(started_at, ''), "
        "coalesce(finished_at, ''), "
        "coalesce(json_extract(applied_settings_json, '$.storage.source.path'), ''), "
        "coalesce(console_log, '') FROM runs WHERE sweep_id = ? AND superseded_by IS NULL ORDER BY "
        "id");
    query.bind(1, sweep_id);
    std::vector<RunRow> rows;
    while (query.executeStep()) {
        rows.push_back({query.getColumn(0).getInt64(), query.getColumn(1).getString(),
                        query.getColumn(2).getString(), query.getColumn(3).getString(),
                        query.getColumn(4).getString(), query.getColumn(5).getString(),
                        query.getColumn(6).getString(), query.getColumn(7).getString()});
    }
    return rows;
}

// Polls `done` every second for up to `limit`.
template <typename Done>
bool wait_for(Done done, std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        if (done()) return true;
        std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    return done();
}

// The remote test host, a daemon with it as host `remote`, and a two-host
// spec (two_host_spec) in a file of its own. Skips without either.
struct TwoHostDaemon {
    TestRemoteLibvirtd remote = ds::test::test_remote_libvirtd_or_skip();
    bool image_present = (require_image(), true);
    DaemonFixture daemon{daemon_args(remote)};
    std::string prefix;
    ds::test::TempDir dir;
    std::string spec;

    TwoHostDaemon(const std::string& name, int rounds, const std::string& runtime) {
        REQUIRE(daemon.ready());
        prefix = instance_prefix(daemon);
        spec = write_spec(dir, two_host_spec(name, rounds, runtime));
    }
};

}  // namespace

TEST_CASE(
    "a sweep runs on the local and the remote host at once, each result names its "
    "host, and the remote host's volumes and image stay in its pool",
    "[remote][e2e]") {
    TwoHostDaemon two("two-hosts", 2, "4s");
    const TestRemoteLibvirtd& remote = two.remote;
    DaemonFixture& daemon = two.daemon;
    const std::string& prefix = two.prefix;
    const std::string& spec = two.spec;

    auto submitted = daemon.hostctl({"sweep", "submit", spec, "--wait"}, std::chrono::seconds(900));
    INFO(submitted.out << submitted.err << daemon.log());
    REQUIRE(submitted.exit_code == 0);

    const auto runs = runs_of(daemon, 1);
    REQUIRE(runs.size() == 4);
    std::map<std::string, std::vector<RunRow>> by_host;
    for (const RunRow& run : runs) {
        INFO("run " << run.id << ": " << run.reason);
        CHECK(run.status == "succeeded");
        by_host[run.host].push_back(run);
    }
    // Every result names its host, and both hosts ran some.
    REQUIRE(by_host.size() == 2);
    REQUIRE(by_host.count("local") == 1);
    REQUIRE(by_host.count(kRemoteHost) == 1);
    // The two hosts ran at the same time (ISO-8601 UTC compares as text).
    bool overlapped = false;
    for (const RunRow& here : by_host["local"]) {
        for (const RunRow& there : by_host[kRemoteHost]) {
            overlapped |= here.started < there.finished && there.started < here.finished;
        }
    }
    CHECK(overlapped);
    // The remote runs' volumes were in the remote pool: paths this machine
    // does not have; nothing of theirs in the daemon's own volume directory.
    const RemoteView after = look_at(remote, prefix);
    for (const RunRow& run : by_host[kRemoteHost]) {
        CHECK_FALSE(run.volume_path.empty());
        CHECK_FALSE(std::filesystem::exists(run.volume_path));
    }
    // Teardown left no guest and no run volume there; the guest image stays
    // (uploaded once, reused by the next sweep).
    CHECK(after.domains.empty());
    CHECK(run_volumes(after, prefix).empty());
    int image_volumes = 0;
    for (const auto& volume : after.volumes) image_volumes += is_image_volume(volume, prefix);
    CHECK(image_volumes == 4);  // kernel, initrd, root disk, done marker
    // Compare keeps the hosts apart: each row is of one host.
    auto compared = daemon.hostctl({"results", "compare", "1", "--json"});
    REQUIRE(compared.exit_code == 0);
    const Json comparison = Json::parse(compared.out);
    std::map<std::string, int> rows_per_host;
    for (const Json& row : comparison["rows"]) {
        const Json& partition = comparison["partitions"][row["partition"].get<std::size_t>()];
        ++rows_per_host[partition.value("host", "")];
    }
    CHECK(rows_per_host["local"] == 2);
    CHECK(rows_per_host[kRemoteHost] == 2);
}

TEST_CASE(
    "killing the remote libvirtd mid-run fails only the runs there, and once it is "
    "back nothing of them is left there",
    "[remote][e2e]") {
    TwoHostDaemon two("remote-dies", 2, "30s");
    const TestRemoteLibvirtd& remote = two.remote;
    DaemonFixture& daemon = two.daemon;
    const std::string& prefix = two.prefix;
    const std::string& spec = two.spec;
    auto submitted = daemon.hostctl({"sweep", "submit", spec});
    REQUIRE(submitted.exit_code == 0);

    // A guest runs there: let it boot into its workload, then kill libvirtd
    // (its guests survive it, as on a real host).
    REQUIRE(wait_for([&] { return !look_at(remote, prefix).domains.empty(); },
                     std::chrono::seconds(240)));
    std::this_thread::sleep_for(std::chrono::seconds(20));
    auto killed = ds::test::run_remote_libvirtd("kill", remote);
    REQUIRE(killed.ok());
    REQUIRE(killed->exit_code == 0);

    auto finished = daemon.hostctl({"sweep", "watch", "1"}, std::chrono::seconds(900));
    INFO(finished.out << finished.err << daemon.log());
    // Whole rounds go to one host: one round runs on each. The remote round's
    // run that was in its workload fails with the reason; the round's other
    // run fails as the host is unreachable, or went to the local host once
    // the remote one was backed off. Every local run succeeds.
    const auto runs = runs_of(daemon, 1);
    REQUIRE(runs.size() == 4);
    int lost_mid_run = 0;
    for (const RunRow& run : runs) {
        INFO("run " << run.id << " on " << run.host << ": " << run.status << " " << run.reason);
        if (run.host == kRemoteHost) {
            CHECK(run.status == "failed");
            const bool lost = run.reason.find("connection was lost") != std::string::npos;
            CHECK((lost || run.reason.find("host unreachable") != std::string::npos));
            lost_mid_run += lost;
            // Its console came over a libvirt stream and stays here for reading.
            if (lost) {
                std::ifstream console(run.console_log);
                const std::string text((std::istreambuf_iterator<char>(console)), {});
                CHECK_THAT(text, Catch::Contains("[disksweep-init]"));
            }
        } else {
            CHECK(run.host == "local");
            CHECK(run.status == "succeeded");
        }
    }
    CHECK(lost_mid_run == 1);
    // hostctl status says the host is down, with libvirt's reason.
    auto status = daemon.hostctl({"--json", "status"});
    REQUIRE(status.exit_code == 0);
    std::string remote_state;
    const Json status_json = Json::parse(status.out);
    for (const Json& host : status_json["hosts"]) {
        if (host["name"] == kRemoteHost) remote_state = host["connection"].value("state", "");
    }
    CHECK(remote_state == "unreachable");

    // Back again: the daemon reconnects and removes the failed run's guest
    // (still running there) and volume.
    auto started = ds::test::run_remote_libvirtd("start", remote);
    REQUIRE(started.ok());
    REQUIRE(started->exit_code == 0);
    const bool clean = wait_for(
        [&] {
            const RemoteView view = look_at(remote, prefix);
            return view.domains.empty() && run_volumes(view, prefix).empty();
        },
        std::chrono::seconds(60));
    INFO(daemon.log());
    CHECK(clean);
    CHECK(daemon.log().find("host remote reached again") != std::string::npos);
}

namespace {

// The names (`-name guest=NAME`) of this machine's QEMU processes whose
// guest name starts with `prefix`: the local host's guests.
std::vector<std::string> local_guests(const std::string& prefix) {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
        std::ifstream file(entry.path() / "cmdline");
        std::string argument;
        while (std::getline(file, argument, '\0')) {
            const std::string marker = "guest=" + prefix;
            const auto at = argument.find(marker);
            if (at == std::string::npos) continue;
            names.push_back(argument.substr(at + 6, argument.find(',', at) - at - 6));
        }
    }
    return names;
}

bool none_left(const std::vector<std::string>& names, const std::vector<std::string>& now) {
    for (const auto& name : names) {
        if (std::find(now.begin(), now.end(), name) != now.end()) return false;
    }
    return true;
}

}  // namespace

TEST_CASE(
    "a daemon killed mid-sweep with guests on both hosts leaves nothing of them on either "
    "once it is started again",
    "[remote][e2e]") {
    TwoHostDaemon two("daemon-dies", 2, "60s");
    const TestRemoteLibvirtd& remote = two.remote;
    DaemonFixture& daemon = two.daemon;
    const std::string& prefix = two.prefix;
    const std::string& spec = two.spec;
    REQUIRE(daemon.hostctl({"sweep", "submit", spec}).exit_code == 0);

    // Both hosts run a guest of the sweep (whole rounds: one round each).
    REQUIRE(wait_for(
        [&] { return !look_at(remote, prefix).domains.empty() && !local_guests(prefix).empty(); },
        std::chrono::seconds(240)));
    daemon.stop(SIGKILL);
    const std::vector<std::string> remote_left = look_at(remote, prefix).domains;
    const std::vector<std::string> remote_volumes = run_volumes(look_at(remote, prefix), prefix);
    const std::vector<std::string> local_left = local_guests(prefix);
    REQUIRE_FALSE(remote_left.empty());
    REQUIRE_FALSE(remote_volumes.empty());
    REQUIRE_FALSE(local_left.empty());

    // Start-up recovery ends them on both hosts; then stop the resumed sweep.
    REQUIRE(daemon.restart());
    INFO(daemon.log());
    CHECK(none_left(local_left, local_guests(prefix)));
    const RemoteView after_restart = look_at(remote, prefix);
    CHECK(none_left(remote_left, after_restart.domains));
    CHECK(none_left(remote_volumes, after_restart.volumes));
    REQUIRE(daemon.hostctl({"sweep", "cancel", "1"}).exit_code == 0);
    const bool clean = wait_for(
        [&] {
            const RemoteView view = look_at(remote, prefix);
            return view.domains.empty() && run_volumes(view, prefix).empty() &&
                   local_guests(prefix).empty();
        },
        std::chrono::seconds(120));
    CHECK(clean);
}
