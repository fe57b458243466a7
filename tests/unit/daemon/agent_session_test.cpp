// The host side of the agent protocol against a peer on a real unix socket
// (the test plays the guest).
#include "daemon/agent_session.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <thread>

#include "fakes.h"

namespace ds {
namespace {

using namespace ds::testing;
using Catch::Matchers::Contains;
using Clock = std::chrono::steady_clock;

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
        auto session = AgentSession::connect(path_, Clock::now() + 2s, cancelled);
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
    // The next line the host sent, decoded.
    Json receive() {
        auto line = reader_->read_line(Clock::now() + 2s);
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

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

TEST_CASE("agent session: connect retries until the socket appears", "[agent_session]") {
    TempDir dir;
    const std::string path = dir.file("late.sock");
    int listen_fd = -1;
    std::thread qemu([&] {
        std::this_thread::sleep_for(300ms);
        listen_fd = listen_on(path);
    });
    const auto start = Clock::now();
    auto session = AgentSession::connect(path, Clock::now() + 3s);
    qemu.join();
    CHECK(session.ok());
    CHECK(seconds_since(start) >= 0.25);
    ::close(listen_fd);
}

TEST_CASE("agent session: connect gives up at the deadline, on cancel, on a long path",
          "[agent_session]") {
    TempDir dir;
    const std::string path = dir.file("never.sock");
    SECTION("deadline") {
        const auto start = Clock::now();
        auto session = AgentSession::connect(path, Clock::now() + 300ms);
        REQUIRE_FALSE(session.ok());
        CHECK(session.error().code == errc::kTimeout);
        CHECK(session.error().message ==
              "cannot connect to the agent channel " + path + ": No such file or directory");
        CHECK(seconds_since(start) < 2.0);
    }
    SECTION("cancelled") {
        std::atomic<bool> cancelled{true};
        auto session = AgentSession::connect(path, Clock::now() + 10s, &cancelled);
        REQUIRE_FALSE(session.ok());
        CHECK(session.error().code == errc::kCancelled);
    }
    SECTION("path longer than sun_path") {
        auto session = AgentSession::connect(std::string(200, 'x'), Clock::now() + 10s);
        REQUIRE_FALSE(session.ok());
        CHECK(session.error().code == errc::kInvalidArgument);
        CHECK_THAT(session.error().message, Contains("agent socket path too long"));
    }
}

TEST_CASE("agent session: await_hello returns the hello or times out", "[agent_session]") {
    Peer peer;
    AgentSession session = connected(peer);
    SECTION("hello") {
        peer.send(protocol::kHello, hello_payload());
        auto hello = session.await_hello(Clock::now() + 2s);
        REQUIRE(hello.ok());
        CHECK(hello->at("type") == "hello");
        CHECK(hello->at("fio_version") == "fio-3.33");
    }
    SECTION("silence") {
        const auto start = Clock::now();
        auto hello = session.await_hello(Clock::now() + 400ms);
        REQUIRE_FALSE(hello.ok());
        CHECK(hello.error().code == errc::kTimeout);
        CHECK(seconds_since(start) >= 0.35);
        CHECK(seconds_since(start) < 1.5);
    }
    SECTION("half a message, then silence") {
        peer.send_raw(R"({"v":2,"type":"hel)");
        auto hello = session.await_hello(Clock::now() + 300ms);
        REQUIRE_FALSE(hello.ok());
        CHECK(hello.error().code == errc::kTimeout);
    }
    SECTION("another message first") {
        peer.send(protocol::kProgress, Json{{"phase", "format"}});
        auto hello = session.await_hello(Clock::now() + 2s);
        REQUIRE_FALSE(hello.ok());
        CHECK(hello.error().code == errc::kProtocol);
        CHECK(hello.error().message == "agent sent 'progress' before 'hello'");
    }
    SECTION("the channel closes") {
        peer.close_channel();
        auto hello = session.await_hello(Clock::now() + 2s);
        REQUIRE_FALSE(hello.ok());
        CHECK(hello.error().code == errc::kIo);
        CHECK(hello.error().message == "channel closed");
    }
}

TEST_CASE("agent session: job out, progress in order, then the result", "[agent_session]") {
    Peer peer;
    AgentSession session = connected(peer);
    peer.send(protocol::kHello, hello_payload());
    REQUIRE(session.await_hello(Clock::now() + 2s).ok());

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
        burst += protocol::encode(protocol::kProgress, Json{{"phase", "bench"}, {"elapsed_s", i}});
    }
    peer.send_raw(burst);
    const std::string result =
        protocol::encode(protocol::kResult, Json{{"run_id", "17"}, {"output", recorded_fio()}});
    std::thread trickle([&] {
        const std::size_t half = result.size() / 2;
        ::send(peer.fd(), result.data(), half, MSG_NOSIGNAL);
        std::this_thread::sleep_for(50ms);
        ::send(peer.fd(), result.data() + half, result.size() - half, MSG_NOSIGNAL);
    });
    std::vector<int> order;
    auto outcome = session.await_result(Clock::now() + 2s, [&](const Json& progress) {
        order.push_back(progress.at("elapsed_s").get<int>());
    });
    trickle.join();
    REQUIRE(outcome.ok());
    CHECK(order == std::vector<int>{1, 2, 3});
    CHECK(outcome->at("type") == "result");
    CHECK(outcome->at("output") == recorded_fio());

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
    SECTION("fields missing") {
        error = {{"run_id", nullptr}};
        expected = "agent failed during unknown: (no message)";
    }
    SECTION("fields of the wrong type") {
        error = {{"phase", 7}, {"message", Json::array({"x"})}};
        expected = "agent failed during unknown: (no message)";
    }
    peer.send(protocol::kProgress, Json{{"phase", "format"}});
    peer.send(protocol::kError, error);
    int progress = 0;
    auto outcome = session.await_result(Clock::now() + 2s, [&](const Json&) { ++progress; });
    REQUIRE_FALSE(outcome.ok());
    CHECK(outcome.error().code == errc::kAgent);
    CHECK(outcome.error().message == expected);
    CHECK(progress == 1);
}

TEST_CASE("agent session: unexpected or malformed messages during a job", "[agent_session]") {
    Peer peer;
    AgentSession session = connected(peer);
    std::string code = errc::kProtocol;
    std::string expected;
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
    auto outcome = session.await_result(Clock::now() + 2s, nullptr);
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
        // Progress does not extend the deadline.
        std::thread chatter([&] {
            for (int i = 0; i < 6; ++i) {
                const std::string line =
                    protocol::encode(protocol::kProgress, Json{{"phase", "bench"}});
                ::send(peer.fd(), line.data(), line.size(), MSG_NOSIGNAL);
                std::this_thread::sleep_for(100ms);
            }
        });
        const auto start = Clock::now();
        int progress = 0;
        auto outcome = session.await_result(Clock::now() + 300ms, [&](const Json&) { ++progress; });
        const double seconds = seconds_since(start);
        chatter.join();
        REQUIRE_FALSE(outcome.ok());
        CHECK(outcome.error().code == errc::kTimeout);
        CHECK(progress >= 2);
        CHECK(seconds < 1.5);  // the deadline, not the chatter, ends it
    }
    SECTION("cancel") {
        std::thread canceller([&] {
            std::this_thread::sleep_for(100ms);
            cancelled = true;
        });
        const auto start = Clock::now();
        auto outcome = session.await_result(Clock::now() + 10s, nullptr);
        const double seconds = seconds_since(start);
        canceller.join();
        REQUIRE_FALSE(outcome.ok());
        CHECK(outcome.error().code == errc::kCancelled);
        CHECK(seconds < 1.5);  // polled in 250 ms slices, not at the 10 s deadline
    }
    SECTION("cancelled before hello") {
        cancelled = true;
        peer.send(protocol::kHello, hello_payload());
        auto hello = session.await_hello(Clock::now() + 2s);
        REQUIRE_FALSE(hello.ok());
        CHECK(hello.error().code == errc::kCancelled);
    }
}

TEST_CASE("agent session: a moved session keeps its channel", "[agent_session]") {
    Peer peer;
    AgentSession first = connected(peer);
    AgentSession second(std::move(first));
    peer.send(protocol::kHello, hello_payload());
    auto hello = second.await_hello(Clock::now() + 2s);
    REQUIRE(hello.ok());
    REQUIRE(second.send_job(Json{{"run_id", "1"}}).ok());
    CHECK(peer.receive().at("type") == "job");
}

}  // namespace
}  // namespace ds
