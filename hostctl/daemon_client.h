// hostctl's view of disksweepd: one call per API request, the answer as JSON,
// and every failure sorted into what the user must do about it (start the
// daemon, or read the daemon's error message).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "hostctl/format.h"

namespace ds::hostctl {

struct ApiFailure {
    enum class Kind {
        kUnreachable,  // nothing listens at the socket: start the daemon
        kApiError,     // the daemon answered with an error (HTTP 4xx/5xx)
        kTransport,    // timeout, malformed or non-JSON answer
    };
    Kind kind = Kind::kTransport;
    std::string code;     // the API's error code (kApiError) or an errc::*
    std::string message;  // for humans; printed after "hostctl: "
    int http_status = 0;  // kApiError only
};

// The daemon's JSON answer, or why there is none.
struct ApiReply {
    Json body;
    int http_status = 0;
    std::optional<ApiFailure> failure;
    bool ok() const { return !failure.has_value(); }
};

// A document the daemon answers that is not JSON (the HTML report), or why
// there is none (an error answer is still the API's JSON error).
struct DocumentReply {
    std::string body;
    std::string content_type;
    std::optional<ApiFailure> failure;
    bool ok() const { return !failure.has_value(); }
};

class DaemonClient {
  public:
    explicit DaemonClient(std::string socket_path,
                          std::chrono::milliseconds timeout = std::chrono::seconds(30));

    ApiReply get(std::string_view target) const;
    DocumentReply get_document(std::string_view target) const;
    ApiReply post(std::string_view target, std::string body, std::string_view content_type,
                  const std::map<std::string, std::string>& headers = {}) const;
    // Follows an NDJSON event stream, handing each event to `on_event` until
    // it returns false or the stream ends. Blank lines are skipped; a line
    // that is not a JSON object ends the stream with a kTransport failure.
    ApiReply follow(std::string_view target,
                    const std::function<bool(const Json& event)>& on_event) const;

    const std::string& socket_path() const { return socket_path_; }

  private:
    std::string socket_path_;
    std::chrono::milliseconds timeout_;
};

// The line hostctl prints when nothing listens at `socket_path`; `reason` is
// the system's word for it ("No such file or directory").
std::string unreachable_message(std::string_view socket_path, std::string_view reason);

}  // namespace ds::hostctl
