// disksweep-agent's command line. In the guest the initramfs starts it as
// `disksweep-agent --pid1` with everything else at its default; the other
// options exist for tests and debugging on a host.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "guestagent/agent.h"

namespace ds::agent {

struct CommandLine {
    AgentOptions agent;
    // Channel path; "" = find the virtio-serial port named
    // protocol::kChannelName under agent.roots.
    std::string port;
    // How long to wait for the port to appear and its host end to connect.
    std::chrono::milliseconds channel_wait = std::chrono::minutes(2);
    // One-shot mode (all three or none): the job is read from job_file, hello
    // and the latest progress replace progress_file, the result or error
    // goes to result_file, instead of a channel (file_channel.h); started by
    // the hypervisor's guest agent, not as init.
    std::string job_file;
    std::string progress_file;
    std::string result_file;
    bool pid1 = false;  // started as init: power off at the end
    bool help = false;
    bool version = false;
};

// Parses argv (without argv[0]). errc::kInvalidArgument naming the option
// (also for one of --job-file, --progress-file and --result-file without the
// others, and for any of them with --port or --pid1).
Result<CommandLine> parse_command_line(const std::vector<std::string>& args);
std::string usage_text();

// Finds or opens the channel (or the one-shot files), runs one session with
// the real runner and system, and returns the process exit status (0: a
// result or a requested shutdown; 1: the job failed or the channel broke; 2:
// bad usage). In one-shot mode the result file carries the outcome: 0 when a
// result or an error was written, 1 otherwise. Does not power off; see init.h.
// Every wait (for the port, the host, the job) is decided on `clock`.
int run_agent(const CommandLine& command_line, const Clock& clock = real_clock());

// main(): parses, and as PID 1 (or with --pid1 while PID 1) runs the session
// under run_as_init.
int agent_main(int argc, char** argv);

}  // namespace ds::agent
