// HTTP over unix sockets: parsing, and the server and client against each
// other (and against curl) over real sockets in a temporary directory.
#include "common/http.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>

#include "support/skip.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ds::http::ClientRequest;
using ds::http::Request;
using ds::http::Response;
using ds::http::UnixServer;

namespace {

using ds::test::TempDir;

int connect_raw(const std::string& path) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strcpy(address.sun_path, path.c_str());
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// Reads until EOF (or `limit`), returning everything the server sent.
std::string read_until_close(int fd, std::chrono::milliseconds limit = 5s) {
    std::string received;
    auto deadline = std::chrono::steady_clock::now() + limit;
    char buffer[4096];
    while (std::chrono::steady_clock::now() < deadline) {
        pollfd pfd{fd, POLLIN, 0};
        if (::poll(&pfd, 1, 50) <= 0) continue;
        ssize_t got = ::recv(fd, buffer, sizeof buffer, 0);
        if (got <= 0) break;
        received.append(buffer, static_cast<std::size_t>(got));
    }
    return received;
}

std::string raw_exchange(const std::string& path, std::string_view bytes) {
    int fd = connect_raw(path);
    REQUIRE(fd >= 0);
    REQUIRE(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == ssize_t(bytes.size()));
    std::string answer = read_until_close(fd);
    ::close(fd);
    return answer;
}

int status_of(const std::string& raw_response) {
    REQUIRE(raw_response.size() >= 12);
    return std::stoi(raw_response.substr(9, 3));
}

nlohmann::json body_of(const std::string& raw_response) {
    auto start = raw_response.find("\r\n\r\n");
    REQUIRE(start != std::string::npos);
    return nlohmann::json::parse(raw_response.substr(start + 4));
}

// Echoes what it received as JSON.
Response echo(const Request& request) {
    Response response;
    nlohmann::json seen = {{"method", request.method},   {"target", request.target},
                           {"path", request.path},       {"query", request.query},
                           {"headers", request.headers}, {"body", request.body},
                           {"uid", request.peer_uid},    {"pid", request.peer_pid}};
    response.body = seen.dump();
    return response;
}

std::string run_command(const std::string& command) {
    std::string output;
    FILE* pipe = ::popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buffer[4096];
    std::size_t got;
    while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, got);
    ::pclose(pipe);
    return output;
}

bool curl_available() {
    return std::system("curl --version >/dev/null 2>&1") == 0;
}

}  // namespace

TEST_CASE("parse_request decodes the request line, query and headers", "[http]") {
    auto parsed = ds::http::parse_request(
        "POST /v1/sweeps/a%20b%2Fc?name=seed+fio&x=%41%42&flag HTTP/1.1\r\n"
        "Host: x\r\nContent-Type: application/toml\r\nX-Spec-Name:  spec.toml \r\n"
        "Content-Length: 5\r\n\r\nhello");
    REQUIRE(parsed.ok());
    CHECK(parsed->method == "POST");
    CHECK(parsed->target == "/v1/sweeps/a%20b%2Fc?name=seed+fio&x=%41%42&flag");
    CHECK(parsed->path == "/v1/sweeps/a b/c");
    CHECK(parsed->query.at("name") == "seed fio");
    CHECK(parsed->query.at("x") == "AB");
    CHECK(parsed->query.at("flag").empty());
    CHECK(parsed->headers.at("x-spec-name") == "spec.toml");
    CHECK(parsed->headers.at("content-type") == "application/toml");
    CHECK(parsed->body == "hello");
}

TEST_CASE("parse_request keeps '+' literal in the path", "[http]") {
    auto parsed = ds::http::parse_request("GET /v1/a+b HTTP/1.1\r\n\r\n");
    REQUIRE(parsed.ok());
    CHECK(parsed->path == "/v1/a+b");
}

TEST_CASE("parse_request rejects malformed requests saying what is wrong", "[http]") {
    struct Case {
        const char* raw;
        const char* expected_message;
    };
    const Case cases[] = {
        {"GET /v1/x\r\n\r\n", "malformed request line"},
        {"GET /v1/x HTTP/2\r\n\r\n", "unsupported protocol version"},
        {"GET v1/x HTTP/1.1\r\n\r\n", "must be a path starting with '/'"},
        {"GET /v1/%zz HTTP/1.1\r\n\r\n", "malformed percent-escape '%zz' in request path"},
        {"GET /v1/%4 HTTP/1.1\r\n\r\n", "malformed percent-escape '%4'"},
        {"GET /v1/a%00b HTTP/1.1\r\n\r\n", "encoded NUL byte"},
        {"GET /v1/x?a=%g1 HTTP/1.1\r\n\r\n", "malformed percent-escape '%g1' in query"},
        {"GET /v1/x HTTP/1.1\r\nBad Header: 1\r\n\r\n", "malformed header line 'Bad Header: 1'"},
        {"GET /v1/x HTTP/1.1\r\nA: 1\r\n  folded\r\n\r\n", "folded header line"},
        {"POST /v1/x HTTP/1.1\r\nContent-Length: 12x\r\n\r\n", "invalid Content-Length '12x'"},
        {"POST /v1/x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
         "conflicting Content-Length"},
        {"POST /v1/x HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc",
         "Content-Length says 10 bytes, 3 arrived"},
        {"POST /v1/x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", "send Content-Length"},
        {"POST /v1/x HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n",
         "request body of 99999999 bytes exceeds the limit of 4194304 bytes"},
        {"GET /v1/x HTTP/1.1\r\n", "incomplete request head"},
    };
    for (const auto& c : cases) {
        INFO(c.raw);
        auto parsed = ds::http::parse_request(c.raw);
        REQUIRE_FALSE(parsed.ok());
        CHECK(parsed.error().code == ds::errc::kProtocol);
        CHECK_THAT(parsed.error().message, Catch::Contains(c.expected_message));
    }
}

TEST_CASE("server and client exchange requests over a unix socket", "[http][socket]") {
    TempDir dir;
    UnixServer server(dir.file("api.sock"), echo);
    REQUIRE(server.start().ok());

    SECTION("GET with query and peer credentials") {
        auto response = ds::http::request(dir.file("api.sock"), "GET", "/v1/version?x=1%202");
        REQUIRE(response.ok());
        CHECK(response->status == 200);
        CHECK(response->headers.at("content-type") == "application/json");
        auto seen = nlohmann::json::parse(response->body);
        CHECK(seen["path"] == "/v1/version");
        CHECK(seen["query"]["x"] == "1 2");
        CHECK(seen["uid"] == ::getuid());
        CHECK(seen["pid"] == ::getpid());
    }
    SECTION("POST with extra headers and a body") {
        ClientRequest req;
        req.method = "POST";
        req.target = "/v1/sweeps";
        req.body = std::string(3000, 'x') + "\nname = \"é\"";
        req.content_type = "application/toml";
        req.headers["X-Spec-Name"] = "config/sweeps/seed.toml";
        auto response = ds::http::request(dir.file("api.sock"), req);
        REQUIRE(response.ok());
        auto seen = nlohmann::json::parse(response->body);
        CHECK(seen["method"] == "POST");
        CHECK(seen["body"] == req.body);
        CHECK(seen["headers"]["x-spec-name"] == "config/sweeps/seed.toml");
        CHECK(seen["headers"]["content-type"] == "application/toml");
    }
    SECTION("socket mode is applied") {
        CHECK((fs::status(dir.file("api.sock")).permissions() & fs::perms::all) ==
              (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
               fs::perms::group_write));
    }
    server.stop();
    CHECK_FALSE(fs::exists(dir.file("api.sock")));
}

TEST_CASE("server answers bad and oversized requests with JSON errors", "[http][socket]") {
    TempDir dir;
    std::atomic<int> handled{0};
    ds::http::ServerLimits limits;
    limits.max_head_bytes = 1024;
    UnixServer server(
        dir.file("api.sock"),
        [&](const Request& r) {
            ++handled;
            return echo(r);
        },
        0600, limits);
    REQUIRE(server.start().ok());

    auto bad = raw_exchange(dir.file("api.sock"), "GARBAGE\r\n\r\n");
    CHECK(status_of(bad) == 400);
    CHECK(body_of(bad)["error"]["code"] == "protocol");
    CHECK_THAT(body_of(bad)["error"]["message"].get<std::string>(),
               Catch::Contains("malformed request line"));

    auto too_large = raw_exchange(dir.file("api.sock"),
                                  "POST /v1/sweeps HTTP/1.1\r\nContent-Length: 5000000\r\n\r\nab");
    CHECK(status_of(too_large) == 413);
    CHECK_THAT(body_of(too_large)["error"]["message"].get<std::string>(),
               Catch::Contains("exceeds the limit"));

    auto huge_head = raw_exchange(dir.file("api.sock"),
                                  "GET /v1/x HTTP/1.1\r\nX-Pad: " + std::string(2000, 'p'));
    CHECK(status_of(huge_head) == 431);

    auto pipelined =
        raw_exchange(dir.file("api.sock"), "GET /v1/x HTTP/1.1\r\n\r\nGET /v1/y HTTP/1.1\r\n\r\n");
    CHECK(status_of(pipelined) == 400);
    CHECK(handled == 0);
}

TEST_CASE("a slow client gets 408 and does not pin the server", "[http][socket]") {
    TempDir dir;
    ds::http::ServerLimits limits;
    limits.request_timeout = 300ms;
    limits.max_connections = 1;
    UnixServer server(dir.file("api.sock"), echo, 0600, limits);
    REQUIRE(server.start().ok());

    int slow = connect_raw(dir.file("api.sock"));
    REQUIRE(slow >= 0);
    ::send(slow, "GET /v1/x HT", 12, MSG_NOSIGNAL);  // and then nothing more
    // The client sends nothing more: only the server's request timeout can
    // end the wait, and the 408 says it did.
    std::string answer = read_until_close(slow);
    ::close(slow);
    CHECK(status_of(answer) == 408);
    CHECK(body_of(answer)["error"]["code"] == "timeout");

    // The single connection slot is free again, once the server's worker has
    // let go of it (it closes the socket first, so allow it a moment).
    int status = 0;
    for (int attempt = 0; attempt < 20 && status != 200; ++attempt) {
        if (attempt > 0) std::this_thread::sleep_for(100ms);
        auto response = ds::http::request(dir.file("api.sock"), "GET", "/v1/version");
        REQUIRE(response.ok());
        status = response->status;
    }
    CHECK(status == 200);
}

TEST_CASE("connections beyond the cap get 503", "[http][socket]") {
    TempDir dir;
    ds::http::ServerLimits limits;
    limits.max_connections = 1;
    std::promise<void> entered;
    std::promise<void> release;
    auto released = release.get_future().share();
    std::once_flag once;
    UnixServer server(
        dir.file("api.sock"),
        [&](const Request& r) {
            std::call_once(once, [&] { entered.set_value(); });
            released.wait();
            return echo(r);
        },
        0600, limits);
    REQUIRE(server.start().ok());

    auto first = std::async(std::launch::async, [&] {
        return ds::http::request(dir.file("api.sock"), "GET", "/v1/first");
    });
    entered.get_future().wait();
    auto second = ds::http::request(dir.file("api.sock"), "GET", "/v1/second");
    REQUIRE(second.ok());
    CHECK(second->status == 503);
    CHECK(nlohmann::json::parse(second->body)["error"]["code"] == "unavailable");
    release.set_value();
    auto first_response = first.get();
    REQUIRE(first_response.ok());
    CHECK(first_response->status == 200);
}

TEST_CASE("a handler that throws becomes a 500 with a JSON error", "[http][socket]") {
    TempDir dir;
    UnixServer server(dir.file("api.sock"), [](const Request&) -> Response {
        throw std::runtime_error("database is locked");
    });
    REQUIRE(server.start().ok());
    auto response = ds::http::request(dir.file("api.sock"), "GET", "/v1/sweeps");
    REQUIRE(response.ok());
    CHECK(response->status == 500);
    auto body = nlohmann::json::parse(response->body);
    CHECK(body["error"]["code"] == "internal");
    CHECK_THAT(body["error"]["message"].get<std::string>(),
               Catch::Contains("GET /v1/sweeps failed: database is locked"));
}

TEST_CASE("a stale socket file is replaced, a live one refused", "[http][socket]") {
    TempDir dir;
    {
        // A socket file nobody listens on, as a crashed daemon leaves it.
        int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strcpy(address.sun_path, dir.file("api.sock").c_str());
        REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
        ::close(fd);
        REQUIRE(fs::is_socket(dir.file("api.sock")));
    }
    auto refused = ds::http::request(dir.file("api.sock"), "GET", "/v1/version");
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == ds::errc::kUnavailable);
    CHECK(refused.error().message ==
          "cannot connect to disksweepd at " + dir.file("api.sock") + ": Connection refused");

    UnixServer first(dir.file("api.sock"), echo);
    REQUIRE(first.start().ok());
    REQUIRE(ds::http::request(dir.file("api.sock"), "GET", "/v1/version").ok());

    UnixServer second(dir.file("api.sock"), echo);
    auto started = second.start();
    REQUIRE_FALSE(started.ok());
    CHECK(started.error().code == ds::errc::kConflict);
    CHECK_THAT(started.error().message,
               Catch::Contains("already listening on " + dir.file("api.sock")));
    second.stop();  // must not remove the live server's socket
    auto still_served = ds::http::request(dir.file("api.sock"), "GET", "/v1/version");
    REQUIRE(still_served.ok());
    CHECK(still_served->status == 200);
}

TEST_CASE("a non-socket file at the socket path is left alone", "[http][socket]") {
    TempDir dir;
    std::ofstream(dir.file("api.sock")) << "precious";
    UnixServer server(dir.file("api.sock"), echo);
    auto started = server.start();
    REQUIRE_FALSE(started.ok());
    CHECK_THAT(started.error().message, Catch::Contains("is not a socket"));
    CHECK(fs::is_regular_file(dir.file("api.sock")));
}

TEST_CASE("client refuses headers that would break the request's framing", "[http][socket]") {
    TempDir dir;
    std::atomic<int> handled{0};
    UnixServer server(dir.file("api.sock"), [&](const Request& r) {
        ++handled;
        return echo(r);
    });
    REQUIRE(server.start().ok());
    ClientRequest req;
    req.method = "POST";
    req.target = "/v1/sweeps";
    req.headers["X-Spec-Name"] = "evil.toml\r\nX-Injected: 1";
    auto refused = ds::http::request(dir.file("api.sock"), req);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == ds::errc::kInvalidArgument);
    CHECK_THAT(refused.error().message, Catch::Contains("header 'X-Spec-Name' cannot be sent"));

    req.headers.clear();
    req.target = "/v1/sweeps/a b";
    auto spaced = ds::http::request(dir.file("api.sock"), req);
    REQUIRE_FALSE(spaced.ok());
    CHECK_THAT(spaced.error().message, Catch::Contains("percent-encode"));
    CHECK(handled == 0);
}

TEST_CASE("client reports a missing daemon and timeouts clearly", "[http][socket]") {
    TempDir dir;
    auto missing = ds::http::request(dir.file("absent.sock"), "GET", "/v1/version");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().code == ds::errc::kUnavailable);
    CHECK(missing.error().message == "cannot connect to disksweepd at " + dir.file("absent.sock") +
                                         ": No such file or directory");

    UnixServer slow(dir.file("api.sock"), [](const Request& r) {
        std::this_thread::sleep_for(400ms);
        return echo(r);
    });
    REQUIRE(slow.start().ok());
    ClientRequest req;
    req.target = "/v1/version";
    req.timeout = 100ms;
    auto timed_out = ds::http::request(dir.file("api.sock"), req);
    REQUIRE_FALSE(timed_out.ok());
    CHECK(timed_out.error().code == ds::errc::kTimeout);
}

TEST_CASE("streamed responses arrive as lines", "[http][socket]") {
    TempDir dir;
    UnixServer server(dir.file("api.sock"), [](const Request& request) {
        Response response;
        if (request.path == "/v1/missing") {
            response.status = 404;
            response.body = R"({"error":{"code":"not_found","message":"no sweep 7"}})";
            return response;
        }
        response.content_type = "application/x-ndjson";
        response.stream = [](ds::http::ChunkSink& sink) {
            // Lines split across chunks, several lines in one chunk, CRLF.
            sink.write("{\"n\":1}\n{\"n\"");
            std::this_thread::sleep_for(20ms);
            sink.write(":2}\r\n");
            sink.write("");
            sink.write("{\"n\":3}\n{\"n\":4}");  // last line without newline
        };
        return response;
    });
    REQUIRE(server.start().ok());

    std::vector<std::string> lines;
    auto streamed = ds::http::stream_lines(dir.file("api.sock"), "/v1/sweeps/1/events",
                                           [&](std::string_view line) {
                                               lines.emplace_back(line);
                                               return true;
                                           });
    REQUIRE(streamed.ok());
    CHECK(lines == std::vector<std::string>{"{\"n\":1}", "{\"n\":2}", "{\"n\":3}", "{\"n\":4}"});

    lines.clear();
    auto stopped_early = ds::http::stream_lines(dir.file("api.sock"), "/v1/sweeps/1/events",
                                                [&](std::string_view line) {
                                                    lines.emplace_back(line);
                                                    return false;
                                                });
    REQUIRE(stopped_early.ok());
    CHECK(lines.size() == 1);

    auto not_found = ds::http::stream_lines(dir.file("api.sock"), "/v1/missing",
                                            [](std::string_view) { return true; });
    REQUIRE_FALSE(not_found.ok());
    CHECK(not_found.error().code == "not_found");
    CHECK(not_found.error().message == "no sweep 7");

    // The buffered request() de-chunks a streamed body too.
    auto whole = ds::http::request(dir.file("api.sock"), "GET", "/v1/sweeps/1/events");
    REQUIRE(whole.ok());
    CHECK(whole->body == "{\"n\":1}\n{\"n\":2}\r\n{\"n\":3}\n{\"n\":4}");
}

TEST_CASE("a stream producer learns that its client went away", "[http][socket]") {
    TempDir dir;
    std::promise<int> writes_until_failure;
    UnixServer server(dir.file("api.sock"), [&](const Request&) {
        Response response;
        response.stream = [&](ds::http::ChunkSink& sink) {
            int writes = 0;
            auto give_up = std::chrono::steady_clock::now() + 10s;
            while (sink.write("{\"type\":\"run_progress\"}\n") &&
                   std::chrono::steady_clock::now() < give_up) {
                ++writes;
                std::this_thread::sleep_for(5ms);
            }
            writes_until_failure.set_value(writes);
        };
        return response;
    });
    REQUIRE(server.start().ok());
    int seen = 0;
    auto streamed = ds::http::stream_lines(dir.file("api.sock"), "/v1/sweeps/1/events",
                                           [&](std::string_view) { return ++seen < 3; });
    REQUIRE(streamed.ok());
    auto result = writes_until_failure.get_future();
    REQUIRE(result.wait_for(5s) == std::future_status::ready);
    CHECK(result.get() >= 3);  // stopped by EPIPE, not by the 10 s give-up
}

TEST_CASE("stop() ends an open stream", "[http][socket]") {
    TempDir dir;
    std::promise<void> streaming;
    auto server = std::make_unique<UnixServer>(dir.file("api.sock"), [&](const Request&) {
        Response response;
        response.stream = [&](ds::http::ChunkSink& sink) {
            sink.write("{\"type\":\"snapshot\"}\n");
            streaming.set_value();
            while (sink.write("\n")) std::this_thread::sleep_for(10ms);  // heartbeat
        };
        return response;
    });
    REQUIRE(server->start().ok());
    auto client = std::async(std::launch::async, [&] {
        return ds::http::stream_lines(dir.file("api.sock"), "/v1/sweeps/1/events",
                                      [](std::string_view) { return true; });
    });
    streaming.get_future().wait();
    // The handler streams until a write fails: stop() returns only by
    // ending the stream.
    server->stop();
    REQUIRE(client.wait_for(5s) == std::future_status::ready);
    CHECK_FALSE(client.get().ok());  // ended without the final chunk
}

TEST_CASE("curl talks to the server", "[http][socket][curl]") {
    if (!curl_available()) ds::test::skip_test("curl is not installed");
    TempDir dir;
    UnixServer server(dir.file("api.sock"), [](const Request& request) {
        if (request.path == "/v1/sweeps/1/events") {
            Response response;
            response.content_type = "application/x-ndjson";
            response.stream = [](ds::http::ChunkSink& sink) {
                sink.write("{\"type\":\"snapshot\"}\n");
                sink.write("{\"type\":\"sweep_finished\"}\n");
            };
            return response;
        }
        Response response = echo(request);
        if (request.method == "POST") response.status = 201;
        return response;
    });
    REQUIRE(server.start().ok());
    const std::string curl = "curl -sS --max-time 10 --unix-socket " + dir.file("api.sock") + " ";

    auto get = nlohmann::json::parse(run_command(curl + "'http://x/v1/runs/a%2Fb?q=1'"));
    CHECK(get["path"] == "/v1/runs/a/b");
    CHECK(get["query"]["q"] == "1");

    // Over 1024 bytes: curl 7.88 sends "Expect: 100-continue" and waits for
    // it. Told to wait 60 s for it, within a --max-time of 10 s, curl only
    // succeeds when the server answers 100 Continue.
    fs::path spec = dir.path() / "spec.toml";
    std::string spec_text = "name = \"seed\"\n# " + std::string(5000, 'x') + "\n";
    std::ofstream(spec) << spec_text;
    auto post = nlohmann::json::parse(
        run_command(curl +
                    "--expect100-timeout 60 -H 'Content-Type: application/toml' "
                    "--data-binary @" +
                    spec.string() + " http://x/v1/sweeps"));
    CHECK(post["method"] == "POST");
    CHECK(post["body"] == spec_text);

    auto status = run_command(curl + "-o /dev/null -w '%{http_code}' -X POST http://x/v1/sweeps");
    CHECK(status == "201");

    auto events = run_command(curl + "-N http://x/v1/sweeps/1/events");
    CHECK(events == "{\"type\":\"snapshot\"}\n{\"type\":\"sweep_finished\"}\n");
}

TEST_CASE("http: the error envelope is read back as it is written, and nothing else is one",
          "[http]") {
    const auto written = ds::http::error_envelope("not_found", "no sweep 7").dump();
    auto read = ds::http::read_error_envelope(written);
    REQUIRE(read.has_value());
    CHECK(read->code == "not_found");
    CHECK(read->message == "no sweep 7");
    // A code that is not a string: the message stays, the code is protocol.
    auto odd_code = ds::http::read_error_envelope(R"({"error":{"code":5,"message":"m"}})");
    REQUIRE(odd_code.has_value());
    CHECK(odd_code->code == ds::errc::kProtocol);
    CHECK(odd_code->message == "m");
    for (const char* other : {R"({"error":{"code":"x"}})", R"({"error":{"message":7}})",
                              R"({"error":"x"})", R"([1,2])", "not json", ""}) {
        INFO(other);
        CHECK_FALSE(ds::http::read_error_envelope(other).has_value());
    }
}
