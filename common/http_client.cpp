// The unix-socket HTTP client (see http_client.h).
//
// Wire rules this file enforces: a response head is at most
// kMaxClientHeadBytes; its body (by Content-Length, chunked, or up to EOF) is
// at most kMaxResponseBytes, or for a stream each line at most
// kMaxStreamLineBytes; a request's line and headers never break the framing.
#include "common/http_client.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <optional>

#include "common/errno_text.h"
#include "common/file_descriptor.h"
#include "common/http_message.h"
#include "common/http_socket.h"
#include "common/text.h"

namespace ds::http {
namespace {

// A response larger than this is refused by the client (a run's raw output is
// the largest thing the API returns, far below it).
constexpr std::size_t kMaxResponseBytes = 256u << 20;
// One line of a streamed response (an event) may not exceed this.
constexpr std::size_t kMaxStreamLineBytes = 4u << 20;
constexpr std::size_t kMaxClientHeadBytes = 64u << 10;

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
                line = trim_spaces_and_tabs(line);
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
