// The host <-> guest wire format: encode/decode and LineReader over real
// socketpairs and pipes.
#include "common/protocol.h"

#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <thread>

namespace {

using namespace std::chrono_literals;
namespace protocol = ds::protocol;

struct SocketPair {
    int fds[2] = {-1, -1};
    SocketPair() { REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0); }
    ~SocketPair() { close_both(); }
    void close_end(int i) {
        if (fds[i] >= 0) ::close(fds[i]);
        fds[i] = -1;
    }
    void close_both() {
        close_end(0);
        close_end(1);
    }
};

auto soon() {
    return std::chrono::steady_clock::now() + 2s;
}

void expect_protocol_error(std::string_view line, const std::string& fragment) {
    const auto decoded = protocol::decode(line);
    REQUIRE_FALSE(decoded.ok());
    CHECK(decoded.error().code == ds::errc::kProtocol);
    INFO(decoded.error().message);
    CHECK(decoded.error().message.find(fragment) != std::string::npos);
}

}  // namespace

TEST_CASE("protocol: encode then decode round-trips", "[protocol]") {
    const std::string line =
        protocol::encode(protocol::kProgress, {{"phase", "bench"}, {"fraction", 0.5}});
    REQUIRE(line.back() == '\n');
    CHECK(line.find('\n') == line.size() - 1);

    const auto decoded = protocol::decode(std::string_view(line).substr(0, line.size() - 1));
    REQUIRE(decoded.ok());
    CHECK((*decoded)["v"] == protocol::kVersion);
    CHECK((*decoded)["type"] == "progress");
    CHECK((*decoded)["phase"] == "bench");
    CHECK((*decoded)["fraction"] == 0.5);
}

TEST_CASE("protocol: encode overrides v/type and survives invalid UTF-8", "[protocol]") {
    const std::string line =
        protocol::encode(protocol::kError,
                         {{"v", 99}, {"type", "bogus"}, {"message", std::string("bad \xff byte")}});
    const auto decoded = protocol::decode(std::string_view(line).substr(0, line.size() - 1));
    REQUIRE(decoded.ok());
    CHECK((*decoded)["v"] == protocol::kVersion);
    CHECK((*decoded)["type"] == "error");
    CHECK((*decoded)["message"].get<std::string>().find("bad ") == 0);
}

TEST_CASE("protocol: decode rejects what the contract forbids", "[protocol]") {
    expect_protocol_error("{\"v\":2,\"type\":\"hello\"", "not valid JSON");
    expect_protocol_error("", "not valid JSON");
    expect_protocol_error("[1,2,3]", "is a JSON array, expected an object");
    expect_protocol_error("\"hello\"", "is a JSON string, expected an object");
    expect_protocol_error("{\"type\":\"hello\"}", "no protocol version");
    expect_protocol_error("{\"v\":1,\"type\":\"hello\"}", "unsupported protocol version 1");
    expect_protocol_error("{\"v\":\"1\",\"type\":\"hello\"}", "unsupported protocol version \"1\"");
    expect_protocol_error("{\"v\":2}", "no string \"type\"");
    expect_protocol_error("{\"v\":2,\"type\":7}", "no string \"type\"");
    expect_protocol_error("{\"v\":2,\"type\":\"reboot\"}", "unknown message type \"reboot\"");
    expect_protocol_error(
        "{\"v\":2,\"type\":\"hello\",\"x\":" + std::string(100, '[') + std::string(100, ']') + "}",
        "nests deeper than");
}

TEST_CASE("protocol: decode accepts every known type", "[protocol]") {
    for (auto type : {protocol::kHello, protocol::kJob, protocol::kProgress, protocol::kResult,
                      protocol::kError, protocol::kShutdown}) {
        const auto decoded =
            protocol::decode("{\"v\":2,\"type\":\"" + std::string(type) + "\",\"run_id\":\"r\"}");
        CHECK(decoded.ok());
    }
}

TEST_CASE("protocol: LineReader splits lines across and within reads", "[protocol]") {
    SocketPair pair;
    protocol::LineReader reader(pair.fds[0]);
    REQUIRE(protocol::write_all(pair.fds[1], "first\nsec").ok());
    auto line = reader.read_line(soon());
    REQUIRE(line.ok());
    CHECK(*line == "first");

    std::thread writer([&] {
        std::this_thread::sleep_for(50ms);
        (void)protocol::write_all(pair.fds[1], "ond\nthird\n");
    });
    line = reader.read_line(soon());
    writer.join();
    REQUIRE(line.ok());
    CHECK(*line == "second");
    line = reader.read_line(soon());
    REQUIRE(line.ok());
    CHECK(*line == "third");
}

TEST_CASE("protocol: LineReader times out at the deadline", "[protocol]") {
    SocketPair pair;
    protocol::LineReader reader(pair.fds[0]);
    REQUIRE(protocol::write_all(pair.fds[1], "no newline yet").ok());
    const auto start = std::chrono::steady_clock::now();
    const auto line = reader.read_line(start + 150ms);
    const auto waited = std::chrono::steady_clock::now() - start;
    REQUIRE_FALSE(line.ok());
    CHECK(line.error().code == ds::errc::kTimeout);
    CHECK(waited >= 150ms);
    CHECK(waited < 1500ms);

    // The partial line is kept: completing it later yields the whole line.
    REQUIRE(protocol::write_all(pair.fds[1], ", now\n").ok());
    const auto completed = reader.read_line(soon());
    REQUIRE(completed.ok());
    CHECK(*completed == "no newline yet, now");
}

TEST_CASE("protocol: LineReader reports EOF as a closed channel", "[protocol]") {
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    protocol::LineReader reader(pipe_fds[0]);
    REQUIRE(protocol::write_all(pipe_fds[1], "last\npartial").ok());
    ::close(pipe_fds[1]);

    auto line = reader.read_line(soon());
    REQUIRE(line.ok());
    CHECK(*line == "last");
    line = reader.read_line(soon());
    REQUIRE_FALSE(line.ok());
    CHECK(line.error().code == ds::errc::kIo);
    CHECK(line.error().message.find("in the middle of a message") != std::string::npos);
    line = reader.read_line(soon());
    REQUIRE_FALSE(line.ok());
    CHECK(line.error().code == ds::errc::kIo);
    CHECK(line.error().message == "channel closed");
    ::close(pipe_fds[0]);
}

TEST_CASE("protocol: LineReader bounds the line size", "[protocol]") {
    SECTION("an oversized line with its newline") {
        SocketPair pair;
        protocol::LineReader reader(pair.fds[0], 16);
        REQUIRE(protocol::write_all(pair.fds[1],
                                    std::string(16, 'a') + "\n" + std::string(17, 'b') + "\n")
                    .ok());
        auto line = reader.read_line(soon());
        REQUIRE(line.ok());
        CHECK(line->size() == 16);
        line = reader.read_line(soon());
        REQUIRE_FALSE(line.ok());
        CHECK(line.error().code == ds::errc::kProtocol);
        CHECK(line.error().message.find("exceeds the limit of 16 bytes") != std::string::npos);
    }
    SECTION("a peer that never sends a newline is cut off, not buffered forever") {
        SocketPair pair;
        protocol::LineReader reader(pair.fds[0], 1024);
        std::thread writer([&] {
            // More than the bound; the reader stops before the writer does.
            (void)protocol::write_all(pair.fds[1], std::string(200 * 1024, 'x'));
        });
        const auto line = reader.read_line(soon());
        REQUIRE_FALSE(line.ok());
        CHECK(line.error().code == ds::errc::kProtocol);
        CHECK(line.error().message.find("without a newline") != std::string::npos);
        pair.close_end(0);  // unblocks the writer (EPIPE)
        writer.join();
    }
}

TEST_CASE("protocol: write_all reports a closed peer", "[protocol]") {
    ::signal(SIGPIPE, SIG_IGN);
    SocketPair pair;
    pair.close_end(0);
    const auto status = protocol::write_all(pair.fds[1], "hello\n");
    REQUIRE_FALSE(status.ok());
    CHECK(status.error().code == ds::errc::kIo);
    CHECK(status.error().message.find("Broken pipe") != std::string::npos);
}
