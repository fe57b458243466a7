#include "daemon/backends/hypervisor/libvirt/stream_bridge.h"

#include <fcntl.h>
#include <libvirt/libvirt.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "daemon/backends/hypervisor/libvirt/libvirt_error.h"

namespace ds {

namespace {

// How long the pump sleeps in poll() when neither side has news: the bound
// on how late an event libvirt does not deliver is noticed, and on how long
// the destructor waits for the pump.
constexpr int kPollSliceMs = 50;
constexpr std::size_t kChunkBytes = 64 * 1024;

Status make_pipe(FileDescriptor& read_end, FileDescriptor& write_end) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
        return make_error(errc::kIo, std::string("pipe: ") + std::strerror(errno));
    }
    read_end = FileDescriptor(fds[0]);
    write_end = FileDescriptor(fds[1]);
    return ok_status();
}

// Writes all of `data` to the socket, waiting while it is full, unless
// `stop` is set first. False when the daemon's end is gone or stop was set.
bool write_socket(int fd, const char* data, std::size_t size, const std::atomic<bool>& stop) {
    while (size > 0) {
        const ssize_t written = ::send(fd, data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (written > 0) {
            data += written;
            size -= static_cast<std::size_t>(written);
            continue;
        }
        if (written < 0 && errno == EINTR) continue;
        if (written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (stop) return false;
            pollfd writable{fd, POLLOUT, 0};
            (void)::poll(&writable, 1, kPollSliceMs);
            continue;
        }
        return false;
    }
    return true;
}

}  // namespace

Result<std::unique_ptr<StreamBridge>> StreamBridge::start(virConnectPtr connection,
                                                          virStreamPtr stream, std::string what) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
        virStreamAbort(stream);
        virStreamFree(stream);
        return make_error(errc::kIo, "socketpair for " + what + ": " + std::strerror(errno));
    }
    auto wake = std::make_shared<Wake>();
    if (Status piped = make_pipe(wake->read_end, wake->write_end); !piped.ok()) {
        ::close(pair[0]);
        ::close(pair[1]);
        virStreamAbort(stream);
        virStreamFree(stream);
        return piped.error();
    }
    return std::unique_ptr<StreamBridge>(new StreamBridge(connection, stream, std::move(what),
                                                          FileDescriptor(pair[0]),
                                                          FileDescriptor(pair[1]), wake));
}

StreamBridge::StreamBridge(virConnectPtr connection, virStreamPtr stream, std::string what,
                           FileDescriptor pump_end, FileDescriptor local_end,
                           std::shared_ptr<Wake> wake)
    : connection_(connection),
      stream_(stream),
      what_(std::move(what)),
      pump_end_(std::move(pump_end)),
      local_end_(std::move(local_end)),
      wake_(std::move(wake)) {
    virConnectRef(connection_);
    // The callback's own reference to the pipe, released by libvirt when the
    // callback is removed (release_wake).
    auto* reference = new std::shared_ptr<Wake>(wake_);
    const int events = VIR_STREAM_EVENT_READABLE | VIR_STREAM_EVENT_ERROR | VIR_STREAM_EVENT_HANGUP;
    callback_added_ =
        virStreamEventAddCallback(stream_, events, on_stream_event, reference, release_wake) == 0;
    if (!callback_added_) {
        delete reference;
        reset_libvirt_error();  // the poll slice alone then paces the pump
    }
    pump_ = std::thread([this] { pump_loop(); });
}

StreamBridge::~StreamBridge() {
    stop_ = true;
    if (pump_.joinable()) pump_.join();
    if (callback_added_) virStreamEventRemoveCallback(stream_);
    // Finished streams ignore an abort; an open one (the guest still runs)
    // is ended without waiting for its other side.
    virStreamAbort(stream_);
    virStreamFree(stream_);
    virConnectClose(connection_);  // our reference only
    reset_libvirt_error();
}

void StreamBridge::on_stream_event(virStreamPtr /*stream*/, int /*events*/, void* opaque) {
    const auto& wake = *static_cast<std::shared_ptr<Wake>*>(opaque);
    const char byte = 1;
    // A full pipe already says "news": nothing is lost by dropping the byte.
    (void)!::write(wake->write_end.get(), &byte, 1);
}

void StreamBridge::release_wake(void* opaque) {
    delete static_cast<std::shared_ptr<Wake>*>(opaque);
}

std::string StreamBridge::failure() const {
    std::lock_guard lock(failure_mutex_);
    return failure_;
}

void StreamBridge::fail(const std::string& why) {
    std::lock_guard lock(failure_mutex_);
    if (failure_.empty()) failure_ = what_ + ": " + why;
}

void StreamBridge::pump_loop() {
    while (!stop_) {
        if (!drain_stream() || !forward_socket()) break;
        if (virConnectIsAlive(connection_) != 1) {
            fail("the libvirt connection was lost");
            break;
        }
        pollfd watch[2] = {{pump_end_.get(), POLLIN, 0}, {wake_->read_end.get(), POLLIN, 0}};
        const int ready = ::poll(watch, 2, kPollSliceMs);
        if (ready > 0 && (watch[1].revents & POLLIN) != 0) {
            std::array<char, 64> bytes{};
            while (::read(wake_->read_end.get(), bytes.data(), bytes.size()) > 0) {
            }
        }
    }
    // The daemon's reader sees EOF; the stream is aborted by the destructor.
    pump_end_.reset();
}

bool StreamBridge::drain_stream() {
    std::array<char, kChunkBytes> buffer{};
    for (;;) {
        const int got = virStreamRecv(stream_, buffer.data(), buffer.size());
        if (got == -2) return true;  // nothing more now
        if (got == 0) {
            virStreamFinish(stream_);
            reset_libvirt_error();
            return false;  // the guest's side closed: EOF for the daemon
        }
        if (got < 0) {
            fail(libvirt_error(errc::kIo, "stream failed", "").message);
            return false;
        }
        if (!write_socket(pump_end_.get(), buffer.data(), static_cast<std::size_t>(got), stop_)) {
            return false;
        }
    }
}

bool StreamBridge::forward_socket() {
    std::array<char, kChunkBytes> buffer{};
    for (;;) {
        const ssize_t got = ::recv(pump_end_.get(), buffer.data(), buffer.size(), MSG_DONTWAIT);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
        if (got <= 0) return false;  // the daemon closed its end
        std::size_t sent = 0;
        while (sent < static_cast<std::size_t>(got)) {
            const int wrote =
                virStreamSend(stream_, buffer.data() + sent, static_cast<std::size_t>(got) - sent);
            if (wrote == -2) {
                if (stop_) return false;
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
                continue;
            }
            if (wrote < 0) {
                fail(libvirt_error(errc::kIo, "stream failed", "").message);
                return false;
            }
            sent += static_cast<std::size_t>(wrote);
        }
    }
}

}  // namespace ds
