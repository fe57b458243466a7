// The agent's transport in one-shot mode (`disksweep-agent --job-file J
// --progress-file P --result-file R`), for hypervisors that offer no stream
// to the guest (Proxmox: the QEMU guest agent's exec and file calls). The
// host's messages are the lines of the job file. The agent's messages go to
// two files, so that what the host polls stays small whatever the job
// produces (docs/agent-protocol.md, "One-shot mode"):
//  * the progress file holds hello and the latest progress message, one
//    line each; every message replaces it whole (a temporary file beside it,
//    renamed over it), so a reader sees the old or the new file, never half
//    of one, and never more than kMaxProgressFileBytes;
//  * the result file gets every other message (result, error): the final
//    one, written once at the end the same way.
// The session itself (agent.h) is the same as over a channel: hello first,
// then the job.
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

// The progress file's bound: hello and one progress message. The host's
// reader refuses a larger file (daemon/backends/hypervisor/proxmox/pve_agent_channel.h,
// kPveProgressFileBytes, the same 64 KiB).
inline constexpr std::size_t kMaxProgressFileBytes = 64u << 10;

struct OneShotFiles {
    std::string job;       // read: the host's messages
    std::string progress;  // replaced: hello + the latest progress
    std::string result;    // written at the end: result or error
};

class FileChannel : public Channel {
  public:
    // Checks that the progress and result files can be made (their
    // directories exist and are writable) and removes a result file left
    // from before, so a result file the host finds is this session's.
    // errc::kIo naming the file. Writes nothing yet. The wait for the job
    // file polls it on `clock`, which also tells when its deadline passed.
    static Result<std::unique_ptr<Channel>> open(OneShotFiles files,
                                                 std::size_t max_line = protocol::kMaxMessageBytes,
                                                 const Clock& clock = real_clock());

    // The job file's next line. The first call waits until the file exists
    // and ends with '\n' (errc::kTimeout at the deadline); a line over
    // max_line is errc::kProtocol, as an oversized line on a channel. Once the
    // lines are all read: errc::kIo ("no more messages") at once, since
    // nothing else will come and nobody should wait for it.
    Result<std::string> read_line(Deadline deadline) override;
    // `data` is one message and its '\n' (Agent::send). hello and progress
    // replace the progress file (hello stays its first line; a progress
    // message that would take it past kMaxProgressFileBytes is
    // errc::kProtocol, and the file keeps the previous one); anything else
    // is added to the result file, which is then replaced whole.
    Status write(std::string_view data) override;

  private:
    FileChannel(OneShotFiles files, std::size_t max_line, const Clock& clock);
    // Waits for the complete job file and splits it into lines_.
    Status load_job(Deadline deadline);
    Status write_progress(std::string_view line);
    Status write_final(std::string_view line);

    OneShotFiles files_;
    std::size_t max_line_;
    const Clock& clock_;
    bool loaded_ = false;
    std::deque<std::string> lines_;
    std::string hello_;  // the progress file's first line ("" before hello)
    std::string final_;  // the result file's content
};

}  // namespace ds::agent
