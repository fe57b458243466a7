// Running a program: the one seam through which disksweep starts external
// tools (qemu-img on the host; mkfs, mount, fio in the guest). A fake
// implementation lives in the tests.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace ds {

struct ProcessOutput {
    int exit_code = -1;  // -1 when killed by a signal
    int signal = 0;      // the signal that ended it, 0 if it exited
    bool timed_out = false;
    std::string stdout_text;
    std::string stderr_text;
};

class ProcessRunner {
  public:
    virtual ~ProcessRunner() = default;
    // Runs argv (argv[0] looked up in PATH) to completion or until `timeout`
    // (then SIGKILL). Fails only when it cannot be started at all; a
    // non-zero exit is a successful ProcessOutput.
    virtual Result<ProcessOutput> run(const std::vector<std::string>& argv,
                                      std::chrono::milliseconds timeout) = 0;
    // As run(), and hands each complete stdout line (without its '\n') to
    // `on_line` as soon as it is read, on the calling thread; a last line
    // without '\n' is handed on at the end. The lines are still in
    // stdout_text. This default runs to completion first and then hands the
    // lines on (enough for fakes); RealProcessRunner streams them.
    virtual Result<ProcessOutput> run_streaming(
        const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
        const std::function<void(std::string_view line)>& on_line);
};

// fork/exec with pipes; output capped at 16 MiB per stream.
class RealProcessRunner : public ProcessRunner {
  public:
    Result<ProcessOutput> run(const std::vector<std::string>& argv,
                              std::chrono::milliseconds timeout) override;
    Result<ProcessOutput> run_streaming(
        const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
        const std::function<void(std::string_view line)>& on_line) override;

  private:
    Result<ProcessOutput> run_with(const std::vector<std::string>& argv,
                                   std::chrono::milliseconds timeout,
                                   const std::function<void(std::string_view line)>* on_line);
};

// "mkfs.ext4 -F /dev/sdb" for messages.
std::string describe_command(const std::vector<std::string>& argv);
// Runs and turns a non-zero exit into an Error carrying the stderr tail.
Status run_checked(ProcessRunner& runner, const std::vector<std::string>& argv,
                   std::chrono::milliseconds timeout);

}  // namespace ds
