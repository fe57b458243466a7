// Hostile guests against the daemon's real host side: RunExecutor and
// AgentSession over a real unix socket (the one the FakeHypervisor binds, as
// QEMU would), with a real Store and EventBus. Each guest misbehaves in one
// way: it lies about types, floods, nests deeply, answers for another run,
// stays silent, hangs up, or never stops talking. The daemon (this process)
// must survive every one, each run must fail with a reason that names what
// the guest did, and the process's memory must stay under a stated bound,
// measured from /proc/self/status.
#include <malloc.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <iostream>
#include <string>

#include "daemon/run/guest_messages.h"
#include "daemon/run/run_executor.h"
#include "support/fakes/daemon_fakes.h"

namespace ds {
namespace {

using namespace ds::testing;
using Catch::Matchers::Contains;

// The stated bound: the whole test process (daemon side and the fake guests'
// threads together) at its peak and after the runs.
constexpr long kRssBoundKiB = 100 * 1024;

// A field of /proc/self/status in KiB ("VmRSS", "VmHWM"); -1 if unreadable.
long status_kib(const std::string& field) {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
    }
    return -1;
}

// Resident memory after glibc has returned what it can to the system: what
// the process really still holds, not what the allocator keeps cached.
long trimmed_rss_kib() {
    ::malloc_trim(0);
    return status_kib("VmRSS");
}

struct HostileGuest {
    std::string what;  // what the guest does
    GuestScript script;
    std::string expected_reason;  // a fragment of the run's failure reason
    RunStatus expected_status = RunStatus::kFailed;
    int run_timeout_s = 10;
};

// A guest that says hello, reads the job, then does `then`.
GuestScript after_job(std::function<void(GuestChannel&)> then) {
    return [then](GuestChannel& channel) {
        if (!channel.send(protocol::kHello, hello_payload())) return;
        if (!channel.receive(10s)) return;
        then(channel);
    };
}

// An honest guest whose result is changed by `patch` (a JSON merge patch).
GuestScript honest_but(Json patch) {
    GuestBehaviour behaviour;
    behaviour.result_patch = std::move(patch);
    return well_behaved_guest(behaviour);
}

// A result holding every field the schema knows, with honest values, so
// type confusion can be tried on each (guest_messages.h lists them).
Json every_result_field() {
    return Json{{"run_id", "1"},
                {"output", Json::object()},
                {"metrics", Json::object()},
                {"timings",
                 {{"tune_s", 0.1},
                  {"format_s", 0.2},
                  {"mount_s", 0.3},
                  {"post_format_s", 0.4},
                  {"bench_s", 2.5}}},
                {"versions", {{"kernel", "6.1.0"}, {"fio", "fio-3.33"}, {"agent", "0.1.0"}}},
                {"readback",
                 {{"device", "sdb"},
                  {"fs_type", "ext4"},
                  {"mount_options", "rw,noatime"},
                  {"rotational", 0},
                  {"discard_max_bytes", 1073741824},
                  {"logical_block_size", 512},
                  {"read_ahead_kb", 128},
                  {"nr_requests", 256},
                  {"scheduler", "mq-deadline"},
                  {"driver", "virtio_scsi"},
                  {"write_cache", "write back"},
                  {"serial", "disksweep-data"},
                  {"mount_source", "/dev/sdb"},
                  {"online_cpus", 2},
                  {"hw_queues", 2},
                  {"btrfs", {{"data", "single"}, {"metadata", "dup"}, {"system", "dup"}}},
                  {"work_dir_attributes", "----"},
                  {"nocow", false},
                  {"server_variables", {{"innodb_flush_method", "O_DIRECT"}}},
                  {"server_version", "10.11.6"}}}};
}

// A value of another JSON type than `honest`.
Json confused(const Json& honest) {
    if (honest.is_string()) return 1;
    if (honest.is_object()) return Json::array({"an", "array"});
    return "1";  // numbers and booleans
}

// One run per field of the result: that field (and only it) of a wrong type.
// `path` is the field's path below "result"; `patch` builds the merge patch.
void add_type_confusions(const Json& honest, const std::string& path,
                         const std::function<Json(Json)>& patch_at,
                         std::vector<HostileGuest>& guests) {
    guests.push_back({"sends " + path + " of the wrong type",
                      honest_but(patch_at(confused(honest))), "result." + path + ": expected "});
    // Descend into the records (not into output or metrics: their content is
    // the workload's, checked by metrics_from_workload_output).
    if (!honest.is_object() || path == "output" || path == "metrics") return;
    for (const auto& [key, value] : honest.items()) {
        add_type_confusions(
            value, path + "." + key,
            [patch_at, key = key](Json inner) {
                return patch_at(Json{{key, std::move(inner)}});
            },
            guests);
    }
}

std::vector<HostileGuest> type_confusion_guests() {
    std::vector<HostileGuest> guests;
    const Json honest = every_result_field();
    for (const auto& [key, value] : honest.items()) {
        add_type_confusions(
            value, key,
            [key = key](Json inner) {
                return Json{{key, inner}};
            },
            guests);
    }
    guests.push_back({"sends a hello whose agent_version is a number",
                      [](GuestChannel& channel) {
                          Json hello = hello_payload();
                          hello["agent_version"] = 7;
                          channel.send(protocol::kHello, hello);
                      },
                      "hello.agent_version: expected a string, got number"});
    guests.push_back({"sends a hello whose os is a string",
                      [](GuestChannel& channel) {
                          Json hello = hello_payload();
                          hello["os"] = "debian 13";
                          channel.send(protocol::kHello, hello);
                      },
                      "hello.os: expected an object, got string"});
    guests.push_back({"sends a hello whose os.version_id is a number",
                      [](GuestChannel& channel) {
                          Json hello = hello_payload();
                          hello["os"] = {{"id", "debian"}, {"version_id", 13}};
                          channel.send(protocol::kHello, hello);
                      },
                      "hello.os.version_id: expected a string, got number"});
    guests.push_back(
        {"sends progress whose elapsed_s is a string", after_job([](GuestChannel& channel) {
             channel.send(protocol::kProgress,
                          Json{{"phase", "bench"}, {"message", "fio"}, {"elapsed_s", "soon"}});
         }),
         "progress.elapsed_s: expected a number, got string"});
    guests.push_back(
        {"sends an error whose phase is an object", after_job([](GuestChannel& channel) {
             channel.send(protocol::kError, Json{{"phase", Json::object()}, {"message", "x"}});
         }),
         "error.phase: expected a string, got object"});
    guests.push_back({"reports a negative block size",
                      honest_but(Json{{"readback", {{"logical_block_size", -512}}}}),
                      "result.readback.logical_block_size: -512 is out of range"});
    return guests;
}

// 250 progress messages of 1 MB each, then an honest result: progress is
// advisory and cut, so this run is not refused (it succeeds) - the bound is
// on what the daemon keeps of it.
GuestScript progress_flood() {
    GuestBehaviour behaviour;
    // Encoded once (the guest's own CPU is not what is measured here).
    const std::string line = protocol::encode(
        protocol::kProgress,
        Json{{"phase", "bench"}, {"message", std::string(1'000'000, 'p')}, {"elapsed_s", 1.0}});
    behaviour.before_result = [line](GuestChannel& channel) {
        for (int i = 0; i < 250; ++i) {
            if (!channel.send_raw(line)) return false;
        }
        return true;
    };
    return well_behaved_guest(behaviour);
}

std::vector<HostileGuest> protocol_abuse_guests() {
    std::vector<HostileGuest> guests;
    guests.push_back({"nests 100,000 arrays deep", after_job([](GuestChannel& channel) {
                          channel.send_raw(R"({"v":2,"type":"result","output":)" +
                                           std::string(100'000, '[') + "\n");
                      }),
                      "message nests deeper than 64 levels"});
    guests.push_back(
        {"nests within the bound where the readback wants a string",
         honest_but(
             Json{{"readback",
                   {{"fs_type", Json::parse(std::string(55, '[') + std::string(55, ']'))}}}}),
         "result.readback.fs_type: expected a string, got array"});
    guests.push_back({"floods a result with 8 MB of empty objects",
                      after_job([](GuestChannel& channel) {
                          std::string objects = R"({"v":2,"type":"result","output":[{})";
                          while (objects.size() < protocol::kMaxMessageBytes - 16) objects += ",{}";
                          channel.send_raw(objects + "]}\n");
                      }),
                      "JSON values"});
    guests.push_back({"sends a result for another run", honest_but(Json{{"run_id", "999999"}}),
                      "agent sent a result for run \"999999\", not for this run"});
    guests.push_back({"stays silent after the job until the deadline",
                      after_job([](GuestChannel& channel) { channel.sleep(30s); }),
                      "run exceeded its time limit of 1 s", RunStatus::kTimedOut, 1});
    guests.push_back({"hangs up after the job (powers off)",
                      after_job([](GuestChannel& channel) { channel.power_off(); }),
                      "lost the guest agent mid-run (channel closed)"});
    guests.push_back(
        {"talks forever without a newline", after_job([](GuestChannel& channel) {
             const std::string chunk(64 * 1024, 'z');
             while (channel.send_raw(chunk)) {
             }
         }),
         "exceeds the limit of " + std::to_string(protocol::kMaxMessageBytes) + " bytes"});
    return guests;
}

TEST_CASE("hostile guests: every run fails with its reason and memory stays bounded",
          "[hostile_guest][run_executor][memory]") {
    ExecutorFixture fixture;
    const long baseline_kib = trimmed_rss_kib();
    REQUIRE(baseline_kib > 0);

    std::vector<HostileGuest> guests = type_confusion_guests();
    for (HostileGuest& guest : protocol_abuse_guests()) guests.push_back(std::move(guest));
    REQUIRE(guests.size() > 40);
    for (const HostileGuest& guest : guests) {
        fixture.hypervisor.set_guest_script(guest.script);
        const RunRecord run = fixture.pending_run();
        RunRecord finished;
        REQUIRE_NOTHROW(finished = fixture.execute(run, 5, guest.run_timeout_s));
        INFO("the guest " << guest.what << "; reason: " << finished.failure_reason);
        CHECK(finished.status == guest.expected_status);
        CHECK_THAT(finished.failure_reason, Contains(guest.expected_reason));
        CHECK(fixture.stored(run.id).status == guest.expected_status);
        CHECK(fixture.hypervisor.live_vms().empty());
        CHECK(fixture.storage.live_volumes().empty());
    }

    // The flood: 250 MB of progress, cut before it is kept or forwarded.
    fixture.hypervisor.set_guest_script(progress_flood());
    const RunRecord flooded = fixture.pending_run();
    EventLog events(fixture.events, flooded.sweep_id);
    const RunRecord finished = fixture.execute(flooded, 5, 60);
    INFO(finished.failure_reason);
    CHECK(finished.status == RunStatus::kSucceeded);
    int cut_messages = 0;
    for (const Json& event : events.all()) {
        if (event.at("type") != "run_progress") continue;
        const auto& message = event.at("message").get_ref<const std::string&>();
        CHECK(message.size() <= guest::kMaxTextBytes + 3);
        if (message.size() > guest::kMaxTextBytes) ++cut_messages;
    }
    CHECK(cut_messages > 0);  // the history keeps the newest (4 MiB at most)
    CHECK(fixture.events.history_bytes() <= EventBus::kDefaultHistoryBytes);

    const long peak_kib = status_kib("VmHWM");
    const long untrimmed_kib = status_kib("VmRSS");
    const long after_kib = trimmed_rss_kib();
    std::cout << "hostile guests: " << guests.size() + 1 << " runs; RSS baseline "
              << baseline_kib / 1024 << " MiB, peak (VmHWM) " << peak_kib / 1024
              << " MiB, after the runs " << untrimmed_kib / 1024 << " MiB (" << after_kib / 1024
              << " MiB after malloc_trim); bound " << kRssBoundKiB / 1024 << " MiB" << std::endl;
    CHECK(peak_kib < kRssBoundKiB);
    CHECK(after_kib < kRssBoundKiB);
}

}  // namespace
}  // namespace ds
