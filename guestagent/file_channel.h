// The agent's transport in one-shot mode (`disksweep-agent --job-file F
// --output-file O`), for hypervisors that offer no stream to the guest
// (Proxmox: the QEMU guest agent's exec and file calls). The host's messages
// are the lines of the job file; the agent's messages are appended to the
// output file, which the host polls. The session itself (agent.h) is the same
// as over a channel: hello first, then the job.
//
// The host may start the agent before it writes the job file (it waits for
// hello first, as on any channel): the first read_line waits for the file to
// hold complete lines. A line is complete with its '\n', and the file is
// complete when it ends with one, so a file still being written is never
// taken for the job.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <string_view>

#include "common/protocol.h"
#include "common/result.h"
#include "guestagent/channel.h"

namespace ds::agent {

class FileChannel : public Channel {
  public:
    // Opens `output_file` for appending, creating it (mode 0644) if missing.
    // errc::kIo naming the file.
    static Result<std::unique_ptr<Channel>> open(const std::string& job_file,
                                                 const std::string& output_file,
                                                 std::size_t max_line = protocol::kMaxMessageBytes);
    ~FileChannel() override;
    FileChannel(const FileChannel&) = delete;
    FileChannel& operator=(const FileChannel&) = delete;

    // The job file's next line. The first call waits until the file exists
    // and ends with '\n' (errc::kTimeout at the deadline); a line over
    // max_line is errc::kProtocol, as an oversized line on a channel. Once the
    // lines are all read: errc::kIo ("no more messages") at once, since
    // nothing else will come and nobody should wait for it.
    Result<std::string> read_line(Deadline deadline) override;
    // Appends `data` with write(2) on an O_APPEND descriptor: there is no
    // user-space buffer, so each message is visible to a reader of the file
    // as soon as this returns.
    Status write(std::string_view data) override;

  private:
    FileChannel(std::string job_file, std::size_t max_line, int output_fd);
    // Waits for the complete job file and splits it into lines_.
    Status load_job(Deadline deadline);

    std::string job_file_;
    std::size_t max_line_;
    int output_fd_;
    bool loaded_ = false;
    std::deque<std::string> lines_;
};

}  // namespace ds::agent
