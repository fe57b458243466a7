// Host <-> guest agent protocol (docs/agent-protocol.md): newline-delimited
// JSON, every message an object {"v": 1, "type": "...", ...}, at most
// kMaxMessageBytes per line. The guest is untrusted: anything malformed,
// oversized or of an unexpected type is an Error, never a crash.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/settings.h"

namespace ds::protocol {

inline constexpr int kVersion = 2;
inline constexpr std::size_t kMaxMessageBytes = 8u << 20;  // fio JSON fits easily
inline constexpr std::string_view kChannelName = "org.disksweep.agent.0";
// Serial numbers by which the guest finds its disks without udev.
inline constexpr std::string_view kRootDiskSerial = "disksweep-root";
inline constexpr std::string_view kDataDiskSerial = "disksweep-data";

// Message types, guest -> host: hello, progress, result, error.
//                host -> guest: job, shutdown.
inline constexpr std::string_view kHello = "hello";
inline constexpr std::string_view kJob = "job";
inline constexpr std::string_view kProgress = "progress";
inline constexpr std::string_view kResult = "result";
inline constexpr std::string_view kError = "error";
inline constexpr std::string_view kShutdown = "shutdown";

// Serialises one message: {"v":kVersion,"type":type, ...payload} + '\n'.
// `payload` must be an object; its "v"/"type" keys are overwritten.
std::string encode(std::string_view type, const Json& payload);

// Parses one line (without '\n'). Checks: valid JSON, an object, "v" ==
// kVersion, "type" a known string. Error code errc::kProtocol.
Result<Json> decode(std::string_view line);

// Reads newline-delimited messages from a file descriptor with a bound on
// line size and a deadline. Does not own the fd.
class LineReader {
  public:
    explicit LineReader(int fd, std::size_t max_line = kMaxMessageBytes);
    // Returns the next complete line, or: errc::kTimeout when the deadline
    // passes, errc::kProtocol when a line exceeds max_line, errc::kIo on EOF
    // ("channel closed") or a read error.
    Result<std::string> read_line(std::chrono::steady_clock::time_point deadline);

  private:
    int fd_;
    std::size_t max_line_;
    std::string buffer_;
};

// Writes all of `data`, retrying on EINTR/partial writes.
Status write_all(int fd, std::string_view data);

}  // namespace ds::protocol
