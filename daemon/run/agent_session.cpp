#include "daemon/run/agent_session.h"

#include <algorithm>

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

AgentSession::AgentSession(std::unique_ptr<AgentChannel> channel,
                           const std::atomic<bool>* cancelled, const Clock& clock)
    : channel_(std::move(channel)), cancelled_(cancelled), clock_(&clock) {}

Result<Json> AgentSession::next_message(Deadline deadline) {
    while (true) {
        if (cancelled_ && cancelled_->load()) return make_error(errc::kCancelled, "run cancelled");
        const auto left = deadline - clock_->now();
        const auto wait = std::clamp<Clock::duration>(left, Clock::duration::zero(), kPollSlice);
        auto line = channel_->read_line(std::chrono::steady_clock::now() + wait);
        if (line.ok()) return protocol::decode(line.value());
        if (line.error().code == errc::kTimeout && clock_->now() < deadline) continue;
        return line.error();
    }
}

Result<guest::Hello> AgentSession::receive_hello(Deadline deadline) {
    DS_ASSIGN_OR_RETURN(auto message, next_message(deadline));
    const std::string type = type_of(message);
    if (type != protocol::kHello) {
        return make_error(errc::kProtocol, "agent sent '" + type + "' before 'hello'");
    }
    return guest::parse_hello(std::move(message));
}

Status AgentSession::send_job(const Json& job) {
    return channel_->write(protocol::encode(protocol::kJob, job));
}

Result<Json> AgentSession::next_report(
    Deadline deadline, const std::function<void(const guest::Progress&)>& on_progress) {
    while (true) {
        DS_ASSIGN_OR_RETURN(auto message, next_message(deadline));
        const std::string type = type_of(message);
        if (type == protocol::kError) {
            DS_ASSIGN_OR_RETURN(auto report, guest::parse_error(std::move(message)));
            return agent_failure(report);
        }
        if (type == protocol::kAck) {
            DS_TRY(hand_on_ack(std::move(message)));
            continue;
        }
        if (type != protocol::kProgress) return message;
        DS_ASSIGN_OR_RETURN(auto progress, guest::parse_progress(std::move(message)));
        if (on_progress) on_progress(progress);
        if (clock_->now() >= deadline) {
            return make_error(errc::kTimeout,
                              "the deadline passed while the agent was still sending progress");
        }
    }
}

Status AgentSession::hand_on_ack(Json message) {
    if (!on_ack_) {
        return make_error(errc::kProtocol,
                          "agent sent 'ack', but this job's workload acknowledges nothing");
    }
    DS_ASSIGN_OR_RETURN(auto ack, guest::parse_ack(std::move(message)));
    return on_ack_(ack);
}

Result<guest::ResultMessage> AgentSession::await_result(
    Deadline deadline, const std::function<void(const guest::Progress&)>& on_progress) {
    DS_ASSIGN_OR_RETURN(auto message, next_report(deadline, on_progress));
    const std::string type = type_of(message);
    if (type == protocol::kResult) return guest::parse_result(std::move(message));
    return make_error(errc::kProtocol,
                      "agent sent unexpected '" + type + "' while a job was running");
}

Result<guest::Ready> AgentSession::await_ready(
    std::string_view ready_type, Deadline deadline,
    const std::function<void(const guest::Progress&)>& on_progress) {
    DS_ASSIGN_OR_RETURN(auto message, next_report(deadline, on_progress));
    const std::string type = type_of(message);
    if (type == ready_type) return guest::parse_ready(std::move(message), ready_type);
    return make_error(errc::kProtocol, "agent sent '" + type + "' before '" +
                                           std::string(ready_type) +
                                           "', although the job asked for it");
}

Status AgentSession::send_answer(std::string_view answer_type) {
    return channel_->write(protocol::encode(answer_type, Json::object()));
}

void AgentSession::send_shutdown() {
    (void)channel_->write(protocol::encode(protocol::kShutdown, Json::object()));
}

}  // namespace ds
