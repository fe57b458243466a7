#include "guestagent/mariadb_session.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/text.h"
#include "common/workload_output.h"

namespace ds::agent::mariadb {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

constexpr std::string_view kNoSpaceText = "No space left on device";
// Without a time limit from the job: a day bounds every step.
constexpr std::chrono::seconds kNoTimeLimit{24 * 3600};
// How long connections may be refused once the socket exists.
constexpr std::chrono::seconds kConnectLimit{60};
// A clean shutdown flushes the buffer pool; under TCG that takes a while.
constexpr std::chrono::seconds kShutdownLimit{300};

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

}  // namespace

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

std::vector<std::string> to_file(const std::string& dir, const std::string& out,
                                 const std::vector<std::string>& argv) {
    std::vector<std::string> wrapped = {
        "sh", "-c", "cd \"$1\" && out=$2 && shift 2 && exec \"$@\" >\"$out\"", "sh", dir, out};
    wrapped.insert(wrapped.end(), argv.begin(), argv.end());
    return wrapped;
}

Session::Session(WorkloadContext& ctx, std::string what)
    : ctx_(ctx),
      what_(std::move(what)),
      start_(ctx.clock->now()),
      limit_(ctx.time_limit > std::chrono::seconds(0) ? ctx.time_limit : kNoTimeLimit),
      deadline_(start_ + limit_),
      paths_(server_paths(ctx.work_dir, ctx.scratch_dir)) {}

Session::~Session() {
    if (server_.valid()) (void)stop_server();
}

void Session::report(const std::string& message, std::optional<double> fraction) {
    if (ctx_.progress) ctx_.progress(message, elapsed(), fraction);
}

milliseconds Session::remaining() const {
    return std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(deadline_ - now()));
}

Error Session::timeout(const std::string& step) const {
    return make_error(errc::kTimeout, what_ + " was stopped after " + format_seconds(elapsed()) +
                                          " s during " + step +
                                          ": it exceeded the workload's time limit of " +
                                          std::to_string(limit_.count()) + " s");
}

Error Session::failure(const std::string& step, const std::string& tool_text) const {
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

Error Session::tool_failure(const std::string& tool, const ProcessOutput& ran,
                            const std::string& stdout_text) const {
    return failure(tool + " (exit " + std::to_string(ran.exit_code) + ")",
                   ran.stderr_text + tail(stdout_text, 600));
}

Result<ProcessOutput> Session::run(const std::vector<std::string>& argv, const std::string& step,
                                   const std::string& progress_file,
                                   std::optional<double> planned_s) {
    if (remaining() <= milliseconds(0)) return timeout(step);
    ProcessRunner& runner = ctx_.runner;
    const milliseconds limit = remaining();
    auto running =
        std::async(std::launch::async, [&runner, &argv, limit] { return runner.run(argv, limit); });
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

Result<ProcessOutput> Session::run_checked(const std::vector<std::string>& argv,
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

Result<ProcessOutput> Session::stream(const std::vector<std::string>& argv, const std::string& step,
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

Status Session::start_server(const Json& server, Json& readback, std::string& version) {
    DS_TRY(write_server_files(server));
    const std::string defaults = "--defaults-file=" + paths_.config;
    // A golden volume's clone has the datadir already.
    if (ctx_.dataset != DatasetMode::kPrepared)
        DS_TRY(
            run_checked({"mariadb-install-db", defaults, "--auth-root-authentication-method=normal",
                         "--skip-test-db", "--skip-name-resolve"},
                        "creating the datadir " + paths_.datadir + " with mariadb-install-db"));
    DS_TRY(launch_server(defaults));
    auto shown = show_variables(defaults);
    if (!shown) return shown.error();
    const std::string& text = shown->stdout_text;
    version = text.substr(0, text.find('\n'));
    return check_variables_in_force(server, parse_show_variables(text), version, readback);
}

Status Session::start_existing_server(const Json& server) {
    DS_TRY(write_server_files(server));
    return launch_server("--defaults-file=" + paths_.config);
}

Status Session::stop_server() {
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

Status Session::write_server_files(const Json& server) {
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

Status Session::launch_server(const std::string& defaults) {
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

Result<ProcessOutput> Session::show_variables(const std::string& defaults) {
    // The socket exists from bind(); a connection may still be refused
    // for a moment: retry while the server runs.
    const std::vector<std::string> query = {
        "mariadb", defaults,
        "--batch", "--skip-column-names",
        "-e",      "CREATE DATABASE IF NOT EXISTS test; SELECT VERSION(); SHOW GLOBAL VARIABLES"};
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

Status Session::check_variables_in_force(const Json& server,
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

Error Session::server_exited(const std::string& doing) {
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

void Session::kill_by_pid_file() {
    const std::string text = read_file(paths_.pid_file);
    const long pid = std::strtol(text.c_str(), nullptr, 10);
    if (pid > 1) ::kill(static_cast<pid_t>(pid), SIGKILL);
}

}  // namespace ds::agent::mariadb
