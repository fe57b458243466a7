#include "guestagent/postgresql_session.h"

#include <signal.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>

#include "common/server_settings.h"
#include "common/text.h"

namespace ds::agent::postgresql {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

// The image's user for the server (Debian's postgresql-common makes it).
constexpr const char* kServerUser = "postgres";
// How long connections may be refused once the socket exists (the server
// may still be replaying WAL after a crash).
constexpr std::chrono::seconds kConnectLimit{120};
// A fast shutdown writes a checkpoint; under TCG that takes a while.
constexpr std::chrono::seconds kShutdownLimit{300};
constexpr const char* kSocketName = ".s.PGSQL.5432";

// argv run as the server's user (setpriv: util-linux, no PAM session).
std::vector<std::string> as_server_user(std::vector<std::string> argv) {
    std::vector<std::string> wrapped = {"setpriv", std::string("--reuid=") + kServerUser,
                                        std::string("--regid=") + kServerUser, "--init-groups"};
    wrapped.insert(wrapped.end(), argv.begin(), argv.end());
    return wrapped;
}

// A value as postgres -c takes it: booleans on/off, numbers as JSON spells
// them, strings as written.
std::string setting_value(const Json& value) {
    if (value.is_boolean()) return value.get<bool>() ? "on" : "off";
    if (value.is_string()) return value.get<std::string>();
    return value.dump();
}

// The lines of `text`, without their newlines.
std::vector<std::string> text_lines(std::string_view text) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        lines.emplace_back(text.substr(start, end - start));
        start = end + 1;
    }
    return lines;
}

bool is_setting_name(const std::string& name) {
    return !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
        return std::islower(c) || std::isdigit(c) || c == '_';
    });
}

}  // namespace

Status check_server_settings(const std::string& kind, const Json& server) {
    const auto invalid = [&](const std::string& what) {
        return make_error(errc::kInvalidArgument, kind + " param 'server' " + what);
    };
    if (!server.is_object()) {
        return invalid(std::string("is a ") + server.type_name() +
                       ", expected a table of PostgreSQL settings");
    }
    for (const auto& [name, value] : server.items()) {
        const std::string where = "setting '" + name + "'";
        if (!is_setting_name(name))
            return invalid(where + " is not a setting name as SHOW spells it ([a-z0-9_])");
        if (std::find(std::begin(kAgentOwnedSettings), std::end(kAgentOwnedSettings), name) !=
            std::end(kAgentOwnedSettings)) {
            return invalid(where + " is set by the agent and cannot be overridden");
        }
        if (value.is_string()) {
            if (value.get_ref<const std::string&>().find_first_of("\n\r") != std::string::npos)
                return invalid(where + " must be on one line");
        } else if (!value.is_boolean() && !value.is_number_integer()) {
            return invalid(where + " is a " + std::string(value.type_name()) +
                           ", expected a string, an integer or a boolean");
        }
    }
    return ok_status();
}

std::vector<std::string> setting_arguments(const Json& server) {
    std::vector<std::string> words;
    if (!server.is_object()) return words;
    for (const auto& [name, value] : server.items()) {
        words.push_back("-c");
        words.push_back(name + "=" + setting_value(value));
    }
    return words;
}

std::map<std::string, std::string> parse_settings(std::string_view text) {
    std::map<std::string, std::string> settings;
    for (const std::string& line : text_lines(text)) {
        const auto tab = line.find('\t');
        if (tab == std::string::npos || tab == 0) continue;
        settings[line.substr(0, tab)] = line.substr(tab + 1);
    }
    return settings;
}

std::vector<std::string> log_error_lines(std::string_view log, std::size_t limit) {
    std::vector<std::string> lines;
    for (const std::string& line : text_lines(log)) {
        if (lines.size() >= limit) break;
        if (line.find("FATAL:") != std::string::npos || line.find("PANIC:") != std::string::npos ||
            line.find("ERROR:") != std::string::npos) {
            lines.push_back(line.substr(0, 300));
        }
    }
    return lines;
}

ServerPaths server_paths(const std::string& work_dir, const std::string& scratch_dir) {
    ServerPaths paths;
    paths.dir = scratch_dir + "/postgresql";
    paths.log = paths.dir + "/postgres.log";
    paths.datadir = work_dir + "/pgdata";
    return paths;
}

Result<std::string> binary_dir() {
    if (const char* dir = std::getenv("DISKSWEEP_POSTGRESQL_BIN"); dir != nullptr && *dir != '\0')
        return std::string(dir);
    std::error_code ec;
    std::string best;
    long best_major = -1;
    for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
        const std::string major_text = entry.path().filename().string();
        char* end = nullptr;
        const long major = std::strtol(major_text.c_str(), &end, 10);
        if (end == major_text.c_str() || *end != '\0') continue;
        if (major > best_major && fs::exists(entry.path() / "bin" / "postgres", ec)) {
            best_major = major;
            best = (entry.path() / "bin").string();
        }
    }
    if (best.empty()) {
        return make_error(errc::kAgent,
                          "PostgreSQL is not installed in this image (no "
                          "/usr/lib/postgresql/MAJOR/bin/postgres): its workloads need the "
                          "mariadb image variant, which carries Debian's postgresql");
    }
    return best;
}

Session::Session(WorkloadContext& ctx, std::string what)
    : ToolSession(ctx, std::move(what)),
      paths_(server_paths(ctx.work_dir, ctx.scratch_dir)),
      bin_(binary_dir()) {}

Session::~Session() {
    if (server_.valid()) (void)stop_server();
}

std::vector<std::string> Session::client(const std::string& tool,
                                         const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {bin() + "/" + tool, "-h", paths_.dir, "-U", kServerUser};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("postgres");
    return argv;
}

Status Session::start_server(const Json& server, Json& readback, std::string& version) {
    DS_TRY(check_server_settings("server", server));
    const bool fresh = ctx_.dataset != DatasetMode::kPrepared;
    DS_TRY(prepare_directories(fresh));
    if (fresh) {
        DS_TRY(
            run_checked(as_server_user({bin() + "/initdb", "-D", paths_.datadir, "-U", kServerUser,
                                        "--auth=trust", "-E", "UTF8", "--no-instructions"}),
                        "creating the cluster " + paths_.datadir + " with initdb"));
    }
    DS_TRY(launch_server(server));
    DS_ASSIGN_OR_RETURN(auto shown, show_settings());
    version = shown.count("server_version") != 0 ? shown["server_version"] : "";
    return check_settings_in_force(server, shown, readback);
}

Status Session::start_existing_server(const Json& server) {
    DS_TRY(prepare_directories(false));
    // A crashed server's lock file names a pid that, in this boot, may be
    // another process's: the server would refuse to start. None runs here.
    std::error_code ec;
    fs::remove(paths_.datadir + "/postmaster.pid", ec);
    DS_TRY(launch_server(server));
    auto shown = show_settings();
    if (!shown) return shown.error();
    return ok_status();
}

Status Session::stop_server() {
    if (!server_.valid()) return ok_status();
    std::string problem;
    if (server_.wait_for(milliseconds(0)) != std::future_status::ready) {
        report("stopping PostgreSQL");
        const long pid = postmaster_pid();
        if (pid > 1) ::kill(static_cast<pid_t>(pid), SIGINT);
        const milliseconds limit =
            std::max(milliseconds(1000), std::min(remaining(), milliseconds(kShutdownLimit)));
        if (pid <= 1 || server_.wait_for(limit) != std::future_status::ready) {
            if (pid > 1) ::kill(static_cast<pid_t>(pid), SIGKILL);
            problem = pid > 1 ? "postgres did not exit after a fast shutdown and was killed"
                              : "postgres has no readable postmaster.pid";
        }
    }
    auto exited = server_.get();
    if (!problem.empty()) return make_error(errc::kAgent, what_ + ": " + problem);
    (void)exited;
    return ok_status();
}

Status Session::prepare_directories(bool make_datadir) {
    if (!bin_) return bin_.error();
    std::error_code ec;
    fs::create_directories(paths_.dir, ec);
    // Left by an earlier run in this scratch dir: a stale socket would pass
    // for a started server, a stale log would lend its lines to this run.
    fs::remove(paths_.dir + "/" + kSocketName, ec);
    fs::remove(paths_.log, ec);
    std::vector<std::string> dirs = {paths_.dir};
    if (make_datadir) dirs.push_back(paths_.datadir);
    for (const std::string& dir : dirs) {
        DS_TRY(
            run_checked({"install", "-d", "-o", kServerUser, "-g", kServerUser, "-m", "0700", dir},
                        "making " + dir + " the server's"));
    }
    return ok_status();
}

Status Session::launch_server(const Json& server) {
    // postgres stays in the foreground, on its own thread, until shutdown;
    // its stderr (the log) goes to a file the failures read.
    server_argv_ = {"sh", "-c", "log=$1 && shift && exec \"$@\" 2>>\"$log\"", "sh", paths_.log};
    for (std::string word :
         as_server_user({bin() + "/postgres", "-D", paths_.datadir, "-c", "listen_addresses=", "-c",
                         "unix_socket_directories=" + paths_.dir, "-c", "logging_collector=off"})) {
        server_argv_.push_back(std::move(word));
    }
    for (std::string word : setting_arguments(server)) server_argv_.push_back(std::move(word));
    ProcessRunner& runner = ctx_.runner;
    const milliseconds limit = remaining();
    server_ = std::async(std::launch::async,
                         [&runner, this, limit] { return runner.run(server_argv_, limit); });
    report("starting PostgreSQL (postgres -D " + paths_.datadir + ")");
    const std::string socket = paths_.dir + "/" + kSocketName;
    auto last_report = now();
    while (!fs::exists(socket)) {
        if (server_.wait_for(milliseconds(100)) == std::future_status::ready) {
            return server_exited("starting");
        }
        if (remaining() <= milliseconds(0)) return timeout("the server's start");
        if (now() - last_report >= std::chrono::seconds(1)) {
            report("starting PostgreSQL: waiting for " + socket);
            last_report = now();
        }
    }
    return ok_status();
}

Result<std::map<std::string, std::string>> Session::show_settings() {
    // The socket exists from bind(); connections are refused while the
    // server starts up or recovers: retry while it runs.
    const auto query =
        client("psql", {"-X", "-q", "-A", "-t", "-F", "\t", "-c",
                        "SELECT name, current_setting(name) FROM pg_settings ORDER BY name"});
    const auto socket_seen = now();
    for (;;) {
        DS_ASSIGN_OR_RETURN(auto shown, run(query, "reading the server's settings (SHOW)"));
        if (shown.exit_code == 0) return parse_settings(shown.stdout_text);
        if (server_.wait_for(milliseconds(0)) == std::future_status::ready) {
            return server_exited("connecting to");
        }
        if (now() - socket_seen > kConnectLimit) {
            return failure("connecting to the server (" + describe_command(query) + ")",
                           shown.stderr_text);
        }
        ctx_.clock->sleep_for(milliseconds(250));
    }
}

Status Session::check_settings_in_force(const Json& server,
                                        const std::map<std::string, std::string>& shown,
                                        Json& readback) const {
    Json shown_settings = Json::object();
    const auto read_back = [&](const std::string& name) {
        if (auto found = shown.find(name); found != shown.end())
            shown_settings[found->first] = found->second;
    };
    for (const auto name : kReadBackSettings) read_back(std::string(name));
    if (server.is_object()) {
        for (const auto& [name, requested] : server.items()) read_back(name);
    }
    const auto found = shown.find("server_version");
    const std::string version = found == shown.end() ? "" : found->second;
    // The check the host repeats on this readback (the kind's rules).
    const auto mismatches =
        postgresql_server_settings().mismatches(server, shown_settings, version);
    readback["server_variables"] = std::move(shown_settings);
    readback["server_version"] = version;
    if (!mismatches.empty()) {
        return make_error(errc::kSettingsMismatch,
                          what_ + ": server settings not in force: " + join(mismatches, "; "));
    }
    return ok_status();
}

Error Session::server_exited(const std::string& doing) {
    auto exited = server_.get();
    std::string tool;
    if (exited) {
        if (exited->timed_out) return timeout("the server's start");
        tool = "postgres exited with " + (exited->signal
                                              ? "signal " + std::to_string(exited->signal)
                                              : "code " + std::to_string(exited->exit_code));
        if (log_error_lines(server_log()).empty()) {
            tool += ": " + tail(server_log() + exited->stderr_text + exited->stdout_text, 800);
        }
    } else {
        tool = exited.error().message;
    }
    return failure(doing + " the PostgreSQL server", tool);
}

long Session::postmaster_pid() const {
    const std::string text = read_file(paths_.datadir + "/postmaster.pid");
    return std::strtol(text.c_str(), nullptr, 10);
}

std::string Session::server_log() const {
    return read_file(paths_.log);
}

std::vector<std::string> Session::server_error_lines(std::string_view log) const {
    return log_error_lines(log);
}

}  // namespace ds::agent::postgresql
