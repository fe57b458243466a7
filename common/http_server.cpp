// The unix-socket HTTP server (see http_server.h).
//
// Wire rules this file enforces: a request head is at most
// ServerLimits::max_head_bytes and the whole request arrives within
// ServerLimits::request_timeout; nothing may follow the body (one request per
// connection); every answer ends with Connection: close.
#include "common/http_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <list>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "common/errno_text.h"
#include "common/file_descriptor.h"
#include "common/http_socket.h"
#include "common/text.h"

namespace ds::http {
namespace {

std::string error_body(std::string_view code, std::string_view message) {
    return error_envelope(code, message).dump();
}

std::string response_head(const Response& response, bool chunked) {
    std::string head =
        "HTTP/1.1 " + std::to_string(response.status) + " " + status_text(response.status) + "\r\n";
    if (!response.content_type.empty()) head += "Content-Type: " + response.content_type + "\r\n";
    if (chunked) {
        head += "Transfer-Encoding: chunked\r\n";
    } else {
        head += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
    }
    for (const auto& [name, value] : response.headers) {
        // The framing headers are ours; a handler cannot override them.
        std::string lowered = ascii_lower(name);
        if (lowered == "content-length" || lowered == "transfer-encoding" ||
            lowered == "connection" || lowered == "content-type") {
            continue;
        }
        if (!is_token(name) || !is_safe_header_value(value)) continue;  // never split the head
        head += name + ": " + value + "\r\n";
    }
    head += "Connection: close\r\n\r\n";
    return head;
}

Response error_response(int status, const Error& error) {
    Response response;
    response.status = status;
    response.body = error_body(error.code, error.message);
    return response;
}

// Writes a streamed body as HTTP chunks.
class SocketChunkSink final : public ChunkSink {
  public:
    explicit SocketChunkSink(int fd) : fd_(fd) {}
    bool write(std::string_view data) override {
        if (broken_) return false;
        if (data.empty()) return true;  // an empty chunk would end the stream
        char size[32];
        auto [end, ec] = std::to_chars(size, size + sizeof size, data.size(), 16);
        std::string frame(size, end);
        frame += "\r\n";
        frame.append(data);
        frame += "\r\n";
        broken_ = !send_all(fd_, frame);
        return !broken_;
    }
    bool finish() { return !broken_ && send_all(fd_, "0\r\n\r\n"); }

  private:
    int fd_;
    bool broken_ = false;
};

}  // namespace

struct UnixServer::Impl {
    std::string socket_path;
    Handler handler;
    mode_t socket_mode;
    ServerLimits limits;

    FileDescriptor listen_socket;
    FileDescriptor wake_read;  // stop() writes to wake_write to end the accept loop
    FileDescriptor wake_write;
    ino_t socket_inode = 0;  // to unlink only the file we created
    std::thread accept_thread;
    bool started = false;

    struct Connection {
        std::thread thread;
        int fd = -1;  // owned by the thread; shut down (not closed) by stop()
        bool finished = false;
    };
    std::mutex mutex;
    std::list<Connection> connections;  // GUARDED_BY(mutex)
    bool stopping = false;              // GUARDED_BY(mutex)

    void accept_loop();
    void serve(int fd);
    void reap_finished_locked(std::vector<std::thread>& to_join);
};

void UnixServer::Impl::reap_finished_locked(std::vector<std::thread>& to_join) {
    for (auto it = connections.begin(); it != connections.end();) {
        if (it->finished) {
            to_join.push_back(std::move(it->thread));
            it = connections.erase(it);
        } else {
            ++it;
        }
    }
}

void UnixServer::Impl::accept_loop() {
    for (;;) {
        pollfd fds[2] = {{listen_socket.get(), POLLIN, 0}, {wake_read.get(), POLLIN, 0}};
        int ready = ::poll(fds, 2, -1);
        if (ready < 0) {
            if (errno == EINTR) continue;
            return;
        }
        if (fds[1].revents != 0) return;  // stop() asked us to end
        int fd = ::accept4(listen_socket.get(), nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) {
            // ECONNABORTED, EINTR: the next poll simply retries. EMFILE/ENFILE:
            // back off briefly instead of spinning on a full descriptor table.
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
            }
            continue;
        }
        std::vector<std::thread> finished;
        std::unique_lock lock(mutex);
        reap_finished_locked(finished);
        if (stopping) {
            ::close(fd);
        } else if (connections.size() >= limits.max_connections) {
            lock.unlock();
            set_send_timeout(fd, std::chrono::milliseconds(200));
            Response busy = error_response(
                503, make_error(errc::kUnavailable,
                                "server busy: " + std::to_string(limits.max_connections) +
                                    " connections open; retry later"));
            send_all(fd, response_head(busy, false) + busy.body);
            ::shutdown(fd, SHUT_WR);
            ::close(fd);
        } else {
            connections.push_back(Connection{});
            auto connection = std::prev(connections.end());
            connection->fd = fd;
            connection->thread = std::thread([this, fd, connection] {
                serve(fd);
                std::lock_guard done_lock(mutex);
                ::close(fd);
                connection->fd = -1;
                connection->finished = true;
            });
        }
        if (lock.owns_lock()) lock.unlock();
        for (auto& thread : finished) thread.join();
    }
}

namespace {

// Who is at the other end of a Unix socket; -1/-1/0 when the kernel does not say.
struct PeerCredentials {
    uid_t uid = static_cast<uid_t>(-1);
    gid_t gid = static_cast<gid_t>(-1);
    pid_t pid = 0;
};

PeerCredentials peer_credentials(int fd) {
    PeerCredentials peer;
    ucred credentials{};
    socklen_t credentials_size = sizeof credentials;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &credentials_size) == 0) {
        peer.uid = credentials.uid;
        peer.gid = credentials.gid;
        peer.pid = credentials.pid;
    }
    return peer;
}

// The handler's response; an exception from it becomes a 500.
Response call_handler(const Handler& handler, const Request& request) {
    try {
        return handler(request);
    } catch (const std::exception& e) {
        return error_response(
            500, make_error(errc::kInternal, "handler for " + request.method + " " + request.path +
                                                 " failed: " + e.what()));
    } catch (...) {
        return error_response(500, make_error(errc::kInternal, "handler for " + request.method +
                                                                   " " + request.path + " failed"));
    }
}

// One connection's single exchange: reading its request within the limits,
// and answering. A step that refuses the request answers the refusal itself.
class Exchange {
  public:
    // The whole request must arrive before the deadline set here: a client
    // sending one byte at a time cannot hold the thread longer than
    // request_timeout.
    Exchange(int fd, const ServerLimits& limits)
        : fd_(fd), limits_(limits), deadline_(Steady::now() + limits.request_timeout) {}

    // The request without peer credentials, or nullopt when the exchange is
    // over (refused, or the connection failed or closed).
    std::optional<Request> read_request() {
        std::size_t head_end = std::string::npos;
        if (!read_head(head_end)) return std::nullopt;
        RequestHead head;
        if (auto refused =
                parse_request_head(std::string_view(buffer_).substr(0, head_end), head)) {
            refuse(refused->status, refused->error);
            return std::nullopt;
        }
        const std::size_t body_start = head_end + 4;
        if (!read_body(head, body_start)) return std::nullopt;
        Request request = std::move(head.request);
        request.body = buffer_.substr(body_start);
        buffer_ = {};
        return request;
    }

    // Sends `response`, whole or (with a stream) chunked.
    void answer(Response& response) {
        if (!response.stream) {
            if (send_all(fd_, response_head(response, false) + response.body)) close_gracefully();
            return;
        }
        if (!send_all(fd_, response_head(response, true))) return;
        SocketChunkSink sink(fd_);
        try {
            response.stream(sink);
        } catch (...) {
            // Headers are out: all we can do is end without the final chunk, so
            // the client sees a truncated stream rather than a clean end.
            return;
        }
        if (sink.finish()) close_gracefully();
    }

  private:
    // Reads more of the request into buffer_: false when the exchange is over
    // (timed out and refused, failed, or ended - refused with
    // `at_end_of_stream()`'s error when it gives one).
    template <class EndError>
    bool read_more(const EndError& at_end_of_stream) {
        switch (read_some(fd_, buffer_, deadline_, error_number_)) {
            case ReadOutcome::kData:
                return true;
            case ReadOutcome::kTimedOut:
                return timed_out();
            case ReadOutcome::kEndOfStream:
                if (std::optional<Error> error = at_end_of_stream()) refuse(400, *error);
                return false;
            case ReadOutcome::kFailed:
                return false;
        }
        return false;
    }

    // Reads until the blank line after the headers; sets head_end to where it starts.
    bool read_head(std::size_t& head_end) {
        while ((head_end = buffer_.find("\r\n\r\n")) == std::string::npos) {
            if (buffer_.size() > limits_.max_head_bytes) return head_too_large();
            const bool more = read_more([this]() -> std::optional<Error> {
                if (buffer_.empty()) return std::nullopt;
                return make_error(errc::kProtocol,
                                  "connection closed before the request head ended");
            });
            if (!more) return false;
        }
        if (head_end > limits_.max_head_bytes) return head_too_large();
        return true;
    }

    // Reads the Content-Length bytes of body after body_start (saying
    // "100 Continue" first if the client waits for it), and nothing more.
    bool read_body(const RequestHead& head, std::size_t body_start) {
        if (head.expects_continue && buffer_.size() == body_start && head.content_length > 0) {
            if (!send_all(fd_, "HTTP/1.1 100 Continue\r\n\r\n")) return false;
        }
        while (buffer_.size() < body_start + head.content_length) {
            const bool more = read_more([&]() -> std::optional<Error> {
                return make_error(errc::kProtocol,
                                  "request body truncated: Content-Length says " +
                                      std::to_string(head.content_length) + " bytes, " +
                                      std::to_string(buffer_.size() - body_start) + " arrived");
            });
            if (!more) return false;
        }
        if (buffer_.size() > body_start + head.content_length) {
            refuse(400, make_error(errc::kProtocol,
                                   "data after the request body (one request per "
                                   "connection; no pipelining)"));
            return false;
        }
        return true;
    }

    // After answering, let the client read everything: closing with unread
    // input would reset the connection and could discard our response.
    void close_gracefully() {
        ::shutdown(fd_, SHUT_WR);
        std::string discard;
        auto deadline = Steady::now() + std::chrono::milliseconds(500);
        int error_number = 0;
        for (std::size_t drained = 0; drained < (1u << 20);) {
            discard.clear();
            if (read_some(fd_, discard, deadline, error_number) != ReadOutcome::kData) break;
            drained += discard.size();
        }
    }

    void refuse(int status, const Error& error) {
        Response response = error_response(status, error);
        send_all(fd_, response_head(response, false) + response.body);
        close_gracefully();
    }

    // Refusals that end a read step, which then returns false.
    bool timed_out() {
        refuse(408, make_error(errc::kTimeout, "request not received within " +
                                                   std::to_string(limits_.request_timeout.count()) +
                                                   " ms"));
        return false;
    }
    bool head_too_large() {
        refuse(431,
               make_error(errc::kProtocol, "request head exceeds " +
                                               std::to_string(limits_.max_head_bytes) + " bytes"));
        return false;
    }

    int fd_;
    const ServerLimits& limits_;
    const Steady::time_point deadline_;
    std::string buffer_;
    int error_number_ = 0;
};

}  // namespace

void UnixServer::Impl::serve(int fd) {
    set_send_timeout(fd, limits.write_timeout);
    const PeerCredentials peer = peer_credentials(fd);
    Exchange exchange(fd, limits);
    std::optional<Request> request = exchange.read_request();
    if (!request) return;
    request->peer_uid = peer.uid;
    request->peer_gid = peer.gid;
    request->peer_pid = peer.pid;
    Response response = call_handler(handler, *request);
    exchange.answer(response);
}

UnixServer::UnixServer(std::string socket_path, Handler handler, mode_t socket_mode,
                       ServerLimits limits)
    : impl_(std::make_unique<Impl>()), socket_path_(std::move(socket_path)) {
    impl_->socket_path = socket_path_;
    impl_->handler = std::move(handler);
    impl_->socket_mode = socket_mode;
    impl_->limits = limits;
    if (impl_->limits.max_connections == 0) impl_->limits.max_connections = 1;
}

UnixServer::~UnixServer() {
    stop();
}

namespace {

// Makes way for a server on `path`: an existing socket file is either live
// (another server answers: refuse, never steal it) or stale (left by a
// crash: connect is refused, replace it).
Status clear_stale_socket(const std::string& path, const sockaddr_un& address) {
    struct stat existing {};
    if (::lstat(path.c_str(), &existing) == 0) {
        if (!S_ISSOCK(existing.st_mode)) {
            return make_error(errc::kConflict, path +
                                                   " exists and is not a socket; refusing to "
                                                   "replace it");
        }
        FileDescriptor probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (!probe.valid()) return make_error(errc::kIo, "socket(): " + errno_text(errno));
        if (::connect(probe.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) ==
            0) {
            return make_error(errc::kConflict, "another server is already listening on " + path +
                                                   "; refusing to replace it");
        }
        if (errno != ECONNREFUSED) {
            return make_error(errc::kConflict, "cannot tell whether " + path +
                                                   " is in use (connect: " + errno_text(errno) +
                                                   "); refusing to replace it");
        }
        if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
            return make_error(errc::kIo,
                              "cannot remove stale socket " + path + ": " + errno_text(errno));
        }
    } else if (errno != ENOENT) {
        return make_error(errc::kIo, "cannot inspect " + path + ": " + errno_text(errno));
    }
    return ok_status();
}

}  // namespace

Status UnixServer::start() {
    if (impl_->started) {
        return make_error(errc::kConflict, "server on " + socket_path_ + " already started");
    }
    DS_ASSIGN_OR_RETURN(auto address, unix_address(socket_path_));

    DS_TRY(clear_stale_socket(socket_path_, address));

    FileDescriptor listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!listener.valid()) return make_error(errc::kIo, "socket(): " + errno_text(errno));
    if (::bind(listener.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        return make_error(errc::kIo, "cannot bind " + socket_path_ + ": " + errno_text(errno));
    }
    struct stat created {};
    if (::chmod(socket_path_.c_str(), impl_->socket_mode) != 0 ||
        ::stat(socket_path_.c_str(), &created) != 0) {
        int saved = errno;
        ::unlink(socket_path_.c_str());
        return make_error(errc::kIo,
                          "cannot set mode of " + socket_path_ + ": " + errno_text(saved));
    }
    if (::listen(listener.get(), 128) != 0) {
        int saved = errno;
        ::unlink(socket_path_.c_str());
        return make_error(errc::kIo, "cannot listen on " + socket_path_ + ": " + errno_text(saved));
    }
    int wake[2];
    if (::pipe2(wake, O_CLOEXEC) != 0) {
        int saved = errno;
        ::unlink(socket_path_.c_str());
        return make_error(errc::kIo, "pipe2(): " + errno_text(saved));
    }
    impl_->wake_read = FileDescriptor(wake[0]);
    impl_->wake_write = FileDescriptor(wake[1]);
    impl_->socket_inode = created.st_ino;
    impl_->listen_socket = std::move(listener);
    {
        std::lock_guard lock(impl_->mutex);
        impl_->stopping = false;
    }
    impl_->accept_thread = std::thread([impl = impl_.get()] { impl->accept_loop(); });
    impl_->started = true;
    return ok_status();
}

void UnixServer::stop() {
    if (!impl_ || !impl_->started) return;
    impl_->started = false;
    {
        std::lock_guard lock(impl_->mutex);
        impl_->stopping = true;
    }
    char wake_byte = 1;
    [[maybe_unused]] ssize_t written = ::write(impl_->wake_write.get(), &wake_byte, 1);
    if (impl_->accept_thread.joinable()) impl_->accept_thread.join();

    struct stat current {};
    if (::lstat(socket_path_.c_str(), &current) == 0 && current.st_ino == impl_->socket_inode) {
        ::unlink(socket_path_.c_str());
    }
    impl_->listen_socket.reset();

    std::vector<std::thread> to_join;
    {
        std::lock_guard lock(impl_->mutex);
        for (auto& connection : impl_->connections) {
            if (connection.fd >= 0) ::shutdown(connection.fd, SHUT_RDWR);
            to_join.push_back(std::move(connection.thread));
        }
    }
    for (auto& thread : to_join) {
        if (thread.joinable()) thread.join();
    }
    std::lock_guard lock(impl_->mutex);
    impl_->connections.clear();
    impl_->wake_read.reset();
    impl_->wake_write.reset();
}

}  // namespace ds::http
