// A MariaDB-backed runner's session (mariadb-atis, sysbench-oltp, the
// ledger's database variant, the crash checker's recovery): the deadline
// and progress of one run, the tools it runs, and the server it starts and
// stops as mariadb_workload.h describes; plus the helpers the runners share
// for their tools' output files.
#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/process.h"
#include "common/result.h"
#include "common/settings.h"
#include "guestagent/mariadb_workload.h"
#include "guestagent/workload.h"

namespace ds::agent::mariadb {

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

// One runner invocation: the deadline, progress, and the server it started.
// Time (the deadline, elapsed times, pauses between retries) is the
// context's Clock; waits on the programs it runs are real.
// The destructor stops a server still running (any early return).
class Session {
  public:
    // `what` names the run in every message ("sysbench-oltp workload w1").
    // Its time limit is ctx.time_limit, or a day when that is 0.
    Session(WorkloadContext& ctx, std::string what);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    const ServerPaths& paths() const { return paths_; }
    Clock::time_point now() const { return ctx_.clock->now(); }
    double elapsed() const { return seconds_between(start_, now()); }

    // Progress for the host, at the session's elapsed time.
    void report(const std::string& message, std::optional<double> fraction = std::nullopt);

    // Time left until the deadline; 0 once it has passed.
    std::chrono::milliseconds remaining() const;

    // errc::kTimeout: the session was stopped during `step`.
    Error timeout(const std::string& step) const;

    // A failure of `step`: the tool's own lines plus the server's [ERROR]
    // lines; errc::kIo naming "No space left on device" when either says the
    // filesystem is full.
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

    // Config, datadir, server start, database `test`, verification.
    // Fills readback {"server_variables", "server_version"}.
    Status start_server(const Json& server, Json& readback, std::string& version);

    // Config and server start on the datadir already on the disk (a crash
    // image's: InnoDB recovers it while starting), no install, no checks of
    // the variables.
    Status start_existing_server(const Json& server);

    // mariadb-admin shutdown, then wait for mariadbd to exit; SIGKILL (by its
    // pid file) when the shutdown command fails. The server's own runner
    // call kills it at the deadline in any case.
    Status stop_server();

  private:
    // The scratch dir, cleared of an earlier run's files, with this run's
    // my.cnf.
    Status write_server_files(const Json& server);

    // Starts mariadbd and waits for its socket.
    Status launch_server(const std::string& defaults);

    // Creates database `test`; stdout is the version, then SHOW GLOBAL
    // VARIABLES.
    Result<ProcessOutput> show_variables(const std::string& defaults);

    // Fills readback with the variables read back and the version;
    // errc::kSettingsMismatch when a requested server variable is not in
    // force as the server's version reads it (ds::server_variable_mismatches,
    // the same check the host repeats on this readback).
    Status check_variables_in_force(const Json& server,
                                    const std::map<std::string, std::string>& variables,
                                    const std::string& version, Json& readback) const;

    // The server ended while we waited for it: its [ERROR] lines.
    Error server_exited(const std::string& doing);

    void kill_by_pid_file();

    WorkloadContext& ctx_;
    std::string what_;
    Clock::time_point start_;
    std::chrono::seconds limit_;
    Clock::time_point deadline_;
    ServerPaths paths_;
    std::vector<std::string> server_argv_;
    std::future<Result<ProcessOutput>> server_;
};

}  // namespace ds::agent::mariadb
