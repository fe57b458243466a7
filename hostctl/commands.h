// hostctl's command line: global options, and the sub-command table gathered
// from the families of commands (sweep_commands.h, results_commands.h,
// daemon_commands.h), whose handlers are each a plain client of one or two
// daemon API calls. main.cpp only hands argv and the real process
// surroundings to run_hostctl().
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace ds::hostctl {

// hostctl's exit status: a contract with scripts, never renumbered.
enum class ExitCode : int {
    kOk = 0,
    kFailed = 1,       // the operation failed: API error, a run failed, bad answer
    kUsage = 2,        // the command line is wrong
    kUnreachable = 3,  // nothing listens at the socket
};

inline constexpr std::string_view kDefaultSocketPath = "/run/disksweep/disksweepd.sock";
inline constexpr std::string_view kSocketEnvironmentVariable = "DISKSWEEP_SOCKET";

// What hostctl reads from its process surroundings; tests supply their own.
struct Environment {
    // Looks up an environment variable; unset when the function is empty.
    std::function<std::optional<std::string>(std::string_view name)> variable;
    // Whether standard output is a terminal: progress is redrawn with '\r'
    // there, printed as plain lines otherwise.
    bool stdout_is_tty = false;
    // The terminal's columns, asked at each redraw (it may be resized); 0 or
    // empty: unknown (80 is assumed). Live lines are cut to it, never wrap.
    std::function<std::size_t()> terminal_columns;
    // On a terminal, redraw the live lines each second between events, from
    // a thread of its own (so elapsed times move while a guest boots). Off
    // in tests, whose output must not depend on timing.
    bool redraw_each_second = false;
    // Monotonic clock for ETA estimates; steady_clock when empty.
    std::function<std::chrono::steady_clock::time_point()> now;
};

// The real process: getenv(), isatty(STDOUT_FILENO), the window size of
// standard output (TIOCGWINSZ, else $COLUMNS), steady_clock.
Environment process_environment();

// Runs one hostctl invocation. `args` excludes the program name. Normal
// output goes to `out`, diagnostics ("hostctl: ...") and usage errors to
// `err`. Never throws.
ExitCode run_hostctl(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                     const Environment& environment);

}  // namespace ds::hostctl
