// The client hostctl uses: one HTTP/1.1 request per connection to a
// unix-socket server, bodies by Content-Length, chunked (the event stream) or
// up to EOF.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "common/result.h"

namespace ds::http {

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
