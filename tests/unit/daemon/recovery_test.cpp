// Start-up recovery (daemon/recovery.h) against fakes and a real Store: what
// an earlier daemon left is cleaned, interrupted runs get new attempts, and
// the resumed sweep ends with every repetition it asked for.
#include "daemon/recovery.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include "daemon/schedule/scheduler.h"
#include "support/fakes/daemon_fakes.h"

namespace ds {
namespace {

using namespace ds::testing;

std::vector<std::string> log_lines;
void collect(const std::string& line) {
    log_lines.push_back(line);
}

Scheduler::ExecuteRun execute_with(RunExecutor& executor) {
    return [&executor](const RunRecord& run, const SweepTimeouts& timeouts,
                       const std::atomic<bool>& cancelled) {
        return executor.execute(run, timeouts.boot_timeout_s, timeouts.run_timeout_s, cancelled);
    };
}

bool wait_until(const std::function<bool()>& condition) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!condition()) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(5ms);
    }
    return true;
}

bool mentions(const std::vector<std::string>& lines, const std::string& text) {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& line) {
        return line.find(text) != std::string::npos;
    });
}

TEST_CASE("recovery: only this instance's leftovers go, another instance's and foreign ones stay",
          "[recovery]") {
    ExecutorFixture fixture;
    fixture.hypervisor.set_no_agent_socket();
    // Two daemons share the hypervisor and the storage, each with its run 1;
    // beside them a guest and a volume of someone else, and the name a
    // daemon from before instances gave its run 1.
    const std::vector<std::string> guests = {"disksweep-aaaa1111-r1", "disksweep-bbbb2222-r1",
                                             "someone-elses-vm", "disksweep-r1"};
    const std::vector<std::string> volumes = {"disksweep-aaaa1111-r1-data",
                                              "disksweep-bbbb2222-r1-data", "someone-elses-volume",
                                              "disksweep-r1-data"};
    for (const std::string& name : guests) {
        VmRequest request;
        request.name = name;
        REQUIRE(fixture.hypervisor.start_vm(request).ok());
    }
    for (const std::string& name : volumes) REQUIRE(fixture.storage.create_volume(name, {}).ok());

    log_lines.clear();
    const RecoveryReport report =
        recover_leftovers(names_of("aaaa1111"), fixture.hypervisor, {&fixture.storage},
                          *fixture.store, kMaxRunAttempts, collect);
    CHECK(report.guests_destroyed == 1);
    CHECK(report.volumes_removed == 1);
    CHECK(report.problems.empty());
    CHECK(fixture.hypervisor.destroyed() == std::vector<std::string>{"disksweep-aaaa1111-r1"});
    CHECK(fixture.storage.removed() == std::vector<std::string>{"disksweep-aaaa1111-r1-data"});
    CHECK(fixture.hypervisor.live_vms() ==
          std::vector<std::string>{"disksweep-bbbb2222-r1", "disksweep-r1", "someone-elses-vm"});
    CHECK(fixture.storage.live_volumes() == std::vector<std::string>{"disksweep-bbbb2222-r1-data",
                                                                     "disksweep-r1-data",
                                                                     "someone-elses-volume"});
    // Its own two are logged; nothing about what is not its own.
    CHECK(log_lines.size() == 2);
    CHECK(mentions(log_lines, "destroyed leftover guest disksweep-aaaa1111-r1"));
    CHECK(mentions(log_lines, "removed leftover volume disksweep-aaaa1111-r1-data"));
    CHECK_FALSE(mentions(log_lines, "bbbb2222"));
}

TEST_CASE("recovery: a golden volume goes after its clones, with remove_golden", "[recovery]") {
    ExecutorFixture fixture;
    const ResourceNames names = names_of("aaaa1111");
    const std::string golden = names.golden_volume(3, 0);
    REQUIRE(fixture.storage.create_volume(golden, {}).ok());
    REQUIRE(fixture.storage.seal_golden(golden).ok());
    REQUIRE(fixture.storage.clone_volume(golden, names.volume(7), {}).ok());
    // Listed first (its name sorts first), removed last: before its clone, it
    // would be refused as RBD refuses it.
    log_lines.clear();
    const RecoveryReport report = recover_leftovers(names, fixture.hypervisor, {&fixture.storage},
                                                    *fixture.store, kMaxRunAttempts, collect);
    CHECK(report.problems.empty());
    CHECK(report.volumes_removed == 2);
    CHECK(fixture.storage.removed() == std::vector<std::string>{names.volume(7), golden});
    CHECK(fixture.storage.removed_golden() == std::vector<std::string>{golden});
    CHECK(fixture.storage.live_volumes().empty());
}

TEST_CASE("recovery: a sweep interrupted by a crash and by a shutdown ends with every repetition",
          "[recovery][scheduler]") {
    ExecutorFixture fixture;
    // The guest of the first run hangs mid-bench: the daemon stops during it.
    std::atomic<int> benches{0};
    GuestBehaviour behaviour;
    behaviour.before_result = [&benches](GuestChannel& channel) {
        if (benches++ > 0) return true;
        channel.sleep(30s);
        return false;
    };
    fixture.hypervisor.set_guest_script(well_behaved_guest(behaviour));
    const std::int64_t sweep_id = create_sweep(*fixture.store, 3);
    std::atomic<bool> shutting_down{false};
    RunEnvironment environment = fixture.environment();
    environment.shutting_down = &shutting_down;
    RunExecutor executor(environment);

    {  // The first daemon: an orderly stop (SIGTERM) during the first run.
        Scheduler before(*fixture.store, fixture.events, execute_with(executor), 1);
        before.start();
        REQUIRE(before.submit(sweep_id, SweepTimeouts{5, 30}).ok());
        REQUIRE(wait_until([&] { return benches.load() == 1; }));
        shutting_down = true;
        before.stop();
    }
    shutting_down = false;
    // ... and a crash: a second run was left 'running' with its guest and
    // volume (as a SIGKILLed daemon leaves them).
    const RunRecord crashed = [&] {
        const std::vector<RunRecord> runs = fixture.store->list_runs(sweep_id).value();
        for (const RunRecord& run : runs)
            if (run.status == RunStatus::kPending) return run;
        FAIL("no pending run left");
        return RunRecord{};
    }();
    const std::string crashed_name = fixture.names.vm(crashed.id);
    REQUIRE(fixture.store->mark_run_running(crashed.id, crashed_name, crashed_name, "", "tcg", "t")
                .ok());
    REQUIRE(fixture.storage.create_volume(crashed_name, {}).ok());

    const RecoveryReport report =
        recover_leftovers(fixture.names, fixture.hypervisor, {&fixture.storage}, *fixture.store,
                          kMaxRunAttempts, collect);
    CHECK(report.volumes_removed == 1);
    CHECK(report.runs.marked_failed.size() == 1);
    REQUIRE(report.runs.new_attempts.size() == 2);

    EventLog events(fixture.events, sweep_id);
    Scheduler after(*fixture.store, fixture.events, execute_with(executor), 1);
    after.start();
    REQUIRE(after.submit(sweep_id, SweepTimeouts{5, 30}).ok());
    REQUIRE(events.wait_for("sweep_finished", 10s));
    after.stop();

    CHECK(fixture.store->get_sweep(sweep_id)->status == SweepStatus::kSucceeded);
    const auto counts = fixture.store->run_counts(sweep_id).value();
    CHECK(counts.at("succeeded") == 3);
    CHECK(counts.at("failed") == 0);
    // The record keeps both interrupted attempts; each repetition has one
    // current, succeeded attempt.
    std::map<int, int> succeeded_by_repetition;
    int interrupted = 0;
    const std::vector<RunRecord> runs = fixture.store->list_runs(sweep_id).value();
    for (const RunRecord& run : runs) {
        INFO("run " << run.id << " attempt " << run.attempt << ": " << run.failure_reason);
        if (run.superseded_by != 0) {
            ++interrupted;
            CHECK(run.status == RunStatus::kFailed);
            CHECK_THAT(run.failure_reason, Catch::StartsWith(std::string(kInterruptedReason)));
            continue;
        }
        CHECK(run.status == RunStatus::kSucceeded);
        ++succeeded_by_repetition[run.repetition];
    }
    CHECK(interrupted == 2);
    CHECK(succeeded_by_repetition == std::map<int, int>{{0, 1}, {1, 1}, {2, 1}});
    CHECK(fixture.hypervisor.live_vms().empty());
    CHECK(fixture.storage.live_volumes().empty());
}

}  // namespace

TEST_CASE("recovery: recorded guests are destroyed by their handle on their own host",
          "[recovery]") {
    ExecutorFixture fixture;
    const RunRecord mine = fixture.pending_run();
    const RunRecord elsewhere = fixture.pending_run();
    for (const RunRecord& run : {mine, elsewhere}) {
        const std::string name = fixture.names.vm(run.id);
        REQUIRE(fixture.store->mark_run_running(run.id, name, name, "", "kvm", "t").ok());
    }
    REQUIRE(fixture.store->record_vm_handle(mine.id, "pve-a", Json{{"vmid", 5001}}).ok());
    REQUIRE(fixture.store->record_vm_handle(elsewhere.id, "pve-gone", Json{{"vmid", 5002}}).ok());

    log_lines.clear();
    const RecoveryReport report = recover_leftovers(
        fixture.names,
        std::vector<RecoveryHost>{{"local", nullptr}, {"pve-a", &fixture.hypervisor}},
        {&fixture.storage}, *fixture.store, kMaxRunAttempts, collect);
    CHECK(fixture.hypervisor.destroyed_by_handle() == std::vector<Json>{Json{{"vmid", 5001}}});
    CHECK(report.recorded_guests_cleared == 1);
    // A host no longer configured keeps its record for a later start.
    REQUIRE(report.problems.size() == 1);
    CHECK_THAT(report.problems[0], Catch::Contains("pve-gone") && Catch::Contains("kept"));
    const auto left = fixture.store->recorded_vms();
    REQUIRE(left.ok());
    REQUIRE(left->size() == 1);
    CHECK(left->front().run_id == elsewhere.id);
    CHECK(left->front().host == "pve-gone");
    CHECK(mentions(log_lines, "destroyed recorded guest " + fixture.names.vm(mine.id)));
}

}  // namespace ds
