// The daemon's API server: HTTP/1.1 over a unix stream socket, one request per
// connection (Connection: close), Content-Length request bodies, whole or
// chunked (streamed) responses.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "common/http_message.h"
#include "common/result.h"

namespace ds::http {

using Handler = std::function<Response(const Request&)>;

// Bounds that keep one misbehaving client from pinning the server.
struct ServerLimits {
    // Whole request (head + body) must arrive within this; else 408 and close.
    std::chrono::milliseconds request_timeout = std::chrono::seconds(10);
    // A send that cannot progress for this long ends the connection (a
    // stream's ChunkSink::write then returns false).
    std::chrono::milliseconds write_timeout = std::chrono::seconds(30);
    // Connections served at once; the next one gets 503 and is closed.
    std::size_t max_connections = 64;
    // Request heads (request line + headers) larger than this get 431.
    std::size_t max_head_bytes = 64u << 10;
};

// Serves `handler` on a unix socket, a thread per connection (bounded). The
// handler must not throw; the server turns any escaped exception into a 500.
class UnixServer {
  public:
    UnixServer(std::string socket_path, Handler handler, mode_t socket_mode = 0660,
               ServerLimits limits = {});
    ~UnixServer();
    UnixServer(const UnixServer&) = delete;
    UnixServer& operator=(const UnixServer&) = delete;

    // Binds (replacing a stale socket file, refusing a live one) and starts
    // accepting in a background thread.
    Status start();
    // Stops accepting, removes the socket file (if still ours), shuts down open
    // connections (so stream writes fail) and waits for connection threads.
    // A stream producer blocked elsewhere must notice on its own. Idempotent.
    void stop();
    const std::string& socket_path() const { return socket_path_; }

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    std::string socket_path_;
};

}  // namespace ds::http
