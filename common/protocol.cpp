#include "common/protocol.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

namespace ds::protocol {
namespace {

// Deeper JSON is rejected while parsing: nothing in the protocol nests more
// than a few levels (fio's JSON inside a result is about 7), and a peer must
// not be able to make the other side recurse without bound when it later
// walks or dumps the value.
constexpr int kMaxNestingDepth = 64;

struct NestingTooDeep {};

bool is_known_type(std::string_view type) {
    static constexpr std::array<std::string_view, 6> kKnownTypes = {kHello,  kJob,   kProgress,
                                                                    kResult, kError, kShutdown};
    return std::find(kKnownTypes.begin(), kKnownTypes.end(), type) != kKnownTypes.end();
}

// A short, printable excerpt of untrusted input for error messages.
std::string excerpt(std::string_view text, std::size_t limit = 80) {
    std::string out;
    for (char c : text.substr(0, limit)) {
        const auto byte = static_cast<unsigned char>(c);
        out.push_back(byte >= 0x20 && byte < 0x7f ? c : '?');
    }
    if (text.size() > limit) out += "...";
    return out;
}

}  // namespace

std::string encode(std::string_view type, const Json& payload) {
    // A non-object payload is a programming error on the sending side; it is
    // dropped rather than sent, so the wire never carries a non-object.
    Json message = payload.is_object() ? payload : Json::object();
    message["v"] = kVersion;
    message["type"] = std::string(type);
    // Invalid UTF-8 (e.g. a command's stderr tail) is replaced, never thrown.
    std::string line = message.dump(-1, ' ', false, Json::error_handler_t::replace);
    line.push_back('\n');
    return line;
}

Result<Json> decode(std::string_view line) {
    Json message;
    try {
        message = Json::parse(line.begin(), line.end(), [](int depth, Json::parse_event_t, Json&) {
            if (depth > kMaxNestingDepth) throw NestingTooDeep{};
            return true;
        });
    } catch (const NestingTooDeep&) {
        return make_error(errc::kProtocol, "message nests deeper than " +
                                               std::to_string(kMaxNestingDepth) + " levels");
    } catch (const Json::exception& e) {
        return make_error(errc::kProtocol, std::string("message is not valid JSON (") + e.what() +
                                               "): " + excerpt(line));
    }
    if (!message.is_object()) {
        return make_error(errc::kProtocol, std::string("message is a JSON ") + message.type_name() +
                                               ", expected an object: " + excerpt(line));
    }
    const auto version = message.find("v");
    if (version == message.end()) {
        return make_error(errc::kProtocol, "message has no protocol version \"v\"");
    }
    if (!version->is_number_integer() || version->get<long long>() != kVersion) {
        return make_error(errc::kProtocol, "unsupported protocol version " + version->dump() +
                                               " (this side speaks " + std::to_string(kVersion) +
                                               ")");
    }
    const auto type = message.find("type");
    if (type == message.end() || !type->is_string()) {
        return make_error(errc::kProtocol, "message has no string \"type\"");
    }
    if (!is_known_type(type->get_ref<const std::string&>())) {
        return make_error(errc::kProtocol, "unknown message type \"" +
                                               excerpt(type->get_ref<const std::string&>()) + "\"");
    }
    return message;
}

LineReader::LineReader(int fd, std::size_t max_line) : fd_(fd), max_line_(max_line) {}

Result<std::string> LineReader::read_line(std::chrono::steady_clock::time_point deadline) {
    // Hands out the line ending at buffer_[newline] and keeps the rest.
    auto take_line = [this](std::size_t newline) -> Result<std::string> {
        if (newline > max_line_) {
            buffer_.clear();
            return make_error(errc::kProtocol, "message of " + std::to_string(newline) +
                                                   " bytes exceeds the limit of " +
                                                   std::to_string(max_line_) + " bytes");
        }
        std::string line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        return line;
    };

    if (const auto newline = buffer_.find('\n'); newline != std::string::npos) {
        return take_line(newline);
    }
    std::array<char, 64 * 1024> chunk{};
    for (;;) {
        if (buffer_.size() > max_line_) {
            const auto size = buffer_.size();
            buffer_.clear();
            return make_error(errc::kProtocol,
                              "message exceeds the limit of " + std::to_string(max_line_) +
                                  " bytes (" + std::to_string(size) + " bytes without a newline)");
        }
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline) {
            return make_error(errc::kTimeout, "no complete message before the deadline");
        }
        // Round up so a sub-millisecond remainder does not spin with timeout 0.
        const auto remaining = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
        pollfd descriptor{fd_, POLLIN, 0};
        const int ready =
            ::poll(&descriptor, 1, static_cast<int>(std::min<long long>(remaining, 60'000)));
        if (ready < 0) {
            if (errno == EINTR) continue;
            return make_error(errc::kIo,
                              std::string("poll on channel failed: ") + std::strerror(errno));
        }
        if (ready == 0) continue;  // the deadline check above decides
        const ssize_t count = ::read(fd_, chunk.data(), chunk.size());
        if (count < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
            return make_error(errc::kIo,
                              std::string("read from channel failed: ") + std::strerror(errno));
        }
        if (count == 0) {
            if (!buffer_.empty()) {
                const auto partial = buffer_.size();
                buffer_.clear();
                return make_error(errc::kIo, "channel closed in the middle of a message (" +
                                                 std::to_string(partial) + " bytes unterminated)");
            }
            return make_error(errc::kIo, "channel closed");
        }
        const auto scanned = buffer_.size();
        buffer_.append(chunk.data(), static_cast<std::size_t>(count));
        if (const auto newline = buffer_.find('\n', scanned); newline != std::string::npos) {
            return take_line(newline);
        }
    }
}

Status write_all(int fd, std::string_view data) {
    while (!data.empty()) {
        const ssize_t written = ::write(fd, data.data(), data.size());
        if (written < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                // Non-blocking descriptor: wait until it drains.
                pollfd descriptor{fd, POLLOUT, 0};
                ::poll(&descriptor, 1, 1000);
                continue;
            }
            return make_error(errc::kIo,
                              std::string("write to channel failed: ") + std::strerror(errno));
        }
        data.remove_prefix(static_cast<std::size_t>(written));
    }
    return ok_status();
}

}  // namespace ds::protocol
