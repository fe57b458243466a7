// The test double for the process seam (common/process.h): a ProcessRunner
// that runs nothing, records each command line, and answers from a script
// the test writes as data. Header only, so that every unit binary can use it
// (unit_common links no fakes library).
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/process.h"

namespace ds::testing {

using Argv = std::vector<std::string>;

// What a program that ran to its end reports.
inline ProcessOutput exited(int code, std::string stdout_text = "", std::string stderr_text = "") {
    ProcessOutput output;
    output.exit_code = code;
    output.stdout_text = std::move(stdout_text);
    output.stderr_text = std::move(stderr_text);
    return output;
}

// Answers each command by its name: its program (argv[0]) unless the test
// names commands its own way (e.g. "rbd create" for rbd's subcommands). A
// command's answer is, in this order: a start failure when `cannot_start`;
// its next queued reply (reply(), each used once); its standing reply
// (`replies`); `otherwise`; exit 0 with no output. run_streaming is the
// seam's default (the lines after the end).
class ScriptedProcessRunner : public ProcessRunner {
  public:
    using CommandName = std::function<std::string(const Argv& argv)>;

    static std::string program_of(const Argv& argv) { return argv.empty() ? "" : argv.front(); }

    explicit ScriptedProcessRunner(CommandName name_of = program_of)
        : name_of_(std::move(name_of)) {}

    // Queues `output` for the next command named `name`.
    void reply(const std::string& name, Result<ProcessOutput> output) {
        std::lock_guard lock(mutex_);
        queued_[name].push_back(std::move(output));
    }
    void reply_ok(const std::string& name, std::string stdout_text) {
        reply(name, exited(0, std::move(stdout_text)));
    }
    void reply_failure(const std::string& name, int exit_code, std::string stderr_text) {
        reply(name, exited(exit_code, "", std::move(stderr_text)));
    }

    Result<ProcessOutput> run(const Argv& argv, std::chrono::milliseconds timeout) override {
        std::lock_guard lock(mutex_);
        commands.push_back(argv);
        timeouts.push_back(timeout);
        if (cannot_start) {
            return make_error(errc::kIo, "cannot run " + program_of(argv) + ": No such file");
        }
        const std::string name = name_of_(argv);
        if (auto queue = queued_.find(name); queue != queued_.end() && !queue->second.empty()) {
            Result<ProcessOutput> next = std::move(queue->second.front());
            queue->second.pop_front();
            return next;
        }
        if (auto standing = replies.find(name); standing != replies.end()) return standing->second;
        return otherwise ? otherwise(argv) : exited(0);
    }

    // The first recorded command named `name`.
    std::optional<Argv> command(const std::string& name) const {
        for (const Argv& argv : commands) {
            if (name_of_(argv) == name) return argv;
        }
        return std::nullopt;
    }
    // The names of the recorded commands, in the order they ran.
    std::vector<std::string> names() const {
        std::vector<std::string> names;
        for (const Argv& argv : commands) names.push_back(name_of_(argv));
        return names;
    }

    // The script, set before the commands run.
    std::map<std::string, ProcessOutput> replies;  // by command name, for every such command
    std::function<ProcessOutput(const Argv& argv)> otherwise;
    bool cannot_start = false;  // every command fails as if its program were not installed

    // What ran, in order; read once the commands have run (run() may be
    // called from several threads).
    std::vector<Argv> commands;
    std::vector<std::chrono::milliseconds> timeouts;

  private:
    CommandName name_of_;
    std::mutex mutex_;
    std::map<std::string, std::deque<Result<ProcessOutput>>> queued_;
};

}  // namespace ds::testing
