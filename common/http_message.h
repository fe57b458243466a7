// The HTTP/1.1 messages the daemon's API exchanges, and their wire rules: the
// request a handler reads, the response it answers with, the body a failure
// carries (docs/api.md). No sockets here: http_server.h serves these messages,
// http_client.h sends them.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace ds::http {

inline constexpr std::size_t kMaxRequestBytes = 4u << 20;  // bodies larger are rejected (413)

struct Request {
    std::string method;                          // "GET", "POST", ...
    std::string target;                          // as sent, e.g. "/v1/sweeps?limit=5"
    std::string path;                            // percent-decoded path without query
    std::map<std::string, std::string> query;    // decoded query parameters
    std::map<std::string, std::string> headers;  // names lower-cased
    std::string body;
    uid_t peer_uid = static_cast<uid_t>(-1);  // from SO_PEERCRED
    gid_t peer_gid = static_cast<gid_t>(-1);  // the peer's primary group (SO_PEERCRED)
    pid_t peer_pid = 0;
};

// Receives the chunks of a streamed response. write() returns false once the
// client has gone away; the producer must then stop.
class ChunkSink {
  public:
    virtual ~ChunkSink() = default;
    virtual bool write(std::string_view data) = 0;
};

struct Response {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;
    std::map<std::string, std::string> headers;
    // When set, the body is produced by this callback with chunked transfer
    // encoding (the event stream); `body` is ignored.
    std::function<void(ChunkSink&)> stream;
};

// Parses a request head + body from raw bytes (exposed for unit tests and
// fuzzing). Error code errc::kProtocol with what is wrong.
Result<Request> parse_request(std::string_view raw);
std::string status_text(int status);

// The body every failed request answers with, {"error":{"code":..,
// "message":..}} (docs/api.md): written here, for the server's own refusals
// and the API's errors alike.
nlohmann::json error_envelope(std::string_view code, std::string_view message);
// The error an answer's body carries when it is that envelope with a string
// message (its code, or errc::kProtocol when the code is not a string);
// nothing for any other body. Never throws: the body may come from any peer.
std::optional<Error> read_error_envelope(std::string_view body);

// ---------------------------------------------------------------------------
// The wire rules the server (http_server.cpp) and the client (http_client.cpp)
// share; callers of the API have no use for them.

// A header value's optional whitespace (spaces and tabs) removed from both ends.
std::string_view trim_spaces_and_tabs(std::string_view text);
// RFC 9110 token characters (methods, header names).
bool is_token(std::string_view text);
// A header value may not hold CR, LF or NUL: they would end the header early
// and let the rest be read as headers of its own (header injection).
bool is_safe_header_value(std::string_view value);
// A Content-Length value: digits only, else errc::kProtocol.
Result<std::size_t> parse_content_length(std::string_view text);
// Splits "Name: value" lines (the part of a head after its first line) into a
// map with lower-cased names. Repeated headers are joined with ", ", except
// Content-Length, which must not repeat with a different value.
Status parse_header_lines(std::string_view lines, std::map<std::string, std::string>& headers);

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

// A request head (without its closing blank line) into `out`, or the refusal
// to answer with: a malformed head, a body over kMaxRequestBytes (413), an
// Expect other than 100-continue (417), a chunked body.
std::optional<HeadError> parse_request_head(std::string_view head, RequestHead& out);

}  // namespace ds::http
