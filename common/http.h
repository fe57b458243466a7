// Minimal HTTP/1.1 over unix stream sockets: the daemon's API server and the
// client hostctl uses. Only what the API needs: Content-Length bodies in both
// directions, chunked transfer for streamed responses (the event stream), one
// request per connection (Connection: close).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

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

using Handler = std::function<Response(const Request&)>;

// Bounds that keep one misbehaving client from pinning the server.
struct ServerLimits {
    // Whole request (head + body) must arrive within this; else 408 and close.
    std::chrono::milliseconds request_timeout = std::chrono::seconds(10);
    // A send that cannot progress for this long ends the connection (a
    // stream's ChunkSink::write then returns false).
    std::chrono::milliseconds write_timeout = std::chrono::seconds(30);
    // Connections served at once; the next one gets 503 and is closed.
    std::size_t max_connections = 64;
    // Request heads (request line + headers) larger than this get 431.
    std::size_t max_head_bytes = 64u << 10;
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

// Serves `handler` on a unix socket, a thread per connection (bounded). The
// handler must not throw; the server turns any escaped exception into a 500.
class UnixServer {
  public:
    UnixServer(std::string socket_path, Handler handler, mode_t socket_mode = 0660,
               ServerLimits limits = {});
    ~UnixServer();
    UnixServer(const UnixServer&) = delete;
    UnixServer& operator=(const UnixServer&) = delete;

    // Binds (replacing a stale socket file, refusing a live one) and starts
    // accepting in a background thread.
    Status start();
    // Stops accepting, removes the socket file (if still ours), shuts down open
    // connections (so stream writes fail) and waits for connection threads.
    // A stream producer blocked elsewhere must notice on its own. Idempotent.
    void stop();
    const std::string& socket_path() const { return socket_path_; }

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    std::string socket_path_;
};

struct ClientResponse {
    int status = 0;
    std::map<std::string, std::string> headers;  // lower-cased names
    std::string body;
};

// One request to a unix-socket HTTP server. errc::kUnavailable when nothing
// listens at `socket_path` (message says so), errc::kTimeout, errc::kProtocol
// for a malformed response.
Result<ClientResponse> request(const std::string& socket_path, std::string_view method,
                               std::string_view target, std::string_view body = {},
                               std::string_view content_type = "application/json",
                               std::chrono::milliseconds timeout = std::chrono::seconds(30));

// A request with everything adjustable (extra headers, e.g. X-Spec-Name).
struct ClientRequest {
    std::string method = "GET";
    std::string target;  // origin-form, e.g. "/v1/sweeps/3"
    std::string body;
    std::string content_type = "application/json";  // sent only with a body
    std::map<std::string, std::string> headers;
    std::chrono::milliseconds timeout = std::chrono::seconds(30);
};
Result<ClientResponse> request(const std::string& socket_path, const ClientRequest& req);

// Sends `req` and, when the answer is 2xx, hands each line of the (chunked or
// plain) body to `on_line` as it arrives, without a timeout once the head has
// arrived. Returns the response head (body empty) after the stream ends or
// on_line returns false. A non-2xx answer is returned whole (body filled,
// on_line never called), so callers can read the API's JSON error. Errors are
// transport failures only, as for request().
Result<ClientResponse> stream_request(const std::string& socket_path, const ClientRequest& req,
                                      const std::function<bool(std::string_view line)>& on_line);

// GET a streamed (chunked) response and hand each complete line to `on_line`
// as it arrives; stops when on_line returns false or the stream ends. A non-2xx
// answer is an Error carrying the API's error code and message.
Status stream_lines(const std::string& socket_path, std::string_view target,
                    const std::function<bool(std::string_view line)>& on_line);

}  // namespace ds::http
