// Socket I/O for the HTTP server and client (see http_socket.h).
#include "common/http_socket.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ds::http {

Result<sockaddr_un> unix_address(const std::string& path) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof address.sun_path) {
        return make_error(errc::kInvalidArgument, "socket path '" + path + "' must be 1 to " +
                                                      std::to_string(sizeof address.sun_path - 1) +
                                                      " bytes long");
    }
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    return address;
}

void set_send_timeout(int fd, std::chrono::milliseconds timeout) {
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

bool send_all(int fd, std::string_view data) {
    while (!data.empty()) {
        ssize_t sent = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
        if (sent < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        data.remove_prefix(static_cast<std::size_t>(sent));
    }
    return true;
}

ReadOutcome read_some(int fd, std::string& buffer, std::optional<Steady::time_point> deadline,
                      int& error_number) {
    char chunk[16384];
    for (;;) {
        int wait_ms = -1;
        if (deadline) {
            auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Steady::now());
            if (left.count() <= 0) return ReadOutcome::kTimedOut;
            wait_ms = static_cast<int>(std::min<long long>(left.count() + 1, 1 << 30));
        }
        pollfd pfd{fd, POLLIN, 0};
        int ready = ::poll(&pfd, 1, wait_ms);
        if (ready < 0) {
            if (errno == EINTR) continue;
            error_number = errno;
            return ReadOutcome::kFailed;
        }
        if (ready == 0) return ReadOutcome::kTimedOut;
        ssize_t got = ::recv(fd, chunk, sizeof chunk, 0);
        if (got < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            error_number = errno;
            return ReadOutcome::kFailed;
        }
        if (got == 0) return ReadOutcome::kEndOfStream;
        buffer.append(chunk, static_cast<std::size_t>(got));
        return ReadOutcome::kData;
    }
}

}  // namespace ds::http
