#include "hostctl/commands.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "hostctl/daemon_commands.h"
#include "hostctl/invocation.h"
#include "hostctl/results_commands.h"
#include "hostctl/sweep_commands.h"

namespace ds::hostctl {
namespace po = boost::program_options;
namespace {

// "--output FILE", "-o|--output FILE" (usage) or "-o, --output FILE" (help).
std::string flag_text(const FlagSpec& flag, std::string_view short_separator) {
    std::string text = flag.short_name
                           ? std::string("-") + flag.short_name + std::string(short_separator)
                           : std::string();
    text += "--" + std::string(flag.name);
    return flag.value_name.empty() ? text : text + " " + std::string(flag.value_name);
}

constexpr std::string_view kGlobalUsage = "hostctl [--socket PATH] [--json]";

std::string command_usage(const CommandSpec& command) {
    std::string usage = std::string(command.name);
    for (auto argument : command.arguments) usage += " " + std::string(argument);
    for (const auto& flag : command.flags) usage += " [" + flag_text(flag, "|") + "]";
    return usage;
}

// Every sub-command, family by family: the order of `hostctl --help`.
const std::vector<CommandSpec>& command_table() {
    static const std::vector<CommandSpec> kCommands = [] {
        std::vector<CommandSpec> commands;
        for (const auto* family : {&sweep_commands(), &results_commands(), &daemon_commands()})
            commands.insert(commands.end(), family->begin(), family->end());
        return commands;
    }();
    return kCommands;
}

std::string general_usage() {
    std::string text = "usage: " + std::string(kGlobalUsage) + " COMMAND [ARGS]\n\n";
    text += "global options:\n";
    text += "  --socket PATH  the daemon's socket (default: $" +
            std::string(kSocketEnvironmentVariable) + ", else " + std::string(kDefaultSocketPath) +
            ")\n";
    text += "  --json         print the API's JSON (one document per line) instead of tables\n";
    text += "  --help         this text; 'hostctl help COMMAND' for one command\n\n";
    // Each command's usage, then its help indented below it: the usages
    // differ too much in length for one column to fit a terminal.
    text += "commands:\n";
    for (const auto& command : command_table()) {
        text += "  " + command_usage(command) + "\n      " + std::string(command.help) + "\n";
    }
    text += "\nexit status: 0 ok, 1 operation failed, 2 usage error, 3 daemon unreachable\n";
    return text;
}

std::string command_help(const CommandSpec& command) {
    std::string text = "usage: " + std::string(kGlobalUsage) + " " + command_usage(command) +
                       "\n\n" + std::string(command.help) + "\n";
    for (const auto& flag : command.flags)
        text += "  " + flag_text(flag, ", ") + "  " + std::string(flag.help) + "\n";
    return text;
}

std::vector<std::string> split_words(std::string_view name) {
    std::vector<std::string> words;
    std::istringstream stream{std::string(name)};
    for (std::string word; stream >> word;) words.push_back(word);
    return words;
}

// The command whose words start `tokens` (longest match), or null.
const CommandSpec* find_command(const std::vector<std::string>& tokens) {
    const CommandSpec* best = nullptr;
    std::size_t best_length = 0;
    for (const auto& command : command_table()) {
        auto words = split_words(command.name);
        if (words.size() <= tokens.size() && words.size() > best_length &&
            std::equal(words.begin(), words.end(), tokens.begin())) {
            best = &command;
            best_length = words.size();
        }
    }
    return best;
}

// Explains a command line that names no known command.
ExitCode unknown_command(const std::vector<std::string>& tokens, std::ostream& err) {
    std::vector<std::string> group_members;
    for (const auto& command : command_table()) {
        auto words = split_words(command.name);
        if (words.size() > 1 && words.front() == tokens.front()) group_members.push_back(words[1]);
    }
    if (!group_members.empty()) {
        std::string members;
        for (const auto& member : group_members) members += (members.empty() ? "" : ", ") + member;
        if (tokens.size() == 1) {
            err << "hostctl: '" << tokens.front() << "' needs a sub-command: " << members << "\n";
        } else {
            err << "hostctl: unknown command '" << tokens[0] << " " << tokens[1] << "'; '"
                << tokens[0] << "' takes: " << members << "\n";
        }
    } else {
        err << "hostctl: unknown command '" << tokens.front() << "'\n";
    }
    err << "Run 'hostctl --help' for the list of commands.\n";
    return ExitCode::kUsage;
}

// The global options (which may appear anywhere: `hostctl sweep list
// --json`) into `options`; what they do not claim (command words,
// arguments, sub-command switches) into `tokens`. kUsage when they do not parse.
std::optional<ExitCode> parse_global_options(const std::vector<std::string>& args,
                                             po::variables_map& options,
                                             std::vector<std::string>& tokens, std::ostream& err) {
    po::options_description global;
    global.add_options()("socket", po::value<std::string>())("json", po::bool_switch())(
        "help,h", po::bool_switch());
    try {
        auto parsed = po::command_line_parser(args).options(global).allow_unregistered().run();
        po::store(parsed, options);
        po::notify(options);
        tokens = po::collect_unrecognized(parsed.options, po::include_positional);
    } catch (const po::error& e) {
        err << "hostctl: " << e.what() << "\nRun 'hostctl --help' for usage.\n";
        return ExitCode::kUsage;
    }
    return std::nullopt;
}

// `hostctl help [COMMAND]`, and a command line without a command (usage on
// standard output with --help, else on standard error): the exit code when
// it was one of those.
std::optional<ExitCode> answer_help_or_no_command(std::vector<std::string>& tokens, bool help,
                                                  std::ostream& out, std::ostream& err) {
    if (!tokens.empty() && tokens.front() == "help") {
        tokens.erase(tokens.begin());
        if (tokens.empty()) {
            out << general_usage();
            return ExitCode::kOk;
        }
        const CommandSpec* command = find_command(tokens);
        if (!command) return unknown_command(tokens, err);
        out << command_help(*command);
        return ExitCode::kOk;
    }
    if (tokens.empty()) {
        if (help) {
            out << general_usage();
            return ExitCode::kOk;
        }
        err << general_usage();
        return ExitCode::kUsage;
    }
    return std::nullopt;
}

// --socket, else the environment's variable when set and not empty, else the default.
std::string socket_path_for(const po::variables_map& options, const Environment& environment) {
    if (options.count("socket")) return options["socket"].as<std::string>();
    if (auto from_environment =
            environment.variable ? environment.variable(kSocketEnvironmentVariable) : std::nullopt;
        from_environment && !from_environment->empty()) {
        return *from_environment;
    }
    return std::string(kDefaultSocketPath);
}

// The command's own arguments and switches, declared by its table entry.
void declare_command_options(const CommandSpec& command, po::options_description& options,
                             po::positional_options_description& positional) {
    for (const auto& flag : command.flags) {
        // Boost's "long,s" names the option and its one-letter alias.
        const std::string names =
            std::string(flag.name) + (flag.short_name ? std::string(",") + flag.short_name : "");
        if (flag.value_name.empty()) {
            options.add_options()(names.c_str(), po::bool_switch(), std::string(flag.help).c_str());
        } else {
            options.add_options()(names.c_str(), po::value<std::string>(),
                                  std::string(flag.help).c_str());
        }
    }
    for (auto argument : command.arguments) {
        options.add_options()(std::string(argument).c_str(), po::value<std::string>());
        positional.add(std::string(argument).c_str(), 1);
    }
}

// Parses `command_tokens` as `command`'s arguments and switches into
// `invocation`: the usage error's exit code when they do not fit.
std::optional<ExitCode> read_command_line(const CommandSpec& command,
                                          const std::vector<std::string>& command_tokens,
                                          Invocation& invocation) {
    po::options_description command_options;
    po::positional_options_description positional;
    declare_command_options(command, command_options, positional);
    po::variables_map command_values;
    try {
        po::store(po::command_line_parser(command_tokens)
                      .options(command_options)
                      .positional(positional)
                      .run(),
                  command_values);
        po::notify(command_values);
    } catch (const po::error& e) {
        return invocation.usage_error(e.what());
    }
    for (auto argument : command.arguments) {
        std::string name(argument);
        if (!command_values.count(name)) return invocation.usage_error("missing " + name);
        invocation.arguments[name] = command_values[name].as<std::string>();
    }
    for (const auto& flag : command.flags) {
        std::string name(flag.name);
        if (!flag.value_name.empty()) {
            if (command_values.count(name))
                invocation.values[name] = command_values[name].as<std::string>();
        } else if (command_values[name].as<bool>()) {
            invocation.flags.insert(name);
        }
    }
    return std::nullopt;
}

ExitCode run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
             const Environment& environment) {
    po::variables_map options;
    std::vector<std::string> tokens;
    if (auto refused = parse_global_options(args, options, tokens, err)) return *refused;
    const bool help = options["help"].as<bool>();
    if (auto answered = answer_help_or_no_command(tokens, help, out, err)) return *answered;
    const CommandSpec* command = find_command(tokens);
    if (!command) return unknown_command(tokens, err);
    if (help) {
        out << command_help(*command);
        return ExitCode::kOk;
    }

    Invocation invocation{std::string(command->name),
                          std::string(kGlobalUsage) + " " + command_usage(*command),
                          DaemonClient(socket_path_for(options, environment)),
                          options["json"].as<bool>(),
                          {},
                          {},
                          {},
                          out,
                          err,
                          environment};
    const std::vector<std::string> command_tokens(
        tokens.begin() + split_words(command->name).size(), tokens.end());
    if (auto refused = read_command_line(*command, command_tokens, invocation)) return *refused;
    return command->handler(invocation);
}

}  // namespace

namespace {
// The columns of the terminal on standard output: its window size, else
// $COLUMNS (a shell's, exported), else 0 (unknown).
std::size_t standard_output_columns() {
    winsize size{};
    if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
    const char* columns = std::getenv("COLUMNS");
    if (columns == nullptr) return 0;
    std::size_t parsed = 0;
    auto [end, ec] = std::from_chars(columns, columns + std::strlen(columns), parsed);
    return ec == std::errc() && *end == '\0' ? parsed : 0;
}
}  // namespace

Environment process_environment() {
    Environment environment;
    environment.variable = [](std::string_view name) -> std::optional<std::string> {
        const char* value = std::getenv(std::string(name).c_str());
        if (!value) return std::nullopt;
        return std::string(value);
    };
    environment.stdout_is_tty = ::isatty(STDOUT_FILENO) == 1;
    environment.terminal_columns = [] { return standard_output_columns(); };
    environment.redraw_each_second = true;
    environment.now = [] { return std::chrono::steady_clock::now(); };
    return environment;
}

ExitCode run_hostctl(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                     const Environment& environment) {
    // The seam where library exceptions (Boost, JSON, allocation) stop.
    try {
        return run(args, out, err, environment);
    } catch (const std::exception& e) {
        err << "hostctl: internal error: " << e.what() << "\n";
        return ExitCode::kFailed;
    }
}

}  // namespace ds::hostctl
