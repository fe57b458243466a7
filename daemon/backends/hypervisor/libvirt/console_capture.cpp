#include "daemon/backends/hypervisor/libvirt/console_capture.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "common/file_descriptor.h"

namespace ds {

namespace {
constexpr auto kPollSlice = std::chrono::milliseconds(100);

bool write_fully(int fd, const char* data, std::size_t size) {
    while (size > 0) {
        const ssize_t written = ::write(fd, data, size);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) return false;
        data += written;
        size -= static_cast<std::size_t>(written);
    }
    return true;
}
}  // namespace

ConsoleCapture::ConsoleCapture(std::string socket_path, std::string log_path, std::size_t max_bytes,
                               std::size_t keep_bytes)
    : socket_path_(std::move(socket_path)),
      log_path_(std::move(log_path)),
      max_bytes_(max_bytes),
      keep_bytes_(std::min(keep_bytes, max_bytes)) {
    start();
}

ConsoleCapture::ConsoleCapture(FileDescriptor connected, std::string log_path,
                               std::size_t max_bytes, std::size_t keep_bytes)
    : connected_(std::move(connected)),
      log_path_(std::move(log_path)),
      max_bytes_(max_bytes),
      keep_bytes_(std::min(keep_bytes, max_bytes)) {
    start();
}

void ConsoleCapture::start() {
    log_fd_ =
        FileDescriptor(::open(log_path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    thread_ = std::thread([this] { capture_loop(); });
}

ConsoleCapture::~ConsoleCapture() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
}

int ConsoleCapture::connect_with_retry() {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (socket_path_.size() >= sizeof address.sun_path) return -1;
    std::memcpy(address.sun_path, socket_path_.c_str(), socket_path_.size());
    while (!stop_) {
        FileDescriptor fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (!fd.valid()) return -1;
        if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0)
            return fd.release();
        fd.reset();
        std::this_thread::sleep_for(kPollSlice);
    }
    return -1;
}

void ConsoleCapture::capture_loop() {
    const FileDescriptor connection =
        connected_.valid() ? std::move(connected_) : FileDescriptor(connect_with_retry());
    if (!connection.valid()) return;
    const int fd = connection.get();
    std::array<char, 64 * 1024> buffer{};
    // After stop_, keep draining what is already readable, then leave.
    for (;;) {
        pollfd readable{fd, POLLIN, 0};
        const int ready = ::poll(&readable, 1, stop_ ? 0 : static_cast<int>(kPollSlice.count()));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) {
            if (stop_) break;
            continue;
        }
        const ssize_t got = ::read(fd, buffer.data(), buffer.size());
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;  // QEMU closed the console: the guest is gone
        bytes_read_ += static_cast<std::size_t>(got);
        append(buffer.data(), static_cast<std::size_t>(got));
    }
}

void ConsoleCapture::append(const char* data, std::size_t size) {
    if (!log_fd_.valid()) return;
    if (!write_fully(log_fd_.get(), data, size)) return;
    log_size_ += size;
    if (log_size_ > max_bytes_) trim();
}

// Keeps the last keep_bytes_: read them, rewrite the file from the start.
void ConsoleCapture::trim() {
    std::vector<char> tail(keep_bytes_);
    const off_t from = static_cast<off_t>(log_size_ - keep_bytes_);
    const ssize_t got = ::pread(log_fd_.get(), tail.data(), tail.size(), from);
    if (got < 0) return;
    if (::ftruncate(log_fd_.get(), 0) != 0 || ::lseek(log_fd_.get(), 0, SEEK_SET) != 0) return;
    log_size_ = 0;
    if (write_fully(log_fd_.get(), tail.data(), static_cast<std::size_t>(got))) {
        log_size_ = static_cast<std::size_t>(got);
    }
}

std::string read_console_tail(const std::string& log_path, std::size_t max_bytes) {
    const FileDescriptor fd(::open(log_path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return "";
    struct stat info {};
    std::string text;
    if (::fstat(fd.get(), &info) == 0 && info.st_size > 0) {
        const auto size = static_cast<std::size_t>(info.st_size);
        const std::size_t take = std::min(size, max_bytes);
        text.resize(take);
        const ssize_t got = ::pread(fd.get(), text.data(), take, static_cast<off_t>(size - take));
        text.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
    }
    return text;
}

}  // namespace ds
