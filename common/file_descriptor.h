// Ownership of a POSIX file descriptor: closed exactly once, when its owner
// goes away or is given another one.
#pragma once

#include <unistd.h>

#include <utility>

namespace ds {

// Move-only. A moved-from FileDescriptor holds none (valid() is false); move
// assignment closes the descriptor it held before taking the other's.
class FileDescriptor {
  public:
    FileDescriptor() = default;
    // Takes ownership of `fd` (-1, or any negative value, for none).
    explicit FileDescriptor(int fd) : fd_(fd) {}
    ~FileDescriptor() { reset(); }

    FileDescriptor(const FileDescriptor&) = delete;
    FileDescriptor& operator=(const FileDescriptor&) = delete;
    FileDescriptor(FileDescriptor&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    FileDescriptor& operator=(FileDescriptor&& other) noexcept {
        if (this != &other) {
            reset();
            fd_ = std::exchange(other.fd_, -1);
        }
        return *this;
    }

    int get() const { return fd_; }
    bool valid() const { return fd_ >= 0; }
    // Closes the descriptor held (if any); holds none afterwards.
    void reset() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }
    // Gives up ownership without closing: the caller closes what it returns.
    int release() { return std::exchange(fd_, -1); }

  private:
    int fd_ = -1;
};

}  // namespace ds
