// parse_daemon_command_line: defaults, flags, config file, precedence, and
// the errors a user sees.
#include "daemon/config.h"

#include <catch2/catch.hpp>

#include "common/version.h"
#include "support/fakes/daemon_fakes.h"

namespace ds {
namespace {

using namespace ds::testing;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

Result<ParsedCommandLine> parse(std::vector<std::string> args) {
    args.insert(args.begin(), "disksweepd");
    std::vector<const char*> argv;
    for (const auto& arg : args) argv.push_back(arg.c_str());
    return parse_daemon_command_line(static_cast<int>(argv.size()), argv.data());
}

DaemonConfig parse_ok(std::vector<std::string> args) {
    auto parsed = parse(std::move(args));
    INFO((parsed.ok() ? "" : parsed.error().message));
    REQUIRE(parsed.ok());
    CHECK_FALSE(parsed->exit_now);
    return parsed->config;
}

Error parse_error(std::vector<std::string> args) {
    auto parsed = parse(std::move(args));
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.error().code == errc::kInvalidArgument);
    return parsed.error();
}

const char* kValidKeys =
    "valid keys: state-dir, socket, database, image-dir, volume-dir, hypervisor-uri, accel, "
    "max-parallel-runs, boot-timeout, run-timeout, probe-timeout, vcpus, memory-mib, storage, "
    "host, vm-sysctl-dir, instance";

TEST_CASE("config: defaults", "[config]") {
    const DaemonConfig config = parse_ok({});
    CHECK(config.state_dir == "/var/lib/disksweep");
    CHECK(config.socket_path == "/run/disksweep/disksweepd.sock");
    CHECK(config.accel == AccelChoice::kAuto);
    CHECK(config.max_parallel_runs == 1);
    CHECK(config.boot_timeout_s == 60);
    CHECK(config.run_timeout_s == 900);
    CHECK(config.probe_timeout_s == 20);
    CHECK(config.vcpus == 1);
    CHECK(config.memory_mib == 1024);
    CHECK(config.vm_sysctl_dir == "/proc/sys/vm");
    CHECK(config.effective_database() == "/var/lib/disksweep/results.db");
    CHECK(config.effective_image_dir() == "/var/lib/disksweep/images");
    CHECK(config.effective_volume_dir() == "/var/lib/disksweep/volumes");
    CHECK(config.run_dir() == "/var/lib/disksweep/runs");
    CHECK(config.effective_hypervisor_uri() == "qemu:///embed?root=/var/lib/disksweep/libvirt");
}

TEST_CASE("config: flags", "[config]") {
    const DaemonConfig config = parse_ok({"--state-dir",
                                          "/srv/ds",
                                          "--socket=/tmp/ds.sock",
                                          "--database",
                                          "/data/r.db",
                                          "--image-dir",
                                          "/img",
                                          "--volume-dir",
                                          "/vol",
                                          "--hypervisor-uri",
                                          "qemu:///system",
                                          "--accel",
                                          "tcg",
                                          "--max-parallel-runs",
                                          "3",
                                          "--boot-timeout",
                                          "30",
                                          "--run-timeout",
                                          "120",
                                          "--probe-timeout",
                                          "5",
                                          "--vcpus",
                                          "2",
                                          "--memory-mib",
                                          "2048",
                                          "--vm-sysctl-dir",
                                          "/srv/vm-sysctl"});
    CHECK(config.state_dir == "/srv/ds");
    CHECK(config.socket_path == "/tmp/ds.sock");
    CHECK(config.effective_database() == "/data/r.db");
    CHECK(config.effective_image_dir() == "/img");
    CHECK(config.effective_volume_dir() == "/vol");
    CHECK(config.effective_hypervisor_uri() == "qemu:///system");
    CHECK(config.accel == AccelChoice::kTcg);
    CHECK(config.max_parallel_runs == 3);
    CHECK(config.boot_timeout_s == 30);
    CHECK(config.run_timeout_s == 120);
    CHECK(config.probe_timeout_s == 5);
    CHECK(config.vcpus == 2);
    CHECK(config.memory_mib == 2048);
    CHECK(config.vm_sysctl_dir == "/srv/vm-sysctl");
    CHECK(config.run_dir() == "/srv/ds/runs");
    CHECK(parse_ok({"--accel", "kvm"}).accel == AccelChoice::kKvm);
    CHECK(parse_ok({"--accel", "auto"}).accel == AccelChoice::kAuto);
}

TEST_CASE("config: a config file, and flags win over it", "[config]") {
    TempDir dir;
    const std::string file = dir.file("disksweepd.conf");
    write_text(file,
               "# disksweepd configuration\n"
               "state-dir = /from/file\n"
               "accel = kvm\n"
               "\n"
               "max-parallel-runs = 4\n"
               "boot-timeout = 45\n"
               "memory-mib = 512\n");
    SECTION("file only") {
        const DaemonConfig config = parse_ok({"--config", file});
        CHECK(config.state_dir == "/from/file");
        CHECK(config.accel == AccelChoice::kKvm);
        CHECK(config.max_parallel_runs == 4);
        CHECK(config.boot_timeout_s == 45);
        CHECK(config.memory_mib == 512);
        CHECK(config.run_timeout_s == 900);  // not in the file: the default
        CHECK(config.effective_database() == "/from/file/results.db");
    }
    SECTION("flags before and after --config win") {
        const DaemonConfig config = parse_ok({"--max-parallel-runs", "2", "--config", file,
                                              "--accel", "tcg", "--state-dir", "/from/flag"});
        CHECK(config.max_parallel_runs == 2);
        CHECK(config.accel == AccelChoice::kTcg);
        CHECK(config.state_dir == "/from/flag");
        CHECK(config.boot_timeout_s == 45);  // from the file
        CHECK(config.memory_mib == 512);
    }
    SECTION("--print-config shows the effective configuration") {
        auto parsed = parse({"--config", file, "--vcpus", "2", "--print-config"});
        REQUIRE(parsed.ok());
        CHECK(parsed->exit_now);
        CHECK(parsed->exit_code == 0);
        const Json printed = Json::parse(parsed->output);
        CHECK(printed == parsed->config.to_json());
        CHECK(printed.at("state_dir") == "/from/file");
        CHECK(printed.at("accel") == "kvm");
        CHECK(printed.at("vcpus") == 2);
        CHECK(printed.at("database") == "/from/file/results.db");
    }
}

TEST_CASE("config: an unknown key in the file names file, line and the valid keys", "[config]") {
    TempDir dir;
    const std::string file = dir.file("bad.conf");
    write_text(file,
               "state-dir = /x\n"
               "# a comment\n"
               "\n"
               "max-paralel-runs = 2\n");
    const Error error = parse_error({"--config", file});
    CHECK(error.message == file + ":4: unknown key 'max-paralel-runs'; " + std::string(kValidKeys));
}

TEST_CASE("config: a file that cannot be read or parsed", "[config]") {
    TempDir dir;
    SECTION("missing") {
        const std::string file = dir.file("missing.conf");
        CHECK(parse_error({"--config", file}).message ==
              "cannot read config file " + file + ": No such file or directory");
    }
    SECTION("a line without '='") {
        const std::string file = dir.file("syntax.conf");
        write_text(file, "state-dir /x\n");
        CHECK_THAT(parse_error({"--config", file}).message, StartsWith(file + ": "));
    }
    SECTION("a bad number in the file") {
        const std::string file = dir.file("number.conf");
        write_text(file, "vcpus = many\n");
        CHECK_THAT(parse_error({"--config", file}).message, Contains("vcpus"));
    }
}

TEST_CASE("config: a bad accel value is refused", "[config]") {
    CHECK_THAT(parse_error({"--accel", "fast"}).message,
               Contains("accel") && StartsWith("disksweepd: "));
    TempDir dir;
    const std::string file = dir.file("accel.conf");
    write_text(file, "accel = hvf\n");
    CHECK_THAT(parse_error({"--config", file}).message, Contains("accel"));
    // The file's accel loses to a valid flag, as every other key does.
    CHECK(parse_ok({"--config", file, "--accel", "tcg"}).accel == AccelChoice::kTcg);
}

TEST_CASE("config: invalid numbers and unknown flags are rejected", "[config]") {
    const std::string range =
        "disksweepd: max-parallel-runs, boot-timeout, run-timeout and vcpus must be >= 1 and "
        "memory-mib >= 256";
    CHECK(parse_error({"--max-parallel-runs", "0"}).message == range);
    CHECK(parse_error({"--boot-timeout", "0"}).message == range);
    CHECK(parse_error({"--run-timeout=-5"}).message == range);
    CHECK(parse_error({"--vcpus", "0"}).message == range);
    CHECK(parse_error({"--memory-mib", "255"}).message == range);
    CHECK(parse_ok({"--memory-mib", "256"}).memory_mib == 256);

    for (const char* bad : {"abc", "1.5", "99999999999", "", "4x"}) {
        INFO(bad);
        CHECK_THAT(parse_error({"--vcpus", bad}).message, StartsWith("disksweepd: "));
    }
    CHECK_THAT(parse_error({"--no-such-flag"}).message, Contains("no-such-flag"));
    CHECK_THAT(parse_error({"--vcpus"}).message, Contains("vcpus"));  // missing value
}

TEST_CASE("config: instance names this daemon's resources, an invalid one is refused",
          "[config][instance]") {
    CHECK(parse_ok({}).instance.empty());  // not configured: the database's id
    CHECK(parse_ok({"--instance", "lab1"}).instance == "lab1");
    CHECK(parse_ok({"--instance", "0123456789abcdef"}).instance == "0123456789abcdef");
    CHECK(parse_ok({"--instance", "lab1"}).to_json().at("instance") == "lab1");
    CHECK(parse_ok({}).to_json().at("instance").is_null());

    const std::string rule =
        "is not a valid instance name: 1-16 characters, lowercase ASCII "
        "letters and digits only";
    SECTION("from the flag") {
        CHECK(parse_error({"--instance", ""}).message == "disksweepd: --instance: '' " + rule);
        CHECK(parse_error({"--instance", "Lab1"}).message ==
              "disksweepd: --instance: 'Lab1' " + rule);
        CHECK(parse_error({"--instance", "lab-1"}).message ==
              "disksweepd: --instance: 'lab-1' " + rule);
        CHECK(parse_error({"--instance", "0123456789abcdef0"}).message ==
              "disksweepd: --instance: '0123456789abcdef0' " + rule);
    }
    SECTION("from the config file, with its line; a valid flag wins") {
        TempDir dir;
        const std::string file = dir.file("instance.conf");
        write_text(file, "state-dir = /x\n# ours\ninstance = LAB1\n");
        CHECK(parse_error({"--config", file}).message == file + ":3: instance: 'LAB1' " + rule);
        CHECK(parse_ok({"--config", file, "--instance", "lab2"}).instance == "lab2");
        write_text(file, "instance = lab1\n");
        CHECK(parse_ok({"--config", file}).instance == "lab1");
    }
}

TEST_CASE("config: --help and --version print and exit", "[config]") {
    auto help = parse({"--help"});
    REQUIRE(help.ok());
    CHECK(help->exit_now);
    CHECK(help->exit_code == 0);
    CHECK_THAT(help->output, StartsWith("usage: disksweepd [--config FILE] [options]"));
    for (const char* option :
         {"--state-dir", "--socket", "--database", "--image-dir", "--volume-dir",
          "--hypervisor-uri", "--accel", "--max-parallel-runs", "--boot-timeout", "--run-timeout",
          "--probe-timeout", "--vcpus", "--memory-mib", "--instance", "--config", "--print-config",
          "--version"}) {
        CHECK_THAT(help->output, Contains(option));
    }
    auto short_help = parse({"-h"});
    REQUIRE(short_help.ok());
    CHECK(short_help->output == help->output);

    auto version = parse({"--version"});
    REQUIRE(version.ok());
    CHECK(version->exit_now);
    CHECK(version->exit_code == 0);
    CHECK(version->output == "disksweepd " + std::string(disksweep_version()) + "\n");
}

TEST_CASE("an unknown key that prefixes a valid one is reported on its own line",
          "[config][regression]") {
    TempDir dir;
    const std::string file = dir.file("prefix.conf");
    write_text(file, "state-dir = /x\nstate = 2\n");
    // line_of_key matches "state" against "state-dir = /x" on line 1.
    CHECK_THAT(parse_error({"--config", file}).message,
               StartsWith(file + ":2: unknown key 'state'"));
}

}  // namespace
}  // namespace ds
