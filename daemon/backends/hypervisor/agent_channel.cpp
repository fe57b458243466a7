#include "daemon/backends/hypervisor/agent_channel.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ds {

namespace {
constexpr auto kConnectRetryInterval = std::chrono::milliseconds(100);
}  // namespace

SocketAgentChannel::SocketAgentChannel(FileDescriptor fd)
    : fd_(std::move(fd)), reader_(fd_.get()) {}

Result<std::string> SocketAgentChannel::read_line(Deadline deadline) {
    return reader_.read_line(deadline);
}

Status SocketAgentChannel::write(std::string_view data) {
    return protocol::write_all(fd_.get(), data);
}

Result<std::unique_ptr<AgentChannel>> connect_unix_agent_channel(const std::string& socket_path,
                                                                 Deadline deadline,
                                                                 const std::atomic<bool>* cancelled,
                                                                 const Clock& clock) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (socket_path.size() >= sizeof address.sun_path) {
        return make_error(errc::kInvalidArgument, "agent socket path too long: " + socket_path);
    }
    std::strncpy(address.sun_path, socket_path.c_str(), sizeof address.sun_path - 1);
    while (true) {
        FileDescriptor fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (!fd.valid())
            return make_error(errc::kIo, std::string("socket: ") + std::strerror(errno));
        if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
            return std::unique_ptr<AgentChannel>(
                std::make_unique<SocketAgentChannel>(std::move(fd)));
        }
        const std::string last_error = std::strerror(errno);
        fd.reset();
        if (cancelled && cancelled->load()) return make_error(errc::kCancelled, "run cancelled");
        if (clock.now() >= deadline) {
            return make_error(errc::kTimeout, "cannot connect to the agent channel " + socket_path +
                                                  ": " + last_error);
        }
        clock.sleep_for(kConnectRetryInterval);
    }
}

}  // namespace ds
