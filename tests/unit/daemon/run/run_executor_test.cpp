// RunExecutor end to end against fakes behind the seams: a FakeHypervisor
// whose guests are scripted agents on a real unix socket, a FakeStorage, a
// real Store in a temporary directory and a real EventBus. Every case checks
// that the run leaves nothing behind: the VM destroyed, the volume removed.
#include "daemon/run/run_executor.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <thread>

#include "common/fio_metrics.h"
#include "common/workload_output.h"
#include "support/fake_clock.h"
#include "support/fakes/daemon_fakes.h"

namespace ds {
namespace {

using namespace ds::testing;
using Catch::Matchers::Contains;

std::string socket_path_of(const ExecutorFixture& fixture, const RunRecord& run) {
    return fixture.config.run_dir() + "/" + fixture.names.vm(run.id) + ".agent.sock";
}

// Whatever happened, nothing outlives the run: the VM destroyed exactly once
// (destroy_vm is called even when start_vm failed half-way), the volume
// removed exactly once if it was created, the agent socket gone, and the
// store holding what execute() returned.
void check_nothing_left(ExecutorFixture& fixture, const RunRecord& finished) {
    const std::string vm = fixture.names.vm(finished.id);
    const std::string volume = fixture.names.volume(finished.id);
    CHECK(fixture.hypervisor.live_vms().empty());
    CHECK(fixture.hypervisor.destroy_count(vm) == 1);
    CHECK(fixture.storage.live_volumes().empty());
    const auto created = fixture.storage.created();
    const bool volume_created = std::find(created.begin(), created.end(), volume) != created.end();
    CHECK(fixture.storage.remove_count(volume) == (volume_created ? 1 : 0));
    CHECK_FALSE(std::filesystem::exists(socket_path_of(fixture, finished)));

    const RunRecord stored = fixture.stored(finished.id);
    CHECK(stored.status == finished.status);
    CHECK(stored.failure_reason == finished.failure_reason);
    CHECK(stored.timings.contains("teardown_s"));
    CHECK(stored.timings.contains("total_s"));
    CHECK_FALSE(stored.finished_at.empty());
}

// One run on a fake clock, whose guest's job takes `job_time` on it; the
// guest then sends its result (`then_result`) or goes silent.
RunRecord run_on_fake_clock(ExecutorFixture& fixture, test::FakeClock& clock,
                            std::chrono::seconds job_time, bool then_result, int run_timeout_s) {
    fixture.clock = &clock;
    GuestBehaviour behaviour;
    behaviour.before_result = [&clock, job_time, then_result](GuestChannel&) {
        clock.advance(job_time);
        return then_result;
    };
    fixture.hypervisor.set_guest_script(well_behaved_guest(behaviour));
    return fixture.execute(fixture.pending_run(), 5, run_timeout_s);
}

TEST_CASE("executor: the run's times and phase timings are the run clock's", "[run_executor]") {
    ExecutorFixture fixture;
    test::FakeClock clock;
    // 75 s, within the 120 s run timeout, which is on the same clock.
    const RunRecord finished = run_on_fake_clock(fixture, clock, 75s, true, 120);
    INFO("failure reason: " << finished.failure_reason);
    REQUIRE(finished.status == RunStatus::kSucceeded);
    const RunRecord stored = fixture.stored(finished.id);
    CHECK(stored.started_at == "2026-01-01T00:00:00Z");
    CHECK(stored.finished_at == "2026-01-01T00:01:15Z");
    CHECK(stored.timings.at("job_s") == 75.0);
    CHECK(stored.timings.at("total_s") == 75.0);
    CHECK(stored.timings.at("boot_s") == 0.0);  // nothing else moved the clock
}

TEST_CASE("executor: the run timeout is on the run clock", "[run_executor]") {
    ExecutorFixture fixture;
    test::FakeClock clock;
    // Past the 10 s run timeout, and the guest says no more.
    const RunRecord finished = run_on_fake_clock(fixture, clock, 11s, false, 10);
    CHECK(finished.status == RunStatus::kTimedOut);
    CHECK_THAT(finished.failure_reason, Contains("run exceeded its time limit of 10 s"));
    check_nothing_left(fixture, finished);
}

// Runs one run with `script` as the guest and returns the finished record.
RunRecord run_with_guest(ExecutorFixture& fixture, GuestScript script, int boot_timeout_s = 5,
                         int run_timeout_s = 10) {
    fixture.hypervisor.set_guest_script(std::move(script));
    const RunRecord run = fixture.pending_run();
    RunRecord finished = fixture.execute(run, boot_timeout_s, run_timeout_s);
    INFO("failure reason: " << finished.failure_reason);
    check_nothing_left(fixture, finished);
    return finished;
}

// A guest that says hello, reads the job, then does `then`.
GuestScript after_job(std::function<void(GuestChannel&)> then) {
    return [then](GuestChannel& channel) {
        if (!channel.send(protocol::kHello, hello_payload())) return;
        auto job = channel.receive(10s);
        if (!job) return;
        then(channel);
    };
}

TEST_CASE("resource names: everything a daemon creates carries its instance", "[names]") {
    const ResourceNames names = names_of("lab1");
    CHECK(names.instance() == "lab1");
    CHECK(names.prefix() == "disksweep-lab1-");
    CHECK(names.vm(5) == "disksweep-lab1-r5");
    CHECK(names.volume(5) == "disksweep-lab1-r5-data");
    CHECK(names.probe() == "disksweep-lab1-probe");
    // No instance's prefix begins another instance's names.
    CHECK_FALSE(names_of("lab12").vm(5).starts_with(names.prefix()));

    for (const char* invalid : {"", "Lab1", "lab-1", "averyveryverylong1"}) {
        INFO(invalid);
        auto refused = ResourceNames::for_instance(invalid);
        REQUIRE_FALSE(refused.ok());
        CHECK(refused.error().code == errc::kInvalidArgument);
        CHECK_THAT(refused.error().message, Contains("not a valid instance name"));
    }
}

TEST_CASE("executor: a well-behaved guest gives a succeeded run with re-derived metrics",
          "[run_executor]") {
    ExecutorFixture fixture;
    // Another sweep's stream, which must see none of this run's events.
    EventLog other_sweep_events(fixture.events, fixture.pending_run().sweep_id);
    GuestBehaviour behaviour;
    // The guest is untrusted: its own metrics are lies the host must ignore.
    behaviour.metrics = Json{{"read_iops", 1e9}, {"write_iops", 1e9}, {"made_up", 1.0}};
    fixture.hypervisor.set_guest_script(well_behaved_guest(behaviour));
    const RunRecord run = fixture.pending_run();
    EventLog run_events(fixture.events, run.sweep_id);

    const RunRecord finished = fixture.execute(run);
    INFO("failure reason: " << finished.failure_reason);
    REQUIRE(finished.status == RunStatus::kSucceeded);
    CHECK(finished.failure_reason.empty());
    check_nothing_left(fixture, finished);

    const RunRecord stored = fixture.stored(run.id);
    const Json fio = recorded_fio();
    const auto expected = metrics_from_fio_json(fio);
    REQUIRE(expected.ok());
    CHECK(stored.metrics == expected.value());
    CHECK(stored.metrics.at("read_iops") == Approx(12480.759620));
    CHECK(stored.metrics.count("made_up") == 0);
    CHECK(Json::parse(stored.raw_output) == fio);

    CHECK(stored.applied_settings.at("verified") == true);
    CHECK(stored.applied_settings.at("hypervisor") ==
          matching_applied_settings(reference_config()));
    CHECK(stored.applied_settings.at("guest").at("rotational") == 0);
    CHECK(stored.applied_settings.at("guest").at("fs_type") == "ext4");

    for (const char* key : {"provision_s", "boot_s", "vm_start_s", "guest_boot_s", "bench_s",
                            "format_s", "mount_s", "job_s", "verify_s", "teardown_s", "total_s"}) {
        INFO(key);
        REQUIRE(stored.timings.contains(key));
        CHECK(stored.timings.at(key).get<double>() >= 0);
    }
    CHECK(stored.timings.at("bench_s") == 2.5);  // the guest's own figure for its bench

    CHECK(stored.versions.at("agent_version") == "0.1.0-fake");
    CHECK(stored.versions.at("kernel") == "6.1.0-fake-amd64");
    CHECK(stored.versions.at("fio_version") == "fio-3.33");
    CHECK(stored.versions.at("qemu") == "7.2.0-fake");
    CHECK(stored.versions.at("guest_agent") == "0.1.0");
    CHECK(stored.versions.at("accel") == "tcg");
    CHECK(stored.accel == "tcg");
    // Named after the fixture's instance (ExecutorFixture::kInstance).
    CHECK(stored.vm_name == "disksweep-fixture1-r" + std::to_string(run.id));
    CHECK(stored.volume_name == "disksweep-fixture1-r" + std::to_string(run.id) + "-data");

    // What the hypervisor was asked for.
    const auto request = fixture.hypervisor.request_for(stored.vm_name);
    REQUIRE(request);
    CHECK(request->config == reference_config());
    const auto* disk = std::get_if<FileDisk>(&request->data_disk);
    REQUIRE(disk != nullptr);
    CHECK(disk->path == "/fake/volumes/" + stored.volume_name + ".raw");

    CHECK(request->image.kernel == "/fake/vmlinuz");
    CHECK(request->accel == Accel::kTcg);
    // A clean run keeps no console log.
    CHECK(finished.console_log.empty());
    CHECK_FALSE(std::filesystem::exists(fixture.hypervisor.console_location(stored.vm_name)));

    // What the guest was told: the job, then shutdown after its result.
    const auto received = fixture.hypervisor.guest_received(stored.vm_name);
    REQUIRE(received.size() == 2);
    const Json& job = received[0];
    CHECK(job.at("type") == "job");
    CHECK(job.at("run_id") == std::to_string(run.id));
    CHECK(job.at("filesystem").at("type") == "ext4");
    CHECK(job.at("filesystem").at("mount_options") == "noatime,data=writeback");
    CHECK(job.at("workload") == to_json(fio_workload()));
    CHECK(job.at("timeout_s") == 10);
    CHECK(received[1].at("type") == "shutdown");

    // Events: started, booted, the guest's progress in order, finished.
    const auto types = run_events.types();
    REQUIRE(types.size() == 7);
    CHECK(types.front() == "run_started");
    CHECK(types.back() == "run_finished");
    const auto all = run_events.all();
    CHECK(all[1].at("phase") == "booted");
    CHECK(all[2].at("phase") == "format");
    CHECK(all[3].at("phase") == "mount");
    CHECK(all[4].at("phase") == "bench");
    CHECK(all[4].at("fraction") == 0.5);
    CHECK(all[5].at("fraction") == 1.0);
    CHECK(all[6].at("status") == "succeeded");
    CHECK(all[6].at("run_id") == run.id);
    CHECK(other_sweep_events.all().empty());
}

TEST_CASE("executor: a run records its CPU cost over the job and derives the per-I/O metrics",
          "[run_executor]") {
    ExecutorFixture fixture;
    // Two readings each: as the job is sent, and as its result arrives.
    const Json ops = {{"rd_operations", 0}, {"wr_operations", 0}, {"flush_operations", 0}};
    Json ops_after = {{"rd_operations", 400}, {"wr_operations", 500}, {"flush_operations", 100}};
    const Json cpu = {{"vcpu_s", 10.0}, {"iothread_s", 1.0}, {"main_loop_s", 2.0},
                      {"other_s", 0.5}, {"total_s", 13.5},   {"vcpu_threads", 2},
                      {"iothreads", 1}};
    const Json cpu_after = {{"vcpu_s", 10.5}, {"iothread_s", 1.2}, {"main_loop_s", 2.05},
                            {"other_s", 0.5}, {"total_s", 14.25},  {"vcpu_threads", 2},
                            {"iothreads", 1}};
    fixture.hypervisor.set_meter_readings({ops, ops_after}, {cpu, cpu_after});
    GuestBehaviour behaviour;
    behaviour.result_patch = {{"guest_cpu",
                               {{"user_s", 0.1},
                                {"nice_s", 0},
                                {"system_s", 0.2},
                                {"idle_s", 3},
                                {"iowait_s", 1},
                                {"irq_s", 0},
                                {"softirq_s", 0.1},
                                {"steal_s", 0.5}}}};
    fixture.hypervisor.set_guest_script(well_behaved_guest(behaviour));
    const RunRecord finished = fixture.execute(fixture.pending_run());
    INFO(finished.failure_reason);
    REQUIRE(finished.status == RunStatus::kSucceeded);
    const RunRecord stored = fixture.stored(finished.id);
    const Json& cost = stored.applied_settings.at("cpu_cost");
    CHECK(cost.at("ios") == 1000);
    CHECK(cost.at("qemu").at("iothread_s").get<double>() == Approx(0.2));
    CHECK(cost.at("qemu").at("iothreads") == 1);
    CHECK(cost.at("guest").at("steal_s") == 0.5);
    CHECK_FALSE(cost.contains("not_measured"));
    // 1000 I/Os: QEMU's 0.75 s and the guest's busy 0.4 s.
    CHECK(stored.metrics.at("host_cpu_us_per_io") == Approx(750));
    CHECK(stored.metrics.at("host_vcpu_cpu_us_per_io") == Approx(500));
    CHECK(stored.metrics.at("host_iothread_cpu_us_per_io") == Approx(200));
    CHECK(stored.metrics.at("host_main_loop_cpu_us_per_io") == Approx(50));
    CHECK(stored.metrics.at("host_other_cpu_us_per_io") == Approx(0));
    CHECK(stored.metrics.at("guest_cpu_us_per_io") == Approx(400));
    CHECK(stored.metrics.at("read_iops") == Approx(12480.759620));
}

TEST_CASE("executor: without QEMU's CPU times the run says why and has no host metrics",
          "[run_executor]") {
    ExecutorFixture fixture;  // the fake, like Proxmox, has no emulator CPU times
    fixture.hypervisor.set_meter_readings({{{"wr_operations", 0}}, {{"wr_operations", 10}}}, {});
    fixture.hypervisor.set_guest_script(well_behaved_guest());
    const RunRecord finished = fixture.execute(fixture.pending_run());
    INFO(finished.failure_reason);
    REQUIRE(finished.status == RunStatus::kSucceeded);
    const RunRecord stored = fixture.stored(finished.id);
    CHECK_THAT(stored.applied_settings.at("cpu_cost").at("not_measured").get<std::string>(),
               Contains("no emulator CPU times"));
    CHECK_FALSE(stored.applied_settings.at("cpu_cost").contains("qemu"));
    CHECK(stored.metrics.count("host_cpu_us_per_io") == 0);
    CHECK(stored.metrics.count("guest_cpu_us_per_io") == 0);  // the fake guest sends none
}

TEST_CASE("executor: no agent within the boot timeout fails with the console log",
          "[run_executor]") {
    ExecutorFixture fixture;
    fixture.hypervisor.set_console_text(
        "[    1.234567] Kernel panic - not syncing: VFS: Unable to mount root fs\n");
    SECTION("QEMU never created the socket") {
        fixture.hypervisor.set_no_agent_socket();
    }
    SECTION("the socket is there but the agent never speaks") {
        fixture.hypervisor.set_guest_script([](GuestChannel& channel) { channel.sleep(30s); });
    }
    const RunRecord run = fixture.pending_run();
    const RunRecord finished = fixture.execute(run, /*boot_timeout_s=*/1, 10);
    INFO(finished.failure_reason);
    CHECK(finished.status == RunStatus::kFailed);
    CHECK_THAT(finished.failure_reason, Contains("agent did not connect within 1 s"));
    CHECK_THAT(finished.failure_reason, Contains("console log: " + finished.console_log));
    CHECK_THAT(finished.failure_reason, Contains("Kernel panic - not syncing"));
    CHECK_FALSE(finished.failure_reason.find("guest stopped") != std::string::npos);
    // A failed run keeps its console log for reading.
    CHECK(std::filesystem::exists(finished.console_log));
    CHECK(fixture.stored(run.id).console_log == finished.console_log);
    check_nothing_left(fixture, finished);
}

TEST_CASE("executor: a guest that powers off during boot is reported as stopped",
          "[run_executor]") {
    ExecutorFixture fixture;
    const RunRecord finished = run_with_guest(
        fixture, [](GuestChannel& channel) { channel.power_off(); }, 1);
    CHECK(finished.status == RunStatus::kFailed);
    CHECK_THAT(finished.failure_reason, Contains("agent did not connect within 1 s"));
    CHECK_THAT(finished.failure_reason, Contains("(the guest stopped)"));
}

TEST_CASE("executor: protocol violations by the guest fail the run with the reason",
          "[run_executor]") {
    ExecutorFixture fixture;
    std::string expected;
    GuestScript script;
    SECTION("a line that is not JSON") {
        script = [](GuestChannel& channel) { channel.send_raw("this is not json\n"); };
        expected = "message is not valid JSON";
    }
    SECTION("JSON that is not an object") {
        script = [](GuestChannel& channel) { channel.send_raw("[1,2,3]\n"); };
        expected = "expected an object";
    }
    SECTION("an oversized line") {
        script = [](GuestChannel& channel) {
            channel.send_raw(std::string(protocol::kMaxMessageBytes + 4096, 'x'));
        };
        expected = "exceeds the limit of " + std::to_string(protocol::kMaxMessageBytes) + " bytes";
    }
    SECTION("another protocol version") {
        script = [](GuestChannel& channel) {
            channel.send_raw(R"({"v":1,"type":"hello","agent_version":"9"})"
                             "\n");
        };
        expected = "unsupported protocol version 1 (this side speaks 2)";
    }
    SECTION("an unknown message type") {
        script = [](GuestChannel& channel) {
            channel.send_raw(R"({"v":2,"type":"gossip"})"
                             "\n");
        };
        expected = "unknown message type \"gossip\"";
    }
    SECTION("a result before hello") {
        script = [fio = recorded_fio()](GuestChannel& channel) {
            channel.send(protocol::kResult, Json{{"output", fio}});
        };
        expected = "agent sent 'result' before 'hello'";
    }
    SECTION("a second hello while the job runs") {
        script = after_job(
            [](GuestChannel& channel) { channel.send(protocol::kHello, hello_payload()); });
        expected = "agent sent unexpected 'hello' while a job was running";
    }
    SECTION("a job sent by the guest") {
        script = after_job([](GuestChannel& channel) {
            channel.send(protocol::kJob, Json{{"run_id", "1"}});
        });
        expected = "agent sent unexpected 'job' while a job was running";
    }
    SECTION("garbage after progress") {
        script = after_job([](GuestChannel& channel) {
            channel.send(protocol::kProgress,
                         Json{{"phase", "bench"}, {"message", "fio"}, {"elapsed_s", 1.0}});
            channel.send_raw("{\"v\":2,\"type\":\n");
        });
        expected = "message is not valid JSON";
    }
    const RunRecord finished = run_with_guest(fixture, script);
    INFO(finished.failure_reason);
    CHECK(finished.status == RunStatus::kFailed);
    CHECK_THAT(finished.failure_reason, Contains(expected));
    // Nothing was measured.
    CHECK(fixture.stored(finished.id).metrics.empty());
}

TEST_CASE("executor: an error from the guest fails the run with its phase and message",
          "[run_executor]") {
    ExecutorFixture fixture;
    const RunRecord finished = run_with_guest(
        fixture, after_job([](GuestChannel& channel) {
            channel.send(protocol::kProgress,
                         Json{{"phase", "format"}, {"message", "mkfs.ext4"}, {"elapsed_s", 0.0}});
            channel.send(protocol::kError, Json{{"run_id", "1"},
                                                {"phase", "format"},
                                                {"message", "mkfs.ext4: No space left on device"}});
        }));
    CHECK(finished.status == RunStatus::kFailed);
    CHECK(finished.failure_reason ==
          "agent failed during format: mkfs.ext4: No space left on device");
}

TEST_CASE("executor: a channel closed mid-run fails the run and says so", "[run_executor]") {
    ExecutorFixture fixture;
    SECTION("the channel closes, the guest still runs") {
        const RunRecord finished = run_with_guest(
            fixture, after_job([](GuestChannel& channel) {
                channel.send(protocol::kProgress,
                             Json{{"phase", "bench"}, {"message", "fio"}, {"elapsed_s", 1.0}});
                channel.close();
            }));
        CHECK(finished.status == RunStatus::kFailed);
        CHECK_THAT(finished.failure_reason, Contains("channel closed"));
        CHECK_THAT(finished.failure_reason, Contains("console log: " + finished.console_log));
        CHECK_FALSE(finished.failure_reason.find("stopped") != std::string::npos);
    }
    SECTION("the guest powers off") {
        const RunRecord finished =
            run_with_guest(fixture, after_job([](GuestChannel& channel) { channel.power_off(); }));
        CHECK(finished.status == RunStatus::kFailed);
        CHECK_THAT(finished.failure_reason, Contains("channel closed"));
        CHECK_THAT(finished.failure_reason, Contains("the guest stopped unexpectedly"));
        CHECK_THAT(finished.failure_reason, Contains("console log: " + finished.console_log));
    }
    SECTION("in the middle of a message") {
        const RunRecord finished =
            run_with_guest(fixture, after_job([](GuestChannel& channel) {
                               channel.send_raw(R"({"v":2,"type":"result","output":{)");
                               channel.power_off();
                           }));
        CHECK(finished.status == RunStatus::kFailed);
        CHECK_THAT(finished.failure_reason, Contains("channel closed in the middle of a message"));
    }
}

TEST_CASE("executor: a guest that stays silent after the job hits the run timeout",
          "[run_executor]") {
    ExecutorFixture fixture;
    const RunRecord finished =
        run_with_guest(fixture, after_job([](GuestChannel& channel) { channel.sleep(30s); }), 5, 1);
    // The daemon's own deadline passed while the workload ran: timed out.
    CHECK(finished.status == RunStatus::kTimedOut);
    CHECK_THAT(finished.failure_reason, Contains("run exceeded its time limit of 1 s"));
}

TEST_CASE("executor: a result with unusable fio output is refused", "[run_executor]") {
    ExecutorFixture fixture;
    GuestBehaviour behaviour;
    std::string expected;
    SECTION("fio JSON without jobs") {
        behaviour.fio = Json{{"fio version", "fio-3.33"}, {"jobs", "garbage"}};
        behaviour.metrics = Json{{"read_iops", 100.0}};
        expected = "agent result has unusable fio output";
    }
    SECTION("a job that reports an error") {
        Json fio = recorded_fio();
        fio["jobs"][0]["error"] = 28;
        behaviour.fio = fio;
        expected = "agent result has unusable fio output";
    }
    SECTION("fio output that is not an object") {
        behaviour.fio = Json("fio: ENOSPC");
        expected = "result.output: expected an object, got string";
    }
    const RunRecord finished = run_with_guest(fixture, well_behaved_guest(behaviour));
    CHECK(finished.status == RunStatus::kFailed);
    CHECK_THAT(finished.failure_reason, Contains(expected));
    CHECK(fixture.stored(finished.id).metrics.empty());
}

TEST_CASE("executor: settings not in force fail the run with the difference", "[run_executor]") {
    ExecutorFixture fixture;
    GuestBehaviour behaviour;
    std::vector<std::string> expected;
    SECTION("the guest sees a rotational disk although ssd was requested") {
        behaviour.readback_patch = Json{{"rotational", 1}};
        expected = {"ssd: requested on, guest sees a rotational disk (rotational=1)"};
    }
    SECTION("the guest mounted another file system without the options") {
        behaviour.readback_patch = Json{{"fs_type", "xfs"}, {"mount_options", "rw,relatime"}};
        expected = {"filesystem: requested ext4, guest has xfs",
                    "mount option noatime: requested, guest mounted with rw,relatime"};
    }
    SECTION("the hypervisor applied another cache mode") {
        fixture.hypervisor.set_applied_patch(Json{{"cache", "writeback"}});
        expected = {"cache: requested unsafe, domain XML has writeback"};
    }
    SECTION("the hypervisor does not report iothread") {
        fixture.hypervisor.set_applied_patch(Json{{"iothread", nullptr}});
        expected = {"iothread: requested on, not reported by domain XML"};
    }
    const RunRecord finished = run_with_guest(fixture, well_behaved_guest(behaviour));
    INFO(finished.failure_reason);
    CHECK(finished.status == RunStatus::kFailed);
    CHECK_THAT(finished.failure_reason, Contains("settings not in force: "));
    for (const auto& line : expected) CHECK_THAT(finished.failure_reason, Contains(line));
    const RunRecord stored = fixture.stored(finished.id);
    CHECK(stored.applied_settings.at("verified") == false);
    CHECK(stored.applied_settings.contains("guest"));
}

TEST_CASE(
    "executor: a level not checked fails the run unless the host forbids it or the spec "
    "says report",
    "[run_executor][not_checked]") {
    ExecutorFixture fixture;
    Json level = {{"checked", false}, {"reason", "info block: no answer"}, {"forbidden", false}};
    bool fails = true;
    SECTION("not forbidden, the default policy: fails") {}
    SECTION("forbidden, the default policy: reported") {
        level["forbidden"] = true;
        fails = false;
    }
    SECTION("not forbidden, unchecked_levels = report: reported") {
        fixture.unchecked_levels = [](std::int64_t) { return UncheckedLevelPolicy::kReport; };
        fails = false;
    }
    fixture.hypervisor.set_applied_patch(Json{{"levels", {{"qemu_info_block", level}}}});
    const RunRecord finished = run_with_guest(fixture, well_behaved_guest(GuestBehaviour{}));
    INFO(finished.failure_reason);
    CHECK(finished.status == (fails ? RunStatus::kFailed : RunStatus::kSucceeded));
    const Json applied = fixture.stored(finished.id).applied_settings;
    CHECK(applied.at("verified") == !fails);
    const Json& entries = applied.at("verification").at("not_checked");
    // The level, then the discard effect this guest (no "trim") could not show.
    REQUIRE(entries.size() == 2);
    CHECK(entries[0].at("level") == "QEMU (info block)");
    CHECK(entries[0].at("fails_run") == fails);
    CHECK(entries[1].at("setting") == "discard");
    CHECK(entries[1].at("fails_run") == false);
    if (fails) {
        CHECK_THAT(finished.failure_reason,
                   Contains("settings not verified (unchecked_levels = \"fail-unless-forbidden\"): "
                            "QEMU (info block): not checked: info block: no answer"));
    }
}

// One run of a guest that trims (announces "trim"), on a storage whose
// allocation reads `before` at trim_ready and `after` once the result came.
RunRecord run_with_trim(ExecutorFixture& fixture, bool discard, std::uint64_t before,
                        std::uint64_t after) {
    GuestBehaviour behaviour;
    behaviour.trims = true;
    fixture.storage.set_allocations({before, after});
    StorageConfig config = reference_config();
    config.discard = discard;
    fixture.hypervisor.set_guest_script(well_behaved_guest(behaviour));
    RunRecord finished = fixture.execute(fixture.pending_run(config));
    INFO("failure reason: " << finished.failure_reason);
    check_nothing_left(fixture, finished);
    return finished;
}

TEST_CASE("executor: discard is proven by the storage's allocation around the guest's trim",
          "[run_executor][discard_effect]") {
    ExecutorFixture fixture;
    constexpr std::uint64_t kBefore = 40u << 20;
    SECTION("discard on and the allocation drops: the run succeeds with both figures stored") {
        const RunRecord finished = run_with_trim(fixture, true, kBefore, 8u << 20);
        REQUIRE(finished.status == RunStatus::kSucceeded);
        const Json effect = fixture.stored(finished.id).applied_settings.at("discard_effect");
        CHECK(effect.at("checked") == true);
        CHECK(effect.at("in_force") == true);
        CHECK(effect.at("allocated_before_bytes") == kBefore);
        CHECK(effect.at("allocated_after_bytes") == 8u << 20);
        CHECK(effect.at("removed_bytes") == 32u << 20);
    }
    SECTION("discard on but the storage keeps its blocks: the run fails naming both figures") {
        const RunRecord finished = run_with_trim(fixture, true, kBefore, kBefore);
        CHECK(finished.status == RunStatus::kFailed);
        CHECK_THAT(finished.failure_reason,
                   Contains("settings not in force: discard: requested on, but the storage's "
                            "allocation did not drop by 1.0 MiB after fstrim: allocated 41943040 "
                            "bytes before fstrim, 41943040 after"));
        CHECK(fixture.stored(finished.id).applied_settings.at("verified") == false);
    }
    SECTION("discard off but the storage frees: the run fails naming both figures") {
        const RunRecord finished = run_with_trim(fixture, false, kBefore, 8u << 20);
        CHECK(finished.status == RunStatus::kFailed);
        CHECK_THAT(finished.failure_reason,
                   Contains("discard: requested off, but the storage's allocation dropped after "
                            "fstrim: allocated 41943040 bytes before fstrim, 8388608 after"));
    }
}

TEST_CASE("executor: without a trimming agent or a measurable storage the reason is recorded",
          "[run_executor][discard_effect]") {
    ExecutorFixture fixture;
    std::string reason;
    SECTION("an agent without the trim capability (one-shot) is not asked to trim") {
        fixture.storage.set_allocations({40u << 20});
        fixture.hypervisor.set_guest_script(well_behaved_guest());
        reason = "the agent cannot wait for the host's measurement before its trim";
    }
    SECTION("a storage that cannot measure its volumes") {
        GuestBehaviour behaviour;
        behaviour.trims = true;
        fixture.hypervisor.set_guest_script(well_behaved_guest(behaviour));
        reason = "cannot measure the volume's allocation: storage 'fake' cannot measure";
    }
    const RunRecord finished = fixture.execute(fixture.pending_run());
    INFO(finished.failure_reason);
    CHECK(finished.status == RunStatus::kSucceeded);
    check_nothing_left(fixture, finished);
    const Json effect = fixture.stored(finished.id).applied_settings.at("discard_effect");
    CHECK(effect.at("checked") == false);
    CHECK_THAT(effect.at("reason").get<std::string>(), Contains(reason));
}

TEST_CASE("executor: a trim_ready for another run fails the run",
          "[run_executor][discard_effect]") {
    ExecutorFixture fixture;
    fixture.storage.set_allocations({40u << 20});
    const RunRecord finished = run_with_guest(fixture, [](GuestChannel& channel) {
        if (!channel.send(protocol::kHello, hello_payload(true))) return;
        auto job = channel.receive(10s);
        if (!job || !job->value("trim", false)) return;
        channel.send(protocol::kTrimReady, Json{{"run_id", "not-this-run"}});
        (void)channel.receive(2s);
    });
    CHECK(finished.status == RunStatus::kFailed);
    CHECK_THAT(finished.failure_reason,
               Contains("agent sent trim_ready for run \"not-this-run\", not for this run"));
}

TEST_CASE("executor: a hypervisor that cannot report applied settings fails the run",
          "[run_executor]") {
    ExecutorFixture fixture;
    fixture.hypervisor.fail_applied_settings("cannot read domain XML: connection reset");
    const RunRecord finished = run_with_guest(fixture, well_behaved_guest());
    CHECK(finished.status == RunStatus::kFailed);
    CHECK(finished.failure_reason == "cannot read domain XML: connection reset");
}

TEST_CASE("executor: cancellation ends the run as cancelled and tears down", "[run_executor]") {
    ExecutorFixture fixture;
    std::atomic<bool> cancelled{false};
    std::thread canceller;
    SECTION("while the benchmark runs") {
        GuestBehaviour behaviour;
        behaviour.before_result = [&cancelled](GuestChannel& channel) {
            cancelled = true;  // the daemon cancels while fio runs
            channel.sleep(30s);
            return false;
        };
        fixture.hypervisor.set_guest_script(well_behaved_guest(behaviour));
    }
    SECTION("while waiting for the agent socket") {
        fixture.hypervisor.set_no_agent_socket();
        canceller = std::thread([&cancelled] {
            std::this_thread::sleep_for(200ms);
            cancelled = true;
        });
    }
    const RunRecord run = fixture.pending_run();
    const RunRecord finished = fixture.execute(run, 30, 30, cancelled);
    if (canceller.joinable()) canceller.join();
    // Not a 30 s timeout (that would be failed or timed out): the cancel.
    CHECK(finished.status == RunStatus::kCancelled);
    CHECK(finished.failure_reason == "cancelled");
    check_nothing_left(fixture, finished);
}

TEST_CASE("executor: a storage failure fails the run before any VM starts", "[run_executor]") {
    ExecutorFixture fixture;
    fixture.storage.fail_create("lvcreate: Insufficient free space in thin pool");
    const RunRecord finished = run_with_guest(fixture, well_behaved_guest());
    CHECK(finished.status == RunStatus::kFailed);
    CHECK(finished.failure_reason == "lvcreate: Insufficient free space in thin pool");
    CHECK(fixture.hypervisor.started().empty());
    CHECK(fixture.storage.created().empty());
    CHECK(fixture.storage.removed().empty());
}

TEST_CASE("executor: a VM that fails to start fails the run and frees the volume",
          "[run_executor]") {
    ExecutorFixture fixture;
    fixture.hypervisor.fail_start("internal error: qemu unexpectedly closed the monitor");
    const RunRecord finished = run_with_guest(fixture, well_behaved_guest());
    CHECK(finished.status == RunStatus::kFailed);
    CHECK(finished.failure_reason == "internal error: qemu unexpectedly closed the monitor");
    CHECK(fixture.hypervisor.started().size() == 1);
    CHECK(fixture.storage.created().size() == 1);
}

TEST_CASE("executor: a run cancelled before it started is not started", "[run_executor]") {
    ExecutorFixture fixture;
    fixture.hypervisor.set_guest_script(well_behaved_guest());
    const RunRecord run = fixture.pending_run();
    REQUIRE(fixture.store->cancel_pending_runs(run.sweep_id).ok());
    const RunRecord finished = fixture.execute(run);
    CHECK(finished.status == RunStatus::kCancelled);
    CHECK(fixture.hypervisor.started().empty());
    CHECK(fixture.hypervisor.destroyed().empty());
    CHECK(fixture.storage.created().empty());
}

// Regressions: each of these was a bug once.

TEST_CASE("fio numbers whose sum overflows fail the run, which is still recorded",
          "[run_executor][regression]") {
    // Each value is finite (JSON cannot carry more), their sum is not:
    // metrics_from_fio_json returns inf, Store::finish_run refuses it, and
    // the executor returns "failed" while the store keeps "running".
    ExecutorFixture fixture;
    GuestBehaviour behaviour;
    Json fio = recorded_fio("randrw_4k_numjobs2.json");
    fio["jobs"][0]["read"]["iops"] = 1.5e308;
    fio["jobs"][1]["read"]["iops"] = 1.5e308;
    behaviour.fio = fio;
    behaviour.metrics = Json::object();
    fixture.hypervisor.set_guest_script(well_behaved_guest(behaviour));
    const RunRecord run = fixture.pending_run();
    const RunRecord finished = fixture.execute(run);
    CHECK(finished.status == RunStatus::kFailed);
    CHECK(fixture.stored(run.id).status == RunStatus::kFailed);
}

TEST_CASE("a result for another run id (sent before the job) is refused",
          "[run_executor][regression]") {
    ExecutorFixture fixture;
    fixture.hypervisor.set_guest_script([fio = recorded_fio()](GuestChannel& channel) {
        channel.send(protocol::kHello, hello_payload());
        channel.send(protocol::kResult, Json{{"run_id", "not-this-run"},
                                             {"timings", Json::object()},
                                             {"output", fio},
                                             {"readback", matching_readback(channel.request())},
                                             {"versions", Json::object()}});
    });
    const RunRecord run = fixture.pending_run();
    const RunRecord finished = fixture.execute(run);
    CHECK(finished.status == RunStatus::kFailed);
    CHECK(finished.failure_reason ==
          "agent sent a result for run \"not-this-run\", not for this run (\"" +
              std::to_string(run.id) + "\")");
}

TEST_CASE("a succeeded run's stored console_log is cleared with the deleted file",
          "[run_executor][regression]") {
    ExecutorFixture fixture;
    fixture.hypervisor.set_guest_script(well_behaved_guest());
    const RunRecord finished = fixture.execute(fixture.pending_run());
    REQUIRE(finished.status == RunStatus::kSucceeded);
    const std::string stored = fixture.stored(finished.id).console_log;
    CHECK((stored.empty() || std::filesystem::exists(stored)));
}

TEST_CASE("an unusable run directory fails the run instead of throwing",
          "[run_executor][regression]") {
    // Scheduler::ExecuteRun must not throw (an exception on a worker thread
    // terminates the daemon), but execute() uses the throwing overloads of
    // std::filesystem::create_directories/remove.
    ExecutorFixture fixture;
    fixture.hypervisor.set_guest_script(well_behaved_guest());
    const RunRecord run = fixture.pending_run();
    write_text(fixture.config.run_dir(), "a file where the run directory should be\n");
    RunRecord finished;
    CHECK_NOTHROW(finished = fixture.execute(run));
    CHECK(finished.status == RunStatus::kFailed);
}

TEST_CASE("a readback value of the wrong JSON type fails the run instead of killing the daemon",
          "[run_executor][regression]") {
    // Issue 9: "fs_type": 1 made verify_settings throw nlohmann's type_error
    // on a scheduler worker, which reached std::terminate.
    ExecutorFixture fixture;
    GuestBehaviour behaviour;
    behaviour.readback_patch = Json{{"fs_type", 1}};
    const RunRecord run = fixture.pending_run();
    RunRecord finished;
    fixture.hypervisor.set_guest_script(well_behaved_guest(behaviour));
    REQUIRE_NOTHROW(finished = fixture.execute(run));
    INFO(finished.failure_reason);
    CHECK(finished.status == RunStatus::kFailed);
    CHECK(finished.failure_reason == "result.readback.fs_type: expected a string, got number");
    check_nothing_left(fixture, finished);
    CHECK(fixture.stored(run.id).metrics.empty());
}

TEST_CASE("an exception inside a run fails only that run, as a bug, and still tears down",
          "[run_executor][regression]") {
    ExecutorFixture fixture;
    fixture.hypervisor.set_guest_script(well_behaved_guest());
    fixture.hypervisor.throw_from_applied_settings("map::at");  // after the VM started
    const RunRecord run = fixture.pending_run();
    RunRecord finished;
    REQUIRE_NOTHROW(finished = fixture.execute(run));
    CHECK(finished.status == RunStatus::kFailed);
    CHECK(finished.failure_reason == "internal error (bug): map::at");
    CHECK(fixture.hypervisor.started().size() == 1);
    check_nothing_left(fixture, finished);  // VM destroyed, volume removed, recorded
}

}  // namespace
}  // namespace ds

// ---------------------------------------------------------------------------
// Workload kinds, block settings, time limits and image variants.

namespace ds {
namespace {

using namespace ds::testing;
using Catch::Matchers::Contains;

StorageConfig btrfs_nocow_config() {
    StorageConfig config = reference_config();
    config.filesystem = FilesystemSpec{"btrfs+nocow", "btrfs", {}, "", {"nocow"}};
    config.scheduler = IoScheduler::kBfq;
    config.read_ahead_kb = 512;
    return config;
}

Json atis_output(double total_s) {
    return Json{{"stdout", sqlbench_atis_stdout(total_s)},
                {"server_version", "10.11.6-MariaDB-0+deb12u1"}};
}

}  // namespace

TEST_CASE(
    "executor: a mariadb-atis run boots the mariadb image variant and stores what was "
    "verified",
    "[run_executor][workloads]") {
    ExecutorFixture fixture;
    std::vector<std::string> asked;
    fixture.image_for = [&asked](const ImageChoice& image) -> Result<GuestImage> {
        asked.emplace_back(image_subdir(image));
        const std::string dir = "/img/" + image_subdir(image);
        return GuestImage{dir + "/vmlinux", dir + "/initrd.img", dir + "/root.img"};
    };
    GuestBehaviour behaviour;
    behaviour.kind = "mariadb-atis";
    behaviour.output = atis_output(23);
    fixture.hypervisor.set_guest_script(well_behaved_guest(behaviour));
    const Workload workload =
        atis_workload(Json{{"innodb_doublewrite", 0}, {"innodb_flush_method", "O_DSYNC"}});
    const RunRecord run = fixture.pending_run(btrfs_nocow_config(), workload);
    const RunRecord finished = fixture.execute(run);
    INFO("failure reason: " << finished.failure_reason);
    REQUIRE(finished.status == RunStatus::kSucceeded);
    CHECK(asked == std::vector<std::string>{"mariadb"});
    const auto request = fixture.hypervisor.request_for(finished.vm_name);
    REQUIRE(request);
    CHECK(request->image.root_disk == "/img/mariadb/root.img");
    CHECK(request->image.kernel == "/img/mariadb/vmlinux");

    // The job: the workload as stored, the non-default block settings, the
    // run timeout (the workload sets none).
    const auto received = fixture.hypervisor.guest_received(finished.vm_name);
    REQUIRE_FALSE(received.empty());
    const Json& job = received.front();
    CHECK(job.at("type") == "job");
    CHECK(job.at("workload") == to_json(workload));
    CHECK(job.at("block") == Json{{"scheduler", "bfq"}, {"read_ahead_kb", 512}});
    CHECK(job.at("timeout_s") == 10);

    const RunRecord stored = fixture.stored(run.id);
    const auto expected = metrics_from_workload_output("mariadb-atis", atis_output(23));
    REQUIRE(expected.ok());
    CHECK(stored.metrics == expected.value());
    CHECK(stored.metrics.at("total_s") == 23);
    CHECK(Json::parse(stored.raw_output) == atis_output(23));
    const Json& guest = stored.applied_settings.at("guest");
    CHECK(stored.applied_settings.at("verified") == true);
    CHECK(guest.at("server_variables") ==
          Json{{"innodb_doublewrite", "0"}, {"innodb_flush_method", "O_DSYNC"}});
    CHECK(guest.at("nocow") == true);
    CHECK(guest.at("btrfs").at("metadata") == "dup");
    CHECK(guest.at("scheduler") == "bfq");
    CHECK(guest.at("read_ahead_kb") == 512);
}

TEST_CASE("executor: a server variable not in force fails the run with the difference",
          "[run_executor][workloads]") {
    ExecutorFixture fixture;
    GuestBehaviour behaviour;
    behaviour.kind = "mariadb-atis";
    behaviour.output = atis_output(15);
    behaviour.readback_patch = {{"server_variables", {{"innodb_flush_method", "fsync"}}}};
    fixture.hypervisor.set_guest_script(well_behaved_guest(behaviour));
    const RunRecord finished = fixture.execute(fixture.pending_run(
        reference_config(), atis_workload(Json{{"innodb_flush_method", "nosync"}})));
    CHECK(finished.status == RunStatus::kFailed);
    CHECK(finished.failure_reason ==
          "settings not in force: server variable innodb_flush_method: requested nosync, server "
          "has fsync");
    CHECK(fixture.stored(finished.id).applied_settings.at("verified") == false);
}

TEST_CASE("executor: the workload's timeout goes to the job and its expiry is timed_out",
          "[run_executor][workloads]") {
    ExecutorFixture fixture;
    Workload workload = fio_workload();
    workload.timeout_s = 3;
    fixture.hypervisor.set_guest_script(after_job([](GuestChannel& channel) {
        channel.send(protocol::kError,
                     Json{{"run_id", "ignored"},
                          {"phase", "bench"},
                          {"code", "timeout"},
                          {"message", "fio ran longer than 3 s and was stopped"}});
    }));
    const RunRecord run = fixture.pending_run(reference_config(), workload);
    const RunRecord finished = fixture.execute(run);
    check_nothing_left(fixture, finished);
    CHECK(finished.status == RunStatus::kTimedOut);
    CHECK(finished.failure_reason ==
          "workload stopped at its time limit (agent, during bench: fio ran longer than 3 s and "
          "was stopped)");
    const auto received = fixture.hypervisor.guest_received(finished.vm_name);
    REQUIRE_FALSE(received.empty());
    CHECK(received.front().at("timeout_s") == 3);
    CHECK_FALSE(received.front().contains("block"));  // every block setting at its default

    // Any other agent error is a plain failure, its code notwithstanding.
    ExecutorFixture other;
    other.hypervisor.set_guest_script(after_job([](GuestChannel& channel) {
        channel.send(protocol::kError,
                     Json{{"phase", "bench"},
                          {"code", "no_space"},
                          {"message", "fio: io_u error: No space left on device"}});
    }));
    const RunRecord full = other.execute(other.pending_run());
    CHECK(full.status == RunStatus::kFailed);
    CHECK_THAT(full.failure_reason, Contains("No space left on device"));
}

TEST_CASE("executor: a missing image variant fails the run naming it",
          "[run_executor][workloads]") {
    ExecutorFixture fixture;
    fixture.image_for = [](const ImageChoice& image) -> Result<GuestImage> {
        return make_error(errc::kUnavailable,
                          describe_image(image) + " incomplete: /img/mariadb/root.img is missing");
    };
    fixture.hypervisor.set_guest_script(well_behaved_guest());
    const RunRecord finished =
        fixture.execute(fixture.pending_run(reference_config(), atis_workload()));
    check_nothing_left(fixture, finished);
    CHECK(finished.status == RunStatus::kFailed);
    CHECK_THAT(finished.failure_reason, Contains("/img/mariadb/root.img is missing"));
    CHECK(fixture.hypervisor.started().empty());
}

}  // namespace ds

namespace ds {
namespace {

using namespace ds::testing;

// Records what an observer is told, as host telemetry would see it.
class PhaseLog : public RunObserver {
  public:
    void phase_started(std::int64_t, RunPhase phase) override {
        events.push_back("start " + std::string(to_string(phase)));
    }
    void phase_finished(std::int64_t, RunPhase phase, double seconds,
                        const Status& outcome) override {
        events.push_back(std::string(outcome.ok() ? "ok " : "failed ") +
                         std::string(to_string(phase)));
        CHECK(seconds >= 0);
    }
    std::vector<std::string> events;
};

TEST_CASE("run phases: each is timed and reported to the observer in order", "[run_executor]") {
    ExecutorFixture fixture;
    PhaseLog log;
    fixture.observer = &log;
    fixture.hypervisor.set_guest_script(well_behaved_guest());
    const RunRecord finished = fixture.execute(fixture.pending_run());
    REQUIRE(finished.status == RunStatus::kSucceeded);
    CHECK(log.events == std::vector<std::string>{"start provision", "ok provision", "start boot",
                                                 "ok boot", "start job", "ok job", "start verify",
                                                 "ok verify", "start teardown", "ok teardown",
                                                 "start record", "ok record"});
    for (const char* phase : {"provision_s", "boot_s", "job_s", "verify_s", "teardown_s"})
        CHECK(fixture.stored(finished.id).timings.at(phase).get<double>() >= 0);
}

TEST_CASE("run phases: a failed phase ends the run there, teardown and record still run",
          "[run_executor]") {
    ExecutorFixture fixture;
    PhaseLog log;
    fixture.observer = &log;
    fixture.hypervisor.fail_start("no QEMU today");
    const RunRecord finished = fixture.execute(fixture.pending_run());
    REQUIRE(finished.status == RunStatus::kFailed);
    CHECK(log.events == std::vector<std::string>{"start provision", "ok provision", "start boot",
                                                 "failed boot", "start teardown", "ok teardown",
                                                 "start record", "ok record"});
    const RunRecord stored = fixture.stored(finished.id);
    CHECK_FALSE(stored.timings.contains("job_s"));
    CHECK(stored.timings.contains("boot_s"));
}

// An observer with a bug does not fail the run it watches.
class ThrowingObserver : public RunObserver {
  public:
    void phase_started(std::int64_t, RunPhase) override { throw std::runtime_error("oops"); }
    void phase_finished(std::int64_t, RunPhase, double, const Status&) override {}
};

TEST_CASE("run phases: an observer that throws does not fail the run", "[run_executor]") {
    ExecutorFixture fixture;
    ThrowingObserver observer;
    fixture.observer = &observer;
    fixture.hypervisor.set_guest_script(well_behaved_guest());
    CHECK(fixture.execute(fixture.pending_run()).status == RunStatus::kSucceeded);
}

}  // namespace

TEST_CASE("executor: the guest's handle is recorded before it exists and destroys it after",
          "[executor]") {
    ExecutorFixture fixture;
    fixture.hypervisor.record_handles();
    fixture.hypervisor.set_guest_script(well_behaved_guest());
    const RunRecord run = fixture.pending_run();
    const RunRecord finished = fixture.execute(run);
    INFO(finished.failure_reason);
    CHECK(finished.status == RunStatus::kSucceeded);
    const Json handle = {{"fake_vm", fixture.names.vm(run.id)}};
    CHECK(fixture.hypervisor.destroyed_by_handle() == std::vector<Json>{handle});
    check_nothing_left(fixture, finished);
    // Destroyed: the store forgets it, so recovery has nothing to do.
    CHECK(fixture.store->recorded_vms()->empty());
}

TEST_CASE("executor: a start failing after the record is torn down by the handle", "[executor]") {
    ExecutorFixture fixture;
    fixture.hypervisor.record_handles();
    fixture.hypervisor.fail_start("config step failed");
    const RunRecord finished = fixture.execute(fixture.pending_run());
    CHECK(finished.status == RunStatus::kFailed);
    CHECK(fixture.hypervisor.destroyed_by_handle().size() == 1);
    CHECK(fixture.store->recorded_vms()->empty());
}

TEST_CASE("executor: the run's accel is what the running guest reports, not the host's",
          "[executor]") {
    ExecutorFixture fixture;
    fixture.hypervisor.set_running_accel(Accel::kTcg);
    RunEnvironment environment = fixture.environment();
    environment.accel = Accel::kKvm;  // what the host asks for
    fixture.hypervisor.set_guest_script(well_behaved_guest());
    const RunRecord run = fixture.pending_run();
    const RunRecord finished = RunExecutor(environment).execute(run, 5, 10, std::atomic<bool>{});
    INFO(finished.failure_reason);
    REQUIRE(finished.status == RunStatus::kSucceeded);
    const RunRecord stored = fixture.stored(run.id);
    CHECK(stored.accel == "tcg");
    CHECK(stored.versions["accel"] == "tcg");
    CHECK(stored.versions["qemu"] == "7.2.0-vm");  // the guest's own over the host's
    CHECK(stored.applied_settings["accel"]["source"] == "fake");
    CHECK(stored.partition_key.find("\"tcg\"") != std::string::npos);
}

}  // namespace ds

namespace ds {

TEST_CASE("executor: a guest running with another accelerator than its host's fails the run",
          "[executor]") {
    ExecutorFixture fixture;
    fixture.hypervisor.set_running_accel(Accel::kKvm);
    RunEnvironment environment = fixture.environment();
    environment.accel = Accel::kTcg;  // the host's probed choice
    environment.accel_enforced = true;
    fixture.hypervisor.set_guest_script(well_behaved_guest());
    const RunRecord run = fixture.pending_run();
    const RunRecord finished = RunExecutor(environment).execute(run, 5, 10, std::atomic<bool>{});
    CHECK(finished.status == RunStatus::kFailed);
    CHECK(finished.failure_reason ==
          "settings not in force: acceleration: host local runs tcg, QEMU runs kvm (fake)");
    const RunRecord stored = fixture.stored(run.id);
    CHECK(stored.applied_settings["accel"]["in_force"] == "kvm");
    CHECK(stored.applied_settings["accel"]["expected"] == "tcg");
    // Nothing is left of it.
    CHECK(fixture.hypervisor.live_vms().empty());
}

}  // namespace ds
