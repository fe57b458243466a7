// A PostgreSQL-backed runner's session (pgbench): a ToolSession
// (tool_session.h) and the server it starts and stops.
//
// The guest has no init system and a read-only root, and PostgreSQL refuses
// to run as root, so a runner brings its own cluster: initdb as the image's
// `postgres` user into <work_dir>/pgdata (on the filesystem under test),
// `postgres -D` in the foreground on its own thread with the workload's
// `server` settings on its command line (the same weight as postgresql.conf;
// results apply --format pgconf prints them as its lines), reached over a
// Unix socket in <scratch>/postgresql with trust authentication and no TCP,
// SHOW to verify the settings, the benchmark, then a fast shutdown.
// Everything runs through WorkloadContext::runner, bounded by ctx.time_limit.
#pragma once

#include <future>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/settings.h"
#include "guestagent/tool_session.h"
#include "guestagent/workload.h"

namespace ds::agent::postgresql {

// Settings the runner sets itself; a workload's `server` table may not.
inline constexpr std::string_view kAgentOwnedSettings[] = {
    "data_directory", "config_file",       "hba_file",
    "ident_file",     "listen_addresses",  "unix_socket_directories",
    "port",           "logging_collector", "log_destination"};

// Settings read back besides the requested ones: those the durability
// reports talk about.
inline constexpr std::string_view kReadBackSettings[] = {
    "fsync",     "synchronous_commit", "full_page_writes",   "wal_sync_method", "shared_buffers",
    "wal_level", "max_wal_size",       "checkpoint_timeout", "wal_writer_delay"};

// errc::kInvalidArgument "KIND param 'server' ...": `server` must be an
// object of name -> string | integer | boolean; names [a-z0-9_] as SHOW
// spells them, not agent-owned; string values on one line.
Status check_server_settings(const std::string& kind, const Json& server);

// The `-c name=value` words of the server's command line for `server`
// (booleans on/off, numbers as JSON spells them, strings as written).
std::vector<std::string> setting_arguments(const Json& server);

// "name\tvalue" lines of `SELECT name, current_setting(name) FROM
// pg_settings` -> name -> value (SHOW's text).
std::map<std::string, std::string> parse_settings(std::string_view text);

// The lines of a server log that say why it failed ("FATAL:", "PANIC:",
// "ERROR:"), at most `limit`, the first ones.
std::vector<std::string> log_error_lines(std::string_view log, std::size_t limit = 4);

struct ServerPaths {
    std::string dir;      // scratch_dir/postgresql: the socket's directory, the log
    std::string log;      // dir/postgres.log (the server's stderr)
    std::string datadir;  // work_dir/pgdata
};
ServerPaths server_paths(const std::string& work_dir, const std::string& scratch_dir);

// Where initdb, postgres, psql and pgbench are: $DISKSWEEP_POSTGRESQL_BIN
// when set, else the newest /usr/lib/postgresql/MAJOR/bin with a `postgres`;
// errc::kAgent when the image has none (the base image: the kind needs the
// mariadb variant, which carries Debian's `postgresql`).
Result<std::string> binary_dir();

// The destructor stops a server still running (any early return).
class Session : public ToolSession {
  public:
    Session(WorkloadContext& ctx, std::string what);
    ~Session() override;

    const ServerPaths& paths() const { return paths_; }
    // A client's argv: the binary `tool` (psql, pgbench) with the socket,
    // user and database, then `args`.
    std::vector<std::string> client(const std::string& tool,
                                    const std::vector<std::string>& args) const;

    // initdb (unless ctx.dataset is kPrepared: a golden volume's clone has
    // the cluster), server start, verification. Fills readback
    // {"server_variables", "server_version"}; errc::kSettingsMismatch when
    // SHOW does not show a requested setting.
    Status start_server(const Json& server, Json& readback, std::string& version);

    // Server start on the cluster already on the disk (a crash image's: the
    // server replays its WAL while starting), no initdb, no checks.
    Status start_existing_server(const Json& server);

    // A fast shutdown (SIGINT to the postmaster), then wait for it to exit;
    // SIGKILL after kShutdownLimit.
    Status stop_server();

  private:
    // The scratch dir, cleared of an earlier run's socket and log, owned by
    // postgres; the datadir's parent made, and (for initdb) the datadir.
    Status prepare_directories(bool make_datadir);
    Status launch_server(const Json& server);
    // SHOW's text of every setting; retried while the server starts.
    Result<std::map<std::string, std::string>> show_settings();
    Status check_settings_in_force(const Json& server,
                                   const std::map<std::string, std::string>& shown,
                                   Json& readback) const;
    Error server_exited(const std::string& doing);
    // The postmaster's pid from datadir/postmaster.pid; 0 when unreadable.
    long postmaster_pid() const;

    std::string server_log() const override;
    std::vector<std::string> server_error_lines(std::string_view log) const override;

    ServerPaths paths_;
    // The image's binaries (binary_dir), found once when the session starts,
    // so that a client's argv can be built before the server starts; the
    // server's start fails with its error when there are none.
    std::string bin() const { return bin_ ? *bin_ : std::string(); }
    Result<std::string> bin_;
    std::vector<std::string> server_argv_;
    std::future<Result<ProcessOutput>> server_;
};

}  // namespace ds::agent::postgresql
