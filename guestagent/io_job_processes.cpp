#include "guestagent/io_job_processes.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/file_descriptor.h"

namespace ds::io {
namespace {

// Whole-buffer write; false when the pipe is gone.
bool write_all(int fd, const std::string& bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t written = write(fd, bytes.data() + done, bytes.size() - done);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) return false;
        done += static_cast<std::size_t>(written);
    }
    return true;
}

void append_u64(std::string& out, std::uint64_t value) {
    out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

std::string error_frame(const Error& error) {
    std::string frame = "E";
    append_u64(frame, error.code.size());
    frame += error.code;
    append_u64(frame, error.message.size());
    frame += error.message;
    return frame;
}

std::string stats_frame(const JobStats& stats) {
    const std::string encoded = encode_job_stats(stats);
    std::string frame = "S";
    append_u64(frame, encoded.size());
    frame += encoded;
    return frame;
}

// Closes every descriptor the child inherited except stdio and `keep`: the
// caller's sockets and files (the agent's channel, other jobs' pipes) must
// not stay open in, or be touched by, a job process.
void close_inherited_fds(std::vector<int> keep) {
    keep.push_back(STDERR_FILENO);
    std::sort(keep.begin(), keep.end());
    unsigned from = 0;
    for (const int fd : keep) {
        if (fd < 0) continue;
        const auto kept = static_cast<unsigned>(fd);
        if (kept > from) {
            if (close_range(from, kept - 1, 0) != 0) {
                for (unsigned each = from; each < kept; ++each) close(static_cast<int>(each));
            }
        }
        from = std::max(from, kept + 1);
    }
    if (close_range(from, ~0u, 0) != 0) {
        for (unsigned each = from; each < 65536; ++each) close(static_cast<int>(each));
    }
}

// The body of a job process; never returns. Runs in a child forked from a
// possibly multithreaded caller, so it only uses its own runner, the
// kernel and malloc (which glibc keeps usable across fork), and leaves
// with _exit (no atexit handlers, no stdio flush of the parent's buffers).
[[noreturn]] void job_process(JobRunner& runner, int result_fd, int gate_fd, pid_t parent) {
    // Die with the thread that forked us: run_io_job waits for every job,
    // so that only happens when the caller itself dies.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    setsid();  // its own session: its own autogroup, as fio's jobs
    close_inherited_fds({STDIN_FILENO, STDOUT_FILENO, runner.fd(), result_fd, gate_fd});
    if (auto status = runner.setup_io(); !status) {
        (void)write_all(result_fd, error_frame(job_error(runner.job_index(), status.error())));
        _exit(0);
    }
    if (!write_all(result_fd, "R")) _exit(1);
    char byte = 0;
    while (read(gate_fd, &byte, 1) < 0 && errno == EINTR) {
    }
    runner.run();
    const std::string frame =
        runner.error() ? error_frame(*runner.error()) : stats_frame(runner.take_stats());
    _exit(write_all(result_fd, frame) ? 0 : 1);
}

// What one job process sent, decoded.
Result<JobStats> decode_frame(unsigned job, std::string_view bytes, int wait_status) {
    auto take_u64 = [&](std::uint64_t& value) {
        if (bytes.size() < sizeof value) return false;
        std::memcpy(&value, bytes.data(), sizeof value);
        bytes.remove_prefix(sizeof value);
        return true;
    };
    auto take_text = [&](std::string& text) {
        std::uint64_t size = 0;
        if (!take_u64(size) || size > bytes.size()) return false;
        text.assign(bytes.substr(0, size));
        bytes.remove_prefix(size);
        return true;
    };
    if (!bytes.empty() && bytes.front() == 'R') bytes.remove_prefix(1);
    const char kind = bytes.empty() ? '\0' : bytes.front();
    if (!bytes.empty()) bytes.remove_prefix(1);
    if (kind == 'E') {
        Error error;
        if (take_text(error.code) && take_text(error.message)) return error;
    } else if (kind == 'S') {
        std::string encoded;
        if (take_text(encoded)) return decode_job_stats(encoded);
    }
    std::string how = "ended";
    if (WIFEXITED(wait_status)) {
        how = "exited with status " + std::to_string(WEXITSTATUS(wait_status));
    } else if (WIFSIGNALED(wait_status)) {
        const char* name = sigabbrev_np(WTERMSIG(wait_status));
        how = "was killed by signal " + std::to_string(WTERMSIG(wait_status)) +
              (name ? std::string(" (SIG") + name + ")" : std::string());
    }
    return make_error(errc::kIo, "job " + std::to_string(job) + ": its process " + how +
                                     " without a complete report");
}

// One job process as its parent sees it.
struct JobProcess {
    pid_t pid = -1;
    FileDescriptor result;  // the read end of its result pipe
    std::string bytes;      // what it has sent so far
    bool eof = false;
    int wait_status = 0;
};

// Reads what `child` has sent so far (one read); false on EOF or error.
bool read_some(JobProcess& child) {
    char buffer[65536];
    while (true) {
        const ssize_t got = read(child.result.get(), buffer, sizeof buffer);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            child.eof = true;
            return false;
        }
        child.bytes.append(buffer, static_cast<std::size_t>(got));
        return true;
    }
}

// Forks one job process per runner, in order, into `children`; stops at
// the first that cannot be started and returns why.
std::optional<Error> start_job_processes(Runners& runners, int gate_read,
                                         std::vector<JobProcess>& children) {
    const pid_t parent = getpid();
    for (std::size_t job = 0; job < runners.size(); ++job) {
        int result[2];
        if (pipe2(result, O_CLOEXEC) != 0) {
            return io_error("cannot create the result pipe of job " + std::to_string(job), errno);
        }
        FileDescriptor read_end(result[0]);
        FileDescriptor write_end(result[1]);
        const pid_t pid = fork();
        if (pid == 0) job_process(*runners[job], write_end.get(), gate_read, parent);
        if (pid < 0) {
            return io_error("cannot start the process of job " + std::to_string(job), errno);
        }
        JobProcess& child = children.emplace_back();
        child.pid = pid;
        child.result = std::move(read_end);
        // write_end closes here: the pipe reads EOF once the child is gone.
    }
    return std::nullopt;
}

// Waits for each child's first report; true when every one said 'R'.
bool all_set_up(std::vector<JobProcess>& children) {
    bool all_ready = true;
    for (JobProcess& child : children) {
        while (child.bytes.empty() && read_some(child)) {
        }
        if (child.bytes.empty() || child.bytes.front() != 'R') all_ready = false;
    }
    return all_ready;
}

// Reads every child's report to its EOF, relaying the caller's stop flag
// meanwhile (it lives in this process's memory, which the children do not
// share).
void collect_reports(std::vector<JobProcess>& children, ProcessFlags& flags,
                     const std::atomic<bool>* stop) {
    constexpr int kStopPollMs = 20;
    std::vector<pollfd> waiting;
    std::vector<std::size_t> waiting_job;
    while (true) {
        if (stop && stop->load(std::memory_order_relaxed)) flags.stop.store(true);
        waiting.clear();
        waiting_job.clear();
        for (std::size_t job = 0; job < children.size(); ++job) {
            if (children[job].eof) continue;
            waiting.push_back({children[job].result.get(), POLLIN, 0});
            waiting_job.push_back(job);
        }
        if (waiting.empty()) return;
        const int ready = poll(waiting.data(), waiting.size(), stop ? kStopPollMs : -1);
        if (ready < 0 && errno != EINTR) {
            // Cannot happen with valid descriptors; read blocking instead.
            for (const std::size_t job : waiting_job) {
                while (read_some(children[job])) {
                }
            }
            return;
        }
        for (std::size_t i = 0; ready > 0 && i < waiting.size(); ++i) {
            if (waiting[i].revents != 0) (void)read_some(children[waiting_job[i]]);
        }
    }
}

// Every child's statistics, in job order, or the first job's error.
Result<std::vector<JobStats>> decode_reports(const std::vector<JobProcess>& children) {
    std::vector<JobStats> stats;
    std::optional<Error> first_error;
    for (std::size_t job = 0; job < children.size(); ++job) {
        auto decoded = decode_frame(static_cast<unsigned>(job), children[job].bytes,
                                    children[job].wait_status);
        if (!decoded) {
            if (!first_error) first_error = decoded.error();
            continue;
        }
        stats.push_back(std::move(*decoded));
    }
    if (first_error) return *first_error;
    return stats;
}

}  // namespace

void UnmapFlags::operator()(ProcessFlags* flags) const {
    flags->~ProcessFlags();
    munmap(flags, sizeof(ProcessFlags));
}

Result<SharedFlags> map_shared_flags() {
    void* memory = mmap(nullptr, sizeof(ProcessFlags), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) {
        return io_error("cannot map the flags shared with job processes", errno);
    }
    return SharedFlags(new (memory) ProcessFlags);
}

Result<std::vector<JobStats>> run_as_processes(Runners& runners, ProcessFlags& flags,
                                               const std::atomic<bool>* stop) {
    int gate[2];
    if (pipe2(gate, O_CLOEXEC) != 0) return io_error("cannot create the job start pipe", errno);
    FileDescriptor gate_read(gate[0]);
    FileDescriptor gate_write(gate[1]);

    std::vector<JobProcess> children;
    children.reserve(runners.size());
    const std::optional<Error> spawn_error =
        start_job_processes(runners, gate_read.get(), children);
    // Start only when every job is set up: a job whose setup failed (or
    // could not be started) aborts the others before any I/O.
    const bool all_ready = all_set_up(children);
    if (spawn_error || !all_ready) flags.abort.store(true);
    gate_write = FileDescriptor();  // every child's read() of the gate returns 0: go

    collect_reports(children, flags, stop);
    for (JobProcess& child : children) {
        while (waitpid(child.pid, &child.wait_status, 0) < 0 && errno == EINTR) {
        }
    }
    if (spawn_error) return *spawn_error;
    return decode_reports(children);
}

}  // namespace ds::io
