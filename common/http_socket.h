// The socket I/O the HTTP server and client share (http_server.cpp,
// http_client.cpp): unix addresses, bounded sends, reads with a deadline.
#pragma once

#include <sys/un.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace ds::http {

using Steady = std::chrono::steady_clock;

// The address of the unix socket at `path`; errc::kInvalidArgument when the
// path does not fit sun_path.
Result<sockaddr_un> unix_address(const std::string& path);

// Bounds each send on `fd` (SO_SNDTIMEO); on Linux this bounds a unix
// connect() waiting for a full backlog too.
void set_send_timeout(int fd, std::chrono::milliseconds timeout);

// Sends all of `data`. False when the peer is gone (EPIPE, ECONNRESET) or the
// send timeout (SO_SNDTIMEO) expired (EAGAIN); MSG_NOSIGNAL keeps SIGPIPE away.
bool send_all(int fd, std::string_view data);

enum class ReadOutcome { kData, kEndOfStream, kTimedOut, kFailed };

// Reads what is available into `buffer`, waiting until `deadline` at most
// (no deadline: wait indefinitely). On kFailed, `error_number` holds errno.
ReadOutcome read_some(int fd, std::string& buffer, std::optional<Steady::time_point> deadline,
                      int& error_number);

}  // namespace ds::http
