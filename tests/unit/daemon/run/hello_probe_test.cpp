// The KVM probe as an ordinary run attempt whose job is the hello
// (run_hello_probe): the same provision, boot and teardown as every run, so
// a probe that reaches the agent, one whose guest never says hello and one
// whose guest runs without the asked accelerator are told apart, and none
// leaves a VM, a volume or a row behind.
#include <catch2/catch.hpp>

#include "daemon/run/run_executor.h"
#include "support/fakes/daemon_fakes.h"

namespace ds::testing {
namespace {

// A guest that says hello and then waits for whatever comes (the probe sends
// nothing more, so it waits until the VM is destroyed).
GuestScript hello_then_wait() {
    return [](GuestChannel& guest) {
        if (!guest.send("hello", hello_payload())) return;
        while (!guest.stopped() && guest.receive(100ms)) {
        }
    };
}

RunEnvironment probe_environment(ExecutorFixture& fixture) {
    RunEnvironment environment = fixture.environment();
    environment.store = nullptr;
    environment.events = nullptr;
    environment.accel = Accel::kKvm;
    return environment;
}

void check_nothing_left(ExecutorFixture& fixture, const std::string& name) {
    CHECK(fixture.hypervisor.live_vms().empty());
    CHECK(fixture.storage.live_volumes().empty());
    CHECK(fixture.hypervisor.destroy_count(name) >= 1);
    CHECK(fixture.storage.remove_count(name) >= 1);
}

TEST_CASE("hello probe: a guest that says hello is KVM, and nothing is left", "[hello_probe]") {
    ExecutorFixture fixture;
    fixture.hypervisor.set_guest_script(hello_then_wait());
    const std::string name = fixture.names.probe();
    auto seconds = run_hello_probe(probe_environment(fixture), {name, 64ull << 20, 5});
    REQUIRE(seconds.ok());
    CHECK(seconds.value() >= 0);
    CHECK(fixture.hypervisor.started() == std::vector<std::string>{name});
    auto request = fixture.hypervisor.request_for(name);
    REQUIRE(request.has_value());
    CHECK(request->accel == Accel::kKvm);
    CHECK(request->config.disk_size_bytes == 64ull << 20);
    CHECK(fixture.storage.created() == std::vector<std::string>{name});
    // The hello was the whole job: the probe sent the guest nothing.
    CHECK(fixture.hypervisor.guest_connected(name));
    CHECK(fixture.hypervisor.guest_received(name).empty());
    check_nothing_left(fixture, name);
}

TEST_CASE("hello probe: a guest that never says hello fails with the console's end",
          "[hello_probe]") {
    ExecutorFixture fixture;
    fixture.hypervisor.set_guest_script([](GuestChannel& guest) { guest.sleep(10s); });
    fixture.hypervisor.set_console_text("SeaBIOS (version 1.16)\nBooting from ROM...\n");
    const std::string name = fixture.names.probe();
    auto seconds = run_hello_probe(probe_environment(fixture), {name, 64ull << 20, 1});
    REQUIRE_FALSE(seconds.ok());
    CHECK_THAT(seconds.error().message, Catch::Contains("agent did not connect within 1 s"));
    CHECK_THAT(seconds.error().message, Catch::Contains("Booting from ROM"));
    // The console is gone with the probe, so the reason names no log file.
    CHECK_THAT(seconds.error().message, !Catch::Contains("console log:"));
    check_nothing_left(fixture, name);
}

TEST_CASE("hello probe: a guest that runs without KVM is no proof of KVM", "[hello_probe]") {
    ExecutorFixture fixture;
    fixture.hypervisor.set_guest_script(hello_then_wait());
    fixture.hypervisor.set_running_accel(Accel::kTcg);
    const std::string name = fixture.names.probe();
    auto seconds = run_hello_probe(probe_environment(fixture), {name, 64ull << 20, 5});
    REQUIRE_FALSE(seconds.ok());
    CHECK(seconds.error().message == "the guest ran with tcg, not kvm");
    check_nothing_left(fixture, name);
}

TEST_CASE("hello probe: a guest that cannot start, or a volume that cannot be made",
          "[hello_probe]") {
    ExecutorFixture fixture;
    fixture.hypervisor.set_guest_script(hello_then_wait());
    const std::string name = fixture.names.probe();
    SECTION("start") {
        fixture.hypervisor.fail_start("no KVM for you");
        auto seconds = run_hello_probe(probe_environment(fixture), {name, 64ull << 20, 5});
        REQUIRE_FALSE(seconds.ok());
        CHECK_THAT(seconds.error().message, Catch::Contains("no KVM for you"));
    }
    SECTION("volume") {
        fixture.storage.fail_create("pool full");
        auto seconds = run_hello_probe(probe_environment(fixture), {name, 64ull << 20, 5});
        REQUIRE_FALSE(seconds.ok());
        CHECK_THAT(seconds.error().message, Catch::Contains("pool full"));
        CHECK(fixture.hypervisor.started().empty());
    }
    CHECK(fixture.hypervisor.live_vms().empty());
    CHECK(fixture.storage.live_volumes().empty());
}

TEST_CASE("hello probe: what an earlier probe of the name left is cleared first", "[hello_probe]") {
    ExecutorFixture fixture;
    fixture.hypervisor.set_guest_script(hello_then_wait());
    const std::string name = fixture.names.probe();
    StorageConfig config;
    REQUIRE(fixture.storage.create_volume(name, config).ok());
    auto seconds = run_hello_probe(probe_environment(fixture), {name, 64ull << 20, 5});
    REQUIRE(seconds.ok());
    CHECK(fixture.storage.remove_count(name) == 2);  // the leftover, then the probe's own
    CHECK(fixture.storage.live_volumes().empty());
}

}  // namespace
}  // namespace ds::testing
