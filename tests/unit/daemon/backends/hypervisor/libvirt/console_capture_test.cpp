// The console capture keeps a guest's serial output bounded on disk: a guest
// that never stops printing leaves only the tail.
#include "daemon/backends/hypervisor/libvirt/console_capture.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <string>

#include "support/temp_dir.h"

using namespace ds;

namespace {

// Stands in for QEMU's console chardev: a listening unix socket.
int listen_on(const std::string& path) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    REQUIRE(path.size() < sizeof address.sun_path);
    std::memcpy(address.sun_path, path.c_str(), path.size());
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(fd, 1) == 0);
    return fd;
}

void write_all(int fd, const std::string& data) {
    std::size_t done = 0;
    while (done < data.size()) {
        const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
        REQUIRE(n > 0);
        done += static_cast<std::size_t>(n);
    }
}

std::size_t file_size(const std::string& path) {
    struct stat info {};
    REQUIRE(::stat(path.c_str(), &info) == 0);
    return static_cast<std::size_t>(info.st_size);
}

}  // namespace

TEST_CASE("a console that never stops printing keeps only its tail", "[console]") {
    test::TempDir dir("console-capture");
    const std::string log = dir.file("guest.console.log");
    const int server = listen_on((log + ".sock"));
    {
        // Small bounds so the test moves little data: 64 KiB, keep 16 KiB.
        ConsoleCapture capture((log + ".sock"), log, 64 << 10, 16 << 10);
        const int guest = ::accept(server, nullptr, nullptr);
        REQUIRE(guest >= 0);
        std::string line(1023, 'x');
        line += '\n';
        for (int i = 0; i < 1000; ++i) write_all(guest, line);  // ~1 MiB
        write_all(guest, "the last words\n");
        ::close(guest);  // QEMU ends: the capture reads to the end
        for (int i = 0; i < 100 && capture.bytes_read() < 1000 * 1024 + 15; ++i) ::usleep(20000);
        CHECK(capture.bytes_read() == 1000 * 1024 + 15);
    }
    ::close(server);
    const std::size_t size = file_size(log);
    CHECK(size <= 64u << 10);
    CHECK(size >= 16u << 10);
    const std::string tail = read_console_tail(log, 15);
    CHECK(tail == "the last words\n");
}

TEST_CASE("a console tail of a missing log is empty", "[console]") {
    CHECK(read_console_tail("/nonexistent/disksweep/console.log", 100).empty());
}
