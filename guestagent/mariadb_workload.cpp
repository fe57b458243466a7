#include "guestagent/mariadb_workload.h"

#include <signal.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>
#include <sstream>

#include "common/clock.h"
#include "common/text.h"
#include "common/workload_output.h"
#include "guestagent/crash_check.h"
#include "guestagent/io_options.h"
#include "guestagent/ledger_workload.h"
#include "guestagent/workload.h"

namespace ds::agent {
namespace mariadb {

namespace fs = std::filesystem;

std::string sql_bench_dir() {
    if (const char* dir = std::getenv("DISKSWEEP_SQL_BENCH_DIR"); dir != nullptr && *dir != '\0') {
        return dir;
    }
    return "/opt/sql-bench";
}

std::string variable_name(std::string_view name) {
    std::string out(name);
    for (char& c : out) {
        c = c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return out;
}

Status check_server_variables(const Json& server) {
    if (!server.is_object()) {
        return make_error(errc::kInvalidArgument, std::string("workload param 'server' is a ") +
                                                      server.type_name() +
                                                      ", expected a table of server variables");
    }
    for (const auto& [name, value] : server.items()) {
        const std::string where = "server variable '" + name + "'";
        if (name.empty() || !std::all_of(name.begin(), name.end(), [](unsigned char c) {
                return std::isalnum(c) || c == '_' || c == '-';
            })) {
            return make_error(errc::kInvalidArgument,
                              where + " is not a variable name (letters, digits, '_', '-')");
        }
        const std::string canonical = variable_name(name);
        for (const auto owned : kAgentOwnedServerVariables) {
            if (canonical == owned) {
                return make_error(errc::kInvalidArgument,
                                  where + " is set by the agent and cannot be overridden");
            }
        }
        if (value.is_string()) {
            const auto& text = value.get_ref<const std::string&>();
            if (text.find_first_of("\n\r") != std::string::npos) {
                return make_error(errc::kInvalidArgument, where + " must be on one line");
            }
        } else if (!value.is_boolean() && !value.is_number_integer()) {
            return make_error(errc::kInvalidArgument,
                              where + " is a " + std::string(value.type_name()) +
                                  ", expected a string, integer or boolean");
        }
    }
    return ok_status();
}

ServerPaths server_paths(const std::string& work_dir, const std::string& scratch_dir) {
    ServerPaths paths;
    paths.dir = (fs::path(scratch_dir) / "mariadb").string();
    paths.config = paths.dir + "/my.cnf";
    paths.socket = paths.dir + "/mysqld.sock";
    paths.pid_file = paths.dir + "/mysqld.pid";
    paths.error_log = paths.dir + "/mysqld.err";
    paths.datadir = (fs::path(work_dir) / "mysql").string();
    return paths;
}

std::string server_config(const ServerPaths& paths, const Json& server) {
    std::ostringstream out;
    out << "# written by disksweep-agent for one workload run\n"
        << "[mysqld]\n"
        << "datadir=" << paths.datadir << "\n"
        << "socket=" << paths.socket << "\n"
        << "pid-file=" << paths.pid_file << "\n"
        << "log-error=" << paths.error_log << "\n"
        << "user=root\n"
        << "skip-networking\n";
    if (server.is_object()) {
        out << "# the workload's server variables\n";
        for (const auto& [name, value] : server.items()) {
            out << name << "=";
            if (value.is_string()) {
                out << value.get<std::string>();
            } else if (value.is_boolean()) {
                out << (value.get<bool>() ? "ON" : "OFF");
            } else {
                out << value.dump();
            }
            out << "\n";
        }
    }
    for (const char* section : {"client", "mariadb-admin"}) {
        out << "[" << section << "]\nsocket=" << paths.socket << "\nuser=root\n";
    }
    return out.str();
}

std::map<std::string, std::string> parse_show_variables(std::string_view text) {
    std::map<std::string, std::string> variables;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view line = text.substr(start, end - start);
        if (const auto tab = line.find('\t'); tab != std::string_view::npos && tab > 0) {
            variables[std::string(line.substr(0, tab))] = std::string(line.substr(tab + 1));
        }
        start = end + 1;
    }
    return variables;
}

std::vector<std::string> error_lines(std::string_view text, std::size_t limit) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start < text.size() && lines.size() < limit) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view line = text.substr(start, end - start);
        if (line.find("[ERROR]") != std::string_view::npos) lines.emplace_back(line);
        start = end + 1;
    }
    return lines;
}

bool says_no_space(std::string_view text) {
    for (const std::string_view needle : {"No space left on device", "Disk full"}) {
        if (text.find(needle) != std::string_view::npos) return true;
    }
    // errno 28 as MariaDB spells it; 11.8's InnoDB ends a line with "failed
    // with error 28". The number must end there (not "error 280").
    for (const std::string_view needle : {"errno: 28", "errno 28", "Errcode: 28", "error number 28",
                                          "Error number 28", "error 28"}) {
        for (auto at = text.find(needle); at != std::string_view::npos;
             at = text.find(needle, at + 1)) {
            const std::size_t end = at + needle.size();
            if (end == text.size() || !std::isdigit(static_cast<unsigned char>(text[end])))
                return true;
        }
    }
    const auto table = text.find("The table '");
    return table != std::string_view::npos &&
           text.find("' is full", table) != std::string_view::npos;
}

std::optional<long long> whole_seconds(const Json& value) {
    std::optional<double> seconds;
    if (value.is_number()) {
        seconds = value.get<double>();
    } else if (value.is_string()) {
        seconds = io::parse_fio_seconds(value.get_ref<const std::string&>());
    }
    // Bounded before the cast (a larger double does not fit a long long),
    // by the spec's own limit for a time in seconds.
    constexpr double kMaxSeconds = std::numeric_limits<int>::max();
    if (!seconds || !std::isfinite(*seconds) || *seconds < 1 || *seconds > kMaxSeconds)
        return std::nullopt;
    return static_cast<long long>(std::ceil(*seconds));
}

Error invalid_param(const std::string& kind, const std::string& name, const std::string& what) {
    return make_error(errc::kInvalidArgument, kind + " param '" + name + "' " + what);
}

Status check_param_names(const std::string& kind, const Json& params,
                         std::initializer_list<std::string_view> known) {
    if (!params.is_object()) {
        return make_error(
            errc::kInvalidArgument,
            kind + " params is a " + std::string(params.type_name()) + ", expected an object");
    }
    for (const auto& [name, value] : params.items()) {
        (void)value;
        if (std::find(known.begin(), known.end(), name) == known.end()) {
            std::string list;
            for (const auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
            return invalid_param(kind, name,
                                 "is not an option of " + kind + " (known: " + list + ")");
        }
    }
    if (params.contains("server")) DS_TRY(check_server_variables(params["server"]));
    return ok_status();
}

// An integer param >= minimum, or `fallback` when absent.
Result<long long> integer_param(const std::string& kind, const Json& params, const char* name,
                                long long minimum, long long fallback) {
    if (!params.contains(name)) return fallback;
    const Json& value = params[name];
    if (!value.is_number_integer() || value.get<long long>() < minimum) {
        return invalid_param(
            kind, name,
            "is " + value.dump() + ", expected an integer >= " + std::to_string(minimum));
    }
    return value.get<long long>();
}

}  // namespace mariadb

namespace {

using std::chrono::milliseconds;
using namespace mariadb;

constexpr std::string_view kNoSpaceText = "No space left on device";
// Without a time limit from the job: a day bounds every step.
constexpr std::chrono::seconds kNoTimeLimit{24 * 3600};
// How long connections may be refused once the socket exists.
constexpr std::chrono::seconds kConnectLimit{60};
// A clean shutdown flushes the buffer pool; under TCG that takes a while.
constexpr std::chrono::seconds kShutdownLimit{300};

double seconds_between(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
}

std::string format_seconds(double seconds) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", seconds);
    return text;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream content;
    content << in.rdbuf();
    return content.str();
}

std::string tail(std::string_view text, std::size_t bytes) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
    if (text.size() > bytes) text = text.substr(text.size() - bytes);
    return std::string(text);
}

// The last non-empty line of `text`.
std::string last_line(std::string_view text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
        text.remove_suffix(1);
    }
    const auto newline = text.rfind('\n');
    return std::string(newline == std::string_view::npos ? text : text.substr(newline + 1));
}

// A tool's lines that say what went wrong ("FATAL: ...", "Got error ...",
// "ERROR 1114 ..."), each cut at 300 bytes (sysbench echoes whole INSERTs),
// at most 3.
std::vector<std::string> notable_lines(std::string_view text) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start < text.size() && lines.size() < 3) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(start, end - start);
        start = end + 1;
        // sysbench prints FATAL mid-line after a partial echo of the query
        if (const auto fatal = line.find("FATAL:"); fatal != std::string_view::npos) {
            line = line.substr(fatal);
        }
        const std::string lowered = ascii_lower(line);
        if (lowered.find("error") == std::string::npos &&
            lowered.find("fatal") == std::string::npos &&
            lowered.find("no space") == std::string::npos) {
            continue;
        }
        lines.emplace_back(line.substr(0, 300));
    }
    return lines;
}

// One runner invocation: the deadline, progress, and the server it started.
// Time (the deadline, elapsed times, pauses between retries) is the
// context's Clock; waits on the programs it runs are real.
// The destructor stops a server still running (any early return).
class Session {
  public:
    Session(WorkloadContext& ctx, std::string what)
        : ctx_(ctx),
          what_(std::move(what)),
          start_(ctx.clock->now()),
          limit_(ctx.time_limit > std::chrono::seconds(0) ? ctx.time_limit : kNoTimeLimit),
          deadline_(start_ + limit_),
          paths_(server_paths(ctx.work_dir, ctx.scratch_dir)) {}
    ~Session() {
        if (server_.valid()) (void)stop_server();
    }
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    const ServerPaths& paths() const { return paths_; }
    Clock::time_point now() const { return ctx_.clock->now(); }
    double elapsed() const { return seconds_between(start_, now()); }

    void report(const std::string& message, std::optional<double> fraction = std::nullopt) {
        if (ctx_.progress) ctx_.progress(message, elapsed(), fraction);
    }

    milliseconds remaining() const {
        return std::max(milliseconds(0),
                        std::chrono::duration_cast<milliseconds>(deadline_ - now()));
    }

    Error timeout(const std::string& step) const {
        return make_error(errc::kTimeout, what_ + " was stopped after " +
                                              format_seconds(elapsed()) + " s during " + step +
                                              ": it exceeded the workload's time limit of " +
                                              std::to_string(limit_.count()) + " s");
    }

    // A failure of `step`: the tool's own lines plus the server's [ERROR]
    // lines; errc::kIo naming "No space left on device" when either says the
    // filesystem is full.
    Error failure(const std::string& step, const std::string& tool_text) const {
        const std::string log = read_file(paths_.error_log);
        std::string message = what_ + ": " + step + " failed";
        // The server's own [ERROR] lines first: they name the cause.
        const auto server_lines = error_lines(log);
        if (!server_lines.empty()) message += ": " + join(server_lines, " | ");
        if (const auto lines = notable_lines(tool_text); !lines.empty()) {
            message += "; output: " + join(lines, " | ");
        } else if (!tool_text.empty() && server_lines.empty()) {
            message += "; output ends: " + tail(tool_text, 400);
        }
        if (says_no_space(tool_text) || says_no_space(log)) {
            if (message.find(kNoSpaceText) == std::string::npos) {
                message += " (" + std::string(kNoSpaceText) + ")";
            }
            return make_error(errc::kIo, message);
        }
        return make_error(errc::kAgent, message);
    }

    // Runs argv to completion within the deadline, reporting progress once a
    // second and once at its end: the last line of `progress_file` when
    // given, else `step`.
    Result<ProcessOutput> run(const std::vector<std::string>& argv, const std::string& step,
                              const std::string& progress_file = "",
                              std::optional<double> planned_s = std::nullopt) {
        if (remaining() <= milliseconds(0)) return timeout(step);
        ProcessRunner& runner = ctx_.runner;
        const milliseconds limit = remaining();
        auto running = std::async(std::launch::async,
                                  [&runner, &argv, limit] { return runner.run(argv, limit); });
        const auto step_start = now();
        report(step, planned_s ? std::optional<double>(0.0) : std::nullopt);
        const auto progress_message = [&] {
            std::string message = step;
            if (!progress_file.empty()) {
                if (auto line = last_line(read_file(progress_file)); !line.empty()) {
                    message += ": " + line;
                }
            }
            return message;
        };
        while (running.wait_for(std::chrono::seconds(1)) != std::future_status::ready) {
            std::optional<double> fraction;
            if (planned_s && *planned_s > 0) {
                fraction = std::min(1.0, seconds_between(step_start, now()) / *planned_s);
            }
            report(progress_message(), fraction);
        }
        // A step faster than the first tick still shows where it ended.
        if (!progress_file.empty())
            report(progress_message(), planned_s ? std::optional<double>(1.0) : std::nullopt);
        auto output = running.get();
        if (!output) return output.error();
        if (output->timed_out) return timeout(step);
        return output;
    }

    // Like run(), and a non-zero exit is failure(step, stderr + stdout).
    Result<ProcessOutput> run_checked(const std::vector<std::string>& argv,
                                      const std::string& step) {
        auto output = run(argv, step);
        if (!output) return output.error();
        if (output->exit_code != 0) {
            return failure(step + " (" + describe_command(argv) + ", exit " +
                               std::to_string(output->exit_code) + ")",
                           output->stderr_text + output->stdout_text);
        }
        return output;
    }

    // Runs argv on this thread, handing each stdout line to `on_line` as it
    // comes, until it ends or `stop_after` passes (then it is killed: not a
    // failure, `stopped` tells). Past the workload's deadline: timeout(step).
    Result<ProcessOutput> stream(const std::vector<std::string>& argv, const std::string& step,
                                 std::optional<std::chrono::seconds> stop_after,
                                 const std::function<void(std::string_view)>& on_line,
                                 bool& stopped) {
        const milliseconds deadline_left = remaining();
        if (deadline_left <= milliseconds(0)) return timeout(step);
        const milliseconds limit =
            stop_after ? std::min(deadline_left, milliseconds(*stop_after)) : deadline_left;
        report(step);
        auto output = ctx_.runner.run_streaming(argv, limit, on_line);
        if (!output) return output.error();
        stopped = output->timed_out && limit < deadline_left;
        if (output->timed_out && !stopped) return timeout(step);
        return output;
    }

    // Config, datadir, server start, database `test`, verification.
    // Fills readback {"server_variables", "server_version"}.
    Status start_server(const Json& server, Json& readback, std::string& version) {
        DS_TRY(write_server_files(server));
        const std::string defaults = "--defaults-file=" + paths_.config;
        // A golden volume's clone has the datadir already.
        if (ctx_.dataset != DatasetMode::kPrepared)
            DS_TRY(run_checked(
                {"mariadb-install-db", defaults, "--auth-root-authentication-method=normal",
                 "--skip-test-db", "--skip-name-resolve"},
                "creating the datadir " + paths_.datadir + " with mariadb-install-db"));
        DS_TRY(launch_server(defaults));
        auto shown = show_variables(defaults);
        if (!shown) return shown.error();
        const std::string& text = shown->stdout_text;
        version = text.substr(0, text.find('\n'));
        return check_variables_in_force(server, parse_show_variables(text), version, readback);
    }

    // Config and server start on the datadir already on the disk (a crash
    // image's: InnoDB recovers it while starting), no install, no checks of
    // the variables.
    Status start_existing_server(const Json& server) {
        DS_TRY(write_server_files(server));
        return launch_server("--defaults-file=" + paths_.config);
    }

    // mariadb-admin shutdown, then wait for mariadbd to exit; SIGKILL (by its
    // pid file) when the shutdown command fails. The server's own runner
    // call kills it at the deadline in any case.
    Status stop_server() {
        if (!server_.valid()) return ok_status();
        std::string problem;
        if (server_.wait_for(milliseconds(0)) != std::future_status::ready) {
            report("stopping MariaDB");
            const milliseconds limit =
                std::max(milliseconds(1000), std::min(remaining(), milliseconds(kShutdownLimit)));
            auto shutdown = ctx_.runner.run(
                {"mariadb-admin", "--defaults-file=" + paths_.config, "shutdown"}, limit);
            if (!shutdown || shutdown->exit_code != 0) {
                problem = "mariadb-admin shutdown failed: " +
                          (shutdown ? tail(shutdown->stderr_text, 400) : shutdown.error().message);
                kill_by_pid_file();
            }
            if (server_.wait_for(limit) != std::future_status::ready) {
                kill_by_pid_file();
                problem += (problem.empty() ? "" : "; ") +
                           std::string("mariadbd did not exit after shutdown and was killed");
            }
        }
        auto exited = server_.get();
        if (!problem.empty()) return make_error(errc::kAgent, what_ + ": " + problem);
        (void)exited;
        return ok_status();
    }

  private:
    // The scratch dir, cleared of an earlier run's files, with this run's
    // my.cnf.
    Status write_server_files(const Json& server) {
        std::error_code ec;
        fs::create_directories(paths_.dir, ec);
        if (ec) {
            return make_error(errc::kIo, "cannot create " + paths_.dir + ": " + ec.message());
        }
        // Left by an earlier run in this scratch dir (a killed server keeps
        // its socket): a stale socket would pass for a started server, a
        // stale log would lend its [ERROR] lines to this run.
        for (const auto& stale : {paths_.socket, paths_.pid_file, paths_.error_log}) {
            fs::remove(stale, ec);
        }
        std::ofstream config(paths_.config, std::ios::binary | std::ios::trunc);
        config << server_config(paths_, server);
        if (!config.flush()) return make_error(errc::kIo, "cannot write " + paths_.config);
        return ok_status();
    }

    // Starts mariadbd and waits for its socket.
    Status launch_server(const std::string& defaults) {
        // mariadbd stays in the foreground, on its own thread, until
        // shutdown; the runner kills it at the deadline.
        ProcessRunner& runner = ctx_.runner;
        server_argv_ = {"mariadbd", defaults};
        const milliseconds limit = remaining();
        server_ = std::async(std::launch::async,
                             [&runner, this, limit] { return runner.run(server_argv_, limit); });
        report("starting MariaDB (mariadbd " + defaults + ")");
        auto last_report = now();
        while (!fs::exists(paths_.socket)) {
            if (server_.wait_for(milliseconds(100)) == std::future_status::ready) {
                return server_exited("starting");
            }
            if (remaining() <= milliseconds(0)) return timeout("the server's start");
            if (now() - last_report >= std::chrono::seconds(1)) {
                report("starting MariaDB: waiting for " + paths_.socket);
                last_report = now();
            }
        }
        return ok_status();
    }

    // Creates database `test`; stdout is the version, then SHOW GLOBAL
    // VARIABLES.
    Result<ProcessOutput> show_variables(const std::string& defaults) {
        // The socket exists from bind(); a connection may still be refused
        // for a moment: retry while the server runs.
        const std::vector<std::string> query = {
            "mariadb",
            defaults,
            "--batch",
            "--skip-column-names",
            "-e",
            "CREATE DATABASE IF NOT EXISTS test; SELECT VERSION(); SHOW GLOBAL VARIABLES"};
        Result<ProcessOutput> shown = make_error(errc::kInternal, "not run");
        const auto socket_seen = now();
        for (;;) {
            shown = run(query, "creating database test and reading SHOW VARIABLES");
            if (!shown) return shown.error();
            if (shown->exit_code == 0) return shown;
            if (server_.wait_for(milliseconds(0)) == std::future_status::ready) {
                return server_exited("connecting to");
            }
            if (now() - socket_seen > kConnectLimit) {
                return failure("connecting to the server (" + describe_command(query) + ")",
                               shown->stderr_text);
            }
            ctx_.clock->sleep_for(milliseconds(250));
        }
    }

    // Fills readback with the variables read back and the version;
    // errc::kSettingsMismatch when a requested server variable is not in
    // force as the server's version reads it (ds::server_variable_mismatches,
    // the same check the host repeats on this readback).
    Status check_variables_in_force(const Json& server,
                                    const std::map<std::string, std::string>& variables,
                                    const std::string& version, Json& readback) const {
        Json shown_variables = Json::object();
        const auto read_back = [&](const std::string& name) {
            if (auto found = variables.find(name); found != variables.end()) {
                shown_variables[found->first] = found->second;
            }
        };
        for (const auto name : kReadBackVariables) read_back(std::string(name));
        if (server.is_object()) {
            for (const auto& [name, requested] : server.items()) read_back(variable_name(name));
        }
        const auto mismatches = server_variable_mismatches(server, shown_variables, version);
        readback["server_variables"] = std::move(shown_variables);
        readback["server_version"] = version;
        if (!mismatches.empty()) {
            return make_error(errc::kSettingsMismatch,
                              what_ + ": server variables not in force: " + join(mismatches, "; "));
        }
        return ok_status();
    }

    // The server ended while we waited for it: its [ERROR] lines.
    Error server_exited(const std::string& doing) {
        auto exited = server_.get();
        std::string tool;
        if (exited) {
            tool = "mariadbd exited with " + (exited->signal
                                                  ? "signal " + std::to_string(exited->signal)
                                                  : "code " + std::to_string(exited->exit_code));
            if (exited->timed_out) return timeout("the server's start");
            if (error_lines(read_file(paths_.error_log)).empty()) {
                tool += ": " + tail(exited->stderr_text + exited->stdout_text, 800);
            }
        } else {
            tool = exited.error().message;
        }
        return failure(doing + " the MariaDB server", tool);
    }

    void kill_by_pid_file() {
        const std::string text = read_file(paths_.pid_file);
        const long pid = std::strtol(text.c_str(), nullptr, 10);
        if (pid > 1) ::kill(static_cast<pid_t>(pid), SIGKILL);
    }

    WorkloadContext& ctx_;
    std::string what_;
    Clock::time_point start_;
    std::chrono::seconds limit_;
    Clock::time_point deadline_;
    ServerPaths paths_;
    std::vector<std::string> server_argv_;
    std::future<Result<ProcessOutput>> server_;
};

// Wraps argv so its stdout goes to `out` (read for progress while it runs)
// and it starts in `dir`.
std::vector<std::string> to_file(const std::string& dir, const std::string& out,
                                 const std::vector<std::string>& argv) {
    std::vector<std::string> wrapped = {
        "sh", "-c", "cd \"$1\" && out=$2 && shift 2 && exec \"$@\" >\"$out\"", "sh", dir, out};
    wrapped.insert(wrapped.end(), argv.begin(), argv.end());
    return wrapped;
}

constexpr std::string_view kSysbenchTests[] = {
    "oltp_read_write", "oltp_read_only",    "oltp_write_only",       "oltp_point_select",
    "oltp_insert",     "oltp_update_index", "oltp_update_non_index", "oltp_delete"};

}  // namespace

Status check_mariadb_atis_params(const Json& params) {
    const std::string kind = "mariadb-atis";
    DS_TRY(check_param_names(kind, params, {"server", "loop_count", "small_test", "time_limit"}));
    auto loop_count = integer_param(kind, params, "loop_count", 1, 5000);
    if (!loop_count) return loop_count.error();
    auto time_limit = integer_param(kind, params, "time_limit", 0, 0);
    if (!time_limit) return time_limit.error();
    if (params.contains("small_test") && !params["small_test"].is_boolean()) {
        return invalid_param(kind, "small_test",
                             "is " + params["small_test"].dump() + ", expected true or false");
    }
    return ok_status();
}

Status check_sysbench_oltp_params(const Json& params) {
    const std::string kind = "sysbench-oltp";
    DS_TRY(check_param_names(kind, params,
                             {"server", "test", "tables", "table_size", "threads", "time"}));
    for (const char* name : {"tables", "table_size", "threads"}) {
        auto value = integer_param(kind, params, name, 1, 1);
        if (!value) return value.error();
    }
    if (params.contains("test")) {
        const Json& test = params["test"];
        if (!test.is_string() || std::find(std::begin(kSysbenchTests), std::end(kSysbenchTests),
                                           test.get<std::string>()) == std::end(kSysbenchTests)) {
            std::string list;
            for (const auto t : kSysbenchTests) list += (list.empty() ? "" : ", ") + std::string(t);
            return invalid_param(kind, "test", "is " + test.dump() + ", expected one of " + list);
        }
    }
    if (params.contains("time") && !whole_seconds(params["time"])) {
        return invalid_param(kind, "time",
                             "is " + params["time"].dump() +
                                 ", expected a duration of at least 1 s (\"10s\", \"2m\" or "
                                 "an integer of seconds)");
    }
    return ok_status();
}

Result<WorkloadOutput> run_mariadb_atis(const Workload& workload, WorkloadContext& ctx) {
    DS_TRY(check_mariadb_atis_params(workload.params));
    const Json& params = workload.params;
    const Json server = params.value("server", Json::object());
    Session session(ctx, "mariadb-atis workload " + workload.name);

    WorkloadOutput result;
    std::string version;
    DS_TRY(session.start_server(server, result.readback, version));

    const std::string bench_dir = sql_bench_dir();
    const std::string out = session.paths().dir + "/test-ATIS.out";
    // Benchmark's :hireswallclock makes sql-bench print fractional wallclock
    // seconds (its own --hires only loads Time::HiRes, which modern Perl's
    // Benchmark does not use unless asked this way).
    std::vector<std::string> atis = {
        "perl",
        "-MBenchmark=:hireswallclock",
        "./test-ATIS",
        "--server=mysql",
        "--socket=" + session.paths().socket,
        "--user=root",
        "--hires",
        "--loop-count=" + std::to_string(params.value("loop_count", 5000LL))};
    if (params.value("small_test", false)) atis.push_back("--small-test");
    if (params.contains("time_limit")) {
        atis.push_back("--time-limit=" + std::to_string(params["time_limit"].get<long long>()));
    }
    const auto bench_start = session.now();
    auto ran = session.run(to_file(bench_dir, out, atis), "test-ATIS", out);
    const double wall_s = seconds_between(bench_start, session.now());
    if (!ran) return ran.error();
    const std::string stdout_text = read_file(out);
    if (ran->exit_code != 0) {
        return session.failure("test-ATIS (exit " + std::to_string(ran->exit_code) + ")",
                               ran->stderr_text + tail(stdout_text, 600));
    }
    DS_TRY(session.stop_server());
    result.output = Json{{"stdout", stdout_text}, {"server_version", version}, {"wall_s", wall_s}};
    session.report("test-ATIS finished in " + format_seconds(wall_s) + " s", 1.0);
    return result;
}

namespace {

// `sysbench ... prepare` (the tables, loaded); its seconds.
Result<double> sysbench_prepare(Session& session, const std::vector<std::string>& common) {
    const std::string dir = session.paths().dir;
    const std::string prepare_out = dir + "/sysbench-prepare.out";
    const auto prepare_start = session.now();
    auto prepare_argv = common;
    prepare_argv.push_back("prepare");
    auto prepared =
        session.run(to_file(dir, prepare_out, prepare_argv), "sysbench prepare", prepare_out);
    if (!prepared) return prepared.error();
    if (prepared->exit_code != 0) {
        return session.failure(
            "sysbench prepare (exit " + std::to_string(prepared->exit_code) + ")",
            prepared->stderr_text + tail(read_file(prepare_out), 600));
    }
    return seconds_between(prepare_start, session.now());
}

}  // namespace

Result<WorkloadOutput> run_sysbench_oltp(const Workload& workload, WorkloadContext& ctx) {
    DS_TRY(check_sysbench_oltp_params(workload.params));
    const Json& params = workload.params;
    const Json server = params.value("server", Json::object());
    const long long run_s = params.contains("time") ? *whole_seconds(params["time"]) : 10;
    Session session(ctx, "sysbench-oltp workload " + workload.name);

    WorkloadOutput result;
    std::string version;
    DS_TRY(session.start_server(server, result.readback, version));

    const std::vector<std::string> common = {
        "sysbench",
        params.value("test", std::string("oltp_read_write")),
        "--db-driver=mysql",
        "--mysql-socket=" + session.paths().socket,
        "--mysql-user=root",
        "--mysql-db=test",
        "--tables=" + std::to_string(params.value("tables", 1LL)),
        "--table-size=" + std::to_string(params.value("table_size", 10000LL))};
    const std::string dir = session.paths().dir;
    double prepare_s = 0;
    if (ctx.dataset != DatasetMode::kPrepared) {
        DS_ASSIGN_OR_RETURN(prepare_s, sysbench_prepare(session, common));
    }
    if (ctx.dataset == DatasetMode::kPrepareOnly) {
        DS_TRY(session.stop_server());
        result.output = Json{{"server_version", version}, {"prepare_s", prepare_s}};
        return result;
    }

    // --histogram=on: the report then carries the latency histogram, from
    // which the parser takes p50 and p99 (sysbench's own line is p95).
    const std::string run_out = dir + "/sysbench-run.out";
    auto run_argv = common;
    for (std::string option :
         {"--time=" + std::to_string(run_s),
          "--threads=" + std::to_string(params.value("threads", 1LL)),
          std::string("--report-interval=1"), std::string("--histogram=on"), std::string("run")}) {
        run_argv.push_back(std::move(option));
    }
    auto ran = session.run(to_file(dir, run_out, run_argv), "sysbench run", run_out,
                           static_cast<double>(run_s));
    if (!ran) return ran.error();
    const std::string stdout_text = read_file(run_out);
    if (ran->exit_code != 0) {
        return session.failure("sysbench run (exit " + std::to_string(ran->exit_code) + ")",
                               ran->stderr_text + tail(stdout_text, 600));
    }
    DS_TRY(session.stop_server());
    result.output =
        Json{{"stdout", stdout_text}, {"server_version", version}, {"prepare_s", prepare_s}};
    if (ctx.dataset == DatasetMode::kPrepared) result.output["dataset"] = "prepared";
    session.report("sysbench run finished", 1.0);
    return result;
}

namespace {

// Most records the database variant's script holds (about 46 bytes each, on
// the guest's tmpfs).
constexpr long long kMaxDatabaseLedgerRecords = 1'000'000;

// One INSERT per transaction; the SELECT prints the id once its COMMIT has
// returned, so a printed id is an acknowledged one.
Status write_ledger_script(const std::string& path, long long records) {
    std::ofstream script(path, std::ios::binary | std::ios::trunc);
    script << "SET autocommit=0;\n";
    for (long long id = 1; id <= records; ++id) {
        script << "INSERT INTO test.ledger (id) VALUES (" << id << ");\nCOMMIT;\nSELECT " << id
               << ";\n";
    }
    if (!script.flush()) return make_error(errc::kIo, "cannot write the ledger script " + path);
    return ok_status();
}

std::optional<long long> acknowledged_id(std::string_view line) {
    long long id = 0;
    const auto [end, error] = std::from_chars(line.data(), line.data() + line.size(), id);
    if (error != std::errc() || end != line.data() + line.size()) return std::nullopt;
    return id;
}

}  // namespace

namespace {

// The ids of `SELECT id ... ORDER BY id` (one per line), as ranges; an
// Error naming the first line that is not an id.
Result<IdRanges> ledger_ids(const std::string& text) {
    std::vector<long long> ids;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        const std::string_view line(text.data() + start, end - start);
        start = end + 1;
        if (line.empty()) continue;
        const auto id = acknowledged_id(line);
        if (!id) {
            return make_error(errc::kAgent,
                              "SELECT id printed '" + std::string(line.substr(0, 80)) + "'");
        }
        ids.push_back(*id);
    }
    return ranges_of(ids);
}

}  // namespace

Json recover_ledger_database(const Workload& ledger, WorkloadContext& ctx) {
    const Json server = ledger.params.value("server", Json::object());
    Session session(ctx, "MariaDB recovery of the ledger");
    const auto failed = [](const Error& error) {
        return Json{{"recovered", false}, {"recovery_error", error.message}};
    };
    if (auto started = session.start_existing_server(server); !started.ok()) {
        return failed(started.error());
    }
    auto selected =
        session.run_checked({"mariadb", "--defaults-file=" + session.paths().config, "--batch",
                             "--skip-column-names", "-e", "SELECT id FROM test.ledger ORDER BY id"},
                            "reading test.ledger");
    if (!selected.ok()) return failed(selected.error());
    auto ids = ledger_ids(selected->stdout_text);
    if (!ids.ok()) return failed(ids.error());
    Json report = {{"recovered", true}, {"present", ranges_json(*ids)}};
    if (auto stopped = session.stop_server(); !stopped.ok()) {
        report["shutdown_error"] = stopped.error().message;
    }
    return report;
}

Result<WorkloadOutput> run_ledger_database(const Workload& workload, const LedgerPlan& plan,
                                           WorkloadContext& ctx) {
    if (plan.records > kMaxDatabaseLedgerRecords) {
        return invalid_param(
            "ledger", "records",
            "is above " + std::to_string(kMaxDatabaseLedgerRecords) + " for the database variant");
    }
    const Json server = workload.params.value("server", Json::object());
    Session session(ctx, "ledger workload " + workload.name);
    WorkloadOutput result;
    std::string version;
    DS_TRY(session.start_server(server, result.readback, version));
    const std::string defaults = "--defaults-file=" + session.paths().config;
    DS_TRY(session.run_checked({"mariadb", defaults, "--batch", "-e",
                                "CREATE TABLE test.ledger (id BIGINT NOT NULL PRIMARY KEY) "
                                "ENGINE=InnoDB"},
                               "creating table test.ledger"));
    const std::string script = session.paths().dir + "/ledger.sql";
    DS_TRY(write_ledger_script(script, plan.records));

    LedgerTally tally(ctx, plan);
    Status acknowledged = ok_status();
    const auto on_line = [&](std::string_view line) {
        if (!acknowledged.ok()) return;
        const auto id = acknowledged_id(line);
        acknowledged = id ? tally.acknowledge(*id)
                          : Status(make_error(errc::kAgent, "ledger: the client printed '" +
                                                                std::string(line.substr(0, 80)) +
                                                                "' where an id was expected"));
    };
    bool stopped = false;
    DS_TRY(tally.start());
    DS_ASSIGN_OR_RETURN(auto ran,
                        session.stream({"mariadb", defaults, "--batch", "--skip-column-names",
                                        "--unbuffered", "-e", "source " + script},
                                       "ledger: INSERT + COMMIT", plan.time, on_line, stopped));
    DS_TRY(acknowledged);
    if (!stopped && ran.exit_code != 0) {
        return session.failure("the ledger's inserts (exit " + std::to_string(ran.exit_code) + ")",
                               ran.stderr_text);
    }
    DS_TRY(session.stop_server());
    result.output = tally.output();
    result.output["variant"] = "database";
    result.output["server_version"] = version;
    return result;
}

}  // namespace ds::agent
