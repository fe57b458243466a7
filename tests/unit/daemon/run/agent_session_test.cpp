// The host side of the agent protocol against a peer on a real unix socket
// (the test plays the guest).
#include "daemon/run/agent_session.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <thread>

#include "daemon/run/ack_ledger.h"
#include "support/fake_clock.h"
#include "support/fakes/daemon_fakes.h"

namespace ds {
namespace {

using namespace ds::testing;
using Catch::Matchers::Contains;
using Steady = std::chrono::steady_clock;
using test::FakeClock;

// A session over the unix socket channel, as the libvirt backend opens it.
Result<AgentSession> connect_session(const std::string& path, Deadline deadline,
                                     const std::atomic<bool>* cancelled = nullptr,
                                     const Clock& clock = real_clock()) {
    auto channel = connect_unix_agent_channel(path, deadline, cancelled, clock);
    if (!channel.ok()) return channel.error();
    return AgentSession(std::move(channel.value()), cancelled);
}

int listen_on(const std::string& path) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(fd, 4) == 0);
    return fd;
}

// The guest end: a listening socket (as QEMU has) and the accepted channel.
class Peer {
  public:
    Peer() : path_(dir_.file("agent.sock")), listen_fd_(listen_on(path_)) { ignore_sigpipe(); }
    ~Peer() {
        close_channel();
        ::close(listen_fd_);
    }
    const std::string& path() const { return path_; }

    // Connects a session and accepts it.
    AgentSession connect(const std::atomic<bool>* cancelled = nullptr) {
        auto session = connect_session(path_, Steady::now() + 2s, cancelled);
        REQUIRE(session.ok());
        fd_ = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        REQUIRE(fd_ >= 0);
        reader_ = std::make_unique<protocol::LineReader>(fd_);
        return std::move(session.value());
    }
    void send_raw(std::string_view bytes) {
        REQUIRE(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
                static_cast<ssize_t>(bytes.size()));
    }
    void send(std::string_view type, const Json& payload = Json::object()) {
        send_raw(protocol::encode(type, payload));
    }
    // For more than the socket buffer holds, while the session reads. The
    // writer stops at an error (the session closed); the caller joins it.
    std::thread send_in_background(std::string bytes) {
        return std::thread(
            [fd = fd_, bytes = std::move(bytes)] { (void)protocol::write_all(fd, bytes); });
    }
    // The next line the host sent, decoded.
    Json receive() {
        auto line = reader_->read_line(Steady::now() + 2s);
        REQUIRE(line.ok());
        auto message = protocol::decode(line.value());
        REQUIRE(message.ok());
        return message.value();
    }
    void close_channel() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }
    int fd() const { return fd_; }

  private:
    TempDir dir_;
    std::string path_;
    int listen_fd_;
    int fd_ = -1;
    std::unique_ptr<protocol::LineReader> reader_;
};

AgentSession connected(Peer& peer, const std::atomic<bool>* cancelled = nullptr) {
    return peer.connect(cancelled);
}

// A channel whose guest is a script: each read is one step of it, which may
// step the fake clock (time passing while the session waits) and answers
// with a line or an error. It records how long each read was allowed to wait.
class ScriptedChannel : public AgentChannel {
  public:
    using Step = std::function<Result<std::string>(int read_number)>;
    explicit ScriptedChannel(Step step) : step_(std::move(step)) {}

    Result<std::string> read_line(Deadline deadline) override {
        waits_.push_back(deadline - Steady::now());
        return step_(static_cast<int>(waits_.size()));
    }
    Status write(std::string_view) override { return ok_status(); }
    const std::vector<Steady::duration>& waits() const { return waits_; }

  private:
    Step step_;
    std::vector<Steady::duration> waits_;
};

// A session over a scripted channel, deciding by `clock`; `channel` is left
// pointing at the channel the session owns.
AgentSession scripted_session(ScriptedChannel::Step step, const Clock& clock,
                              ScriptedChannel*& channel,
                              const std::atomic<bool>* cancelled = nullptr) {
    auto owned = std::make_unique<ScriptedChannel>(std::move(step));
    channel = owned.get();
    return AgentSession(std::move(owned), cancelled, clock);
}

Error read_timed_out() {
    return make_error(errc::kTimeout, "no line before the deadline");
}

Json bench_progress(double elapsed_s) {
    return Json{{"phase", "bench"}, {"message", "fio"}, {"elapsed_s", elapsed_s}};
}

// A result that passes its schema, for run "17".
Json complete_result() {
    return Json{{"run_id", "17"},
                {"timings", {{"format_s", 0.5}, {"bench_s", 2.0}}},
                {"output", recorded_fio()},
                {"metrics", Json::object()},
                {"readback", {{"device", "sdb"}, {"fs_type", "btrfs"}, {"rotational", 0}}},
                {"versions", {{"kernel", "6.1.0"}, {"fio", "fio-3.33"}, {"agent", "0.1.0"}}}};
}

TEST_CASE("agent session: connect retries until the socket appears", "[agent_session]") {
    TempDir dir;
    const std::string path = dir.file("late.sock");
    FakeClock clock;
    int listen_fd = -1;
    clock.on_sleep([&](Clock::duration) {  // QEMU creates the socket during the third wait
        if (clock.sleeps().size() == 3) listen_fd = listen_on(path);
    });
    auto session = connect_session(path, clock.now() + 3s, nullptr, clock);
    CHECK(session.ok());
    CHECK(clock.sleeps() == std::vector<Clock::duration>(3, 100ms));
    ::close(listen_fd);
}

TEST_CASE("agent session: connect gives up at the deadline, on cancel, on a long path",
          "[agent_session]") {
    TempDir dir;
    const std::string path = dir.file("never.sock");
    SECTION("deadline") {
        FakeClock clock;
        auto session = connect_session(path, clock.now() + 300ms, nullptr, clock);
        REQUIRE_FALSE(session.ok());
        CHECK(session.error().code == errc::kTimeout);
        CHECK(session.error().message ==
              "cannot connect to the agent channel " + path + ": No such file or directory");
        // Tried at 0, 100, 200 and 300 ms; not once more after the deadline.
        CHECK(clock.sleeps() == std::vector<Clock::duration>(3, 100ms));
    }
    SECTION("cancelled") {
        std::atomic<bool> cancelled{true};
        auto session = connect_session(path, Steady::now() + 10s, &cancelled);
        REQUIRE_FALSE(session.ok());
        CHECK(session.error().code == errc::kCancelled);
    }
    SECTION("path longer than sun_path") {
        auto session = connect_session(std::string(200, 'x'), Steady::now() + 10s);
        REQUIRE_FALSE(session.ok());
        CHECK(session.error().code == errc::kInvalidArgument);
        CHECK_THAT(session.error().message, Contains("agent socket path too long"));
    }
}

TEST_CASE("agent session: receive_hello returns the hello or times out", "[agent_session]") {
    Peer peer;
    AgentSession session = connected(peer);
    SECTION("hello") {
        peer.send(protocol::kHello, hello_payload());
        auto hello = session.receive_hello(Steady::now() + 2s);
        REQUIRE(hello.ok());
        CHECK(hello->agent_version == "0.1.0-fake");
        CHECK(hello->kernel == "6.1.0-fake-amd64");
        CHECK(hello->fio_version == "fio-3.33");
        CHECK(hello->protocol == protocol::kVersion);
        CHECK(hello->capabilities ==
              std::vector<std::string>{"fio", "ext4", "xfs", "btrfs", "dataset"});
    }
    SECTION("a hello that breaks its schema") {
        Json payload = hello_payload();
        payload.erase("kernel");
        peer.send(protocol::kHello, payload);
        auto hello = session.receive_hello(Steady::now() + 2s);
        REQUIRE_FALSE(hello.ok());
        CHECK(hello.error().code == errc::kProtocol);
        CHECK(hello.error().message == "hello.kernel: missing");
    }
    SECTION("silence") {
        // The guest says nothing; each read lets 100 ms pass on the clock.
        FakeClock clock;
        ScriptedChannel* channel = nullptr;
        AgentSession silent = scripted_session(
            [&](int) -> Result<std::string> {
                clock.advance(100ms);
                return read_timed_out();
            },
            clock, channel);
        auto hello = silent.receive_hello(clock.now() + 400ms);
        REQUIRE_FALSE(hello.ok());
        CHECK(hello.error().code == errc::kTimeout);
        CHECK(hello.error().message == "no line before the deadline");  // the channel's reason
        CHECK(channel->waits().size() == 4);  // until the deadline, not past it
        CHECK(clock.elapsed() == 400ms);
        // Each wait is a slice of at most 250 ms, so a cancel is seen.
        for (const auto wait : channel->waits()) CHECK(wait <= 250ms);
        CHECK(channel->waits().back() <= 100ms);  // the last slice ends at the deadline
    }
    SECTION("half a message, then silence") {
        peer.send_raw(R"({"v":2,"type":"hel)");
        auto hello = session.receive_hello(Steady::now() + 300ms);
        REQUIRE_FALSE(hello.ok());
        CHECK(hello.error().code == errc::kTimeout);
    }
    SECTION("another message first") {
        peer.send(protocol::kProgress, Json{{"phase", "format"}});
        auto hello = session.receive_hello(Steady::now() + 2s);
        REQUIRE_FALSE(hello.ok());
        CHECK(hello.error().code == errc::kProtocol);
        CHECK(hello.error().message == "agent sent 'progress' before 'hello'");
    }
    SECTION("the channel closes") {
        peer.close_channel();
        auto hello = session.receive_hello(Steady::now() + 2s);
        REQUIRE_FALSE(hello.ok());
        CHECK(hello.error().code == errc::kIo);
        CHECK(hello.error().message == "channel closed");
    }
}

// Hello from a guest that trims, and a job asking for the trim, received.
void send_trim_job(Peer& peer, AgentSession& session) {
    peer.send(protocol::kHello, hello_payload(true));
    REQUIRE(session.receive_hello(Steady::now() + 2s).ok());
    REQUIRE(session.send_job({{"run_id", "17"}, {"trim", true}}).ok());
    CHECK(peer.receive().at("trim") == true);
}

TEST_CASE("agent session: a result before the trim_ready the job asked for is refused",
          "[agent_session]") {
    Peer peer;
    AgentSession session = connected(peer);
    send_trim_job(peer, session);
    peer.send(protocol::kProgress, bench_progress(1));
    peer.send(protocol::kResult, complete_result());
    int progress = 0;
    auto ready = session.await_ready(protocol::kTrimReady, Steady::now() + 2s,
                                     [&](const guest::Progress&) { ++progress; });
    REQUIRE_FALSE(ready.ok());
    CHECK(progress == 1);
    CHECK(ready.error().code == errc::kProtocol);
    CHECK(ready.error().message ==
          "agent sent 'result' before 'trim_ready', although the job asked for it");
}

TEST_CASE("agent session: trim_ready, the host's trim, then the result", "[agent_session]") {
    Peer peer;
    AgentSession session = connected(peer);
    send_trim_job(peer, session);
    peer.send(protocol::kTrimReady, Json{{"run_id", "17"}});
    auto ready = session.await_ready(protocol::kTrimReady, Steady::now() + 2s, nullptr);
    REQUIRE(ready.ok());
    CHECK(ready->run_id == "17");
    REQUIRE(session.send_answer(protocol::kTrim).ok());
    CHECK(peer.receive().at("type") == "trim");
    Json result = complete_result();
    result["readback"]["trim_removed_bytes"] = 33554432;
    result["readback"]["trim_error"] = "FITRIM: Operation not supported";
    peer.send(protocol::kResult, result);
    auto outcome = session.await_result(Steady::now() + 2s, nullptr);
    REQUIRE(outcome.ok());
    CHECK(outcome->readback.at("trim_removed_bytes") == 33554432);
    CHECK(outcome->readback.at("trim_error") == "FITRIM: Operation not supported");

    // The guest's trim figures are type and range checked like every readback.
    Json lying = complete_result();
    lying["readback"]["trimmed_bytes"] = -1;
    auto refused = guest::parse_result(lying);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message ==
          "result.readback.trimmed_bytes: -1 is out of range (0..9223372036854775807)");
    CHECK(guest::parse_ready(Json{{"run_id", 17}}, protocol::kTrimReady).error().message ==
          "trim_ready.run_id: expected a string, got number");
}

TEST_CASE("agent session: mark_ready with acks around it, the host's mark, then the result",
          "[agent_session]") {
    Peer peer;
    AgentSession session = connected(peer);
    peer.send(protocol::kHello, hello_payload(true));
    REQUIRE(session.receive_hello(Steady::now() + 2s).ok());
    REQUIRE(session.send_job({{"run_id", "17"}, {"mark", true}}).ok());
    CHECK(peer.receive().at("mark") == true);
    std::vector<long long> acked;
    session.set_ack_handler([&](const guest::Ack& ack) {
        acked.push_back(ack.id);
        return ok_status();
    });
    peer.send(protocol::kProgress, bench_progress(1));
    peer.send(protocol::kMarkReady, Json{{"run_id", "17"}});
    auto ready = session.await_ready(protocol::kMarkReady, Steady::now() + 2s, nullptr);
    REQUIRE(ready.ok());
    CHECK(ready->run_id == "17");
    REQUIRE(session.send_answer(protocol::kMark).ok());
    CHECK(peer.receive().at("type") == "mark");
    peer.send(protocol::kAck, Json{{"run_id", "17"}, {"id", 1}});
    peer.send(protocol::kResult, complete_result());
    REQUIRE(session.await_result(Steady::now() + 2s, nullptr).ok());
    CHECK(acked == std::vector<long long>{1});
    CHECK(guest::parse_ready(Json::object(), protocol::kMarkReady).error().message ==
          "mark_ready.run_id: missing");
}

TEST_CASE("guest messages: the guest's CPU times are kept when in range, refused when not",
          "[agent_session]") {
    Json result = complete_result();
    result["guest_cpu"] = {{"user_s", 1.5}, {"system_s", 0.25}, {"idle_s", 3}, {"bogus_s", 9}};
    auto parsed = guest::parse_result(result);
    REQUIRE(parsed.ok());
    // Unknown keys are dropped, like everywhere else in a result.
    CHECK(parsed->guest_cpu == Json{{"user_s", 1.5}, {"system_s", 0.25}, {"idle_s", 3}});
    // Older agents send none.
    CHECK(guest::parse_result(complete_result())->guest_cpu == Json::object());

    // A lying guest: negative time, a time of years, a string.
    for (const auto& [value, message] :
         {std::pair{Json(-1), "result.guest_cpu.system_s: -1 is out of range (0..2592000.0)"},
          {Json(1e9), "result.guest_cpu.system_s: 1000000000.0 is out of range (0..2592000.0)"},
          {Json("0.5"), "result.guest_cpu.system_s: expected a number, got string"}}) {
        Json lying = complete_result();
        lying["guest_cpu"] = {{"user_s", 1}, {"system_s", value}};
        auto refused = guest::parse_result(lying);
        REQUIRE_FALSE(refused.ok());
        CHECK(refused.error().message == message);
    }
}

TEST_CASE("agent session: job out, progress in order, then the result", "[agent_session]") {
    Peer peer;
    AgentSession session = connected(peer);
    peer.send(protocol::kHello, hello_payload());
    REQUIRE(session.receive_hello(Steady::now() + 2s).ok());

    const Json job = {{"run_id", "17"}, {"timeout_s", 60}, {"filesystem", {{"type", "btrfs"}}}};
    REQUIRE(session.send_job(job).ok());
    const Json received = peer.receive();
    CHECK(received.at("v") == ds::protocol::kVersion);
    CHECK(received.at("type") == "job");
    CHECK(received.at("run_id") == "17");
    CHECK(received.at("filesystem").at("type") == "btrfs");

    // Several messages in one write, and one message split over writes.
    std::string burst;
    for (int i = 1; i <= 3; ++i) {
        burst += protocol::encode(protocol::kProgress, bench_progress(i));
    }
    peer.send_raw(burst);
    Json sent = complete_result();
    sent["readback"]["unknown_key"] = "dropped";
    sent["timings"]["made_up_s"] = 1.0;
    const std::string result = protocol::encode(protocol::kResult, sent);
    std::thread trickle([&] {
        const std::size_t half = result.size() / 2;
        ::send(peer.fd(), result.data(), half, MSG_NOSIGNAL);
        std::this_thread::sleep_for(50ms);
        ::send(peer.fd(), result.data() + half, result.size() - half, MSG_NOSIGNAL);
    });
    std::vector<double> order;
    auto outcome = session.await_result(Steady::now() + 2s, [&](const guest::Progress& progress) {
        order.push_back(progress.elapsed_s);
    });
    trickle.join();
    REQUIRE(outcome.ok());
    CHECK(order == std::vector<double>{1, 2, 3});
    CHECK(outcome->run_id == "17");
    CHECK(outcome->output == recorded_fio());
    CHECK(outcome->timings == std::map<std::string, double>{{"format_s", 0.5}, {"bench_s", 2.0}});
    CHECK(outcome->readback == complete_result()["readback"]);
    CHECK(outcome->versions.at("fio") == "fio-3.33");

    session.send_shutdown();
    CHECK(peer.receive() == Json{{"v", ds::protocol::kVersion}, {"type", "shutdown"}});
}

TEST_CASE("agent session: an error message maps to errc::kAgent with phase and message",
          "[agent_session]") {
    Peer peer;
    AgentSession session = connected(peer);
    Json error;
    std::string expected;
    SECTION("complete") {
        error = {{"run_id", "3"}, {"phase", "mount"}, {"message", "mount: wrong fs type"}};
        expected = "agent failed during mount: mount: wrong fs type";
    }
    SECTION("no job arrived: a null run id") {
        error = {{"run_id", nullptr}, {"phase", "job"}, {"message", "job.timeout_s: is missing"}};
        expected = "agent failed during job: job.timeout_s: is missing";
    }
    SECTION("a message longer than the bound is cut") {
        error = {{"phase", "bench"}, {"message", std::string(100000, 'e')}};
        expected = "agent failed during bench: " + std::string(guest::kMaxTextBytes, 'e') + "...";
    }
    peer.send(protocol::kProgress, Json{{"phase", "format"}, {"message", ""}, {"elapsed_s", 0}});
    peer.send(protocol::kError, error);
    int progress = 0;
    auto outcome =
        session.await_result(Steady::now() + 2s, [&](const guest::Progress&) { ++progress; });
    REQUIRE_FALSE(outcome.ok());
    CHECK(outcome.error().code == errc::kAgent);
    CHECK(outcome.error().message == expected);
    CHECK(progress == 1);
}

TEST_CASE("agent session: a message that breaks its schema fails with the field named",
          "[agent_session]") {
    Peer peer;
    AgentSession session = connected(peer);
    std::string expected;
    SECTION("an error without its fields") {
        peer.send(protocol::kError, Json{{"run_id", nullptr}});
        expected = "error.phase: missing";
    }
    SECTION("an error with fields of the wrong type") {
        peer.send(protocol::kError, Json{{"phase", 7}, {"message", Json::array({"x"})}});
        expected = "error.phase: expected a string, got number";
    }
    SECTION("progress without elapsed_s") {
        peer.send(protocol::kProgress, Json{{"phase", "bench"}, {"message", "fio"}});
        expected = "progress.elapsed_s: missing";
    }
    SECTION("progress past the end") {
        Json progress = bench_progress(3);
        progress["fraction"] = 1.5;
        peer.send(protocol::kProgress, progress);
        expected = "progress.fraction: 1.5 is out of range (0..1.0)";
    }
    SECTION("a result whose readback lies about a type") {
        Json result = complete_result();
        result["readback"]["rotational"] = "0";
        peer.send(protocol::kResult, result);
        expected = "result.readback.rotational: expected an integer, got string";
    }
    SECTION("a result without its output") {
        Json result = complete_result();
        result.erase("output");
        peer.send(protocol::kResult, result);
        expected = "result.output: missing";
    }
    auto outcome = session.await_result(Steady::now() + 2s, nullptr);
    REQUIRE_FALSE(outcome.ok());
    CHECK(outcome.error().code == errc::kProtocol);
    CHECK(outcome.error().message == expected);
}

TEST_CASE("agent session: progress text is cut to the bound, on a character boundary",
          "[agent_session]") {
    Peer peer;
    AgentSession session = connected(peer);
    // "é" is two bytes: an odd-sized prefix of it would split a character.
    std::string long_text = "x";
    while (long_text.size() < 1'000'000) long_text += "\xc3\xa9";
    Json progress = bench_progress(1);
    progress["message"] = long_text;
    progress["phase"] = long_text;
    progress["unknown"] = long_text;
    std::thread writer = peer.send_in_background(
        protocol::encode(protocol::kProgress, progress) +
        protocol::encode(protocol::kError, Json{{"phase", "bench"}, {"message", "stop"}}));
    std::vector<guest::Progress> seen;
    auto outcome = session.await_result(
        Steady::now() + 5s, [&](const guest::Progress& received) { seen.push_back(received); });
    writer.join();
    REQUIRE_FALSE(outcome.ok());
    CHECK(outcome.error().message == "agent failed during bench: stop");
    REQUIRE(seen.size() == 1);
    for (const std::string& text : {seen[0].message, seen[0].phase}) {
        CHECK(text.size() <= guest::kMaxTextBytes + 3);
        CHECK(text.size() >= guest::kMaxTextBytes - 3);
        CHECK(text.substr(text.size() - 3) == "...");
        CHECK(long_text.rfind(text.substr(0, text.size() - 3), 0) == 0);
        // Still valid UTF-8: the strict dump would throw otherwise.
        CHECK_NOTHROW(Json(text).dump());
    }
}

TEST_CASE("agent session: unexpected or malformed messages during a job", "[agent_session]") {
    Peer peer;
    AgentSession session = connected(peer);
    std::string code = errc::kProtocol;
    std::string expected;
    std::thread writer;
    SECTION("hello again") {
        peer.send(protocol::kHello, hello_payload());
        expected = "agent sent unexpected 'hello' while a job was running";
    }
    SECTION("shutdown from the guest") {
        peer.send(protocol::kShutdown);
        expected = "agent sent unexpected 'shutdown' while a job was running";
    }
    SECTION("version 0") {
        peer.send_raw(R"({"v":0,"type":"result"})"
                      "\n");
        expected = "unsupported protocol version 0 (this side speaks 2)";
    }
    SECTION("no type") {
        peer.send_raw(R"({"v":2})"
                      "\n");
        expected = "message has no string \"type\"";
    }
    SECTION("too many values") {
        std::string values;
        for (std::size_t i = 0; i <= protocol::kMaxMessageValues; ++i) values += "0,";
        writer = peer.send_in_background(R"({"v":2,"type":"progress","x":[)" + values + "0]}\n");
        expected = "message holds more than " + std::to_string(protocol::kMaxMessageValues) +
                   " JSON values";
    }
    SECTION("nested too deep") {
        peer.send_raw(R"({"v":2,"type":"progress","x":)" + std::string(100, '[') +
                      std::string(100, ']') + "}\n");
        expected = "message nests deeper than 64 levels";
    }
    SECTION("closed mid-message") {
        peer.send_raw(R"({"v":2,"type":"res)");
        peer.close_channel();
        code = errc::kIo;
        expected = "channel closed in the middle of a message (18 bytes unterminated)";
    }
    auto outcome = session.await_result(Steady::now() + 2s, nullptr);
    if (writer.joinable()) writer.join();
    REQUIRE_FALSE(outcome.ok());
    CHECK(outcome.error().code == code);
    CHECK_THAT(outcome.error().message, Contains(expected));
}

TEST_CASE("agent session: await_result times out, and sees cancellation promptly",
          "[agent_session]") {
    Peer peer;
    std::atomic<bool> cancelled{false};
    AgentSession session = connected(peer, &cancelled);
    SECTION("timeout despite progress") {
        // A guest that never stops sending progress, 100 ms apart on the
        // clock: progress does not extend the deadline.
        FakeClock clock;
        ScriptedChannel* channel = nullptr;
        AgentSession chatty = scripted_session(
            [&](int read_number) -> Result<std::string> {
                clock.advance(100ms);
                return protocol::encode(protocol::kProgress, bench_progress(read_number));
            },
            clock, channel);
        int progress = 0;
        auto outcome =
            chatty.await_result(clock.now() + 300ms, [&](const guest::Progress&) { ++progress; });
        REQUIRE_FALSE(outcome.ok());
        CHECK(outcome.error().code == errc::kTimeout);
        CHECK(outcome.error().message ==
              "the deadline passed while the agent was still sending progress");
        CHECK(progress == 3);  // at 100, 200 and 300 ms; none read after the deadline
        CHECK(clock.elapsed() == 300ms);
    }
    SECTION("cancel") {
        // The daemon cancels during the second wait, 9.5 s before the deadline.
        FakeClock clock;
        ScriptedChannel* channel = nullptr;
        AgentSession waiting = scripted_session(
            [&](int read_number) -> Result<std::string> {
                clock.advance(250ms);
                if (read_number == 2) cancelled = true;
                return read_timed_out();
            },
            clock, channel, &cancelled);
        auto outcome = waiting.await_result(clock.now() + 10s, nullptr);
        REQUIRE_FALSE(outcome.ok());
        CHECK(outcome.error().code == errc::kCancelled);
        CHECK(channel->waits().size() == 2);  // seen after the slice it came in
        CHECK(clock.elapsed() == 500ms);
    }
    SECTION("cancelled before hello") {
        cancelled = true;
        peer.send(protocol::kHello, hello_payload());
        auto hello = session.receive_hello(Steady::now() + 2s);
        REQUIRE_FALSE(hello.ok());
        CHECK(hello.error().code == errc::kCancelled);
    }
}

TEST_CASE("agent session: a moved session keeps its channel", "[agent_session]") {
    Peer peer;
    AgentSession first = connected(peer);
    AgentSession second(std::move(first));
    peer.send(protocol::kHello, hello_payload());
    auto hello = second.receive_hello(Steady::now() + 2s);
    REQUIRE(hello.ok());
    REQUIRE(second.send_job(Json{{"run_id", "1"}}).ok());
    CHECK(peer.receive().at("type") == "job");
}

}  // namespace
}  // namespace ds

namespace ds {
namespace {

TEST_CASE("agent session: acks go to the ledger while the job runs, in order", "[agent_session]") {
    Peer peer;
    AgentSession session = connected(peer);
    AckLedger ledger("17", nullptr);
    session.set_ack_handler([&](const guest::Ack& ack) { return ledger.record(ack); });
    for (long long id = 1; id <= 3; ++id)
        peer.send(protocol::kAck, Json{{"run_id", "17"}, {"id", id}});
    peer.send(protocol::kProgress, bench_progress(1));
    peer.send(protocol::kResult, complete_result());
    auto result = session.await_result(Steady::now() + 2s, nullptr);
    REQUIRE(result.ok());
    REQUIRE(ledger.entries().size() == 3);
    CHECK(ledger.entries().back().id == 3);
    CHECK_FALSE(ledger.entries().back().log_bytes.has_value());
    CHECK(ledger.check_result_count(3).ok());
    CHECK(ledger.check_result_count(4).error().message ==
          "agent reported 4 acknowledged records but sent 3 acks");
    CHECK(ledger.summary() == Json{{"acks_received", 3}, {"last_id", 3}});
}

TEST_CASE("agent session: an ack out of order, for another run, or unasked ends the job",
          "[agent_session]") {
    SECTION("a skipped id") {
        Peer peer;
        AgentSession session = connected(peer);
        AckLedger ledger("17", nullptr);
        session.set_ack_handler([&](const guest::Ack& ack) { return ledger.record(ack); });
        peer.send(protocol::kAck, Json{{"run_id", "17"}, {"id", 1}});
        peer.send(protocol::kAck, Json{{"run_id", "17"}, {"id", 3}});
        auto result = session.await_result(Steady::now() + 2s, nullptr);
        REQUIRE_FALSE(result.ok());
        CHECK(result.error().code == errc::kProtocol);
        CHECK(result.error().message == "agent acknowledged record 3 where record 2 was next");
    }
    SECTION("another run's") {
        AckLedger ledger("17", nullptr);
        CHECK(ledger.record({"18", 1}).error().message ==
              "agent sent an ack for run \"18\", not for this run (\"17\")");
    }
    SECTION("an id that is not a count") {
        CHECK(
            guest::parse_ack(Json{{"type", "ack"}, {"run_id", "17"}, {"id", -2}}).error().message ==
            "ack.id: -2 is out of range (0..9223372036854775807)");
        CHECK(guest::parse_ack(Json{{"type", "ack"}, {"run_id", "17"}, {"id", "1"}})
                  .error()
                  .message == "ack.id: expected an integer, got string");
    }
    SECTION("no workload that acknowledges") {
        Peer peer;
        AgentSession session = connected(peer);
        peer.send(protocol::kAck, Json{{"run_id", "17"}, {"id", 1}});
        auto result = session.await_result(Steady::now() + 2s, nullptr);
        REQUIRE_FALSE(result.ok());
        CHECK(result.error().message ==
              "agent sent 'ack', but this job's workload acknowledges nothing");
    }
}

TEST_CASE("ack ledger: the write log's size is noted with each ack", "[agent_session]") {
    std::uint64_t log_bytes = 4096;
    AckLedger ledger("5", [&]() -> std::optional<std::uint64_t> { return log_bytes; });
    REQUIRE(ledger.record({"5", 1}).ok());
    log_bytes = 12288;
    REQUIRE(ledger.record({"5", 2}).ok());
    CHECK(ledger.summary() ==
          Json{{"acks_received", 2}, {"last_id", 2}, {"log_bytes_at_ack", {4096, 12288}}});
}

}  // namespace
}  // namespace ds
