#include "daemon/run/agent_session.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

namespace ds {

namespace {
constexpr auto kPollSlice = std::chrono::milliseconds(250);

// The type of a message protocol::decode() accepted (which checked that it
// is a known string).
std::string type_of(const Json& message) {
    const auto type = message.find("type");
    return type != message.end() && type->is_string() ? type->get<std::string>() : "?";
}

// The guest's error report as the run's Error.
Error agent_failure(const guest::ErrorMessage& report) {
    if (report.code == "timeout") {
        return make_error(kWorkloadTimedOut, "workload stopped at its time limit (agent, during " +
                                                 report.phase + ": " + report.message + ")");
    }
    return make_error(errc::kAgent, "agent failed during " + report.phase + ": " + report.message);
}
}  // namespace

AgentSession::AgentSession(int fd, const std::atomic<bool>* cancelled)
    : fd_(fd), cancelled_(cancelled), reader_(std::make_unique<protocol::LineReader>(fd)) {}

AgentSession::AgentSession(AgentSession&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      cancelled_(other.cancelled_),
      reader_(std::move(other.reader_)) {}

AgentSession::~AgentSession() {
    if (fd_ >= 0) ::close(fd_);
}

Result<AgentSession> AgentSession::connect(const std::string& socket_path, Deadline deadline,
                                           const std::atomic<bool>* cancelled) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (socket_path.size() >= sizeof address.sun_path) {
        return make_error(errc::kInvalidArgument, "agent socket path too long: " + socket_path);
    }
    std::strncpy(address.sun_path, socket_path.c_str(), sizeof address.sun_path - 1);
    std::string last_error;
    while (true) {
        int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return make_error(errc::kIo, std::string("socket: ") + std::strerror(errno));
        if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
            return AgentSession(fd, cancelled);
        }
        last_error = std::strerror(errno);
        ::close(fd);
        if (cancelled && cancelled->load()) return make_error(errc::kCancelled, "run cancelled");
        if (std::chrono::steady_clock::now() >= deadline) {
            return make_error(errc::kTimeout, "cannot connect to the agent channel " + socket_path +
                                                  ": " + last_error);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

Result<Json> AgentSession::next_message(Deadline deadline) {
    while (true) {
        if (cancelled_ && cancelled_->load()) return make_error(errc::kCancelled, "run cancelled");
        auto slice_end = std::min(deadline, std::chrono::steady_clock::now() + kPollSlice);
        auto line = reader_->read_line(slice_end);
        if (line.ok()) return protocol::decode(line.value());
        if (line.error().code == errc::kTimeout && std::chrono::steady_clock::now() < deadline) {
            continue;
        }
        return line.error();
    }
}

Result<guest::Hello> AgentSession::receive_hello(Deadline deadline) {
    auto message = next_message(deadline);
    if (!message.ok()) return message.error();
    const std::string type = type_of(*message);
    if (type != protocol::kHello) {
        return make_error(errc::kProtocol, "agent sent '" + type + "' before 'hello'");
    }
    return guest::parse_hello(std::move(message.value()));
}

Result<Json> AgentSession::await_hello(Deadline deadline) {
    auto hello = receive_hello(deadline);
    if (!hello.ok()) return hello.error();
    return Json{{"agent_version", hello->agent_version},
                {"protocol", hello->protocol},
                {"kernel", hello->kernel},
                {"fio_version", hello->fio_version},
                {"capabilities", hello->capabilities}};
}

Status AgentSession::send_job(const Json& job) {
    return protocol::write_all(fd_, protocol::encode(protocol::kJob, job));
}

Result<guest::ResultMessage> AgentSession::await_result(
    Deadline deadline, const std::function<void(const guest::Progress&)>& on_progress) {
    while (true) {
        auto message = next_message(deadline);
        if (!message.ok()) return message.error();
        const std::string type = type_of(*message);
        if (type == protocol::kProgress) {
            auto progress = guest::parse_progress(std::move(message.value()));
            if (!progress.ok()) return progress.error();
            if (on_progress) on_progress(progress.value());
            continue;
        }
        if (type == protocol::kResult) return guest::parse_result(std::move(message.value()));
        if (type == protocol::kError) {
            auto report = guest::parse_error(std::move(message.value()));
            if (!report.ok()) return report.error();
            return agent_failure(report.value());
        }
        return make_error(errc::kProtocol,
                          "agent sent unexpected '" + type + "' while a job was running");
    }
}

void AgentSession::send_shutdown() {
    (void)protocol::write_all(fd_, protocol::encode(protocol::kShutdown, Json::object()));
}

}  // namespace ds
