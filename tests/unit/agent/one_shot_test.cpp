// One-shot mode: the job from a file, hello and the latest progress in a
// small file replaced whole, the result or error in a file of its own
// (guestagent/file_channel.h), the same session as over a channel.
#include <signal.h>

#include <chrono>

#include "guestagent/agent.h"
#include "guestagent/cli.h"
#include "guestagent/file_channel.h"
#include "support/fake_clock.h"
#include "support/fakes/agent_fakes.h"

namespace {

using namespace std::chrono_literals;
using namespace ds::agent;
using namespace ds::agent::testing;
using ds::Json;
using ds::test::FakeClock;
namespace protocol = ds::protocol;
using Sleeps = std::vector<ds::Clock::duration>;

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

// A file's messages, in order (each line must decode; none if it is missing).
std::vector<Json> messages_in(const fs::path& file) {
    std::vector<Json> messages;
    if (!fs::exists(file)) return messages;
    std::istringstream lines(read_text(file));
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

// One session over a FileChannel against the fakes, the channel and the
// agent on one fake clock: waiting for the job file takes no real time.
struct OneShot {
    FakeClock clock;
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
    fs::path progress_file() const { return files.path() / "out/progress.jsonl"; }
    fs::path result_file() const { return files.path() / "out/result.jsonl"; }
    OneShotFiles one_shot_files() const {
        return {job_file().string(), progress_file().string(), result_file().string()};
    }

    // A FileChannel of these files on the clock.
    std::unique_ptr<Channel> open_files() const {
        auto opened = FileChannel::open(one_shot_files(), protocol::kMaxMessageBytes, clock);
        REQUIRE(opened.ok());
        return std::move(*opened);
    }
    ds::Result<SessionEnd> run(Channel* channel = nullptr) {
        fs::create_directories(progress_file().parent_path());
        auto opened = open_files();
        Agent agent(channel ? *channel : *opened, runner, system, options, clock);
        return agent.run_session();
    }
    // The progress file's messages, then the result file's.
    std::vector<Json> messages() const {
        auto all = messages_in(progress_file());
        for (auto& message : messages_in(result_file())) all.push_back(std::move(message));
        return all;
    }
};

// A Channel that forwards to a FileChannel and keeps every state of the
// progress file it leaves behind a write: what a host polling it could see.
class WatchedFileChannel : public Channel {
  public:
    WatchedFileChannel(std::unique_ptr<Channel> inner, fs::path progress)
        : inner_(std::move(inner)), progress_(std::move(progress)) {}
    ds::Result<std::string> read_line(Deadline deadline) override {
        return inner_->read_line(deadline);
    }
    ds::Status write(std::string_view data) override {
        auto status = inner_->write(data);
        if (fs::exists(progress_)) states.push_back(read_text(progress_));
        return status;
    }
    std::vector<std::string> states;

  private:
    std::unique_ptr<Channel> inner_;
    fs::path progress_;
};

}  // namespace

TEST_CASE("one-shot: hello and the latest progress in the progress file, the result in its own",
          "[one-shot]") {
    OneShot t;
    write_text(t.job_file(), protocol::encode(protocol::kJob, ext4_job()));
    auto end = t.run();
    REQUIRE(end.ok());
    CHECK(*end == SessionEnd::kResultSent);
    // The end of the job file ends the wait for shutdown at once: none of
    // the 60 s passed, and the job file, complete, was not polled.
    CHECK(t.clock.elapsed() == 0s);
    CHECK(t.clock.sleeps().empty());

    const auto progress = types_of(messages_in(t.progress_file()));
    REQUIRE(progress.size() == 2);
    CHECK(progress[0] == "hello");
    CHECK(progress[1] == "progress");
    const auto result = messages_in(t.result_file());
    REQUIRE(result.size() == 1);
    CHECK(result[0]["type"] == "result");
    CHECK(result[0]["run_id"] == "run-7");
    CHECK(t.runner.command("mkfs.ext4").has_value());
    // Nothing is left beside them (each replacement renames its temporary file).
    CHECK_FALSE(fs::exists(t.progress_file().string() + ".tmp"));
    CHECK_FALSE(fs::exists(t.result_file().string() + ".tmp"));
}

TEST_CASE("one-shot: every state of the progress file is hello and at most one progress, small",
          "[one-shot]") {
    OneShot t;
    write_text(t.job_file(), protocol::encode(protocol::kJob, ext4_job()));
    fs::create_directories(t.progress_file().parent_path());
    WatchedFileChannel watched(t.open_files(), t.progress_file());
    REQUIRE(t.run(&watched).ok());

    // hello alone, then hello and each progress message in turn.
    REQUIRE(watched.states.size() >= 3);
    std::string hello;
    std::size_t progress_states = 0;
    for (const std::string& state : watched.states) {
        INFO(state);
        CHECK(state.size() <= kMaxProgressFileBytes);
        std::istringstream lines(state);
        std::vector<std::string> types;
        std::string first;
        for (std::string line; std::getline(lines, line);) {
            if (first.empty()) first = line;
            types.push_back(protocol::decode(line)->at("type"));
        }
        REQUIRE_FALSE(types.empty());
        CHECK(types[0] == "hello");
        CHECK(types.size() <= 2);
        if (hello.empty()) hello = first;
        CHECK(first == hello);
        if (types.size() == 2) {
            CHECK(types[1] == "progress");
            ++progress_states;
        }
    }
    CHECK(progress_states >= 2);
}

TEST_CASE("one-shot: files of an earlier session are replaced, not appended to", "[one-shot]") {
    OneShot t;
    fs::create_directories(t.progress_file().parent_path());
    write_text(t.progress_file(), protocol::encode(protocol::kProgress, {{"phase", "earlier"}}));
    write_text(t.result_file(), protocol::encode(protocol::kResult, {{"run_id", "earlier"}}));
    write_text(t.job_file(), protocol::encode(protocol::kJob, ext4_job()));
    REQUIRE(t.run().ok());
    CHECK(types_of(messages_in(t.progress_file())).front() == "hello");
    const auto result = messages_in(t.result_file());
    REQUIRE(result.size() == 1);
    CHECK(result[0]["run_id"] == "run-7");
}

TEST_CASE(
    "one-shot: a progress message too large for the progress file is refused, the file "
    "keeps the last one",
    "[one-shot]") {
    TempDir dir;
    auto channel = FileChannel::open(
        {dir.file("job.json"), dir.file("progress.jsonl"), dir.file("result.jsonl")});
    REQUIRE(channel.ok());
    const std::string hello = protocol::encode(protocol::kHello, {{"kernel", "6.1"}});
    const std::string small = protocol::encode(protocol::kProgress, {{"phase", "bench"}});
    REQUIRE((*channel)->write(hello).ok());
    REQUIRE((*channel)->write(small).ok());
    auto refused = (*channel)->write(protocol::encode(
        protocol::kProgress, {{"message", std::string(kMaxProgressFileBytes, 'x')}}));
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == ds::errc::kProtocol);
    CHECK(read_text(dir.path() / "progress.jsonl") == hello + small);
    // A final message of any size (up to the protocol's bound) has its own file.
    const std::string result =
        protocol::encode(protocol::kResult, {{"output", std::string(kMaxProgressFileBytes, 'y')}});
    REQUIRE((*channel)->write(result).ok());
    CHECK(read_text(dir.path() / "result.jsonl") == result);
}

TEST_CASE("one-shot: the job file may come after the agent started, complete lines only",
          "[one-shot]") {
    OneShot t;
    t.options.job_wait = 10s;
    std::string line = protocol::encode(protocol::kJob, ext4_job());
    // First half a job (a writer not done yet), then the rest: only the
    // complete line is taken.
    write_text(t.job_file(), line.substr(0, 20));
    t.clock.on_sleep([&](ds::Clock::duration) {  // the host completes it during the third pause
        if (t.clock.sleeps().size() == 3) write_text(t.job_file(), line);
    });
    auto end = t.run();
    REQUIRE(end.ok());
    CHECK(*end == SessionEnd::kResultSent);
    CHECK(types_of(t.messages()).back() == "result");
    // Polled every 100 ms until the complete line was there, then no more.
    CHECK(t.clock.sleeps() == Sleeps(3, 100ms));
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
    // Polled at 0, 100, 200 and 300 ms: until the 300 ms job_wait, not past it.
    CHECK(t.clock.sleeps() == Sleeps(3, 100ms));
    CHECK(types_of(t.messages()) == std::vector<std::string>{"hello"});
    CHECK_FALSE(fs::exists(t.result_file()));
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
    const auto messages = t.messages();
    const auto types = types_of(messages);
    INFO((end.ok() ? "" : end.error().message));
    REQUIRE(end.ok());
    CHECK(*end == SessionEnd::kErrorSent);
    CHECK(types == std::vector<std::string>{"hello", "error"});
    CHECK(messages.back()["phase"] == "job");
    CHECK_FALSE(t.runner.command("mkfs.ext4").has_value());
}

TEST_CASE("one-shot: an unwritable progress or result file is named", "[one-shot]") {
    TempDir dir;
    write_text(dir.path() / "job.json", "{}\n");
    auto no_progress = FileChannel::open(
        {dir.file("job.json"), dir.file("no/such/dir/progress"), dir.file("result")});
    REQUIRE_FALSE(no_progress.ok());
    CHECK(no_progress.error().code == ds::errc::kIo);
    CHECK(no_progress.error().message.find("no/such/dir/progress") != std::string::npos);
    auto no_result = FileChannel::open(
        {dir.file("job.json"), dir.file("progress"), dir.file("no/such/dir/result")});
    REQUIRE_FALSE(no_result.ok());
    CHECK(no_result.error().message.find("result file") != std::string::npos);
}

TEST_CASE("one-shot: command line", "[one-shot][cli]") {
    auto parsed = parse_command_line({"--job-file", "/run/j.json", "--progress-file=/run/p.jsonl",
                                      "--result-file", "/run/r.jsonl"});
    REQUIRE(parsed.ok());
    CHECK(parsed->job_file == "/run/j.json");
    CHECK(parsed->progress_file == "/run/p.jsonl");
    CHECK(parsed->result_file == "/run/r.jsonl");
    CHECK(usage_text().find("--job-file FILE") != std::string::npos);
    CHECK(usage_text().find("--progress-file FILE") != std::string::npos);
    CHECK(usage_text().find("--result-file FILE") != std::string::npos);

    auto refused = [](std::vector<std::string> args, const std::string& message) {
        auto result = parse_command_line(args);
        REQUIRE_FALSE(result.ok());
        CHECK(result.error().code == ds::errc::kInvalidArgument);
        CHECK(result.error().message == message);
    };
    const std::string together =
        "--job-file, --progress-file and --result-file go together (one-shot mode)";
    refused({"--job-file", "j"}, together);
    refused({"--job-file", "j", "--progress-file", "p"}, together);
    refused({"--result-file", "r"}, together);
    const std::vector<std::string> one_shot = {"--job-file",    "j", "--progress-file", "p",
                                               "--result-file", "r"};
    auto with = [&](std::vector<std::string> more) {
        more.insert(more.begin(), one_shot.begin(), one_shot.end());
        return more;
    };
    refused(with({"--port", "/dev/vport0p1"}),
            "one-shot mode (--job-file) takes no --port and no --pid1");
    refused(with({"--pid1"}), "one-shot mode (--job-file) takes no --port and no --pid1");
    // The earlier one-shot option is gone, named as unknown.
    refused({"--output-file", "o"}, "unknown option '--output-file' (see --help)");
}

TEST_CASE("one-shot: exit status 0 when an error or a result was written, 1 otherwise",
          "[one-shot][cli]") {
    ::signal(SIGPIPE, SIG_IGN);
    TempDir dir;
    auto command_line =
        parse_command_line({"--job-file", dir.file("job.json"), "--progress-file",
                            dir.file("progress"), "--result-file", dir.file("result")});
    REQUIRE(command_line.ok());

    // A refused job needs neither a disk nor root: the real runner only asks fio its version.
    Json job = ext4_job();
    job["filesystem"]["type"] = "ntfs";
    write_text(dir.path() / "job.json", protocol::encode(protocol::kJob, job));
    CHECK(run_agent(*command_line) == 0);
    CHECK(types_of(messages_in(dir.path() / "progress")) == std::vector<std::string>{"hello"});
    CHECK(types_of(messages_in(dir.path() / "result")) == std::vector<std::string>{"error"});

    write_text(dir.path() / "job.json", protocol::encode(protocol::kShutdown, Json::object()));
    CHECK(run_agent(*command_line) == 1);
    CHECK(types_of(messages_in(dir.path() / "progress")) == std::vector<std::string>{"hello"});
    // The error of the run before is gone: no result file, no outcome.
    CHECK_FALSE(fs::exists(dir.path() / "result"));
}
