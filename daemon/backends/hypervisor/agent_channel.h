// The line transport between the daemon and one guest's agent, opened by the
// hypervisor backend (Hypervisor::open_agent_channel): with libvirt it is the
// virtio-serial channel QEMU serves on a unix socket; a backend without a
// stream (Proxmox: qemu-guest-agent exec and file transfer) implements the
// same two calls its own way. The run executor and the KVM probe speak the
// agent protocol (daemon/run/agent_session.h) over it and never dial
// anything themselves.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/file_descriptor.h"
#include "common/protocol.h"
#include "common/result.h"

namespace ds {

using Deadline = std::chrono::steady_clock::time_point;

class AgentChannel {
  public:
    virtual ~AgentChannel() = default;
    // The next line from the guest, without its '\n'. Errors as
    // protocol::LineReader::read_line: errc::kTimeout when the deadline
    // passes, errc::kProtocol for a line over protocol::kMaxMessageBytes,
    // errc::kIo when the channel closed.
    virtual Result<std::string> read_line(Deadline deadline) = 0;
    // Writes `data` (one or more complete lines) entirely, or fails with
    // errc::kIo.
    virtual Status write(std::string_view data) = 0;
};

// A connected stream socket, owned, read through a bounded LineReader.
class SocketAgentChannel : public AgentChannel {
  public:
    explicit SocketAgentChannel(FileDescriptor fd);

    Result<std::string> read_line(Deadline deadline) override;
    Status write(std::string_view data) override;

  private:
    FileDescriptor fd_;  // before reader_, which reads it
    protocol::LineReader reader_;
};

// Connects to the unix socket a guest's agent channel is served on, retrying
// every 100 ms on `clock` until `deadline`, a point on it (QEMU creates the
// socket while it starts). errc::kTimeout with the last connect error,
// errc::kCancelled as soon as *cancelled is set, errc::kInvalidArgument for a
// path too long for a socket address.
Result<std::unique_ptr<AgentChannel>> connect_unix_agent_channel(const std::string& socket_path,
                                                                 Deadline deadline,
                                                                 const std::atomic<bool>* cancelled,
                                                                 const Clock& clock = real_clock());

}  // namespace ds
