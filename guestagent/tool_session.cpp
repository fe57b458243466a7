#include "guestagent/tool_session.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <future>
#include <sstream>

#include "common/text.h"
#include "common/workload_output.h"
#include "guestagent/mariadb_workload.h"

namespace ds::agent {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

constexpr std::string_view kNoSpaceText = "No space left on device";
// Without a time limit from the job: a day bounds every step.
constexpr std::chrono::seconds kNoTimeLimit{24 * 3600};

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

ToolSession::ToolSession(WorkloadContext& ctx, std::string what)
    : ctx_(ctx),
      what_(std::move(what)),
      start_(ctx.clock->now()),
      limit_(ctx.time_limit > std::chrono::seconds(0) ? ctx.time_limit : kNoTimeLimit),
      deadline_(start_ + limit_) {}

void ToolSession::report(const std::string& message, std::optional<double> fraction) {
    if (ctx_.progress) ctx_.progress(message, elapsed(), fraction);
}

milliseconds ToolSession::remaining() const {
    return std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(deadline_ - now()));
}

Error ToolSession::timeout(const std::string& step) const {
    return make_error(errc::kTimeout, what_ + " was stopped after " + format_seconds(elapsed()) +
                                          " s during " + step +
                                          ": it exceeded the workload's time limit of " +
                                          std::to_string(limit_.count()) + " s");
}

Error ToolSession::failure(const std::string& step, const std::string& tool_text) const {
    const std::string log = server_log();
    std::string message = what_ + ": " + step + " failed";
    // The server's own error lines first: they name the cause.
    const auto server_lines = server_error_lines(log);
    if (!server_lines.empty()) message += ": " + join(server_lines, " | ");
    if (const auto lines = notable_lines(tool_text); !lines.empty()) {
        message += "; output: " + join(lines, " | ");
    } else if (!tool_text.empty() && server_lines.empty()) {
        message += "; output ends: " + tail(tool_text, 400);
    }
    if (mariadb::says_no_space(tool_text) || mariadb::says_no_space(log)) {
        if (message.find(kNoSpaceText) == std::string::npos) {
            message += " (" + std::string(kNoSpaceText) + ")";
        }
        return make_error(errc::kIo, message);
    }
    return make_error(errc::kAgent, message);
}

Error ToolSession::tool_failure(const std::string& tool, const ProcessOutput& ran,
                                const std::string& stdout_text) const {
    return failure(tool + " (exit " + std::to_string(ran.exit_code) + ")",
                   ran.stderr_text + tail(stdout_text, 600));
}

Result<ProcessOutput> ToolSession::run(const std::vector<std::string>& argv,
                                       const std::string& step, const std::string& progress_file,
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

Result<ProcessOutput> ToolSession::run_checked(const std::vector<std::string>& argv,
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

Result<ProcessOutput> ToolSession::stream(const std::vector<std::string>& argv,
                                          const std::string& step,
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

}  // namespace ds::agent
