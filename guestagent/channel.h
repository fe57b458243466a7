// The agent's side of the host <-> guest channel (docs/agent-protocol.md).
// In the guest it is the virtio-serial port named protocol::kChannelName; in
// tests a socketpair or a unix socket.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/protocol.h"
#include "common/result.h"

namespace ds::agent {

// A time point on the Clock the channel was made with (real_clock() unless
// it was given another): its user and the channel decide by the same clock.
using Deadline = Clock::time_point;

// A bidirectional, line-oriented byte stream.
class Channel {
  public:
    virtual ~Channel() = default;
    // Next complete line without its '\n'. Errors as protocol::LineReader:
    // errc::kTimeout once the deadline has passed on the channel's Clock,
    // errc::kProtocol for an oversized line, errc::kIo when the peer closed
    // the channel.
    virtual Result<std::string> read_line(Deadline deadline) = 0;
    // Writes all of `data` (already framed). errc::kIo when the peer is gone.
    virtual Status write(std::string_view data) = 0;
};

// A Channel over a file descriptor it owns (closed on destruction). It
// waits for input in real slices of at most a quarter second and decides by
// `clock` whether the deadline has passed (common/clock.h).
class FdChannel : public Channel {
  public:
    explicit FdChannel(int fd, std::size_t max_line = protocol::kMaxMessageBytes,
                       const Clock& clock = real_clock());
    ~FdChannel() override;
    FdChannel(const FdChannel&) = delete;
    FdChannel& operator=(const FdChannel&) = delete;

    Result<std::string> read_line(Deadline deadline) override;
    Status write(std::string_view data) override;

  private:
    int fd_;
    protocol::LineReader reader_;
    const Clock& clock_;
};

// Opens the channel at `path`:
//   * a unix socket: connects to it (tests, or a host-side relay);
//   * a character device (the virtio-serial port /dev/vportNpM): opens it and
//     waits until the host end is connected (the port reports POLLHUP while
//     nothing is attached on the host side, and bytes written then are lost);
//   * a tty: opens it in raw mode so the line discipline leaves bytes alone;
//   * anything else (a fifo pair is not supported): opened read-write.
// Gives up at `deadline` with errc::kTimeout, saying what it waited for.
// Retries and the deadline are on `clock`, which the channel keeps.
Result<std::unique_ptr<Channel>> open_channel(const std::string& path, Deadline deadline,
                                              const Clock& clock = real_clock());

}  // namespace ds::agent
