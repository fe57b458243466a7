#include "guestagent/mariadb_workload.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <sstream>

#include "guestagent/io_options.h"

namespace ds::agent::mariadb {

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

}  // namespace ds::agent::mariadb
