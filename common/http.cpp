// HTTP/1.1 over unix stream sockets (see http.h for the contract).
//
// Wire rules this file enforces, server side: a request head ends with CRLF CRLF
// and is at most ServerLimits::max_head_bytes; a body only with Content-Length
// (no chunked requests) of at most kMaxRequestBytes; one request per
// connection. Client side: bodies by Content-Length, chunked, or up to EOF.
#include "common/http.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <list>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "common/errno_text.h"
#include "common/file_descriptor.h"
#include "common/text.h"

namespace ds::http {
namespace {

using Steady = std::chrono::steady_clock;

// A response larger than this is refused by the client (a run's raw output is
// the largest thing the API returns, far below it).
constexpr std::size_t kMaxResponseBytes = 256u << 20;
// One line of a streamed response (an event) may not exceed this.
constexpr std::size_t kMaxStreamLineBytes = 4u << 20;
constexpr std::size_t kMaxClientHeadBytes = 64u << 10;

void set_send_timeout(int fd, std::chrono::milliseconds timeout) {
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

// Sends all of `data`. False when the peer is gone (EPIPE, ECONNRESET) or the
// send timeout (SO_SNDTIMEO) expired (EAGAIN); MSG_NOSIGNAL keeps SIGPIPE away.
bool send_all(int fd, std::string_view data) {
    while (!data.empty()) {
        ssize_t sent = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
        if (sent < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        data.remove_prefix(static_cast<std::size_t>(sent));
    }
    return true;
}

enum class ReadOutcome { kData, kEndOfStream, kTimedOut, kFailed };

// Reads what is available into `buffer`, waiting until `deadline` at most
// (no deadline: wait indefinitely). On kFailed, `error_number` holds errno.
ReadOutcome read_some(int fd, std::string& buffer, std::optional<Steady::time_point> deadline,
                      int& error_number) {
    char chunk[16384];
    for (;;) {
        int wait_ms = -1;
        if (deadline) {
            auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Steady::now());
            if (left.count() <= 0) return ReadOutcome::kTimedOut;
            wait_ms = static_cast<int>(std::min<long long>(left.count() + 1, 1 << 30));
        }
        pollfd pfd{fd, POLLIN, 0};
        int ready = ::poll(&pfd, 1, wait_ms);
        if (ready < 0) {
            if (errno == EINTR) continue;
            error_number = errno;
            return ReadOutcome::kFailed;
        }
        if (ready == 0) return ReadOutcome::kTimedOut;
        ssize_t got = ::recv(fd, chunk, sizeof chunk, 0);
        if (got < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            error_number = errno;
            return ReadOutcome::kFailed;
        }
        if (got == 0) return ReadOutcome::kEndOfStream;
        buffer.append(chunk, static_cast<std::size_t>(got));
        return ReadOutcome::kData;
    }
}

std::string_view trim(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
    return text;
}

// RFC 9110 token characters (methods, header names).
bool is_token(std::string_view text) {
    if (text.empty()) return false;
    static constexpr std::string_view kExtra = "!#$%&'*+-.^_`|~";
    return std::all_of(text.begin(), text.end(), [](unsigned char c) {
        return std::isalnum(c) || kExtra.find(static_cast<char>(c)) != std::string_view::npos;
    });
}

// A header value may not hold CR, LF or NUL: they would end the header early
// and let the rest be read as headers of its own (header injection).
bool is_safe_header_value(std::string_view value) {
    return value.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

enum class PlusMeans { kPlus, kSpace };

// Decodes %XX escapes. Malformed escapes and encoded NUL bytes are errors: a
// NUL would cut C strings made from the path further down.
Result<std::string> percent_decode(std::string_view encoded, PlusMeans plus,
                                   std::string_view what) {
    std::string decoded;
    decoded.reserve(encoded.size());
    for (std::size_t i = 0; i < encoded.size(); ++i) {
        char c = encoded[i];
        if (c == '+' && plus == PlusMeans::kSpace) {
            decoded.push_back(' ');
        } else if (c == '%') {
            bool complete = i + 2 < encoded.size();
            int high = complete ? hex_value(encoded[i + 1]) : -1;
            int low = complete ? hex_value(encoded[i + 2]) : -1;
            if (high < 0 || low < 0) {
                return make_error(errc::kProtocol, "malformed percent-escape '" +
                                                       std::string(encoded.substr(i, 3)) + "' in " +
                                                       std::string(what));
            }
            char byte = static_cast<char>(high * 16 + low);
            if (byte == '\0') {
                return make_error(errc::kProtocol,
                                  "encoded NUL byte (%00) in " + std::string(what));
            }
            decoded.push_back(byte);
            i += 2;
        } else {
            decoded.push_back(c);
        }
    }
    return decoded;
}

Result<std::size_t> parse_content_length(std::string_view text) {
    std::size_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
        return make_error(errc::kProtocol,
                          "invalid Content-Length '" + std::string(text) + "' (want digits)");
    }
    return value;
}

// Splits "Name: value" lines (the part of a head after its first line) into a
// map with lower-cased names. Repeated headers are joined with ", ", except
// Content-Length, which must not repeat with a different value.
Status parse_header_lines(std::string_view lines, std::map<std::string, std::string>& headers) {
    while (!lines.empty()) {
        std::size_t end = lines.find("\r\n");
        std::string_view line = lines.substr(0, end);
        lines = end == std::string_view::npos ? std::string_view{} : lines.substr(end + 2);
        if (line.empty()) continue;
        if (line.front() == ' ' || line.front() == '\t') {
            return make_error(errc::kProtocol,
                              "folded header line (obsolete line folding) is "
                              "not accepted: '" +
                                  std::string(line.substr(0, 80)) + "'");
        }
        std::size_t colon = line.find(':');
        if (colon == std::string_view::npos || !is_token(line.substr(0, colon))) {
            return make_error(errc::kProtocol,
                              "malformed header line '" + std::string(line.substr(0, 80)) + "'");
        }
        std::string name = ascii_lower(line.substr(0, colon));
        std::string value(trim(line.substr(colon + 1)));
        auto [it, inserted] = headers.emplace(name, value);
        if (!inserted) {
            if (name == "content-length") {
                if (it->second != value) {
                    return make_error(errc::kProtocol, "conflicting Content-Length headers");
                }
            } else {
                it->second += ", " + value;
            }
        }
    }
    return ok_status();
}

// A parsed request head, before the body has been read.
struct RequestHead {
    Request request;  // everything but body and peer credentials
    std::size_t content_length = 0;
    bool expects_continue = false;
};

// Why a head was refused, as the HTTP status to answer with.
struct HeadError {
    int status;
    Error error;
};

// A 400 Bad Request refusal of a head.
HeadError bad_request(std::string message) {
    return HeadError{400, make_error(errc::kProtocol, std::move(message))};
}

// "METHOD /path HTTP/1.x": fills request.method and request.target.
std::optional<HeadError> parse_request_line(std::string_view request_line, Request& request) {
    std::size_t first_space = request_line.find(' ');
    std::size_t second_space = first_space == std::string_view::npos
                                   ? std::string_view::npos
                                   : request_line.find(' ', first_space + 1);
    if (second_space == std::string_view::npos ||
        request_line.find(' ', second_space + 1) != std::string_view::npos) {
        return bad_request("malformed request line '" + std::string(request_line.substr(0, 120)) +
                           "' (want: METHOD /path HTTP/1.1)");
    }
    std::string_view method = request_line.substr(0, first_space);
    std::string_view target = request_line.substr(first_space + 1, second_space - first_space - 1);
    std::string_view version = request_line.substr(second_space + 1);
    if (!is_token(method)) return bad_request("malformed method '" + std::string(method) + "'");
    if (version != "HTTP/1.1" && version != "HTTP/1.0") {
        return bad_request("unsupported protocol version '" + std::string(version.substr(0, 20)) +
                           "' (want HTTP/1.1)");
    }
    if (target.empty() || target.front() != '/') {
        return bad_request("request target '" + std::string(target.substr(0, 120)) +
                           "' must be a path starting with '/'");
    }
    for (unsigned char c : target) {
        if (c <= 0x20 || c == 0x7f) return bad_request("control character in request target");
    }
    request.method = std::string(method);
    request.target = std::string(target);
    return std::nullopt;
}

// "k=v&k2=v2" (percent- and plus-decoded) into `into`; empty pairs are skipped.
std::optional<HeadError> parse_query(std::string_view query,
                                     std::map<std::string, std::string>& into) {
    while (!query.empty()) {
        std::size_t amp = query.find('&');
        std::string_view pair = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
        if (pair.empty()) continue;
        std::size_t equals = pair.find('=');
        auto key = percent_decode(pair.substr(0, equals), PlusMeans::kSpace, "query");
        if (!key) return bad_request(key.error().message);
        std::string value;
        if (equals != std::string_view::npos) {
            auto decoded = percent_decode(pair.substr(equals + 1), PlusMeans::kSpace, "query");
            if (!decoded) return bad_request(decoded.error().message);
            value = std::move(*decoded);
        }
        into[std::move(*key)] = std::move(value);
    }
    return std::nullopt;
}

// request.target into its decoded path and query.
std::optional<HeadError> parse_request_target(Request& request) {
    const std::string_view target = request.target;
    std::size_t question = target.find('?');
    auto path = percent_decode(target.substr(0, question), PlusMeans::kPlus, "request path");
    if (!path) return bad_request(path.error().message);
    request.path = std::move(*path);
    if (question == std::string_view::npos) return std::nullopt;
    return parse_query(target.substr(question + 1), request.query);
}

// How the body comes, from the headers: its Content-Length (bounded) and
// whether the client waits for "100 Continue". Chunked bodies are refused.
std::optional<HeadError> read_body_framing(const std::map<std::string, std::string>& headers,
                                           RequestHead& out) {
    if (headers.count("transfer-encoding")) {
        return bad_request(
            "request bodies with Transfer-Encoding are not supported; send "
            "Content-Length");
    }
    if (auto it = headers.find("content-length"); it != headers.end()) {
        auto length = parse_content_length(it->second);
        if (!length) return bad_request(length.error().message);
        if (*length > kMaxRequestBytes) {
            return HeadError{
                413, make_error(errc::kProtocol, "request body of " + std::to_string(*length) +
                                                     " bytes exceeds the limit of " +
                                                     std::to_string(kMaxRequestBytes) + " bytes")};
        }
        out.content_length = *length;
    }
    if (auto it = headers.find("expect"); it != headers.end()) {
        if (ascii_lower(it->second) != "100-continue") {
            return HeadError{
                417, make_error(errc::kProtocol, "unsupported Expect header '" + it->second + "'")};
        }
        out.expects_continue = true;
    }
    return std::nullopt;
}

std::optional<HeadError> parse_request_head(std::string_view head, RequestHead& out) {
    std::size_t line_end = head.find("\r\n");
    std::string_view request_line = head.substr(0, line_end);
    std::string_view header_lines =
        line_end == std::string_view::npos ? std::string_view{} : head.substr(line_end + 2);
    Request& request = out.request;
    if (auto refused = parse_request_line(request_line, request)) return refused;
    if (auto refused = parse_request_target(request)) return refused;
    if (auto parsed = parse_header_lines(header_lines, request.headers); !parsed) {
        return bad_request(parsed.error().message);
    }
    return read_body_framing(request.headers, out);
}

std::string error_body(std::string_view code, std::string_view message) {
    return error_envelope(code, message).dump();
}

std::string response_head(const Response& response, bool chunked) {
    std::string head =
        "HTTP/1.1 " + std::to_string(response.status) + " " + status_text(response.status) + "\r\n";
    if (!response.content_type.empty()) head += "Content-Type: " + response.content_type + "\r\n";
    if (chunked) {
        head += "Transfer-Encoding: chunked\r\n";
    } else {
        head += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
    }
    for (const auto& [name, value] : response.headers) {
        // The framing headers are ours; a handler cannot override them.
        std::string lowered = ascii_lower(name);
        if (lowered == "content-length" || lowered == "transfer-encoding" ||
            lowered == "connection" || lowered == "content-type") {
            continue;
        }
        if (!is_token(name) || !is_safe_header_value(value)) continue;  // never split the head
        head += name + ": " + value + "\r\n";
    }
    head += "Connection: close\r\n\r\n";
    return head;
}

Response error_response(int status, const Error& error) {
    Response response;
    response.status = status;
    response.body = error_body(error.code, error.message);
    return response;
}

// Writes a streamed body as HTTP chunks.
class SocketChunkSink final : public ChunkSink {
  public:
    explicit SocketChunkSink(int fd) : fd_(fd) {}
    bool write(std::string_view data) override {
        if (broken_) return false;
        if (data.empty()) return true;  // an empty chunk would end the stream
        char size[32];
        auto [end, ec] = std::to_chars(size, size + sizeof size, data.size(), 16);
        std::string frame(size, end);
        frame += "\r\n";
        frame.append(data);
        frame += "\r\n";
        broken_ = !send_all(fd_, frame);
        return !broken_;
    }
    bool finish() { return !broken_ && send_all(fd_, "0\r\n\r\n"); }

  private:
    int fd_;
    bool broken_ = false;
};

// Incrementally removes chunked transfer framing.
class ChunkDecoder {
  public:
    // Consumes bytes from `input` (leaving an incomplete frame in it) and
    // appends payload to `output`. True once the terminating chunk was seen.
    Result<bool> feed(std::string& input, std::string& output) {
        std::size_t consumed = 0;
        for (;;) {
            std::string_view rest = std::string_view(input).substr(consumed);
            if (state_ == State::kSize) {
                std::size_t eol = rest.find("\r\n");
                if (eol == std::string_view::npos) {
                    if (rest.size() > 1024) return fail("chunk size line too long");
                    break;
                }
                std::string_view line = rest.substr(0, eol);
                line = line.substr(0, line.find(';'));  // chunk extensions are ignored
                line = trim(line);
                std::size_t size = 0;
                auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), size, 16);
                if (line.empty() || ec != std::errc() || end != line.data() + line.size()) {
                    return fail("malformed chunk size '" + std::string(line.substr(0, 40)) + "'");
                }
                consumed += eol + 2;
                remaining_ = size;
                state_ = size == 0 ? State::kTrailers : State::kData;
            } else if (state_ == State::kData) {
                if (rest.empty()) break;
                std::size_t take = std::min(remaining_, rest.size());
                output.append(rest.substr(0, take));
                consumed += take;
                remaining_ -= take;
                if (remaining_ == 0) state_ = State::kDataEnd;
            } else if (state_ == State::kDataEnd) {
                if (rest.size() < 2) break;
                if (rest.substr(0, 2) != "\r\n") return fail("chunk not followed by CRLF");
                consumed += 2;
                state_ = State::kSize;
            } else if (state_ == State::kTrailers) {
                std::size_t eol = rest.find("\r\n");
                if (eol == std::string_view::npos) break;
                consumed += eol + 2;
                if (eol == 0) {
                    state_ = State::kDone;
                    break;
                }
            } else {
                break;
            }
        }
        input.erase(0, consumed);
        return state_ == State::kDone;
    }

  private:
    enum class State { kSize, kData, kDataEnd, kTrailers, kDone };
    Result<bool> fail(std::string message) {
        return make_error(errc::kProtocol, "malformed chunked response: " + message);
    }
    State state_ = State::kSize;
    std::size_t remaining_ = 0;
};

}  // namespace

nlohmann::json error_envelope(std::string_view code, std::string_view message) {
    return {{"error", {{"code", code}, {"message", message}}}};
}

std::optional<Error> read_error_envelope(std::string_view body) {
    const auto parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_object()) return std::nullopt;
    const auto error = parsed.find("error");
    if (error == parsed.end() || !error->is_object()) return std::nullopt;
    const auto message = error->find("message");
    if (message == error->end() || !message->is_string()) return std::nullopt;
    const auto code = error->find("code");
    return Error{code != error->end() && code->is_string() ? code->get<std::string>()
                                                           : std::string(errc::kProtocol),
                 message->get<std::string>()};
}

std::string status_text(int status) {
    switch (status) {
        case 100:
            return "Continue";
        case 200:
            return "OK";
        case 201:
            return "Created";
        case 202:
            return "Accepted";
        case 204:
            return "No Content";
        case 400:
            return "Bad Request";
        case 401:
            return "Unauthorized";
        case 403:
            return "Forbidden";
        case 404:
            return "Not Found";
        case 405:
            return "Method Not Allowed";
        case 408:
            return "Request Timeout";
        case 409:
            return "Conflict";
        case 410:
            return "Gone";
        case 411:
            return "Length Required";
        case 413:
            return "Content Too Large";
        case 415:
            return "Unsupported Media Type";
        case 417:
            return "Expectation Failed";
        case 422:
            return "Unprocessable Content";
        case 429:
            return "Too Many Requests";
        case 431:
            return "Request Header Fields Too Large";
        case 500:
            return "Internal Server Error";
        case 501:
            return "Not Implemented";
        case 502:
            return "Bad Gateway";
        case 503:
            return "Service Unavailable";
        case 504:
            return "Gateway Timeout";
        default:
            return "Status " + std::to_string(status);
    }
}

Result<Request> parse_request(std::string_view raw) {
    std::size_t head_end = raw.find("\r\n\r\n");
    if (head_end == std::string_view::npos) {
        return make_error(errc::kProtocol, "incomplete request head (no blank line after headers)");
    }
    RequestHead head;
    if (auto refused = parse_request_head(raw.substr(0, head_end), head)) {
        return refused->error;
    }
    std::string_view body = raw.substr(head_end + 4);
    if (body.size() < head.content_length) {
        return make_error(errc::kProtocol, "request body truncated: Content-Length says " +
                                               std::to_string(head.content_length) + " bytes, " +
                                               std::to_string(body.size()) + " arrived");
    }
    if (body.size() > head.content_length) {
        return make_error(errc::kProtocol, std::to_string(body.size() - head.content_length) +
                                               " bytes after the body (one request per "
                                               "connection)");
    }
    head.request.body = std::string(body);
    return std::move(head.request);
}

// ---------------------------------------------------------------------------
// Server

struct UnixServer::Impl {
    std::string socket_path;
    Handler handler;
    mode_t socket_mode;
    ServerLimits limits;

    FileDescriptor listen_socket;
    FileDescriptor wake_read;  // stop() writes to wake_write to end the accept loop
    FileDescriptor wake_write;
    ino_t socket_inode = 0;  // to unlink only the file we created
    std::thread accept_thread;
    bool started = false;

    struct Connection {
        std::thread thread;
        int fd = -1;  // owned by the thread; shut down (not closed) by stop()
        bool finished = false;
    };
    std::mutex mutex;
    std::list<Connection> connections;  // GUARDED_BY(mutex)
    bool stopping = false;              // GUARDED_BY(mutex)

    void accept_loop();
    void serve(int fd);
    void reap_finished_locked(std::vector<std::thread>& to_join);
};

void UnixServer::Impl::reap_finished_locked(std::vector<std::thread>& to_join) {
    for (auto it = connections.begin(); it != connections.end();) {
        if (it->finished) {
            to_join.push_back(std::move(it->thread));
            it = connections.erase(it);
        } else {
            ++it;
        }
    }
}

void UnixServer::Impl::accept_loop() {
    for (;;) {
        pollfd fds[2] = {{listen_socket.get(), POLLIN, 0}, {wake_read.get(), POLLIN, 0}};
        int ready = ::poll(fds, 2, -1);
        if (ready < 0) {
            if (errno == EINTR) continue;
            return;
        }
        if (fds[1].revents != 0) return;  // stop() asked us to end
        int fd = ::accept4(listen_socket.get(), nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) {
            // ECONNABORTED, EINTR: the next poll simply retries. EMFILE/ENFILE:
            // back off briefly instead of spinning on a full descriptor table.
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
            }
            continue;
        }
        std::vector<std::thread> finished;
        std::unique_lock lock(mutex);
        reap_finished_locked(finished);
        if (stopping) {
            ::close(fd);
        } else if (connections.size() >= limits.max_connections) {
            lock.unlock();
            set_send_timeout(fd, std::chrono::milliseconds(200));
            Response busy = error_response(
                503, make_error(errc::kUnavailable,
                                "server busy: " + std::to_string(limits.max_connections) +
                                    " connections open; retry later"));
            send_all(fd, response_head(busy, false) + busy.body);
            ::shutdown(fd, SHUT_WR);
            ::close(fd);
        } else {
            connections.push_back(Connection{});
            auto connection = std::prev(connections.end());
            connection->fd = fd;
            connection->thread = std::thread([this, fd, connection] {
                serve(fd);
                std::lock_guard done_lock(mutex);
                ::close(fd);
                connection->fd = -1;
                connection->finished = true;
            });
        }
        if (lock.owns_lock()) lock.unlock();
        for (auto& thread : finished) thread.join();
    }
}

namespace {

// Who is at the other end of a Unix socket; -1/-1/0 when the kernel does not say.
struct PeerCredentials {
    uid_t uid = static_cast<uid_t>(-1);
    gid_t gid = static_cast<gid_t>(-1);
    pid_t pid = 0;
};

PeerCredentials peer_credentials(int fd) {
    PeerCredentials peer;
    ucred credentials{};
    socklen_t credentials_size = sizeof credentials;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &credentials_size) == 0) {
        peer.uid = credentials.uid;
        peer.gid = credentials.gid;
        peer.pid = credentials.pid;
    }
    return peer;
}

// The handler's response; an exception from it becomes a 500.
Response call_handler(const Handler& handler, const Request& request) {
    try {
        return handler(request);
    } catch (const std::exception& e) {
        return error_response(
            500, make_error(errc::kInternal, "handler for " + request.method + " " + request.path +
                                                 " failed: " + e.what()));
    } catch (...) {
        return error_response(500, make_error(errc::kInternal, "handler for " + request.method +
                                                                   " " + request.path + " failed"));
    }
}

// One connection's single exchange: reading its request within the limits,
// and answering. A step that refuses the request answers the refusal itself.
class Exchange {
  public:
    // The whole request must arrive before the deadline set here: a client
    // sending one byte at a time cannot hold the thread longer than
    // request_timeout.
    Exchange(int fd, const ServerLimits& limits)
        : fd_(fd), limits_(limits), deadline_(Steady::now() + limits.request_timeout) {}

    // The request without peer credentials, or nullopt when the exchange is
    // over (refused, or the connection failed or closed).
    std::optional<Request> read_request() {
        std::size_t head_end = std::string::npos;
        if (!read_head(head_end)) return std::nullopt;
        RequestHead head;
        if (auto refused =
                parse_request_head(std::string_view(buffer_).substr(0, head_end), head)) {
            refuse(refused->status, refused->error);
            return std::nullopt;
        }
        const std::size_t body_start = head_end + 4;
        if (!read_body(head, body_start)) return std::nullopt;
        Request request = std::move(head.request);
        request.body = buffer_.substr(body_start);
        buffer_ = {};
        return request;
    }

    // Sends `response`, whole or (with a stream) chunked.
    void answer(Response& response) {
        if (!response.stream) {
            if (send_all(fd_, response_head(response, false) + response.body)) close_gracefully();
            return;
        }
        if (!send_all(fd_, response_head(response, true))) return;
        SocketChunkSink sink(fd_);
        try {
            response.stream(sink);
        } catch (...) {
            // Headers are out: all we can do is end without the final chunk, so
            // the client sees a truncated stream rather than a clean end.
            return;
        }
        if (sink.finish()) close_gracefully();
    }

  private:
    // Reads more of the request into buffer_: false when the exchange is over
    // (timed out and refused, failed, or ended - refused with
    // `at_end_of_stream()`'s error when it gives one).
    template <class EndError>
    bool read_more(const EndError& at_end_of_stream) {
        switch (read_some(fd_, buffer_, deadline_, error_number_)) {
            case ReadOutcome::kData:
                return true;
            case ReadOutcome::kTimedOut:
                return timed_out();
            case ReadOutcome::kEndOfStream:
                if (std::optional<Error> error = at_end_of_stream()) refuse(400, *error);
                return false;
            case ReadOutcome::kFailed:
                return false;
        }
        return false;
    }

    // Reads until the blank line after the headers; sets head_end to where it starts.
    bool read_head(std::size_t& head_end) {
        while ((head_end = buffer_.find("\r\n\r\n")) == std::string::npos) {
            if (buffer_.size() > limits_.max_head_bytes) return head_too_large();
            const bool more = read_more([this]() -> std::optional<Error> {
                if (buffer_.empty()) return std::nullopt;
                return make_error(errc::kProtocol,
                                  "connection closed before the request head ended");
            });
            if (!more) return false;
        }
        if (head_end > limits_.max_head_bytes) return head_too_large();
        return true;
    }

    // Reads the Content-Length bytes of body after body_start (saying
    // "100 Continue" first if the client waits for it), and nothing more.
    bool read_body(const RequestHead& head, std::size_t body_start) {
        if (head.expects_continue && buffer_.size() == body_start && head.content_length > 0) {
            if (!send_all(fd_, "HTTP/1.1 100 Continue\r\n\r\n")) return false;
        }
        while (buffer_.size() < body_start + head.content_length) {
            const bool more = read_more([&]() -> std::optional<Error> {
                return make_error(errc::kProtocol,
                                  "request body truncated: Content-Length says " +
                                      std::to_string(head.content_length) + " bytes, " +
                                      std::to_string(buffer_.size() - body_start) + " arrived");
            });
            if (!more) return false;
        }
        if (buffer_.size() > body_start + head.content_length) {
            refuse(400, make_error(errc::kProtocol,
                                   "data after the request body (one request per "
                                   "connection; no pipelining)"));
            return false;
        }
        return true;
    }

    // After answering, let the client read everything: closing with unread
    // input would reset the connection and could discard our response.
    void close_gracefully() {
        ::shutdown(fd_, SHUT_WR);
        std::string discard;
        auto deadline = Steady::now() + std::chrono::milliseconds(500);
        int error_number = 0;
        for (std::size_t drained = 0; drained < (1u << 20);) {
            discard.clear();
            if (read_some(fd_, discard, deadline, error_number) != ReadOutcome::kData) break;
            drained += discard.size();
        }
    }

    void refuse(int status, const Error& error) {
        Response response = error_response(status, error);
        send_all(fd_, response_head(response, false) + response.body);
        close_gracefully();
    }

    // Refusals that end a read step, which then returns false.
    bool timed_out() {
        refuse(408, make_error(errc::kTimeout, "request not received within " +
                                                   std::to_string(limits_.request_timeout.count()) +
                                                   " ms"));
        return false;
    }
    bool head_too_large() {
        refuse(431,
               make_error(errc::kProtocol, "request head exceeds " +
                                               std::to_string(limits_.max_head_bytes) + " bytes"));
        return false;
    }

    int fd_;
    const ServerLimits& limits_;
    const Steady::time_point deadline_;
    std::string buffer_;
    int error_number_ = 0;
};

}  // namespace

void UnixServer::Impl::serve(int fd) {
    set_send_timeout(fd, limits.write_timeout);
    const PeerCredentials peer = peer_credentials(fd);
    Exchange exchange(fd, limits);
    std::optional<Request> request = exchange.read_request();
    if (!request) return;
    request->peer_uid = peer.uid;
    request->peer_gid = peer.gid;
    request->peer_pid = peer.pid;
    Response response = call_handler(handler, *request);
    exchange.answer(response);
}

UnixServer::UnixServer(std::string socket_path, Handler handler, mode_t socket_mode,
                       ServerLimits limits)
    : impl_(std::make_unique<Impl>()), socket_path_(std::move(socket_path)) {
    impl_->socket_path = socket_path_;
    impl_->handler = std::move(handler);
    impl_->socket_mode = socket_mode;
    impl_->limits = limits;
    if (impl_->limits.max_connections == 0) impl_->limits.max_connections = 1;
}

UnixServer::~UnixServer() {
    stop();
}

namespace {

Result<sockaddr_un> unix_address(const std::string& path) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof address.sun_path) {
        return make_error(errc::kInvalidArgument, "socket path '" + path + "' must be 1 to " +
                                                      std::to_string(sizeof address.sun_path - 1) +
                                                      " bytes long");
    }
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    return address;
}

// Makes way for a server on `path`: an existing socket file is either live
// (another server answers: refuse, never steal it) or stale (left by a
// crash: connect is refused, replace it).
Status clear_stale_socket(const std::string& path, const sockaddr_un& address) {
    struct stat existing {};
    if (::lstat(path.c_str(), &existing) == 0) {
        if (!S_ISSOCK(existing.st_mode)) {
            return make_error(errc::kConflict, path +
                                                   " exists and is not a socket; refusing to "
                                                   "replace it");
        }
        FileDescriptor probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (!probe.valid()) return make_error(errc::kIo, "socket(): " + errno_text(errno));
        if (::connect(probe.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) ==
            0) {
            return make_error(errc::kConflict, "another server is already listening on " + path +
                                                   "; refusing to replace it");
        }
        if (errno != ECONNREFUSED) {
            return make_error(errc::kConflict, "cannot tell whether " + path +
                                                   " is in use (connect: " + errno_text(errno) +
                                                   "); refusing to replace it");
        }
        if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
            return make_error(errc::kIo,
                              "cannot remove stale socket " + path + ": " + errno_text(errno));
        }
    } else if (errno != ENOENT) {
        return make_error(errc::kIo, "cannot inspect " + path + ": " + errno_text(errno));
    }
    return ok_status();
}

}  // namespace

Status UnixServer::start() {
    if (impl_->started) {
        return make_error(errc::kConflict, "server on " + socket_path_ + " already started");
    }
    DS_ASSIGN_OR_RETURN(auto address, unix_address(socket_path_));

    DS_TRY(clear_stale_socket(socket_path_, address));

    FileDescriptor listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!listener.valid()) return make_error(errc::kIo, "socket(): " + errno_text(errno));
    if (::bind(listener.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        return make_error(errc::kIo, "cannot bind " + socket_path_ + ": " + errno_text(errno));
    }
    struct stat created {};
    if (::chmod(socket_path_.c_str(), impl_->socket_mode) != 0 ||
        ::stat(socket_path_.c_str(), &created) != 0) {
        int saved = errno;
        ::unlink(socket_path_.c_str());
        return make_error(errc::kIo,
                          "cannot set mode of " + socket_path_ + ": " + errno_text(saved));
    }
    if (::listen(listener.get(), 128) != 0) {
        int saved = errno;
        ::unlink(socket_path_.c_str());
        return make_error(errc::kIo, "cannot listen on " + socket_path_ + ": " + errno_text(saved));
    }
    int wake[2];
    if (::pipe2(wake, O_CLOEXEC) != 0) {
        int saved = errno;
        ::unlink(socket_path_.c_str());
        return make_error(errc::kIo, "pipe2(): " + errno_text(saved));
    }
    impl_->wake_read = FileDescriptor(wake[0]);
    impl_->wake_write = FileDescriptor(wake[1]);
    impl_->socket_inode = created.st_ino;
    impl_->listen_socket = std::move(listener);
    {
        std::lock_guard lock(impl_->mutex);
        impl_->stopping = false;
    }
    impl_->accept_thread = std::thread([impl = impl_.get()] { impl->accept_loop(); });
    impl_->started = true;
    return ok_status();
}

void UnixServer::stop() {
    if (!impl_ || !impl_->started) return;
    impl_->started = false;
    {
        std::lock_guard lock(impl_->mutex);
        impl_->stopping = true;
    }
    char wake_byte = 1;
    [[maybe_unused]] ssize_t written = ::write(impl_->wake_write.get(), &wake_byte, 1);
    if (impl_->accept_thread.joinable()) impl_->accept_thread.join();

    struct stat current {};
    if (::lstat(socket_path_.c_str(), &current) == 0 && current.st_ino == impl_->socket_inode) {
        ::unlink(socket_path_.c_str());
    }
    impl_->listen_socket.reset();

    std::vector<std::thread> to_join;
    {
        std::lock_guard lock(impl_->mutex);
        for (auto& connection : impl_->connections) {
            if (connection.fd >= 0) ::shutdown(connection.fd, SHUT_RDWR);
            to_join.push_back(std::move(connection.thread));
        }
    }
    for (auto& thread : to_join) {
        if (thread.joinable()) thread.join();
    }
    std::lock_guard lock(impl_->mutex);
    impl_->connections.clear();
    impl_->wake_read.reset();
    impl_->wake_write.reset();
}

// ---------------------------------------------------------------------------
// Client

namespace {

Result<FileDescriptor> connect_to(const std::string& socket_path,
                                  std::chrono::milliseconds timeout) {
    DS_ASSIGN_OR_RETURN(auto address, unix_address(socket_path));
    FileDescriptor fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) return make_error(errc::kIo, "socket(): " + errno_text(errno));
    // Linux bounds a unix connect() that waits for a full backlog by the send
    // timeout; it then fails with EAGAIN.
    set_send_timeout(fd.get(), timeout);
    for (;;) {
        if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) {
            return fd;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN) {
            return make_error(errc::kTimeout, "disksweepd at " + socket_path +
                                                  " did not accept the connection within " +
                                                  std::to_string(timeout.count()) + " ms");
        }
        return make_error(errc::kUnavailable, "cannot connect to disksweepd at " + socket_path +
                                                  ": " + errno_text(errno));
    }
}

std::string serialize_request(const ClientRequest& req) {
    std::string wire = req.method + " " + req.target + " HTTP/1.1\r\nHost: localhost\r\n";
    bool has_body =
        !req.body.empty() || req.method == "POST" || req.method == "PUT" || req.method == "PATCH";
    if (has_body) {
        if (!req.content_type.empty()) wire += "Content-Type: " + req.content_type + "\r\n";
        wire += "Content-Length: " + std::to_string(req.body.size()) + "\r\n";
    }
    for (const auto& [name, value] : req.headers) wire += name + ": " + value + "\r\n";
    wire += "Connection: close\r\n\r\n";
    wire += req.body;
    return wire;
}

// Reads an HTTP response head (skipping interim 1xx answers). The bytes
// after the head stay in `buffer`.
Result<ClientResponse> read_response_head(int fd, std::string& buffer, Steady::time_point deadline,
                                          const std::string& where) {
    for (;;) {
        std::size_t head_end;
        int error_number = 0;
        while ((head_end = buffer.find("\r\n\r\n")) == std::string::npos) {
            if (buffer.size() > kMaxClientHeadBytes) {
                return make_error(errc::kProtocol, where + ": response head too large");
            }
            switch (read_some(fd, buffer, deadline, error_number)) {
                case ReadOutcome::kData:
                    break;
                case ReadOutcome::kTimedOut:
                    return make_error(errc::kTimeout, where + ": no response in time");
                case ReadOutcome::kEndOfStream:
                    return make_error(errc::kProtocol,
                                      where + ": connection closed before a response arrived");
                case ReadOutcome::kFailed:
                    return make_error(errc::kProtocol, where + ": reading the response failed: " +
                                                           errno_text(error_number));
            }
        }
        std::string_view head = std::string_view(buffer).substr(0, head_end);
        std::size_t line_end = head.find("\r\n");
        std::string_view status_line = head.substr(0, line_end);
        int status = 0;
        if (status_line.size() < 12 || status_line.substr(0, 7) != "HTTP/1." ||
            status_line[8] != ' ' ||
            std::from_chars(status_line.data() + 9, status_line.data() + 12, status).ptr !=
                status_line.data() + 12 ||
            status < 100 || status > 599) {
            return make_error(errc::kProtocol, where + ": malformed status line '" +
                                                   std::string(status_line.substr(0, 80)) + "'");
        }
        ClientResponse response;
        response.status = status;
        if (line_end != std::string_view::npos) {
            if (auto parsed = parse_header_lines(head.substr(line_end + 2), response.headers);
                !parsed) {
                return make_error(errc::kProtocol, where + ": " + parsed.error().message);
            }
        }
        buffer.erase(0, head_end + 4);
        if (status >= 200) return response;
    }
}

enum class Framing { kLength, kChunked, kUntilClose };

// How a response's body ends, from its headers; `expected` is the
// Content-Length (bounded by kMaxResponseBytes) when it has one.
struct BodyFraming {
    Framing framing = Framing::kUntilClose;
    std::size_t expected = 0;
};

Result<BodyFraming> body_framing(const ClientResponse& response, const std::string& where) {
    BodyFraming body;
    if (auto it = response.headers.find("transfer-encoding"); it != response.headers.end()) {
        if (ascii_lower(it->second).find("chunked") == std::string::npos) {
            return make_error(errc::kProtocol,
                              where + ": unsupported Transfer-Encoding '" + it->second + "'");
        }
        body.framing = Framing::kChunked;
    } else if (auto length = response.headers.find("content-length");
               length != response.headers.end()) {
        auto parsed = parse_content_length(length->second);
        if (!parsed) return make_error(errc::kProtocol, where + ": " + parsed.error().message);
        if (*parsed > kMaxResponseBytes) {
            return make_error(errc::kProtocol, where + ": response of " + std::to_string(*parsed) +
                                                   " bytes is too large");
        }
        body.framing = Framing::kLength;
        body.expected = *parsed;
    }
    return body;
}

// Delivers the body of `response` (whose head was read; `buffer` holds bytes
// already read past it) to `on_data` as it arrives, de-chunked.
// `deadline` unset: wait indefinitely between reads (streams).
Status read_response_body(int fd, const ClientResponse& response, std::string& buffer,
                          std::optional<Steady::time_point> deadline, const std::string& where,
                          const std::function<bool(std::string_view)>& on_data) {
    DS_ASSIGN_OR_RETURN(const BodyFraming body, body_framing(response, where));
    const Framing framing = body.framing;
    const std::size_t expected = body.expected;
    if (response.status == 204 || response.status == 304) return ok_status();

    ChunkDecoder decoder;
    std::size_t delivered = 0;
    std::string payload;
    int error_number = 0;
    for (;;) {
        payload.clear();
        bool complete = false;
        if (framing == Framing::kChunked) {
            auto done = decoder.feed(buffer, payload);
            if (!done) return make_error(errc::kProtocol, where + ": " + done.error().message);
            complete = *done;
        } else {
            std::size_t take = framing == Framing::kLength
                                   ? std::min(buffer.size(), expected - delivered)
                                   : buffer.size();
            payload = buffer.substr(0, take);
            buffer.erase(0, take);
            complete = framing == Framing::kLength && delivered + take == expected;
        }
        delivered += payload.size();
        if (delivered > kMaxResponseBytes && deadline) {
            return make_error(errc::kProtocol, where + ": response larger than " +
                                                   std::to_string(kMaxResponseBytes) + " bytes");
        }
        if (!payload.empty() && !on_data(payload)) return ok_status();
        if (complete) return ok_status();
        switch (read_some(fd, buffer, deadline, error_number)) {
            case ReadOutcome::kData:
                break;
            case ReadOutcome::kTimedOut:
                return make_error(errc::kTimeout, where + ": response body not complete in time");
            case ReadOutcome::kEndOfStream:
                if (framing == Framing::kUntilClose) return ok_status();
                return make_error(errc::kProtocol,
                                  where + ": connection closed before the response ended");
            case ReadOutcome::kFailed:
                return make_error(errc::kProtocol, where + ": reading the response failed: " +
                                                       errno_text(error_number));
        }
    }
}

std::string describe(const std::string& socket_path, const ClientRequest& req) {
    return req.method + " " + req.target + " on " + socket_path;
}

// What cannot be sent as given: the request line and headers must not break
// the framing (a file name with a newline in X-Spec-Name, say).
Status validate_request(const ClientRequest& req) {
    if (!is_token(req.method)) {
        return make_error(errc::kInvalidArgument, "invalid HTTP method '" + req.method + "'");
    }
    if (req.target.empty() || req.target.front() != '/' ||
        std::any_of(req.target.begin(), req.target.end(),
                    [](unsigned char c) { return c <= 0x20 || c == 0x7f; })) {
        return make_error(errc::kInvalidArgument,
                          "request target '" + req.target +
                              "' must start with '/' and hold no spaces or control characters "
                              "(percent-encode them)");
    }
    if (!is_safe_header_value(req.content_type)) {
        return make_error(errc::kInvalidArgument, "Content-Type holds a line break");
    }
    for (const auto& [name, value] : req.headers) {
        if (!is_token(name) || !is_safe_header_value(value)) {
            return make_error(errc::kInvalidArgument,
                              "header '" + name +
                                  "' cannot be sent: its name must be a token "
                                  "and its value may not hold CR, LF or NUL");
        }
    }
    return ok_status();
}

// Connects, sends `req` and reads the response head; leftover bytes in `buffer`.
Result<ClientResponse> exchange_head(const std::string& socket_path, const ClientRequest& req,
                                     FileDescriptor& fd, std::string& buffer,
                                     Steady::time_point deadline) {
    DS_TRY(validate_request(req));
    DS_ASSIGN_OR_RETURN(auto connected, connect_to(socket_path, req.timeout));
    fd = std::move(connected);
    // A server that answers early (413) and closes may make this send fail;
    // its response is still worth reading, so failure here is not final.
    bool sent = send_all(fd.get(), serialize_request(req));
    int send_errno = errno;
    auto head = read_response_head(fd.get(), buffer, deadline, describe(socket_path, req));
    if (!head && !sent) {
        return make_error(
            errc::kProtocol,
            describe(socket_path, req) + ": sending the request failed: " + errno_text(send_errno));
    }
    return head;
}

}  // namespace

Result<ClientResponse> request(const std::string& socket_path, const ClientRequest& req) {
    const auto deadline = Steady::now() + req.timeout;
    FileDescriptor fd;
    std::string buffer;
    auto response = exchange_head(socket_path, req, fd, buffer, deadline);
    if (!response) return response.error();
    std::string body;
    auto read = read_response_body(fd.get(), *response, buffer, deadline,
                                   describe(socket_path, req), [&](std::string_view data) {
                                       body.append(data);
                                       return true;
                                   });
    if (!read) return read.error();
    response->body = std::move(body);
    return response;
}

Result<ClientResponse> request(const std::string& socket_path, std::string_view method,
                               std::string_view target, std::string_view body,
                               std::string_view content_type, std::chrono::milliseconds timeout) {
    ClientRequest req;
    req.method = std::string(method);
    req.target = std::string(target);
    req.body = std::string(body);
    req.content_type = std::string(content_type);
    req.timeout = timeout;
    return request(socket_path, req);
}

Result<ClientResponse> stream_request(const std::string& socket_path, const ClientRequest& req,
                                      const std::function<bool(std::string_view line)>& on_line) {
    const auto deadline = Steady::now() + req.timeout;
    FileDescriptor fd;
    std::string buffer;
    auto response = exchange_head(socket_path, req, fd, buffer, deadline);
    if (!response) return response.error();
    const std::string where = describe(socket_path, req);
    if (response->status < 200 || response->status >= 300) {
        std::string body;
        auto read = read_response_body(fd.get(), *response, buffer, deadline, where,
                                       [&](std::string_view data) {
                                           body.append(data);
                                           return true;
                                       });
        if (!read) return read.error();
        response->body = std::move(body);
        return response;
    }

    std::string pending_line;
    bool stopped_by_consumer = false;
    Status line_error = ok_status();
    auto read = read_response_body(
        fd.get(), *response, buffer, std::nullopt, where, [&](std::string_view data) {
            pending_line.append(data);
            std::size_t start = 0;
            for (std::size_t newline;
                 (newline = pending_line.find('\n', start)) != std::string::npos;
                 start = newline + 1) {
                std::string_view line =
                    std::string_view(pending_line).substr(start, newline - start);
                if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
                if (!on_line(line)) {
                    stopped_by_consumer = true;
                    return false;
                }
            }
            pending_line.erase(0, start);
            if (pending_line.size() > kMaxStreamLineBytes) {
                line_error =
                    make_error(errc::kProtocol, where + ": streamed line longer than " +
                                                    std::to_string(kMaxStreamLineBytes) + " bytes");
                return false;
            }
            return true;
        });
    if (!line_error) return line_error.error();
    if (!read) return read.error();
    // A last line without a newline is complete once the stream has ended.
    if (!stopped_by_consumer && !pending_line.empty()) on_line(pending_line);
    return response;
}

Status stream_lines(const std::string& socket_path, std::string_view target,
                    const std::function<bool(std::string_view line)>& on_line) {
    ClientRequest req;
    req.target = std::string(target);
    DS_ASSIGN_OR_RETURN(auto response, stream_request(socket_path, req, on_line));
    if (response.status >= 200 && response.status < 300) return ok_status();
    // The API's errors are {"error":{"code","message"}}; keep them when present.
    if (auto error = read_error_envelope(response.body)) return std::move(*error);
    return make_error(errc::kProtocol, "GET " + std::string(target) + " on " + socket_path +
                                           ": HTTP " + std::to_string(response.status) + " " +
                                           status_text(response.status));
}

}  // namespace ds::http
