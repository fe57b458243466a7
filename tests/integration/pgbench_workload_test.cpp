// The pgbench runner for real: initdb, postgres, psql and pgbench from the
// host's PostgreSQL (scripts/install-deps.sh installs Debian's `postgresql`,
// the package the mariadb image variant carries), with the cluster on ext4
// on a loop device. The settings check is shown to fail for real: a value
// the real server applies otherwise (it rounds shared_buffers to its 8 kB
// pages) fails the run with settings_mismatch, naming both values. A test
// skips when a prerequisite is missing.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "common/process.h"
#include "common/workload_output.h"
#include "guestagent/postgresql_session.h"
#include "guestagent/workload.h"
#include "support/loop_mount.h"
#include "support/skip.h"
#include "support/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ds::Json;
using ds::agent::WorkloadContext;

// Why this host cannot run the tests, or "" when it can.
std::string missing_prerequisite() {
    if (::geteuid() != 0) return "not root (loop devices, mount)";
    ds::RealProcessRunner runner;
    for (const char* tool : {"losetup", "mkfs.ext4", "setpriv"}) {
        auto found = runner.run({"sh", "-c", std::string("command -v ") + tool}, 10s);
        if (!found.ok() || found->exit_code != 0) return std::string(tool) + " not installed";
    }
    if (auto bin = ds::agent::postgresql::binary_dir(); !bin.ok()) return bin.error().message;
    auto user = runner.run({"id", "-u", "postgres"}, 10s);
    if (!user.ok() || user->exit_code != 0)
        return "no postgres user (Debian's postgresql makes it)";
    auto loop = runner.run({"losetup", "--find"}, 10s);
    if (!loop.ok() || loop->exit_code != 0) return "no free loop device";
    return {};
}

void skip_unless_prerequisites() {
    if (const std::string missing = missing_prerequisite(); !missing.empty()) {
        ds::test::skip_test("PostgreSQL integration test: " + missing);
    }
}

// The cluster's disk and scratch dir, reachable by the postgres user as the
// guest's /mnt/disksweep and /run/disksweep are (a temporary dir is 0700).
struct PostgresSetup {
    ds::test::TempDir dir{"disksweep-pgbench"};
    ds::RealProcessRunner runner;
    ds::test::LoopMount disk{dir.path(), 400ull << 20};
    WorkloadContext ctx{runner, "", "", 300s, {}};

    PostgresSetup() {
        fs::permissions(dir.path(), fs::perms(0755));
        ctx.work_dir = disk.path();
        ctx.scratch_dir = (dir.path() / "scratch").string();
        fs::create_directories(ctx.scratch_dir);
        fs::permissions(ctx.scratch_dir, fs::perms(0755));
    }
    // No postmaster of this setup is left running: a clean shutdown removes
    // postmaster.pid, and a pid left behind names no live process.
    bool server_gone() const {
        std::ifstream pid_file(fs::path(ctx.work_dir) / "pgdata" / "postmaster.pid");
        long pid = 0;
        if (!(pid_file >> pid) || pid <= 1) return true;
        return ::kill(static_cast<pid_t>(pid), 0) != 0;
    }
};

ds::Workload pgbench_workload(Json server) {
    return {"tpcb",
            "pgbench",
            {{"server", std::move(server)}, {"scale", 1}, {"clients", 2}, {"time", 3}},
            {},
            0};
}

}  // namespace

TEST_CASE("pgbench for real: settings read back, TPS and latency percentiles parsed",
          "[postgresql][loop]") {
    skip_unless_prerequisites();
    PostgresSetup setup;
    const auto workload =
        pgbench_workload({{"synchronous_commit", "off"}, {"full_page_writes", false}});
    auto result = ds::agent::run_pgbench(workload, setup.ctx);
    INFO((result.ok() ? "" : result.error().message));
    REQUIRE(result.ok());
    CHECK(setup.server_gone());
    CHECK(fs::exists(fs::path(setup.ctx.work_dir) / "pgdata" / "PG_VERSION"));  // on the disk
    const Json& shown = result->readback["server_variables"];
    CHECK(shown["synchronous_commit"] == "off");
    CHECK(shown["full_page_writes"] == "off");
    CHECK(shown["fsync"] == "on");  // read back although not requested
    CHECK_FALSE(result->readback["server_version"].get<std::string>().empty());

    auto metrics = ds::metrics_from_workload_output("pgbench", result->output);
    INFO(result->output.dump());
    REQUIRE(metrics.ok());
    CHECK(metrics->at("tps") > 0);
    CHECK(metrics->at("latency_p99_ms") >= metrics->at("latency_p50_ms"));
    CHECK(metrics->at("latency_p50_ms") > 0);
}

// The read-back made wrong by the real server: shared_buffers is kept in
// 8 kB pages, and PostgreSQL rounds 130kB to 16 of them, 128kB. The run
// must fail before pgbench runs, naming what was asked and what is in force.
TEST_CASE("pgbench for real: a setting the server applies otherwise fails the run, naming both",
          "[postgresql][loop]") {
    skip_unless_prerequisites();
    PostgresSetup setup;
    auto result =
        ds::agent::run_pgbench(pgbench_workload({{"shared_buffers", "130kB"}}), setup.ctx);
    REQUIRE_FALSE(result.ok());
    INFO(result.error().message);
    CHECK(result.error().code == ds::errc::kSettingsMismatch);
    CHECK_THAT(result.error().message, Catch::Contains("shared_buffers"));
    CHECK_THAT(result.error().message, Catch::Contains("130kB"));
    CHECK_THAT(result.error().message, Catch::Contains("128kB"));
    CHECK(setup.server_gone());
}
