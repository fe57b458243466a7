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

// How long connections may be refused once the socket exists.
constexpr std::chrono::seconds kConnectLimit{60};
// A clean shutdown flushes the buffer pool; under TCG that takes a while.
constexpr std::chrono::seconds kShutdownLimit{300};

}  // namespace

Session::Session(WorkloadContext& ctx, std::string what)
    : ToolSession(ctx, std::move(what)), paths_(server_paths(ctx.work_dir, ctx.scratch_dir)) {}

Session::~Session() {
    if (server_.valid()) (void)stop_server();
}

std::string Session::server_log() const {
    return read_file(paths_.error_log);
}

std::vector<std::string> Session::server_error_lines(std::string_view log) const {
    return error_lines(log);
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
