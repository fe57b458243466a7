#include "guestagent/channel.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/errno_text.h"
#include "common/file_descriptor.h"

namespace ds::agent {
namespace {

using namespace std::chrono_literals;

// Between two tries to connect, or two looks at a port's host end.
constexpr auto kRetryInterval = 100ms;
// The longest real wait for input: the Clock then decides whether the
// deadline has passed.
constexpr auto kReadSlice = 250ms;

Result<int> connect_unix_socket(const std::string& path) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path.size() >= sizeof address.sun_path) {
        return make_error(errc::kInvalidArgument, "channel socket path too long: " + path);
    }
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    FileDescriptor fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid())
        return make_error(errc::kIo, "socket() for channel " + path + ": " + errno_text(errno));
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        return make_error(errc::kUnavailable,
                          "cannot connect to channel " + path + ": " + errno_text(errno));
    }
    return fd.release();
}

// A virtio-serial port polls POLLHUP for as long as no host-side client is
// connected to its chardev; wait for that to clear.
Status wait_for_host_end(int fd, const std::string& path, Deadline deadline, const Clock& clock) {
    for (;;) {
        pollfd descriptor{fd, POLLOUT, 0};
        const int ready = ::poll(&descriptor, 1, 0);
        if (ready < 0 && errno != EINTR) {
            return make_error(errc::kIo, "poll on channel " + path + ": " + errno_text(errno));
        }
        if (ready > 0 && !(descriptor.revents & POLLHUP)) return ok_status();
        if (clock.now() >= deadline) {
            return make_error(errc::kTimeout,
                              "the host end of channel " + path + " never connected");
        }
        clock.sleep_for(kRetryInterval);
    }
}

}  // namespace

FdChannel::FdChannel(int fd, std::size_t max_line, const Clock& clock)
    : fd_(fd), reader_(fd, max_line), clock_(clock) {}

FdChannel::~FdChannel() {
    if (fd_ >= 0) ::close(fd_);
}

Result<std::string> FdChannel::read_line(Deadline deadline) {
    // The reader keeps a partial line across slices.
    for (;;) {
        const auto wait = std::clamp<Clock::duration>(deadline - clock_.now(),
                                                      Clock::duration::zero(), kReadSlice);
        auto line = reader_.read_line(std::chrono::steady_clock::now() + wait);
        if (line.ok() || line.error().code != errc::kTimeout || clock_.now() >= deadline) {
            return line;
        }
    }
}

Status FdChannel::write(std::string_view data) {
    return protocol::write_all(fd_, data);
}

Result<std::unique_ptr<Channel>> open_channel(const std::string& path, Deadline deadline,
                                              const Clock& clock) {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) {
        return make_error(errc::kNotFound, "channel " + path + ": " + errno_text(errno));
    }
    if (S_ISSOCK(info.st_mode)) {
        // The listener may not be up yet (tests start both sides together).
        for (;;) {
            auto fd = connect_unix_socket(path);
            if (fd.ok()) {
                return std::unique_ptr<Channel>(
                    std::make_unique<FdChannel>(*fd, protocol::kMaxMessageBytes, clock));
            }
            if (fd.error().code != errc::kUnavailable || clock.now() >= deadline) {
                return fd.error();
            }
            clock.sleep_for(kRetryInterval);
        }
    }
    const int fd = ::open(path.c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return make_error(errc::kIo, "cannot open channel " + path + ": " + errno_text(errno));
    auto channel = std::make_unique<FdChannel>(fd, protocol::kMaxMessageBytes, clock);
    if (::isatty(fd)) {
        termios mode{};
        if (::tcgetattr(fd, &mode) == 0) {
            ::cfmakeraw(&mode);
            ::tcsetattr(fd, TCSANOW, &mode);
        }
    } else if (S_ISCHR(info.st_mode)) {
        DS_TRY(wait_for_host_end(fd, path, deadline, clock));
    }
    return std::unique_ptr<Channel>(std::move(channel));
}

}  // namespace ds::agent
