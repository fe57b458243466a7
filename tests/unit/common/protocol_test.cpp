// The host <-> guest wire format: encode/decode and LineReader over real
// socketpairs and pipes.
#include "common/protocol.h"

#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
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

TEST_CASE("protocol: decode allows 64 levels of nesting, not 65", "[protocol]") {
    // The message object is level 1; "x" holds the rest.
    auto nested = [](int levels) {
        return "{\"v\":2,\"type\":\"hello\",\"x\":" + std::string(levels - 1, '[') +
               std::string(levels - 1, ']') + "}";
    };
    CHECK(protocol::decode(nested(64)).ok());
    expect_protocol_error(nested(65), "message nests deeper than 64 levels");
}

TEST_CASE("protocol: decode takes the largest array of objects a message may hold", "[protocol]") {
    // The message object, the values of "v" and "type", and the array are
    // four of the values. That this decodes in linear time (the parser
    // callback used before took a minute here) is measured by
    // bench/decode_speed, not timed in a test.
    const std::size_t objects = protocol::kMaxMessageValues - 4;
    std::string line = R"({"v":2,"type":"progress","x":[{})";
    for (std::size_t i = 1; i < objects; ++i) line += ",{}";
    line += "]}";
    const auto decoded = protocol::decode(line);
    REQUIRE(decoded.ok());
    CHECK(decoded.value()["x"].size() == objects);
    line.insert(line.size() - 2, ",{}");
    expect_protocol_error(line, "message holds more than 262144 JSON values");
}

TEST_CASE("protocol: decode accepts every known type", "[protocol]") {
    for (auto type :
         {protocol::kHello, protocol::kJob, protocol::kProgress, protocol::kResult,
          protocol::kError, protocol::kShutdown, protocol::kTrimReady, protocol::kTrim}) {
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
        ::signal(SIGPIPE, SIG_IGN);  // the writer may still be writing when the reader closes
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

TEST_CASE("protocol: the LineReader's buffer never grows past the line bound plus one chunk",
          "[protocol]") {
    // A std::string grown by append doubles its capacity: 8 MiB + 1 byte
    // would have allocated 16 MiB. The reader reserves exactly instead.
    constexpr std::size_t kMaxLine = 1u << 20;
    SocketPair pair;
    protocol::LineReader reader(pair.fds[0], kMaxLine);
    const std::string line(kMaxLine, 'x');
    std::atomic<bool> written{false};
    std::thread writer([&] {
        (void)protocol::write_all(pair.fds[1], line);
        written = true;
    });
    // All of it, no newline yet: buffered, not refused.
    const auto give_up = std::chrono::steady_clock::now() + 5s;
    while (!written && std::chrono::steady_clock::now() < give_up) {
        (void)reader.read_line(std::chrono::steady_clock::now() + 20ms);
    }
    writer.join();
    const auto partial = reader.read_line(std::chrono::steady_clock::now() + 100ms);
    REQUIRE_FALSE(partial.ok());
    CHECK(partial.error().code == ds::errc::kTimeout);
    CHECK(reader.buffer_capacity() >= kMaxLine);
    CHECK(reader.buffer_capacity() <= kMaxLine + protocol::kReadChunkBytes);

    // The newline completes a line of exactly the bound, and the buffer of a
    // long line is given back once it is handed out.
    REQUIRE(protocol::write_all(pair.fds[1], "\nnext").ok());
    const auto complete = reader.read_line(soon());
    REQUIRE(complete.ok());
    CHECK(*complete == line);
    CHECK(reader.buffer_capacity() <= kMaxLine + protocol::kReadChunkBytes);
    REQUIRE(protocol::write_all(pair.fds[1], "\n").ok());
    const auto next = reader.read_line(soon());
    REQUIRE(next.ok());
    CHECK(*next == "next");
    CHECK(reader.buffer_capacity() <= 4 * protocol::kReadChunkBytes);
}

TEST_CASE("protocol: decode bounds the number of JSON values in a message", "[protocol]") {
    // The object, "v", "type" and the array are four values; then the items.
    auto message_with_items = [](std::size_t items) {
        std::string line = R"({"v":2,"type":"progress","x":[)";
        for (std::size_t i = 0; i < items; ++i) line += i == 0 ? "0" : ",0";
        return line + "]}";
    };
    CHECK(protocol::decode(message_with_items(protocol::kMaxMessageValues - 4)).ok());
    expect_protocol_error(
        message_with_items(protocol::kMaxMessageValues - 3),
        "message holds more than " + std::to_string(protocol::kMaxMessageValues) + " JSON values");
    // Empty objects count too: each would cost far more memory than its text.
    std::string objects = R"({"v":2,"type":"progress","x":[{})";
    for (std::size_t i = 0; i < protocol::kMaxMessageValues; ++i) objects += ",{}";
    expect_protocol_error(objects + "]}", "JSON values");
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

TEST_CASE("protocol: disk serials the agent looks up", "[protocol]") {
    CHECK(protocol::disk_serial_problem("disksweep-crash-15").empty());
    CHECK(protocol::disk_serial_problem("A_z-09").empty());
    CHECK(protocol::disk_serial_problem(std::string(protocol::kMaxDiskSerialBytes, 'x')).empty());
    // virtio-blk would show the guest only the first 20 bytes.
    CHECK_THAT(protocol::disk_serial_problem(std::string(protocol::kMaxDiskSerialBytes + 1, 'x')),
               Catch::Contains("1 to 20 bytes"));
    CHECK_THAT(protocol::disk_serial_problem(""), Catch::Contains("1 to 20 bytes"));
    for (const char* bad : {"..", "a/b", "a b", "crash.0", "x'y", "\xc3\xa9"}) {
        INFO(bad);
        CHECK_THAT(protocol::disk_serial_problem(bad), Catch::Contains("A-Z a-z 0-9 - _"));
    }
}

TEST_CASE("protocol: crash disk serials are distinct and valid up to the bound", "[protocol]") {
    CHECK(protocol::crash_disk_serial(0) == "disksweep-crash-0");
    for (std::size_t i = 0; i < protocol::kMaxCheckDisks; ++i) {
        INFO(i);
        CHECK(protocol::disk_serial_problem(protocol::crash_disk_serial(i)).empty());
        CHECK(protocol::crash_disk_serial(i) != protocol::kDataDiskSerial);
    }
}
