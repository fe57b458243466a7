// The host side of the agent protocol (docs/agent-protocol.md) over one run's
// agent channel (opened by the hypervisor, daemon/backends/hypervisor/agent_channel.h). Everything
// the guest sends is checked: type order, version, size, deadlines, and each message against its
// schema (guest_messages.h) before it is handed out. Any violation ends the session with an Error
// that says what the guest did; the daemon carries on.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/protocol.h"
#include "common/result.h"
#include "daemon/backends/hypervisor/agent_channel.h"
#include "daemon/run/guest_messages.h"

namespace ds {

// Error code of await_result when the guest reported that the workload's own
// time limit stopped it (agent error "code": "timeout"); the run is then
// timed_out, like one whose daemon-side deadline passed (errc::kTimeout).
inline constexpr const char* kWorkloadTimedOut = "workload_timed_out";

class AgentSession {
  public:
    // Speaks the protocol over `channel`; `cancelled` (may be null) is polled
    // while waiting, so a cancel ends any wait within a quarter second.
    // Deadlines are points on `clock`, which decides when they have passed;
    // the channel is only ever asked to wait a quarter second at most.
    explicit AgentSession(std::unique_ptr<AgentChannel> channel,
                          const std::atomic<bool>* cancelled = nullptr,
                          const Clock& clock = real_clock());

    // Waits for the guest's hello. errc::kTimeout when nothing came in time,
    // errc::kProtocol when something else came or the hello breaks its schema.
    Result<guest::Hello> receive_hello(Deadline deadline);
    Status send_job(const Json& job);
    // Waits for the result, handing each progress message (checked and cut,
    // see guest::Progress) to `on_progress`. An `error` message from the guest
    // becomes errc::kAgent with its phase and message, or kWorkloadTimedOut
    // when its "code" is "timeout". Anything out of order or breaking its
    // schema is errc::kProtocol. Progress does not extend the deadline: a
    // guest that keeps sending it is timed out all the same.
    Result<guest::ResultMessage> await_result(
        Deadline deadline, const std::function<void(const guest::Progress&)>& on_progress);
    // For a job with "trim" (or "mark"): waits for trim_ready (mark_ready),
    // `ready_type`, as await_result waits for the result (progress and acks
    // handed on, an `error` as there); a `result` or anything else first is
    // errc::kProtocol. Then send_answer(kTrim or kMark) lets the agent go
    // on, and the next wait is for its result.
    Result<guest::Ready> await_ready(
        std::string_view ready_type, Deadline deadline,
        const std::function<void(const guest::Progress&)>& on_progress);
    Status send_answer(std::string_view answer_type);
    // For a job whose workload acknowledges records (ledger): each `ack`
    // that arrives while waiting for a report is checked against its schema
    // and handed to `on_ack`; an Error from it ends the wait with that
    // Error. Without a handler an `ack` is errc::kProtocol.
    void set_ack_handler(std::function<Status(const guest::Ack&)> on_ack) {
        on_ack_ = std::move(on_ack);
    }
    // Best effort: asks the guest to power off.
    void send_shutdown();

  private:
    // Next decoded message, polling in short slices so cancellation is seen.
    Result<Json> next_message(Deadline deadline);
    // The next message that is not progress (each progress handed to
    // `on_progress`); an agent `error` becomes the run's Error (kAgent or
    // kWorkloadTimedOut).
    Result<Json> next_report(Deadline deadline,
                             const std::function<void(const guest::Progress&)>& on_progress);

    Status hand_on_ack(Json message);

    std::unique_ptr<AgentChannel> channel_;
    std::function<Status(const guest::Ack&)> on_ack_;
    const std::atomic<bool>* cancelled_ = nullptr;
    const Clock* clock_;
};

}  // namespace ds
