// One-shot mode: the job from a file, every message appended to another
// (guestagent/file_channel.h), the same session as over a channel.
#include <signal.h>

#include <chrono>

#include "guestagent/agent.h"
#include "guestagent/cli.h"
#include "guestagent/file_channel.h"
#include "unit/agent/fakes.h"

namespace {

using namespace std::chrono_literals;
using namespace ds::agent;
using namespace ds::agent::testing;
using ds::Json;
namespace protocol = ds::protocol;

Json ext4_job() {
    return {{"run_id", "run-7"},
            {"filesystem",
             {{"type", "ext4"},
              {"mkfs_options", Json::array()},
              {"mount_options", ""},
              {"post_format", Json::array()}}},
            {"workload",
             {{"name", "randrw"},
              {"kind", "fio"},
              {"params", {{"rw", "randrw"}, {"bs", "4k"}, {"runtime", "1s"}}}}},
            {"timeout_s", 60}};
}

// The output file's messages, in order (each line must decode).
std::vector<Json> messages_in(const fs::path& output) {
    std::vector<Json> messages;
    std::istringstream lines(read_text(output));
    for (std::string line; std::getline(lines, line);) {
        auto message = protocol::decode(line);
        INFO(line);
        REQUIRE(message.ok());
        messages.push_back(*message);
    }
    return messages;
}

std::vector<std::string> types_of(const std::vector<Json>& messages) {
    std::vector<std::string> types;
    for (const auto& message : messages) types.push_back(message["type"]);
    return types;
}

// One session over a FileChannel against the fakes.
struct OneShot {
    FakeGuestTree tree;
    FakeProcessRunner runner;
    FakeGuestSystem system{tree.proc()};
    TempDir files;
    AgentOptions options;

    OneShot() {
        options.roots = tree.roots();
        options.mount_point = tree.mnt().string();
        // Not the guest's /run/disksweep: the runner keeps fio's logs there.
        options.scratch_dir = (files.path() / "scratch").string();
        options.device_wait = 0ms;
        options.progress_interval = 50ms;
        // A long wait that must not be waited: nothing more comes from a file.
        options.shutdown_wait = 60s;
    }
    fs::path job_file() const { return files.path() / "job.json"; }
    fs::path output_file() const { return files.path() / "out/agent.jsonl"; }

    ds::Result<SessionEnd> run() {
        fs::create_directories(output_file().parent_path());
        auto channel = FileChannel::open(job_file().string(), output_file().string());
        REQUIRE(channel.ok());
        Agent agent(**channel, runner, system, options);
        return agent.run_session();
    }
};

}  // namespace

TEST_CASE("one-shot: job from a file, hello, progress and result appended to the output",
          "[one-shot]") {
    OneShot t;
    write_text(t.job_file(), protocol::encode(protocol::kJob, ext4_job()));
    const auto started = std::chrono::steady_clock::now();
    auto end = t.run();
    REQUIRE(end.ok());
    CHECK(*end == SessionEnd::kResultSent);
    // The end of the job file ends the wait for shutdown at once.
    CHECK(std::chrono::steady_clock::now() - started < 20s);

    const auto messages = messages_in(t.output_file());
    const auto types = types_of(messages);
    REQUIRE(types.size() >= 3);
    CHECK(types.front() == "hello");
    CHECK(types.back() == "result");
    for (std::size_t i = 1; i + 1 < types.size(); ++i) CHECK(types[i] == "progress");
    CHECK(messages.back()["run_id"] == "run-7");
    CHECK(t.runner.command("mkfs.ext4").has_value());
}

TEST_CASE("one-shot: the output is appended to, never truncated", "[one-shot]") {
    OneShot t;
    write_text(t.output_file(), protocol::encode(protocol::kProgress, {{"phase", "earlier"}}));
    write_text(t.job_file(), protocol::encode(protocol::kJob, ext4_job()));
    REQUIRE(t.run().ok());
    const auto types = types_of(messages_in(t.output_file()));
    REQUIRE(types.size() >= 3);
    CHECK(types[0] == "progress");
    CHECK(types[1] == "hello");
}

TEST_CASE("one-shot: the job file may come after the agent started, complete lines only",
          "[one-shot]") {
    OneShot t;
    t.options.job_wait = 10s;
    std::string line = protocol::encode(protocol::kJob, ext4_job());
    // First half a job (a writer not done yet), then the rest: only the
    // complete line is taken.
    write_text(t.job_file(), line.substr(0, 20));
    std::thread host([&] {
        std::this_thread::sleep_for(300ms);
        write_text(t.job_file(), line);
    });
    auto end = t.run();
    host.join();
    REQUIRE(end.ok());
    CHECK(*end == SessionEnd::kResultSent);
    CHECK(types_of(messages_in(t.output_file())).back() == "result");
}

TEST_CASE("one-shot: no complete job in time ends the session after hello", "[one-shot]") {
    OneShot t;
    t.options.job_wait = 300ms;
    SECTION("no file") {}
    SECTION("a line without its newline") {
        std::string line = protocol::encode(protocol::kJob, ext4_job());
        line.pop_back();
        write_text(t.job_file(), line);
    }
    auto end = t.run();
    REQUIRE_FALSE(end.ok());
    CHECK(end.error().code == ds::errc::kTimeout);
    CHECK(types_of(messages_in(t.output_file())) == std::vector<std::string>{"hello"});
}

TEST_CASE("one-shot: a bad or oversized job is an error message in the output", "[one-shot]") {
    OneShot t;
    SECTION("not JSON") {
        write_text(t.job_file(), "{not json\n");
    }
    SECTION("unknown file system") {
        Json job = ext4_job();
        job["filesystem"]["type"] = "ntfs";
        write_text(t.job_file(), protocol::encode(protocol::kJob, job));
    }
    SECTION("an empty line") {
        write_text(t.job_file(), "\n");
    }
    SECTION("over the line limit") {
        write_text(t.job_file(), std::string(protocol::kMaxMessageBytes + 10, 'x') + "\n");
    }
    auto end = t.run();
    const auto messages = messages_in(t.output_file());
    const auto types = types_of(messages);
    INFO((end.ok() ? "" : end.error().message));
    REQUIRE(end.ok());
    CHECK(*end == SessionEnd::kErrorSent);
    CHECK(types == std::vector<std::string>{"hello", "error"});
    CHECK(messages.back()["phase"] == "job");
    CHECK_FALSE(t.runner.command("mkfs.ext4").has_value());
}

TEST_CASE("one-shot: an unwritable output is named", "[one-shot]") {
    TempDir dir;
    write_text(dir.path() / "job.json", "{}\n");
    auto unwritable = FileChannel::open(dir.file("job.json"), dir.file("no/such/dir/out"));
    REQUIRE_FALSE(unwritable.ok());
    CHECK(unwritable.error().code == ds::errc::kIo);
    CHECK(unwritable.error().message.find("no/such/dir/out") != std::string::npos);
}

TEST_CASE("one-shot: command line", "[one-shot][cli]") {
    auto parsed = parse_command_line({"--job-file", "/run/j.json", "--output-file=/run/o.jsonl"});
    REQUIRE(parsed.ok());
    CHECK(parsed->job_file == "/run/j.json");
    CHECK(parsed->output_file == "/run/o.jsonl");
    CHECK(usage_text().find("--job-file FILE") != std::string::npos);
    CHECK(usage_text().find("--output-file FILE") != std::string::npos);

    auto refused = [](std::vector<std::string> args, const std::string& message) {
        auto result = parse_command_line(args);
        REQUIRE_FALSE(result.ok());
        CHECK(result.error().code == ds::errc::kInvalidArgument);
        CHECK(result.error().message == message);
    };
    refused({"--job-file", "j"}, "--job-file and --output-file go together (one-shot mode)");
    refused({"--output-file", "o"}, "--job-file and --output-file go together (one-shot mode)");
    refused({"--job-file", "j", "--output-file", "o", "--port", "/dev/vport0p1"},
            "one-shot mode (--job-file) takes no --port and no --pid1");
    refused({"--job-file", "j", "--output-file", "o", "--pid1"},
            "one-shot mode (--job-file) takes no --port and no --pid1");
}

TEST_CASE("one-shot: exit status 0 when an error or a result was written, 1 otherwise",
          "[one-shot][cli]") {
    ::signal(SIGPIPE, SIG_IGN);
    TempDir dir;
    auto command_line =
        parse_command_line({"--job-file", dir.file("job.json"), "--output-file", dir.file("out")});
    REQUIRE(command_line.ok());

    // A refused job needs neither a disk nor root: the real runner only asks fio its version.
    Json job = ext4_job();
    job["filesystem"]["type"] = "ntfs";
    write_text(dir.path() / "job.json", protocol::encode(protocol::kJob, job));
    CHECK(run_agent(*command_line) == 0);
    CHECK(types_of(messages_in(dir.path() / "out")) == std::vector<std::string>{"hello", "error"});

    fs::remove(dir.path() / "out");
    write_text(dir.path() / "job.json", protocol::encode(protocol::kShutdown, Json::object()));
    CHECK(run_agent(*command_line) == 1);
    CHECK(types_of(messages_in(dir.path() / "out")) == std::vector<std::string>{"hello"});
}
