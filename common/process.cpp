#include "common/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ds {

namespace {
constexpr std::size_t kMaxCapture = 16u << 20;

void close_fd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
}
}  // namespace

std::string describe_command(const std::vector<std::string>& argv) {
    std::string out;
    for (const auto& arg : argv) {
        if (!out.empty()) out += ' ';
        out += arg;
    }
    return out;
}

namespace {

// The child's stdout and stderr pipes, and the one an exec failure is
// reported through (closed by CLOEXEC on success). [0] reads, [1] writes.
struct ChildPipes {
    int out[2];
    int err[2];
    int exec[2];
};

Result<ChildPipes> open_child_pipes() {
    ChildPipes pipes{};
    if (::pipe2(pipes.out, O_CLOEXEC) != 0) {
        return make_error(errc::kIo, std::string("pipe: ") + std::strerror(errno));
    }
    if (::pipe2(pipes.err, O_CLOEXEC) != 0) {
        ::close(pipes.out[0]);
        ::close(pipes.out[1]);
        return make_error(errc::kIo, std::string("pipe: ") + std::strerror(errno));
    }
    if (::pipe2(pipes.exec, O_CLOEXEC) != 0) {
        for (int fd : {pipes.out[0], pipes.out[1], pipes.err[0], pipes.err[1]}) ::close(fd);
        return make_error(errc::kIo, std::string("pipe: ") + std::strerror(errno));
    }
    return pipes;
}

// In the forked child: stdin from /dev/null, stdout and stderr to the pipes,
// then exec; on failure, errno goes up the exec pipe.
[[noreturn]] void exec_child(const std::vector<char*>& args, const ChildPipes& pipes) {
    // Own process group, so a timeout kills the whole tree (fio forks
    // a worker per job).
    ::setpgid(0, 0);
    int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(pipes.out[1], 1);
    ::dup2(pipes.err[1], 2);
    ::execvp(args[0], args.data());
    int error = errno;
    (void)!::write(pipes.exec[1], &error, sizeof error);
    ::_exit(127);
}

// In the parent, after closing the write ends: the error if the child's exec
// failed (its output pipes are then closed and the child reaped).
Status check_exec(pid_t pid, const ChildPipes& pipes, const std::string& program) {
    int exec_error = 0;
    ssize_t got = ::read(pipes.exec[0], &exec_error, sizeof exec_error);
    ::close(pipes.exec[0]);
    if (got == static_cast<ssize_t>(sizeof exec_error)) {
        ::close(pipes.out[0]);
        ::close(pipes.err[0]);
        ::waitpid(pid, nullptr, 0);
        return make_error(errc::kIo, "cannot run " + program + ": " + std::strerror(exec_error));
    }
    return ok_status();
}

// Hands each complete line of `text` from `from` on to `on_line`; returns
// where the first incomplete line starts.
std::size_t hand_on_lines(const std::string& text, std::size_t from,
                          const std::function<void(std::string_view)>& on_line) {
    for (auto end = text.find('\n', from); end != std::string::npos; end = text.find('\n', from)) {
        on_line(std::string_view(text).substr(from, end - from));
        from = end + 1;
    }
    return from;
}

// Reads the child's stdout and stderr (each up to kMaxCapture) until both
// end or `timeout` passes, which kills the child's process group. Closes both.
// With `on_line`, each stdout line is handed on as it arrives.
void capture_output(pid_t pid, const ChildPipes& pipes, std::chrono::milliseconds timeout,
                    ProcessOutput& output, const std::function<void(std::string_view)>* on_line) {
    std::size_t handed_on = 0;
    int fds[2] = {pipes.out[0], pipes.err[0]};
    std::string* sinks[2] = {&output.stdout_text, &output.stderr_text};
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (fds[0] >= 0 || fds[1] >= 0) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            output.timed_out = true;
            ::kill(-pid, SIGKILL);
            ::kill(pid, SIGKILL);
            break;
        }
        pollfd polled[2];
        int count = 0;
        for (int i = 0; i < 2; ++i) {
            if (fds[i] >= 0) polled[count++] = pollfd{fds[i], POLLIN, 0};
        }
        int ready = ::poll(polled, count, static_cast<int>(std::min<long>(left.count(), 1000)));
        if (ready < 0 && errno != EINTR) break;
        for (int p = 0; p < count; ++p) {
            if (!(polled[p].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            int index = polled[p].fd == fds[0] ? 0 : 1;
            char buffer[65536];
            ssize_t n = ::read(fds[index], buffer, sizeof buffer);
            if (n > 0) {
                std::string& sink = *sinks[index];
                if (sink.size() < kMaxCapture) {
                    sink.append(buffer, std::min<std::size_t>(n, kMaxCapture - sink.size()));
                }
                if (on_line != nullptr && index == 0) {
                    handed_on = hand_on_lines(sink, handed_on, *on_line);
                }
            } else if (n == 0 || errno != EINTR) {
                close_fd(fds[index]);
            }
        }
    }
    close_fd(fds[0]);
    close_fd(fds[1]);
    if (on_line != nullptr && handed_on < output.stdout_text.size()) {
        (*on_line)(std::string_view(output.stdout_text).substr(handed_on));
    }
}

// Waits for the child and records how it ended.
void reap_child(pid_t pid, ProcessOutput& output) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status)) {
        output.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        output.signal = WTERMSIG(status);
    }
}

}  // namespace

Result<ProcessOutput> ProcessRunner::run_streaming(
    const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
    const std::function<void(std::string_view line)>& on_line) {
    DS_ASSIGN_OR_RETURN(auto output, run(argv, timeout));
    const std::size_t rest = hand_on_lines(output.stdout_text, 0, on_line);
    if (rest < output.stdout_text.size())
        on_line(std::string_view(output.stdout_text).substr(rest));
    return output;
}

Result<ProcessOutput> RealProcessRunner::run(const std::vector<std::string>& argv,
                                             std::chrono::milliseconds timeout) {
    return run_with(argv, timeout, nullptr);
}

Result<ProcessOutput> RealProcessRunner::run_streaming(
    const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
    const std::function<void(std::string_view line)>& on_line) {
    return run_with(argv, timeout, &on_line);
}

Result<ProcessOutput> RealProcessRunner::run_with(
    const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
    const std::function<void(std::string_view line)>* on_line) {
    if (argv.empty()) return make_error(errc::kInvalidArgument, "empty command");
    DS_ASSIGN_OR_RETURN(const ChildPipes pipes, open_child_pipes());
    std::vector<char*> args;
    for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);

    pid_t pid = ::fork();
    if (pid < 0) {
        for (int fd : {pipes.out[0], pipes.out[1], pipes.err[0], pipes.err[1], pipes.exec[0],
                       pipes.exec[1]}) {
            ::close(fd);
        }
        return make_error(errc::kIo, std::string("fork: ") + std::strerror(errno));
    }
    if (pid == 0) exec_child(args, pipes);
    ::close(pipes.out[1]);
    ::close(pipes.err[1]);
    ::close(pipes.exec[1]);
    DS_TRY(check_exec(pid, pipes, argv[0]));

    ProcessOutput output;
    capture_output(pid, pipes, timeout, output, on_line);
    reap_child(pid, output);
    return output;
}

Status run_checked(ProcessRunner& runner, const std::vector<std::string>& argv,
                   std::chrono::milliseconds timeout) {
    DS_ASSIGN_OR_RETURN(auto output, runner.run(argv, timeout));
    if (output.timed_out) {
        return make_error(errc::kTimeout, describe_command(argv) + " timed out after " +
                                              std::to_string(timeout.count() / 1000) + " s");
    }
    if (output.exit_code != 0) {
        std::string tail = output.stderr_text;
        if (tail.size() > 2000) tail = tail.substr(tail.size() - 2000);
        while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
        std::string how = output.signal ? "killed by signal " + std::to_string(output.signal)
                                        : "exit code " + std::to_string(output.exit_code);
        return make_error(errc::kIo, describe_command(argv) + " failed (" + how + ")" +
                                         (tail.empty() ? "" : ": " + tail));
    }
    return ok_status();
}

}  // namespace ds
