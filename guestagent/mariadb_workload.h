// The MariaDB workload kinds' building blocks (workload.h declares the
// runners; each kind has its file: mariadb_atis_workload.cpp,
// sysbench_oltp_workload.cpp, ledger_database.cpp): params, the server's
// option file, what it says. Its lifecycle is mariadb_session.h's.
//
// The guest has no init system and a read-only root, so a runner brings its
// own server: mariadb-install-db into <work_dir>/mysql (on the filesystem
// under test), mariadbd --defaults-file=<scratch>/mariadb/my.cnf as a child
// on its own thread, database `test`, SHOW VARIABLES to verify the workload's
// `server` variables, the benchmark, `mariadb-admin shutdown`. Everything
// runs through WorkloadContext::runner, bounded by ctx.time_limit.
#pragma once

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/settings.h"

namespace ds::agent::mariadb {

// Where test-ATIS, bench-init.pl, server-cfg and Data/ATIS are: the image's
// /opt/sql-bench (guest/lib/sqlbench.sh), or $DISKSWEEP_SQL_BENCH_DIR when
// set (the host-side integration test points it at the image cache's copy).
std::string sql_bench_dir();

// Option names the runner sets itself; a workload's `server` table may not.
inline constexpr std::string_view kAgentOwnedServerVariables[] = {
    "datadir", "socket",          "pid_file", "log_error",
    "user",    "skip_networking", "port",     "bind_address"};

// `server` variable name as SHOW VARIABLES spells it (dashes -> underscores,
// lowercase).
std::string variable_name(std::string_view name);

// errc::kInvalidArgument naming the variable: `server` must be an object of
// name -> string | integer | boolean; names [A-Za-z0-9_-], not agent-owned;
// string values on one line.
Status check_server_variables(const Json& server);

struct ServerPaths {
    std::string dir;        // scratch_dir/mariadb: config, socket, pid, error log
    std::string config;     // dir/my.cnf
    std::string socket;     // dir/mysqld.sock
    std::string pid_file;   // dir/mysqld.pid
    std::string error_log;  // dir/mysqld.err
    std::string datadir;    // work_dir/mysql
};
ServerPaths server_paths(const std::string& work_dir, const std::string& scratch_dir);

// The option file: [mysqld] with the paths, user=root, skip-networking and
// the `server` variables (booleans as ON/OFF, numbers as JSON spells them);
// [client] and [mariadb-admin] with the socket and user=root.
std::string server_config(const ServerPaths& paths, const Json& server);

// "name\tvalue" lines of `mariadb --batch --skip-column-names -e 'SHOW
// GLOBAL VARIABLES'` -> name -> value.
std::map<std::string, std::string> parse_show_variables(std::string_view text);

// The lines of a server error log (or a tool's output) that carry
// "[ERROR]", at most `limit`, the first ones (the cause comes first; the
// last ones are usually "Aborting").
std::vector<std::string> error_lines(std::string_view text, std::size_t limit = 4);

// Whether a failure's text says the filesystem is full: "No space left on
// device", errno 28 as MariaDB spells it ("errno: 28", "Errcode: 28",
// "error number 28", "OS errno 28"), or "The table '...' is full".
bool says_no_space(std::string_view text);

// Variables read back besides the requested ones: those the durability
// reports and the seed study talk about, and the Booleans MariaDB 11.x
// derives innodb_flush_method into (ds::versioned_server_variables checks
// them). A server that has no such variable (10.11 has none of the
// innodb_*_write_through) just does not list it.
inline constexpr std::string_view kReadBackVariables[] = {"innodb_flush_method",
                                                          "innodb_doublewrite",
                                                          "innodb_flush_log_at_trx_commit",
                                                          "innodb_buffer_pool_size",
                                                          "innodb_log_file_size",
                                                          "innodb_use_native_aio",
                                                          "innodb_data_file_buffering",
                                                          "innodb_data_file_write_through",
                                                          "innodb_log_file_buffering",
                                                          "innodb_log_file_write_through",
                                                          "sync_binlog",
                                                          "log_bin",
                                                          "default_storage_engine"};

// A `time` param (OptionKind::kSeconds: sysbench-oltp, ledger): integer
// seconds or a duration string ("10s", "2m"); nullopt when neither, < 1 s, or
// more than INT_MAX seconds.
std::optional<long long> whole_seconds(const Json& value);

// The param checks the MariaDB-backed kinds (and ledger) share; each error
// is errc::kInvalidArgument "KIND param 'NAME' ...".
Error invalid_param(const std::string& kind, const std::string& name, const std::string& what);
// params is an object whose names are all in `known`; a `server` table
// passes check_server_variables.
Status check_param_names(const std::string& kind, const Json& params,
                         std::initializer_list<std::string_view> known);
// An integer param >= minimum, or `fallback` when absent.
Result<long long> integer_param(const std::string& kind, const Json& params, const char* name,
                                long long minimum, long long fallback);

}  // namespace ds::agent::mariadb
