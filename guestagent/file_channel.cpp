#include "guestagent/file_channel.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <thread>

namespace ds::agent {
namespace {

using namespace std::chrono_literals;

constexpr auto kJobFilePollInterval = 100ms;

// The file's bytes, at most `limit` + 1 of them (enough to tell it is too
// long); nullopt while it does not exist.
Result<std::optional<std::string>> read_bounded(const std::string& path, std::size_t limit) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        if (errno == ENOENT) return std::optional<std::string>();
        return make_error(errc::kIo, "job file " + path + ": " + std::strerror(errno));
    }
    std::string content(limit + 1, '\0');
    in.read(content.data(), static_cast<std::streamsize>(content.size()));
    if (in.bad()) return make_error(errc::kIo, "reading job file " + path);
    content.resize(static_cast<std::size_t>(in.gcount()));
    return std::optional<std::string>(std::move(content));
}

// The '\n'-terminated lines of `content`, or errc::kProtocol for one over max_line.
Result<std::deque<std::string>> split_lines(std::string_view content, std::size_t max_line) {
    std::deque<std::string> lines;
    while (!content.empty()) {
        const auto newline = content.find('\n');
        if (newline > max_line) {
            return make_error(errc::kProtocol, "a message of the job file exceeds the limit of " +
                                                   std::to_string(max_line) + " bytes");
        }
        lines.emplace_back(content.substr(0, newline));
        content.remove_prefix(newline + 1);
    }
    return lines;
}

}  // namespace

Result<std::unique_ptr<Channel>> FileChannel::open(const std::string& job_file,
                                                   const std::string& output_file,
                                                   std::size_t max_line) {
    const int fd = ::open(output_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        return make_error(errc::kIo,
                          "cannot open output file " + output_file + ": " + std::strerror(errno));
    }
    return std::unique_ptr<Channel>(new FileChannel(job_file, max_line, fd));
}

FileChannel::FileChannel(std::string job_file, std::size_t max_line, int output_fd)
    : job_file_(std::move(job_file)), max_line_(max_line), output_fd_(output_fd) {}

FileChannel::~FileChannel() {
    ::close(output_fd_);
}

Status FileChannel::load_job(Deadline deadline) {
    for (;;) {
        // The whole file may hold one line and its '\n'.
        auto content = read_bounded(job_file_, max_line_ + 1);
        if (!content) return content.error();
        const bool complete = *content && !(*content)->empty() && (*content)->back() == '\n';
        const bool oversized = *content && (*content)->size() > max_line_ + 1;
        if (complete || oversized) {
            loaded_ = true;
            auto lines = split_lines(**content, max_line_);
            if (!lines) return lines.error();
            if (oversized) {
                return make_error(errc::kProtocol, "the job file exceeds the limit of " +
                                                       std::to_string(max_line_) + " bytes");
            }
            lines_ = std::move(*lines);
            return ok_status();
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            return make_error(errc::kTimeout,
                              "no complete job in " + job_file_ + " (a line ending in '\\n')");
        }
        std::this_thread::sleep_for(kJobFilePollInterval);
    }
}

Result<std::string> FileChannel::read_line(Deadline deadline) {
    if (!loaded_) DS_TRY(load_job(deadline));
    if (lines_.empty()) {
        return make_error(errc::kIo, "no more messages: the job file is read (one-shot mode)");
    }
    std::string line = std::move(lines_.front());
    lines_.pop_front();
    return line;
}

Status FileChannel::write(std::string_view data) {
    return protocol::write_all(output_fd_, data);
}

}  // namespace ds::agent
