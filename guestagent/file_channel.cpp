#include "guestagent/file_channel.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>

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

// The directory `path` goes in ("." for a bare name).
std::string directory_of(const std::string& path) {
    const auto slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

// A file of `path` can be made and an earlier one is gone.
Status prepare_output(const std::string& what, const std::string& path) {
    if (path.empty()) return make_error(errc::kIo, "no " + what + " file given");
    const std::string directory = directory_of(path);
    if (::access(directory.c_str(), W_OK | X_OK) != 0) {
        return make_error(errc::kIo, "cannot write the " + what + " file " + path + ": " +
                                         directory + ": " + std::strerror(errno));
    }
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
        return make_error(errc::kIo, "cannot remove an earlier " + what + " file " + path + ": " +
                                         std::strerror(errno));
    }
    return ok_status();
}

// Replaces `path` with `content`: written to PATH.tmp, then renamed over
// it, so a reader (the host, through the guest agent's file-read) opens the
// old file or the new one, each complete. No fsync: the reader is on this
// machine, and a crash ends the run anyway.
Status replace_file(const std::string& path, std::string_view content) {
    const std::string temporary = path + ".tmp";
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return make_error(errc::kIo, "cannot create " + temporary + ": " + std::strerror(errno));
    Status written = protocol::write_all(fd, content);
    if (::close(fd) != 0 && written) {
        written = make_error(errc::kIo, "closing " + temporary + ": " + std::strerror(errno));
    }
    if (written && ::rename(temporary.c_str(), path.c_str()) != 0) {
        written = make_error(
            errc::kIo, "cannot rename " + temporary + " to " + path + ": " + std::strerror(errno));
    }
    if (!written) ::unlink(temporary.c_str());
    return written;
}

// The message type of one of the agent's own lines ("" if it does not decode).
std::string type_of(std::string_view line) {
    if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
    auto message = protocol::decode(line);
    if (!message) return "";
    const auto type = message->find("type");
    return type != message->end() && type->is_string() ? type->get<std::string>() : "";
}

}  // namespace

Result<std::unique_ptr<Channel>> FileChannel::open(OneShotFiles files, std::size_t max_line,
                                                   const Clock& clock) {
    DS_TRY(prepare_output("progress", files.progress));
    DS_TRY(prepare_output("result", files.result));
    return std::unique_ptr<Channel>(new FileChannel(std::move(files), max_line, clock));
}

FileChannel::FileChannel(OneShotFiles files, std::size_t max_line, const Clock& clock)
    : files_(std::move(files)), max_line_(max_line), clock_(clock) {}

Status FileChannel::load_job(Deadline deadline) {
    const std::string& job_file = files_.job;
    for (;;) {
        // The whole file may hold one line and its '\n'.
        auto content = read_bounded(job_file, max_line_ + 1);
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
        if (clock_.now() >= deadline) {
            return make_error(errc::kTimeout,
                              "no complete job in " + job_file + " (a line ending in '\\n')");
        }
        clock_.sleep_for(kJobFilePollInterval);
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
    const std::string type = type_of(data);
    if (type == protocol::kHello || type == protocol::kProgress) return write_progress(data);
    return write_final(data);
}

Status FileChannel::write_progress(std::string_view line) {
    const bool first = hello_.empty();
    const std::size_t size = first ? line.size() : hello_.size() + line.size();
    if (size > kMaxProgressFileBytes) {
        return make_error(errc::kProtocol, "a message of " + std::to_string(line.size()) +
                                               " bytes would take the progress file past " +
                                               std::to_string(kMaxProgressFileBytes) + " bytes");
    }
    if (first) {
        DS_TRY(replace_file(files_.progress, line));
        hello_ = line;
        return ok_status();
    }
    std::string content = hello_;
    content += line;
    return replace_file(files_.progress, content);
}

Status FileChannel::write_final(std::string_view line) {
    std::string content = final_;
    content += line;
    DS_TRY(replace_file(files_.result, content));
    final_ = std::move(content);
    return ok_status();
}

}  // namespace ds::agent
