// Chaos: SIGKILL "the daemon" at random points of a 20-run sweep, restart it,
// and check that nothing is lost (issue 9, "Crashes lose nothing").
//
// Level. The real disksweepd binary cannot run fast guests: its only
// hypervisor is libvirt, whose test:///default driver starts no agent (every
// run would wait out its boot timeout), and a real TCG guest with a tiny fio
// job takes about 20 s a run, 10 trials x 20 runs would take over an hour. So
// each "daemon" here is a forked child process that does what run_daemon()
// does after opening its state, with the same code: Store::open on the
// trial's database file, daemon_resource_names() (the instance id the
// database keeps), recover_leftovers() (the real recovery), a
// Scheduler with the real RunExecutor, and the resumption of unfinished
// sweeps. Below the executor: the real FileStorage (volumes are real files,
// so a leftover survives the kill as it would on the host) and the unit
// tests' FakeHypervisor, whose scripted guest plays the real agent protocol
// over a real unix socket. The fake keeps its domains in memory, which die
// with the process unlike QEMU's; a thin wrapper records every started,
// not yet destroyed domain as a marker file, the host's "domain list" that
// survives the kill. Real QEMU processes are the subject of the SIGTERM test
// (tests/e2e), not of this one.
//
// Per trial: a fresh state dir and a 20-run sweep (5 cache modes x 4
// repetitions), kKillsPerTrial children SIGKILLed at a random moment, then
// one child that runs the sweep to its end. Afterwards: every planned run
// has exactly one current attempt and it succeeded, no duplicate attempts,
// every superseded attempt was interrupted, no leftover domain or volume,
// PRAGMA integrity_check and foreign_key_check are clean. The figures are
// printed (trials, kills, kills that hit a run, attempts created, time).
// DISKSWEEP_CHAOS_SEED repeats a trial sequence.
#include <SQLiteCpp/SQLiteCpp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <thread>
#include <tuple>

#include "common/clock.h"
#include "daemon/backends/storage/file/file_storage.h"
#include "daemon/daemon.h"
#include "daemon/recovery.h"
#include "daemon/run/run_executor.h"
#include "daemon/schedule/scheduler.h"
#include "support/fakes/daemon_fakes.h"

namespace ds {
namespace {

using namespace ds::testing;

constexpr int kTrials = 10;
// Below kMaxRunAttempts: even a run hit by every kill still gets an attempt
// that runs to its end, so each planned run must end succeeded.
constexpr int kKillsPerTrial = 2;
constexpr int kRepetitions = 4;
constexpr CacheMode kCacheModes[] = {CacheMode::kNone, CacheMode::kWriteback,
                                     CacheMode::kWritethrough, CacheMode::kDirectsync,
                                     CacheMode::kUnsafe};
constexpr int kParallelRuns = 2;
// A child that has not finished the sweep by then is stuck.
constexpr auto kChildTimeLimit = 120s;

static_assert(kKillsPerTrial < kMaxRunAttempts);

// FakeHypervisor whose live domains are also files in `markers`: what a
// killed process started and did not destroy stays listed, as libvirt's
// domains do when disksweepd dies.
class PersistentDomains : public Hypervisor {
  public:
    PersistentDomains(FakeHypervisor& fake, fs::path markers)
        : fake_(fake), markers_(std::move(markers)) {
        fs::create_directories(markers_);
    }
    std::string name() const override { return fake_.name(); }
    Status start_vm(const VmRequest& request) override {
        std::ofstream(markers_ / request.name) << "defined\n";
        return fake_.start_vm(request);
    }
    Result<Json> applied_settings(const std::string& vm) override {
        return fake_.applied_settings(vm);
    }
    Result<bool> is_running(const std::string& vm) override { return fake_.is_running(vm); }
    Result<std::unique_ptr<AgentChannel>> open_agent_channel(
        const std::string& vm, Deadline deadline, const std::atomic<bool>* cancelled) override {
        return fake_.open_agent_channel(vm, deadline, cancelled);
    }
    std::string console_tail(const std::string& vm, std::size_t max_bytes) override {
        return fake_.console_tail(vm, max_bytes);
    }
    std::string console_location(const std::string& vm) override {
        return fake_.console_location(vm);
    }
    void discard_console(const std::string& vm) override { fake_.discard_console(vm); }
    Status destroy_vm(const std::string& vm) override {
        DS_TRY(fake_.destroy_vm(vm));
        std::error_code ignored;
        fs::remove(markers_ / vm, ignored);
        return ok_status();
    }
    Result<std::vector<std::string>> list_vms(const std::string& prefix) override {
        return names_with_prefix(markers_, prefix);
    }
    Json versions() override { return fake_.versions(); }

    static std::vector<std::string> names_with_prefix(const fs::path& dir,
                                                      const std::string& prefix) {
        std::vector<std::string> names;
        for (const auto& entry : fs::directory_iterator(dir)) {
            const std::string name = entry.path().filename().string();
            if (name.rfind(prefix, 0) == 0) names.push_back(name);
        }
        return names;
    }

  private:
    FakeHypervisor& fake_;
    fs::path markers_;
};

struct TrialPaths {
    fs::path root;
    std::string database() const { return (root / "results.db").string(); }
    fs::path volumes() const { return root / "volumes"; }
    fs::path domains() const { return root / "domains"; }
    fs::path run_dir() const { return root / "run"; }
    std::string log() const { return (root / "daemon.log").string(); }
};

// --- the child: one incarnation of the daemon -----------------------------

bool all_sweeps_finished(Store& store) {
    auto sweeps = store.list_sweeps();
    if (!sweeps.ok()) return false;
    for (const auto& sweep : sweeps.value()) {
        if (sweep.status == SweepStatus::kQueued || sweep.status == SweepStatus::kRunning)
            return false;
    }
    return true;
}

// Mirrors run_daemon(): recovery, then a scheduler resuming every unfinished
// sweep. Returns the exit code (0 once every sweep finished).
int daemon_incarnation(const TrialPaths& paths, unsigned guest_seed) {
    std::ofstream log_file(paths.log(), std::ios::app);
    auto log = [&log_file](const std::string& line) { log_file << line << std::endl; };
    auto store = Store::open(paths.database());
    if (!store.ok()) {
        log("cannot open the store: " + store.error().message);
        return 3;
    }
    FakeHypervisor fake;
    fake.set_guest_files_directory(paths.run_dir().string());
    // Each run's bench takes a random 10-60 ms, so kills land inside runs.
    auto random = std::make_shared<std::mt19937>(guest_seed);
    auto random_mutex = std::make_shared<std::mutex>();
    GuestBehaviour behaviour;
    behaviour.before_result = [random, random_mutex](GuestChannel& channel) {
        int milliseconds = 0;
        {
            std::lock_guard lock(*random_mutex);
            milliseconds = std::uniform_int_distribution<int>(10, 60)(*random);
        }
        return channel.sleep(std::chrono::milliseconds(milliseconds));
    };
    fake.set_guest_script(well_behaved_guest(behaviour));
    PersistentDomains hypervisor(fake, paths.domains());
    // Raw volumes only: no tool to run.
    FileStorage storage(paths.volumes().string(), nullptr);

    // No instance configured: each incarnation names its resources by the id
    // the database keeps, as disksweepd does.
    DaemonConfig config;
    config.state_dir = paths.root.string();
    auto names = daemon_resource_names(config, **store);
    if (!names.ok()) {
        log("cannot name the instance: " + names.error().message);
        return 7;
    }
    const RecoveryReport recovered =
        recover_leftovers(*names, hypervisor, {&storage}, **store, kMaxRunAttempts, log);
    if (!recovered.problems.empty()) return 4;

    EventBus events;
    std::atomic<bool> shutting_down{false};
    RunEnvironment environment(*names);
    environment.hypervisor = &hypervisor;
    environment.storage = &storage;
    environment.store = store->get();
    environment.events = &events;
    environment.image = GuestImage{"/fake/vmlinuz", "/fake/initrd.img", "/fake/root.img"};
    environment.shutting_down = &shutting_down;
    RunExecutor executor(environment);
    Scheduler scheduler(
        **store, events,
        [&executor](const RunRecord& run, const SweepTimeouts& timeouts,
                    const std::atomic<bool>& cancelled) {
            return executor.execute(run, timeouts.boot_timeout_s, timeouts.run_timeout_s,
                                    cancelled);
        },
        kParallelRuns);
    scheduler.start();
    const std::vector<SweepRecord> sweeps = (*store)->list_sweeps().value();
    for (const auto& sweep : sweeps) {
        if (sweep.status != SweepStatus::kQueued && sweep.status != SweepStatus::kRunning) continue;
        if (!scheduler.submit(sweep.id, SweepTimeouts{5, 10}).ok()) return 5;
    }
    const auto deadline = std::chrono::steady_clock::now() + kChildTimeLimit;
    while (!all_sweeps_finished(**store)) {
        if (std::chrono::steady_clock::now() > deadline) return 6;
        std::this_thread::sleep_for(5ms);
    }
    scheduler.stop();
    return 0;
}

// --- the parent: plans, kills, restarts, checks --------------------------

std::int64_t plan_sweep(const TrialPaths& paths) {
    auto store = Store::open(paths.database());
    REQUIRE(store.ok());
    std::vector<RunRecord> runs;
    int sequence = 0;
    // Interleaved like a planned sweep: repetition outermost.
    for (int repetition = 0; repetition < kRepetitions; ++repetition) {
        for (CacheMode cache : kCacheModes) {
            StorageConfig config = reference_config();
            config.cache = cache;
            runs.push_back(planned_run(config, fio_workload(), sequence++, repetition));
        }
    }
    SweepRecord sweep;
    sweep.name = "chaos";
    sweep.spec_toml = "name = \"chaos\"\n";
    sweep.spec_source = "chaos_test";
    sweep.created_at = utc_now_iso8601();
    auto id = (*store)->create_sweep(sweep, runs);
    REQUIRE(id.ok());
    return id.value();
}

pid_t start_incarnation(const TrialPaths& paths, unsigned guest_seed) {
    std::cout.flush();
    std::cerr.flush();
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) ::_exit(daemon_incarnation(paths, guest_seed));
    return pid;
}

// Waits for `pid`; its exit code, or 128+signal.
int wait_for(pid_t pid) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct Figures {
    int kills = 0;             // SIGKILLs delivered to a live daemon
    int runs_hit = 0;          // runs a kill left running
    int attempts_created = 0;  // runs with attempt > 1
    int finished_before_kill = 0;
};

// Runs one trial and checks its outcome; adds its figures.
void run_trial(int trial, std::mt19937& random, Figures& figures) {
    TempDir dir("ds-chaos");
    const TrialPaths paths{dir.path()};
    fs::create_directories(paths.volumes());
    fs::create_directories(paths.run_dir());
    fs::create_directories(paths.domains());
    const std::int64_t sweep_id = plan_sweep(paths);
    INFO("trial " << trial << ", daemon log " << paths.log());

    for (int kill = 0; kill < kKillsPerTrial; ++kill) {
        const pid_t pid = start_incarnation(paths, random());
        std::this_thread::sleep_for(
            std::chrono::milliseconds(std::uniform_int_distribution<int>(5, 400)(random)));
        if (::kill(pid, SIGKILL) == 0 && wait_for(pid) == 128 + SIGKILL) {
            ++figures.kills;
        } else {
            ++figures.finished_before_kill;
        }
    }
    const int exit_code = wait_for(start_incarnation(paths, random()));
    REQUIRE(exit_code == 0);

    auto store = Store::open(paths.database());
    REQUIRE(store.ok());
    CHECK((*store)->get_sweep(sweep_id)->status == SweepStatus::kSucceeded);
    // Every incarnation named its runs' volumes after the one instance id.
    const std::string prefix = "disksweep-" + (*store)->instance_id().value() + "-r";
    std::map<std::tuple<std::string, std::string, int>, int> current_by_planned_run;
    std::set<std::tuple<std::string, std::string, int, int>> attempts;
    const std::vector<RunRecord> runs = (*store)->list_runs(sweep_id).value();
    for (const RunRecord& run : runs) {
        INFO("run " << run.id << " attempt " << run.attempt << " " << run.status << ": "
                    << run.failure_reason);
        const auto planned = std::make_tuple(run.config_id, run.workload_name, run.repetition);
        CHECK(
            attempts.emplace(run.config_id, run.workload_name, run.repetition, run.attempt).second);
        if (run.attempt > 1) ++figures.attempts_created;
        CHECK_THAT(run.volume_name, Catch::StartsWith(prefix));
        if (run.failure_reason.find("cleaned up at the next start") != std::string::npos)
            ++figures.runs_hit;
        if (run.superseded_by != 0) {
            CHECK(run.status == RunStatus::kFailed);
            CHECK_THAT(run.failure_reason, Catch::StartsWith(std::string(kInterruptedReason)));
            continue;
        }
        CHECK(run.status == RunStatus::kSucceeded);
        ++current_by_planned_run[planned];
    }
    CHECK(current_by_planned_run.size() == std::size(kCacheModes) * kRepetitions);
    for (const auto& [planned, count] : current_by_planned_run) CHECK(count == 1);
    CHECK(PersistentDomains::names_with_prefix(paths.domains(), "").empty());
    // No volume of any instance is left.
    CHECK(PersistentDomains::names_with_prefix(paths.volumes(), "disksweep-").empty());
    SQLite::Database db(paths.database(), SQLite::OPEN_READONLY);
    CHECK(db.execAndGet("PRAGMA integrity_check").getString() == "ok");
    SQLite::Statement foreign_keys(db, "PRAGMA foreign_key_check");
    CHECK_FALSE(foreign_keys.executeStep());
}

unsigned chaos_seed() {
    if (const char* text = std::getenv("DISKSWEEP_CHAOS_SEED"); text && *text)
        return static_cast<unsigned>(std::strtoul(text, nullptr, 10));
    return std::random_device{}();
}

TEST_CASE("chaos: SIGKILLed mid-sweep and restarted, a sweep loses nothing", "[chaos]") {
    ignore_sigpipe();
    const unsigned seed = chaos_seed();
    std::mt19937 random(seed);
    Figures figures;
    const auto started = std::chrono::steady_clock::now();
    for (int trial = 0; trial < kTrials; ++trial) run_trial(trial, random, figures);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::cout << "chaos: seed " << seed << ", " << kTrials << " trials of "
              << std::size(kCacheModes) * kRepetitions << " runs, " << figures.kills
              << " SIGKILLs (" << figures.finished_before_kill
              << " came after the sweep had finished), " << figures.runs_hit
              << " runs interrupted, " << figures.attempts_created << " new attempts, " << seconds
              << " s" << std::endl;
    // The kills must hit runs, or the test proves nothing.
    CHECK(figures.runs_hit > 0);
    CHECK(figures.attempts_created == figures.runs_hit);
}

}  // namespace
}  // namespace ds
