// A libvirt stream (virDomainOpenChannel, virDomainOpenConsole) as a
// connected unix socket, so that a guest reached through the libvirt
// connection alone (a remote host: issue 20) is read with the same line
// transport and console capture as a guest whose sockets are on this machine.
//
// A pump thread copies bytes both ways between the stream and one end of a
// socketpair; the daemon uses the other end (local_end()). The stream is
// non-blocking, and an event callback on libvirt's event loop wakes the pump
// when it becomes readable (a short poll slice covers an event libvirt does
// not deliver). When either side ends (the guest's QEMU closes the channel,
// the connection dies, the daemon closes its end) the pump ends the other,
// so a reader sees EOF (errc::kIo "channel closed") instead of hanging.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/file_descriptor.h"
#include "common/result.h"

struct _virStream;
struct _virConnect;

namespace ds {

class StreamBridge {
  public:
    // Takes `stream` (opened with VIR_STREAM_NONBLOCK on `connection` and
    // attached to a channel or console already) and starts the pump. `what`
    // names it in errors ("agent channel of GUEST on URI"). On error the
    // stream is aborted and freed. The pump also ends when the connection
    // dies: a remote stream whose libvirtd is gone reports no data, never
    // an end (libvirt 9.0), so the bridge asks virConnectIsAlive.
    static Result<std::unique_ptr<StreamBridge>> start(_virConnect* connection, _virStream* stream,
                                                       std::string what);
    // Stops the pump (the stream is finished or aborted) and closes both ends
    // of the socketpair that the bridge still holds.
    ~StreamBridge();
    StreamBridge(const StreamBridge&) = delete;
    StreamBridge& operator=(const StreamBridge&) = delete;

    // The daemon's end, once: a connected SOCK_STREAM unix socket.
    FileDescriptor take_local_end() { return std::move(local_end_); }
    // Why the stream ended, "" while it runs or when it ended cleanly.
    std::string failure() const;

  private:
    // A pipe the event callback writes a byte to. Shared with the callback,
    // which libvirt may still run while the bridge removes it: the last of
    // the two to let go closes the pipe.
    struct Wake {
        FileDescriptor read_end;
        FileDescriptor write_end;
    };
    StreamBridge(_virConnect* connection, _virStream* stream, std::string what,
                 FileDescriptor pump_end, FileDescriptor local_end, std::shared_ptr<Wake> wake);
    void pump_loop();
    // One pass stream -> socket; false once the stream ended or failed.
    bool drain_stream();
    // One pass socket -> stream; false once the daemon's end closed or the
    // stream failed.
    bool forward_socket();
    void fail(const std::string& why);
    static void on_stream_event(_virStream* stream, int events, void* opaque);
    static void release_wake(void* opaque);

    _virConnect* connection_;  // referenced while the bridge lives
    _virStream* stream_;
    std::string what_;
    FileDescriptor pump_end_;
    FileDescriptor local_end_;
    std::shared_ptr<Wake> wake_;
    bool callback_added_ = false;
    std::atomic<bool> stop_{false};
    mutable std::mutex failure_mutex_;
    std::string failure_;  // guarded by failure_mutex_
    std::thread pump_;
};

}  // namespace ds
