// The agent's command line and its mount option handling.
#include "guestagent/cli.h"

#include <sys/mount.h>

#include "support/fakes/agent_fakes.h"

using namespace ds::agent;
using namespace std::chrono_literals;

TEST_CASE("cli: defaults are the guest's real paths", "[cli]") {
    auto parsed = parse_command_line({"--pid1"});
    REQUIRE(parsed.ok());
    CHECK(parsed->pid1);
    CHECK(parsed->port.empty());
    CHECK(parsed->agent.roots.sysfs == "/sys");
    CHECK(parsed->agent.roots.proc == "/proc");
    CHECK(parsed->agent.roots.dev == "/dev");
    CHECK(parsed->agent.mount_point == "/mnt/disksweep");
    CHECK(parsed->agent.scratch_dir == "/run/disksweep");
    CHECK(parsed->agent.data_device.empty());
    CHECK(parsed->agent.shutdown_wait == 30s);
}

TEST_CASE("cli: test and debug overrides, with and without '='", "[cli]") {
    auto parsed = parse_command_line(
        {"--port", "/tmp/agent.sock", "--sysfs-root=/tmp/sys", "--proc-root", "/tmp/proc",
         "--dev-root", "/tmp/dev", "--mount-point", "/tmp/mnt", "--data-device=/dev/loop7",
         "--scratch-dir", "/tmp/scratch", "--job-wait", "2.5", "--shutdown-wait=0", "--device-wait",
         "1", "--channel-wait", "3"});
    REQUIRE(parsed.ok());
    CHECK(parsed->port == "/tmp/agent.sock");
    CHECK(parsed->agent.roots.sysfs == "/tmp/sys");
    CHECK(parsed->agent.roots.proc == "/tmp/proc");
    CHECK(parsed->agent.roots.dev == "/tmp/dev");
    CHECK(parsed->agent.mount_point == "/tmp/mnt");
    CHECK(parsed->agent.data_device == "/dev/loop7");
    CHECK(parsed->agent.scratch_dir == "/tmp/scratch");
    CHECK(parsed->agent.job_wait == 2500ms);
    CHECK(parsed->agent.shutdown_wait == 0ms);
    CHECK(parsed->agent.device_wait == 1s);
    CHECK(parsed->channel_wait == 3s);
    CHECK_FALSE(parsed->pid1);
}

TEST_CASE("cli: mistakes name the option", "[cli]") {
    auto check = [](std::vector<std::string> args, const std::string& message) {
        auto parsed = parse_command_line(args);
        REQUIRE_FALSE(parsed.ok());
        CHECK(parsed.error().code == ds::errc::kInvalidArgument);
        CHECK(parsed.error().message == message);
    };
    check({"--bogus"}, "unknown option '--bogus' (see --help)");
    check({"--port"}, "--port needs a value (PATH)");
    check({"--pid1=yes"}, "--pid1 takes no value");
    check({"--job-wait", "soon"}, "--job-wait: 'soon' is not a number of seconds");
    check({"--job-wait", "-1"}, "--job-wait: '-1' is not a number of seconds");
    CHECK(usage_text().find("--data-device PATH") != std::string::npos);
}

TEST_CASE("mount options: generic ones become flags, the rest is file system data", "[mount]") {
    auto request = split_mount_options("noatime,data=writeback,barrier=0");
    CHECK(request.flags == MS_NOATIME);
    CHECK(request.data == "data=writeback,barrier=0");

    request = split_mount_options("defaults,ro,nodev,nosuid,nodatacow,compress=zstd:1");
    CHECK(request.flags == (MS_RDONLY | MS_NODEV | MS_NOSUID));
    CHECK(request.data == "nodatacow,compress=zstd:1");

    // The last access-time mode wins; negations clear.
    request = split_mount_options("noatime,relatime,ro,rw,lazytime");
    CHECK(request.flags == (MS_RELATIME | MS_LAZYTIME));
    CHECK(request.data.empty());

    request = split_mount_options("");
    CHECK(request.flags == 0);
    CHECK(request.data.empty());
    CHECK(split_mount_options(",,discard,").data == "discard");
}
