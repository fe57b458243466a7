// A MariaDB-backed runner's session (mariadb-atis, sysbench-oltp, the
// ledger's database variant, the crash checker's recovery): a ToolSession
// (tool_session.h: the deadline, progress, the tools it runs) and the server
// it starts and stops as mariadb_workload.h describes.
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
#include "guestagent/tool_session.h"
#include "guestagent/workload.h"

namespace ds::agent::mariadb {

// One runner invocation: its ToolSession, and the MariaDB server it started.
// The destructor stops a server still running (any early return).
class Session : public ToolSession {
  public:
    Session(WorkloadContext& ctx, std::string what);
    ~Session() override;

    const ServerPaths& paths() const { return paths_; }

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

    // The error log, and its "[ERROR]" lines.
    std::string server_log() const override;
    std::vector<std::string> server_error_lines(std::string_view log) const override;

    // The server ended while we waited for it: its [ERROR] lines.
    Error server_exited(const std::string& doing);

    void kill_by_pid_file();

    ServerPaths paths_;
    std::vector<std::string> server_argv_;
    std::future<Result<ProcessOutput>> server_;
};

}  // namespace ds::agent::mariadb
