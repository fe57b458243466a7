// The Proxmox agent channel (daemon/backends/hypervisor/proxmox/pve_agent_channel.h):
//  * against answers of our own (a PveApi that plays PVE and the guest): a
//    guest that lies about a type in exec, exec-status or file-read ends the
//    run with errc::kProtocol naming the field, never an exception; the
//    progress file yields hello once and each new progress once; the result
//    file is read once, after the agent exited;
//  * against the fake PVE with a guest program behind agent/exec: the real
//    agent, and a stand-in that writes progress and a large result, with
//    every call recorded: nothing is written to the guest before the agent
//    starts, polls read only the small progress file, the result once.
#include "daemon/backends/hypervisor/proxmox/pve_agent_channel.h"

#include <catch2/catch.hpp>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>

#include "common/protocol.h"
#include "proxmox/pve_fake_fixture.h"
#include "support/temp_dir.h"

namespace ds {
namespace {

using test::PveFake;
using namespace std::chrono_literals;

const std::string kVmPath = "/nodes/pve1/qemu/101";
const std::string kHello = R"({"type":"hello","v":2})";

PveAgentOptions agent_options() {
    PveAgentOptions options{"/usr/local/bin/disksweep-agent", "/run/disksweep-job.json",
                            "/run/disksweep-progress.jsonl", 10ms};
    options.guest_result_file = "/run/disksweep-result.jsonl";
    return options;
}

Error pve_500(const std::string& what) {
    return make_error(errc::kHypervisor, "HTTP 500 Internal Server Error: Agent error: " + what);
}

// PVE and the guest, as a test scripts them: each answer from a function of
// the call, every call recorded.
class ScriptedPve : public PveApi {
  public:
    std::function<Result<Json>()> exec = [] { return Json{{"pid", 4242}}; };
    std::function<Result<Json>()> exec_status = [] { return Json{{"exited", 0}}; };
    // The guest's files: missing ones answer PVE's 500.
    std::map<std::string, Json> file_read_answers;
    std::vector<std::string> calls;

    Result<Json> call(PveMethod method, std::string_view path, const PveParams& params) override {
        const std::string what(path.substr(kVmPath.size()));
        calls.push_back(std::string(to_string(method)) + " " + what);
        if (what == "/agent/ping") return Json::object();
        if (what == "/agent/exec") return exec();
        if (what == "/agent/exec-status") return exec_status();
        if (what == "/agent/file-write") return Json(nullptr);
        if (what == "/agent/file-read") {
            const std::string file = Json::parse(params.encode_json().value())["file"];
            calls.back() += " " + file;
            auto found = file_read_answers.find(file);
            if (found == file_read_answers.end()) {
                return pve_500("can't open file: Failed to open file '" + file + "'");
            }
            return found->second;
        }
        return make_error(errc::kNotFound, "no such call " + what);
    }
    void guest_file(const std::string& file, const std::string& content) {
        file_read_answers[file] = Json{{"content", content}};
    }
    long count(const std::string& call) const {
        return std::count(calls.begin(), calls.end(), call);
    }
};

Result<std::unique_ptr<AgentChannel>> open_channel(const std::shared_ptr<ScriptedPve>& pve) {
    return open_pve_agent_channel(pve, kVmPath, agent_options(), "disksweep-t-vm",
                                  std::chrono::steady_clock::now() + 5s, nullptr);
}

std::unique_ptr<AgentChannel> opened(const std::shared_ptr<ScriptedPve>& pve) {
    auto channel = open_channel(pve);
    INFO((channel.ok() ? "" : channel.error().message));
    REQUIRE(channel.ok());
    return std::move(channel).value();
}

Deadline soon() {
    return std::chrono::steady_clock::now() + 2s;
}

// The error that ends a read, which must not throw.
Error read_error(AgentChannel& channel) {
    Result<std::string> line(std::string{});
    REQUIRE_NOTHROW(line = channel.read_line(soon()));
    INFO((line.ok() ? "unexpected line: " + *line : ""));
    REQUIRE_FALSE(line.ok());
    return line.error();
}

// An agent that said hello and exited: exec-status answers `status`.
Error exit_error(const Json& status) {
    auto pve = std::make_shared<ScriptedPve>();
    pve->guest_file(agent_options().guest_progress_file, kHello + "\n");
    pve->exec_status = [status] { return status; };
    auto channel = opened(pve);
    REQUIRE(channel->read_line(soon()).value() == kHello);
    return read_error(*channel);
}

// ---- what PVE relays from the guest is checked (issue 16, defect 7) -----------------------------

TEST_CASE("a guest lying about an exec-status type ends the run naming the field", "[proxmox]") {
    struct Lie {
        Json status;
        std::string message;
    };
    const std::vector<Lie> lies = {
        {{{"exited", 1}, {"exitcode", "0"}},
         "agent/exec-status field 'exitcode' is a string, expected an integer"},
        {{{"exited", "1"}}, "agent/exec-status field 'exited' is a string, expected 0 or 1"},
        {{{"exited", 2}}, "agent/exec-status field 'exited' is the number 2, expected 0 or 1"},
        {{{"exited", 1}, {"signal", 9.5}},
         "agent/exec-status field 'signal' is the number 9.5, expected an integer"},
        {{{"exited", 1}, {"err-data", 5}},
         "agent/exec-status field 'err-data' is the number 5, expected a string"},
        {{{"exited", 1}, {"out-data", Json::array()}},
         "agent/exec-status field 'out-data' is an array, expected a string"},
        {{{"exited", 1}, {"err-truncated", "no"}},
         "agent/exec-status field 'err-truncated' is a string, expected 0 or 1"},
        {{{"exitcode", 0}}, "agent/exec-status answered without field 'exited'"},
        {Json::array({1}), "agent/exec-status answered an array, expected an object"},
        {{{"exited", 1}, {"exitcode", 18446744073709551615ull}},
         "agent/exec-status field 'exitcode' is the number 18446744073709551615, expected an "
         "integer"},
    };
    for (const Lie& lie : lies) {
        INFO(lie.status.dump());
        const Error error = exit_error(lie.status);
        CHECK(error.code == errc::kProtocol);
        CHECK(error.message == lie.message);
    }
    // What the channel did before: nlohmann's value() throws on such types
    // (an exception that fails the run as "internal error (bug)").
    CHECK_THROWS(Json{{"exited", "1"}}.value("exited", 0));
    CHECK_THROWS(Json{{"err-data", 5}}.value("err-data", ""));
}

TEST_CASE("a well-typed exit closes the channel with the code, the signal and stderr's end",
          "[proxmox]") {
    const Error closed = exit_error(
        {{"exited", 1}, {"exitcode", 3}, {"signal", 15}, {"err-data", "line1\nfailed\x01\n"}});
    CHECK(closed.code == errc::kIo);
    CHECK_THAT(closed.message, Catch::StartsWith("channel closed: the agent exited with code 3 on "
                                                 "signal 15; stderr: line1\nfailed?\n"));
    // PVE's 0/1 and JSON's booleans are both accepted for a flag.
    CHECK_THAT(exit_error({{"exited", true}, {"exitcode", 0}}).message,
               Catch::Contains("exited with code 0"));
}

TEST_CASE("a guest lying about exec's pid or file-read's fields is named", "[proxmox]") {
    SECTION("exec: pid as a string") {
        auto pve = std::make_shared<ScriptedPve>();
        pve->exec = [] { return Json{{"pid", "12"}}; };
        auto channel = open_channel(pve);
        REQUIRE_FALSE(channel.ok());
        CHECK(channel.error().code == errc::kProtocol);
        CHECK(channel.error().message == "agent/exec field 'pid' is a string, expected an integer");
    }
    SECTION("exec: no pid") {
        auto pve = std::make_shared<ScriptedPve>();
        pve->exec = [] { return Json::object(); };
        auto channel = open_channel(pve);
        REQUIRE_FALSE(channel.ok());
        CHECK(channel.error().message == "agent/exec answered without field 'pid'");
    }
    SECTION("file-read: content as a number") {
        auto pve = std::make_shared<ScriptedPve>();
        pve->file_read_answers[agent_options().guest_progress_file] = Json{{"content", 7}};
        auto channel = opened(pve);
        const Error error = read_error(*channel);
        CHECK(error.code == errc::kProtocol);
        CHECK(error.message ==
              "agent/file-read field 'content' is the number 7, expected a string");
    }
    SECTION("file-read: truncated as a string") {
        auto pve = std::make_shared<ScriptedPve>();
        pve->file_read_answers[agent_options().guest_progress_file] =
            Json{{"content", kHello + "\n"}, {"truncated", "yes"}};
        auto channel = opened(pve);
        CHECK(read_error(*channel).message ==
              "agent/file-read field 'truncated' is a string, expected 0 or 1");
    }
}

// ---- the one-shot files (issue 16, defects 1 and 8) ---------------------------------------------

TEST_CASE("nothing is written to the guest before the agent starts", "[proxmox]") {
    auto pve = std::make_shared<ScriptedPve>();
    auto channel = opened(pve);
    CHECK(pve->calls == std::vector<std::string>{"POST /agent/ping", "POST /agent/exec"});
    REQUIRE(channel
                ->write(R"({"type":"job"})"
                        "\n")
                .ok());
    CHECK(pve->calls.back() == "POST /agent/file-write");
    // Later messages (shutdown) are not for a one-shot agent.
    REQUIRE(channel
                ->write(R"({"type":"shutdown"})"
                        "\n")
                .ok());
    CHECK(pve->count("POST /agent/file-write") == 1);
}

TEST_CASE(
    "the progress file yields hello once and each new progress once, the result is read "
    "once, after the exit",
    "[proxmox]") {
    auto pve = std::make_shared<ScriptedPve>();
    const auto options = agent_options();
    const std::string progress_read = "GET /agent/file-read " + options.guest_progress_file;
    const std::string result_read = "GET /agent/file-read " + options.guest_result_file;
    auto channel = opened(pve);

    // Not written yet: PVE's 500 for a missing file is "nothing yet".
    auto early = channel->read_line(std::chrono::steady_clock::now() + 50ms);
    REQUIRE_FALSE(early.ok());
    CHECK(early.error().code == errc::kTimeout);
    CHECK_THAT(early.error().message, Catch::Contains("can't open file"));

    pve->guest_file(options.guest_progress_file, kHello + "\n");
    CHECK(channel->read_line(soon()).value() == kHello);
    const std::string p1 = R"({"type":"progress","phase":"format"})";
    const std::string p2 = R"({"type":"progress","phase":"bench"})";
    pve->guest_file(options.guest_progress_file, kHello + "\n" + p1 + "\n");
    CHECK(channel->read_line(soon()).value() == p1);
    // The same file again is nothing new.
    auto same = channel->read_line(std::chrono::steady_clock::now() + 50ms);
    REQUIRE_FALSE(same.ok());
    CHECK(same.error().code == errc::kTimeout);
    CHECK(pve->count(result_read) == 0);

    // The agent wrote its last progress and its result, then exited.
    pve->guest_file(options.guest_progress_file, kHello + "\n" + p2 + "\n");
    const std::string result = R"({"type":"result","run_id":"r1"})";
    pve->guest_file(options.guest_result_file, result + "\n");
    pve->exec_status = [] { return Json{{"exited", 1}, {"exitcode", 0}}; };
    CHECK(channel->read_line(soon()).value() == p2);
    CHECK(channel->read_line(soon()).value() == result);
    const Error closed = read_error(*channel);
    CHECK(closed.code == errc::kIo);
    CHECK_THAT(closed.message, Catch::Contains("exited with code 0"));
    CHECK(pve->count(result_read) == 1);
    CHECK(pve->count("GET /agent/exec-status") >= 2);
    // Closed stays closed, without asking PVE again.
    const auto calls = pve->calls.size();
    CHECK(read_error(*channel).code == errc::kIo);
    CHECK(pve->calls.size() == calls);
}

TEST_CASE("an agent that exits without a result closes the channel saying so", "[proxmox]") {
    auto pve = std::make_shared<ScriptedPve>();
    pve->exec_status = [] {
        return Json{{"exited", 1}, {"exitcode", 2}, {"err-data", "unknown option"}};
    };
    auto channel = opened(pve);
    const Error closed = read_error(*channel);
    CHECK(closed.code == errc::kIo);
    CHECK_THAT(closed.message, Catch::Contains("exited with code 2; stderr: unknown option"));
    CHECK_THAT(closed.message, Catch::Contains("(no /run/disksweep-result.jsonl)"));
}

TEST_CASE("a progress file past its bound or with more than two messages is refused", "[proxmox]") {
    auto pve = std::make_shared<ScriptedPve>();
    const auto options = agent_options();
    SECTION("too large") {
        pve->guest_file(options.guest_progress_file,
                        kHello + "\n" + std::string(kPveProgressFileBytes, 'x') + "\n");
        auto channel = opened(pve);
        const Error error = read_error(*channel);
        CHECK(error.code == errc::kProtocol);
        CHECK_THAT(error.message, Catch::Contains("over the limit of 65536"));
    }
    SECTION("three messages") {
        pve->guest_file(options.guest_progress_file, kHello + "\n{}\n{}\n");
        auto channel = opened(pve);
        CHECK_THAT(read_error(*channel).message, Catch::Contains("holds 3 messages"));
    }
}

TEST_CASE("a job with non-ASCII text is written as ASCII JSON (PVE's file-write takes bytes)",
          "[proxmox]") {
    struct Recorder : ScriptedPve {
        std::string content;
        Result<Json> call(PveMethod method, std::string_view path,
                          const PveParams& params) override {
            if (path.ends_with("/agent/file-write")) {
                content = Json::parse(params.encode_json().value())["content"];
            }
            return ScriptedPve::call(method, path, params);
        }
    };
    auto pve = std::make_shared<Recorder>();
    auto channel = open_pve_agent_channel(pve, kVmPath, agent_options(), "vm",
                                          std::chrono::steady_clock::now() + 5s, nullptr);
    REQUIRE(channel.ok());
    const std::string job =
        protocol::encode(protocol::kJob, {{"run_id", "caf\xc3\xa9 \xe2\x82\xac"}});
    REQUIRE((*channel)->write(job).ok());
    CHECK(std::all_of(pve->content.begin(), pve->content.end(),
                      [](char c) { return static_cast<unsigned char>(c) < 0x80; }));
    CHECK(Json::parse(pve->content) == Json::parse(job));
    CHECK(pve->content.back() == '\n');
}

// ---- against the fake PVE, with a program behind agent/exec -------------------------------------

// Forwards to the fake's client and records each call: method, path, the
// file it names, the size of its answer.
class RecordingPve : public PveApi {
  public:
    explicit RecordingPve(std::shared_ptr<PveClient> client) : client_(std::move(client)) {}
    struct Call {
        std::string what;  // "GET /agent/file-read"
        std::string file;  // its `file`, if any
        std::size_t answer_bytes = 0;
    };
    std::vector<Call> calls() {
        std::lock_guard lock(mutex_);
        return calls_;
    }
    Result<Json> call(PveMethod method, std::string_view path, const PveParams& params) override {
        auto answer = client_->call(method, path, params);
        const Json sent = Json::parse(params.encode_json().value());
        const auto action = path.rfind("/agent/");
        Call call{std::string(to_string(method)) + " " +
                      std::string(action == std::string_view::npos ? path : path.substr(action)),
                  sent.value("file", ""), answer ? answer->dump().size() : 0};
        std::lock_guard lock(mutex_);
        calls_.push_back(std::move(call));
        return answer;
    }

  private:
    std::shared_ptr<PveClient> client_;
    std::mutex mutex_;
    std::vector<Call> calls_;
};

// A stand-in agent with something to report: hello, wait for the job, three
// progress messages (each replacing the progress file), then a result of
// about 200 KB in the result file, written once.
constexpr const char* kStandIn =
    "#!/bin/sh\n"
    "# args: --job-file JOB --progress-file PROGRESS --result-file RESULT\n"
    "job=$2; progress=$4; result=$6\n"
    "hello='{\"type\":\"hello\",\"v\":2}'\n"
    "replace() { printf '%s\\n' \"$2\" > \"$1.tmp\" && mv \"$1.tmp\" \"$1\"; }\n"
    "replace \"$progress\" \"$hello\"\n"
    "while ! grep -q . \"$job\" 2>/dev/null; do sleep 0.05; done\n"
    "for n in 1 2 3; do\n"
    "  sleep 0.6\n"
    "  replace \"$progress\" \"$hello\n{\\\"type\\\":\\\"progress\\\",\\\"step\\\":$n}\"\n"
    "done\n"
    "sleep 0.3\n"
    "big=$(head -c 200000 /dev/zero | tr '\\0' x)\n"
    "replace \"$result\" \"{\\\"type\\\":\\\"result\\\",\\\"output\\\":\\\"$big\\\"}\"\n";

struct FakeVm {
    test::TempDir dir{"disksweep-pvechan"};
    std::unique_ptr<PveFake> fake;
    std::shared_ptr<RecordingPve> pve;

    explicit FakeVm(const std::string& guest_program) {
        std::ofstream(dir.file("guest-wrapper.sh")) << test::guest_exec_wrapper(guest_program);
        fake = std::make_unique<PveFake>(
            std::vector<std::string>{"--guest-root", dir.file("guests"), "--guest-exec",
                                     "sh " + dir.file("guest-wrapper.sh")});
        auto client = PveClient::create(fake->pinned_options());
        REQUIRE(client.ok());
        std::shared_ptr<PveClient> shared = std::move(client).value();
        const std::string template_path = pve_path({"nodes", "pve1", "qemu", "9000"});
        auto cloned =
            shared->run_task(PveMethod::kPost, template_path + "/clone",
                             PveParams().set_integer("newid", 101).set("name", "t-101"), 60s);
        REQUIRE(cloned.ok());
        REQUIRE(shared->run_task(PveMethod::kPost, kVmPath + "/status/start", {}, 60s).ok());
        pve = std::make_shared<RecordingPve>(shared);
    }
    std::unique_ptr<AgentChannel> channel(const PveAgentOptions& options) {
        auto opened = open_pve_agent_channel(pve, kVmPath, options, "t-101",
                                             std::chrono::steady_clock::now() + 30s, nullptr);
        INFO((opened.ok() ? "" : opened.error().message + "\n" + fake->log()));
        REQUIRE(opened.ok());
        return std::move(opened).value();
    }
};

PveAgentOptions fake_options(const std::string& program) {
    PveAgentOptions options = agent_options();
    options.agent_program = program;
    options.poll_interval = 50ms;
    return options;
}

Json next_message(AgentChannel& channel) {
    auto line = channel.read_line(std::chrono::steady_clock::now() + 30s);
    INFO((line.ok() ? "" : line.error().message));
    REQUIRE(line.ok());
    auto message = Json::parse(*line, nullptr, false);
    REQUIRE(message.is_object());
    return message;
}

TEST_CASE("the channel runs the real agent through the fake: job in, hello and error out",
          "[proxmox][fake]") {
    FakeVm vm(std::string(DISKSWEEP_AGENT_BIN) + " --shutdown-wait 0");
    const auto options = fake_options("/usr/local/bin/disksweep-agent");
    auto channel = vm.channel(options);
    const Json hello = next_message(*channel);
    CHECK(hello["type"] == "hello");
    CHECK(hello["capabilities"].is_array());
    // A job the agent refuses before it needs a disk (there is none here).
    REQUIRE(channel
                ->write(protocol::encode(protocol::kJob,
                                         {{"run_id", "r1"}, {"filesystem", {{"type", "ntfs"}}}}))
                .ok());
    const Json error = next_message(*channel);
    CHECK(error["type"] == "error");
    CHECK(error["run_id"] == "r1");
    auto end = channel->read_line(std::chrono::steady_clock::now() + 30s);
    REQUIRE_FALSE(end.ok());
    CHECK(end.error().code == errc::kIo);
    CHECK_THAT(end.error().message, Catch::Contains("exited with code 0"));

    // The only file written is the job, after the agent started.
    const auto calls = vm.pve->calls();
    std::vector<std::string> writes;
    for (const auto& call : calls) {
        if (call.what == "POST /agent/file-write") writes.push_back(call.file);
        if (call.what == "POST /agent/exec") CHECK(writes.empty());
    }
    CHECK(writes == std::vector<std::string>{options.guest_job_file});
}

TEST_CASE("each poll reads only the small progress file, the large result is read once",
          "[proxmox][fake]") {
    test::TempDir scripts;
    std::ofstream(scripts.file("stand-in.sh")) << kStandIn;
    FakeVm vm("sh " + scripts.file("stand-in.sh"));
    const auto options = fake_options("/usr/local/bin/disksweep-agent");
    auto channel = vm.channel(options);
    CHECK(next_message(*channel)["type"] == "hello");
    REQUIRE(channel->write("{\"type\":\"job\"}\n").ok());
    // Each progress message once, in order, whatever the number of polls.
    for (int step = 1; step <= 3; ++step) {
        const Json progress = next_message(*channel);
        CHECK(progress == Json{{"type", "progress"}, {"step", step}});
    }
    const Json result = next_message(*channel);
    CHECK(result["type"] == "result");
    CHECK(result["output"].get<std::string>().size() == 200000);
    auto end = channel->read_line(std::chrono::steady_clock::now() + 30s);
    REQUIRE_FALSE(end.ok());
    CHECK(end.error().code == errc::kIo);

    std::size_t progress_reads = 0, result_reads = 0, largest_progress_answer = 0;
    for (const auto& call : vm.pve->calls()) {
        if (call.what != "GET /agent/file-read") continue;
        if (call.file == options.guest_progress_file) {
            ++progress_reads;
            largest_progress_answer = std::max(largest_progress_answer, call.answer_bytes);
        }
        if (call.file == options.guest_result_file) ++result_reads;
    }
    INFO("progress file reads: " << progress_reads);
    CHECK(progress_reads >= 5);
    CHECK(largest_progress_answer < 1024);
    CHECK(result_reads == 1);
}

}  // namespace
}  // namespace ds
