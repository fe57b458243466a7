// HTTP/1.1 messages and their wire rules (see http_message.h).
//
// Wire rules this file enforces for requests: a head ends with CRLF CRLF; a
// body only with Content-Length (no chunked requests) of at most
// kMaxRequestBytes; one request per connection.
#include "common/http_message.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <nlohmann/json.hpp>

#include "common/text.h"

namespace ds::http {
namespace {

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

}  // namespace

std::string_view trim_spaces_and_tabs(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
    return text;
}

bool is_token(std::string_view text) {
    if (text.empty()) return false;
    static constexpr std::string_view kExtra = "!#$%&'*+-.^_`|~";
    return std::all_of(text.begin(), text.end(), [](unsigned char c) {
        return std::isalnum(c) || kExtra.find(static_cast<char>(c)) != std::string_view::npos;
    });
}

bool is_safe_header_value(std::string_view value) {
    return value.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
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
        std::string value(trim_spaces_and_tabs(line.substr(colon + 1)));
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

}  // namespace ds::http
