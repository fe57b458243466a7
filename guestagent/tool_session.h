// One run of a server-backed workload runner (the MariaDB kinds, pgbench,
// the ledger's database variants, the crash checker's recoveries): the
// deadline and progress of the run and the tools it runs, with failures
// that name the server's own error lines. A server's lifecycle is its own
// session's (mariadb_session.h, postgresql_session.h), built on this one.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/process.h"
#include "common/result.h"
#include "guestagent/workload.h"

namespace ds::agent {

// Seconds from `from` to `to`.
double seconds_between(Clock::time_point from, Clock::time_point to);

// "12.3" for messages.
std::string format_seconds(double seconds);

// The whole file; "" when it cannot be read.
std::string read_file(const std::string& path);

// At most the last `bytes` of `text`, without its trailing newlines and
// spaces.
std::string tail(std::string_view text, std::size_t bytes);

// Wraps argv so its stdout goes to `out` (read for progress while it runs)
// and it starts in `dir`.
std::vector<std::string> to_file(const std::string& dir, const std::string& out,
                                 const std::vector<std::string>& argv);

// Time (the deadline, elapsed times, pauses between retries) is the
// context's Clock; waits on the programs it runs are real.
class ToolSession {
  public:
    // `what` names the run in every message ("sysbench-oltp workload w1").
    // Its time limit is ctx.time_limit, or a day when that is 0.
    ToolSession(WorkloadContext& ctx, std::string what);
    virtual ~ToolSession() = default;
    ToolSession(const ToolSession&) = delete;
    ToolSession& operator=(const ToolSession&) = delete;

    Clock::time_point now() const { return ctx_.clock->now(); }
    double elapsed() const { return seconds_between(start_, now()); }

    // Progress for the host, at the session's elapsed time.
    void report(const std::string& message, std::optional<double> fraction = std::nullopt);

    // Time left until the deadline; 0 once it has passed.
    std::chrono::milliseconds remaining() const;

    // errc::kTimeout: the session was stopped during `step`.
    Error timeout(const std::string& step) const;

    // A failure of `step`: the tool's own lines plus the server's error
    // lines (server_error_lines); errc::kIo naming "No space left on device"
    // when either says the filesystem is full.
    Error failure(const std::string& step, const std::string& tool_text) const;

    // failure() of a benchmark tool that ran to_file() and exited non-zero:
    // "TOOL (exit N)", its stderr and the end of its stdout (`stdout_text`).
    Error tool_failure(const std::string& tool, const ProcessOutput& ran,
                       const std::string& stdout_text) const;

    // Runs argv to completion within the deadline, reporting progress once a
    // second and once at its end: the last line of `progress_file` when
    // given, else `step`.
    Result<ProcessOutput> run(const std::vector<std::string>& argv, const std::string& step,
                              const std::string& progress_file = "",
                              std::optional<double> planned_s = std::nullopt);

    // Like run(), and a non-zero exit is failure(step, stderr + stdout).
    Result<ProcessOutput> run_checked(const std::vector<std::string>& argv,
                                      const std::string& step);

    // Runs argv on this thread, handing each stdout line to `on_line` as it
    // comes, until it ends or `stop_after` passes (then it is killed: not a
    // failure, `stopped` tells). Past the workload's deadline: timeout(step).
    Result<ProcessOutput> stream(const std::vector<std::string>& argv, const std::string& step,
                                 std::optional<std::chrono::seconds> stop_after,
                                 const std::function<void(std::string_view)>& on_line,
                                 bool& stopped);

  protected:
    // The server's log ("" without a server), and the lines of it that name
    // a failure's cause, the first ones (the cause comes first).
    virtual std::string server_log() const { return {}; }
    virtual std::vector<std::string> server_error_lines(std::string_view /*log*/) const {
        return {};
    }

    WorkloadContext& ctx_;
    std::string what_;

  private:
    Clock::time_point start_;
    std::chrono::seconds limit_;
    Clock::time_point deadline_;
};

}  // namespace ds::agent
