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

Result<ProcessOutput> RealProcessRunner::run(const std::vector<std::string>& argv,
                                             std::chrono::milliseconds timeout) {
    if (argv.empty()) return make_error(errc::kInvalidArgument, "empty command");
    int out_pipe[2], err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
        return make_error(errc::kIo, std::string("pipe: ") + std::strerror(errno));
    }
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
        ::close(out_pipe[0]);
        ::close(out_pipe[1]);
        return make_error(errc::kIo, std::string("pipe: ") + std::strerror(errno));
    }
    // An exec failure is reported through this pipe (closed by CLOEXEC on success).
    int exec_pipe[2];
    if (::pipe2(exec_pipe, O_CLOEXEC) != 0) {
        for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
        return make_error(errc::kIo, std::string("pipe: ") + std::strerror(errno));
    }
    std::vector<char*> args;
    for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);

    pid_t pid = ::fork();
    if (pid < 0) {
        for (int fd :
             {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], exec_pipe[0], exec_pipe[1]}) {
            ::close(fd);
        }
        return make_error(errc::kIo, std::string("fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
        // Own process group, so a timeout kills the whole tree (fio forks
        // a worker per job).
        ::setpgid(0, 0);
        int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (devnull >= 0) ::dup2(devnull, 0);
        ::dup2(out_pipe[1], 1);
        ::dup2(err_pipe[1], 2);
        ::execvp(args[0], args.data());
        int error = errno;
        (void)!::write(exec_pipe[1], &error, sizeof error);
        ::_exit(127);
    }
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    ::close(exec_pipe[1]);

    int exec_error = 0;
    ssize_t got = ::read(exec_pipe[0], &exec_error, sizeof exec_error);
    ::close(exec_pipe[0]);
    if (got == static_cast<ssize_t>(sizeof exec_error)) {
        ::close(out_pipe[0]);
        ::close(err_pipe[0]);
        ::waitpid(pid, nullptr, 0);
        return make_error(errc::kIo, "cannot run " + argv[0] + ": " + std::strerror(exec_error));
    }

    ProcessOutput output;
    int fds[2] = {out_pipe[0], err_pipe[0]};
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
            } else if (n == 0 || errno != EINTR) {
                close_fd(fds[index]);
            }
        }
    }
    close_fd(fds[0]);
    close_fd(fds[1]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status)) {
        output.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        output.signal = WTERMSIG(status);
    }
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
