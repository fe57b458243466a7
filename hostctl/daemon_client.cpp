#include "hostctl/daemon_client.h"

#include "common/http.h"

namespace ds::hostctl {
namespace {

std::string describe(std::string_view method, std::string_view target) {
    return std::string(method) + " " + std::string(target);
}

// Sorts a transport error. http::request() says "cannot connect to disksweepd
// at PATH: <strerror>" for kUnavailable; the strerror part goes into our
// message with the hint how to start the daemon.
ApiFailure transport_failure(const Error& error, const std::string& socket_path) {
    ApiFailure failure;
    failure.code = error.code;
    if (error.code == errc::kUnavailable) {
        failure.kind = ApiFailure::Kind::kUnreachable;
        const std::string prefix = socket_path + ": ";
        std::size_t at = error.message.rfind(prefix);
        std::string reason =
            at == std::string::npos ? error.message : error.message.substr(at + prefix.size());
        failure.message = unreachable_message(socket_path, reason);
    } else {
        failure.kind = ApiFailure::Kind::kTransport;
        failure.message = error.message;
    }
    return failure;
}

// An HTTP error answer: the API's {"error":{"code","message"}}, or a generic
// description when the body is something else.
ApiFailure api_failure(const http::ClientResponse& response, std::string_view what) {
    ApiFailure failure;
    failure.kind = ApiFailure::Kind::kApiError;
    failure.http_status = response.status;
    if (auto error = http::read_error_envelope(response.body)) {
        failure.code = error->code;
        failure.message = error->message;
        return failure;
    }
    failure.code = errc::kProtocol;
    failure.message = "disksweepd answered " + std::string(what) + " with HTTP " +
                      std::to_string(response.status) + " " + http::status_text(response.status);
    return failure;
}

ApiReply reply_from(const Result<http::ClientResponse>& response, const std::string& socket_path,
                    std::string_view what) {
    ApiReply reply;
    if (!response.ok()) {
        reply.failure = transport_failure(response.error(), socket_path);
        return reply;
    }
    reply.http_status = response->status;
    if (response->status < 200 || response->status >= 300) {
        reply.failure = api_failure(*response, what);
        return reply;
    }
    reply.body = Json::parse(response->body, nullptr, false);
    if (reply.body.is_discarded()) {
        reply.failure =
            ApiFailure{ApiFailure::Kind::kTransport, errc::kProtocol,
                       "disksweepd answered " + std::string(what) +
                           " with something that is not JSON: " + response->body.substr(0, 80),
                       0};
    }
    return reply;
}

}  // namespace

std::string unreachable_message(std::string_view socket_path, std::string_view reason) {
    return "cannot reach disksweepd at " + std::string(socket_path) + " (" + std::string(reason) +
           "). Start it with: disksweepd --config config/disksweepd.conf  (or: systemctl start "
           "disksweepd)";
}

DaemonClient::DaemonClient(std::string socket_path, std::chrono::milliseconds timeout)
    : socket_path_(std::move(socket_path)), timeout_(timeout) {}

ApiReply DaemonClient::get(std::string_view target) const {
    http::ClientRequest request;
    request.target = std::string(target);
    request.timeout = timeout_;
    return reply_from(http::request(socket_path_, request), socket_path_, describe("GET", target));
}

DocumentReply DaemonClient::get_document(std::string_view target) const {
    http::ClientRequest request;
    request.target = std::string(target);
    request.timeout = timeout_;
    Result<http::ClientResponse> response = http::request(socket_path_, request);
    DocumentReply reply;
    if (!response.ok()) {
        reply.failure = transport_failure(response.error(), socket_path_);
    } else if (response->status < 200 || response->status >= 300) {
        reply.failure = api_failure(*response, describe("GET", target));
    } else {
        reply.body = std::move(response->body);
        auto type = response->headers.find("content-type");
        if (type != response->headers.end()) reply.content_type = type->second;
    }
    return reply;
}

ApiReply DaemonClient::post(std::string_view target, std::string body,
                            std::string_view content_type,
                            const std::map<std::string, std::string>& headers) const {
    http::ClientRequest request;
    request.method = "POST";
    request.target = std::string(target);
    request.body = std::move(body);
    request.content_type = std::string(content_type);
    request.headers = headers;
    request.timeout = timeout_;
    return reply_from(http::request(socket_path_, request), socket_path_, describe("POST", target));
}

ApiReply DaemonClient::follow(std::string_view target,
                              const std::function<bool(const Json& event)>& on_event) const {
    http::ClientRequest request;
    request.target = std::string(target);
    request.timeout = timeout_;
    std::optional<ApiFailure> bad_line;
    auto response = http::stream_request(socket_path_, request, [&](std::string_view line) {
        if (line.find_first_not_of(" \t\r") == std::string_view::npos) return true;
        Json event = Json::parse(line, nullptr, false);
        if (!event.is_object()) {
            bad_line = ApiFailure{ApiFailure::Kind::kTransport, errc::kProtocol,
                                  "disksweepd sent an event that is not a JSON object on GET " +
                                      std::string(target) + ": " + std::string(line.substr(0, 80)),
                                  0};
            return false;
        }
        return on_event(event);
    });
    ApiReply reply;
    if (!response.ok()) {
        reply.failure = transport_failure(response.error(), socket_path_);
        return reply;
    }
    reply.http_status = response->status;
    if (response->status < 200 || response->status >= 300) {
        reply.failure = api_failure(*response, describe("GET", target));
    } else if (bad_line) {
        reply.failure = std::move(bad_line);
    }
    return reply;
}

}  // namespace ds::hostctl
