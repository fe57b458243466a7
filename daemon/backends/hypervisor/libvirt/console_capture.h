// The guest's serial console, captured by the daemon with a bound on disk and
// memory. QEMU serves the console on a unix socket (libvirt <serial
// type='unix'> in bind mode); a capture thread reads it and appends to the
// run's console log, and whenever the log passes kConsoleLogMaxBytes it is
// rewritten to its last kConsoleLogKeepBytes. The daemon is the only writer,
// so trimming loses nothing but the old head, and a guest that never stops
// printing costs at most kConsoleLogMaxBytes of disk and one read buffer of
// memory. (QEMU writing the file itself cannot be bounded: a file chardev
// has no size limit.)
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>

#include "common/file_descriptor.h"

namespace ds {

inline constexpr std::size_t kConsoleLogMaxBytes = 4u << 20;
inline constexpr std::size_t kConsoleLogKeepBytes = 2u << 20;

class ConsoleCapture {
  public:
    // Starts a thread that connects to `socket_path` (retrying while QEMU
    // starts) and appends what it reads to `log_path` (created empty).
    ConsoleCapture(std::string socket_path, std::string log_path,
                   std::size_t max_bytes = kConsoleLogMaxBytes,
                   std::size_t keep_bytes = kConsoleLogKeepBytes);
    // The same for a console already connected (a libvirt stream's bridge,
    // stream_bridge.h): reads `connected` until it ends.
    ConsoleCapture(FileDescriptor connected, std::string log_path,
                   std::size_t max_bytes = kConsoleLogMaxBytes,
                   std::size_t keep_bytes = kConsoleLogKeepBytes);
    // Stops the thread (it drains what is readable first) and closes the log.
    ~ConsoleCapture();
    ConsoleCapture(const ConsoleCapture&) = delete;
    ConsoleCapture& operator=(const ConsoleCapture&) = delete;

    // Bytes read from the guest so far (also those trimmed away).
    std::size_t bytes_read() const { return bytes_read_.load(); }

  private:
    void start();  // opens the log (emptied) and starts the thread
    void capture_loop();
    int connect_with_retry();
    void append(const char* data, std::size_t size);
    void trim();

    std::string socket_path_;
    FileDescriptor connected_;  // given at construction, else connected by the thread
    std::string log_path_;
    std::size_t max_bytes_;
    std::size_t keep_bytes_;
    FileDescriptor log_fd_;
    std::size_t log_size_ = 0;
    std::atomic<bool> stop_{false};
    std::atomic<std::size_t> bytes_read_{0};
    std::thread thread_;
};

// The last `max_bytes` of a console log file ("" when there is none).
std::string read_console_tail(const std::string& log_path, std::size_t max_bytes);

}  // namespace ds
