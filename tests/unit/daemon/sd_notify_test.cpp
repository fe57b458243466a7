// sd_notify_state against a real SOCK_DGRAM unix socket, as systemd listens.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "daemon/daemon.h"
#include "support/fakes/daemon_fakes.h"

namespace ds {
namespace {

using namespace ds::testing;

// A datagram socket bound to `path` (or, with a leading '@', to that name in
// the abstract namespace), as systemd's notify socket.
class NotifyListener {
  public:
    explicit NotifyListener(const std::string& path) {
        fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        REQUIRE(fd_ >= 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        REQUIRE(path.size() < sizeof address.sun_path);
        std::memcpy(address.sun_path, path.data(), path.size());
        socklen_t length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size());
        if (path[0] == '@') {
            address.sun_path[0] = '\0';
        } else {
            length += 1;  // the terminating NUL of a file system path
        }
        REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&address), length) == 0);
    }
    ~NotifyListener() { ::close(fd_); }

    // The next datagram, or nothing within `timeout`.
    std::optional<std::string> receive(int timeout_ms = 2000) {
        pollfd descriptor{fd_, POLLIN, 0};
        if (::poll(&descriptor, 1, timeout_ms) != 1) return std::nullopt;
        char buffer[4096];
        const ssize_t count = ::recv(fd_, buffer, sizeof buffer, 0);
        if (count < 0) return std::nullopt;
        return std::string(buffer, static_cast<std::size_t>(count));
    }

  private:
    int fd_ = -1;
};

// Sets NOTIFY_SOCKET for one test and restores what was there.
class ScopedNotifySocket {
  public:
    explicit ScopedNotifySocket(const std::optional<std::string>& value) {
        if (const char* old = std::getenv("NOTIFY_SOCKET")) old_ = old;
        if (value)
            ::setenv("NOTIFY_SOCKET", value->c_str(), 1);
        else
            ::unsetenv("NOTIFY_SOCKET");
    }
    ~ScopedNotifySocket() {
        if (old_)
            ::setenv("NOTIFY_SOCKET", old_->c_str(), 1);
        else
            ::unsetenv("NOTIFY_SOCKET");
    }

  private:
    std::optional<std::string> old_;
};

TEST_CASE("sd_notify: a state reaches a path socket exactly", "[sd_notify]") {
    TempDir dir;
    const std::string path = dir.file("notify");
    NotifyListener listener(path);
    ScopedNotifySocket env(path);

    sd_notify_state("READY=1");
    CHECK(listener.receive() == std::optional<std::string>("READY=1"));

    sd_notify_state("READY=1\nSTATUS=serving on /run/disksweep/disksweepd.sock");
    CHECK(listener.receive() ==
          std::optional<std::string>("READY=1\nSTATUS=serving on /run/disksweep/disksweepd.sock"));
    sd_notify_state("STOPPING=1");
    CHECK(listener.receive() == std::optional<std::string>("STOPPING=1"));
    CHECK_FALSE(listener.receive(50));  // nothing more
}

TEST_CASE("sd_notify: the abstract namespace form @name", "[sd_notify]") {
    const std::string name =
        "@disksweep-test-notify-" + std::to_string(::getpid()) + "-" + std::to_string(std::rand());
    NotifyListener listener(name);
    ScopedNotifySocket env(name);
    sd_notify_state("READY=1");
    CHECK(listener.receive() == std::optional<std::string>("READY=1"));
}

TEST_CASE("sd_notify: without a usable NOTIFY_SOCKET nothing is sent and nothing breaks",
          "[sd_notify]") {
    TempDir dir;
    const std::string path = dir.file("notify");
    NotifyListener listener(path);
    SECTION("unset") {
        ScopedNotifySocket env(std::nullopt);
        sd_notify_state("READY=1");
    }
    SECTION("empty") {
        ScopedNotifySocket env{std::string()};
        sd_notify_state("READY=1");
    }
    SECTION("too long for sun_path") {
        ScopedNotifySocket env(path + std::string(200, 'x'));
        sd_notify_state("READY=1");
    }
    SECTION("nobody listening there") {
        ScopedNotifySocket env(dir.file("nobody"));
        sd_notify_state("READY=1");
    }
    CHECK_FALSE(listener.receive(50));
}

}  // namespace
}  // namespace ds
