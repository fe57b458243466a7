#include "common/protocol.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "common/text.h"

namespace ds::protocol {
namespace {

// Deeper JSON is rejected while parsing: nothing in the protocol nests more
// than a few levels (fio's JSON inside a result is about 7), and a peer must
// not be able to make the other side recurse without bound when it later
// walks or dumps the value. The top-level object is level 1.
constexpr int kMaxNestingDepth = 64;

// Builds the message from nlohmann's SAX events, enforcing the bounds as it
// goes: it stops at the first syntax error, the first container nested
// deeper than kMaxNestingDepth or the first value past kMaxMessageValues, so
// no more than the bounds allow is ever built. (Not nlohmann's parser
// callback: that one rescans the enclosing array at the end of each object,
// quadratic time - a minute of CPU for 8 MiB of "{},".)
class BoundedBuilder {
  public:
    // Empty when the line parsed within the bounds; else what is wrong.
    const std::string& problem() const { return problem_; }
    bool syntax_error() const { return syntax_error_; }
    Json take() { return std::move(root_); }

    // The SAX interface (Json::sax_parse).
    bool null() { return add(Json(nullptr)) != nullptr; }
    bool boolean(bool value) { return add(Json(value)) != nullptr; }
    bool number_integer(Json::number_integer_t value) { return add(Json(value)) != nullptr; }
    bool number_unsigned(Json::number_unsigned_t value) { return add(Json(value)) != nullptr; }
    bool number_float(Json::number_float_t value, const Json::string_t&) {
        return add(Json(value)) != nullptr;
    }
    bool string(Json::string_t& value) { return add(Json(std::move(value))) != nullptr; }
    bool binary(Json::binary_t& value) { return add(Json::binary(value)) != nullptr; }
    bool start_object(std::size_t) { return open(Json::object()); }
    bool key(Json::string_t& name) {
        key_ = std::move(name);
        return true;
    }
    bool end_object() { return close(); }
    bool start_array(std::size_t) { return open(Json::array()); }
    bool end_array() { return close(); }
    bool parse_error(std::size_t, const std::string&, const Json::exception& error) {
        problem_ = std::string("message is not valid JSON (") + error.what() + ")";
        syntax_error_ = true;
        return false;
    }

  private:
    // Places `value` in the innermost open container (or as the root);
    // nullptr when that is one value too many.
    Json* add(Json value) {
        if (++values_ > kMaxMessageValues) {
            problem_ =
                "message holds more than " + std::to_string(kMaxMessageValues) + " JSON values";
            return nullptr;
        }
        if (open_.empty()) {
            root_ = std::move(value);
            return &root_;
        }
        Json& parent = *open_.back();
        if (parent.is_array()) {
            // May move the array's earlier elements; none of them is open.
            parent.push_back(std::move(value));
            return &parent.back();
        }
        Json& slot = parent[key_];  // a repeated key: the last one wins
        slot = std::move(value);
        return &slot;
    }
    bool open(Json container) {
        Json* placed = add(std::move(container));
        if (placed == nullptr) return false;
        if (open_.size() >= static_cast<std::size_t>(kMaxNestingDepth)) {
            problem_ = "message nests deeper than " + std::to_string(kMaxNestingDepth) + " levels";
            return false;
        }
        open_.push_back(placed);
        return true;
    }
    bool close() {
        open_.pop_back();
        return true;
    }

    Json root_;
    std::vector<Json*> open_;  // the containers being filled, outermost first
    std::string key_;          // the key of the next value in an object
    std::size_t values_ = 0;
    std::string problem_;
    bool syntax_error_ = false;
};

bool is_known_type(std::string_view type) {
    static constexpr std::array<std::string_view, 11> kKnownTypes = {
        kHello,     kJob,  kProgress, kResult,    kError, kShutdown,
        kTrimReady, kTrim, kAck,      kMarkReady, kMark};
    return std::find(kKnownTypes.begin(), kKnownTypes.end(), type) != kKnownTypes.end();
}

// A short, printable excerpt of untrusted input for error messages.
std::string excerpt(std::string_view text) {
    return printable_excerpt(text, 80);
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
    BoundedBuilder builder;
    bool parsed = false;
    try {
        parsed = Json::sax_parse(line.begin(), line.end(), &builder);
    } catch (const Json::exception& e) {  // reported through parse_error; kept as a seam
        return make_error(errc::kProtocol, std::string("message is not valid JSON (") + e.what() +
                                               "): " + excerpt(line));
    }
    if (!parsed) {
        // A syntax error is shown with the start of the line, to see what it was.
        return make_error(errc::kProtocol, builder.syntax_error()
                                               ? builder.problem() + ": " + excerpt(line)
                                               : builder.problem());
    }
    Json message = builder.take();
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
    for (;;) {
        if (pending() > scanned_) {
            const char* begin = buffer_.data() + start_;
            const void* newline = std::memchr(begin + scanned_, '\n', pending() - scanned_);
            if (newline != nullptr) {
                return take_line(
                    static_cast<std::size_t>(static_cast<const char*>(newline) - begin));
            }
            scanned_ = pending();
        }
        if (pending() > max_line_) {
            const auto size = pending();
            drop_pending();
            return make_error(errc::kProtocol,
                              "message exceeds the limit of " + std::to_string(max_line_) +
                                  " bytes (" + std::to_string(size) + " bytes without a newline)");
        }
        DS_TRY(read_chunk(deadline));
    }
}

Result<std::string> LineReader::take_line(std::size_t newline) {
    if (newline > max_line_) {
        drop_pending();
        return make_error(errc::kProtocol, "message of " + std::to_string(newline) +
                                               " bytes exceeds the limit of " +
                                               std::to_string(max_line_) + " bytes");
    }
    std::string line(buffer_.data() + start_, newline);
    start_ += newline + 1;
    scanned_ = 0;
    if (pending() == 0) drop_pending();
    return line;
}

void LineReader::drop_pending() {
    buffer_.clear();
    start_ = 0;
    scanned_ = 0;
    // A long message's buffer is given back rather than kept for the
    // reader's lifetime; ordinary traffic fits a few chunks.
    if (buffer_.capacity() > 4 * kReadChunkBytes) std::vector<char>().swap(buffer_);
}

void LineReader::make_room() {
    if (start_ > 0) {
        std::copy(buffer_.begin() + static_cast<std::ptrdiff_t>(start_), buffer_.end(),
                  buffer_.begin());
        buffer_.resize(buffer_.size() - start_);
        start_ = 0;
    }
    // read_line refuses more than max_line_ pending bytes before reading, so
    // one more chunk always fits in max_line_ + kReadChunkBytes. Growth is by
    // reserve() (exact for std::vector), never by the doubling of a resize.
    const std::size_t needed = buffer_.size() + kReadChunkBytes;
    if (buffer_.capacity() < needed) {
        buffer_.reserve(
            std::min(std::max(2 * buffer_.capacity(), needed), max_line_ + kReadChunkBytes));
    }
}

Result<std::size_t> LineReader::read_chunk(std::chrono::steady_clock::time_point deadline) {
    for (;;) {
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
        make_room();
        const std::size_t size = buffer_.size();
        buffer_.resize(size + kReadChunkBytes);  // within the capacity make_room() reserved
        const ssize_t count = ::read(fd_, buffer_.data() + size, kReadChunkBytes);
        const int read_errno = errno;
        buffer_.resize(size + static_cast<std::size_t>(std::max<ssize_t>(count, 0)));
        if (count < 0) {
            if (read_errno == EINTR || read_errno == EAGAIN || read_errno == EWOULDBLOCK) continue;
            return make_error(
                errc::kIo, std::string("read from channel failed: ") + std::strerror(read_errno));
        }
        if (count == 0) {
            const auto partial = pending();
            drop_pending();
            if (partial > 0) {
                return make_error(errc::kIo, "channel closed in the middle of a message (" +
                                                 std::to_string(partial) + " bytes unterminated)");
            }
            return make_error(errc::kIo, "channel closed");
        }
        return static_cast<std::size_t>(count);
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

std::string disk_serial_problem(std::string_view serial) {
    if (serial.empty() || serial.size() > kMaxDiskSerialBytes) {
        return "serial '" + std::string(serial.substr(0, 64)) + "' is not 1 to " +
               std::to_string(kMaxDiskSerialBytes) + " bytes long";
    }
    const auto allowed = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '_';
    };
    if (!std::all_of(serial.begin(), serial.end(), allowed)) {
        return "serial '" + std::string(serial) + "' holds a character other than A-Z a-z 0-9 - _";
    }
    return "";
}

std::string crash_disk_serial(std::size_t index) {
    return "disksweep-crash-" + std::to_string(index);
}

}  // namespace ds::protocol
