// The agent channel on Proxmox VE: the disksweep agent in one-shot mode,
// started and read through the QEMU guest agent's API (agent/exec,
// agent/file-write, agent/file-read, agent/exec-status), since custom
// virtio-serial channels need `args`, which no API token may set
// (docs/proxmox.md, "The hypervisor backend", step 5).
//
// The one-shot agent's files (docs/agent-protocol.md, "One-shot mode"):
//  * the job file, written by the channel (its first write);
//  * the progress file, which the agent replaces whole (a temporary file
//    renamed over it) with hello and its latest progress message: small
//    (at most kPveProgressFileBytes), so one poll costs little;
//  * the result file, written once at the end with the final message
//    (result or error), read once when agent/exec-status says the agent has
//    exited.
// The channel yields the same lines a stream would: hello, progress...,
// result, and the protocol checks above it are the ones of every channel.
//
// What PVE relays from the guest (exec's pid, exec-status's fields,
// file-read's content) is checked for type and range first: a guest that
// lies ends the run with errc::kProtocol naming the field, e.g.
// "agent/exec-status field 'exitcode' is a string, expected an integer".
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "common/result.h"
#include "daemon/backends/hypervisor/hypervisor.h"
#include "daemon/backends/hypervisor/proxmox/pve_client.h"

namespace ds {

// The largest progress file the channel reads (hello and one progress
// message; the agent keeps its file smaller, guestagent/file_channel.h).
inline constexpr std::size_t kPveProgressFileBytes = 64u << 10;

// In the guest: the agent (one-shot mode), its files, and how often the
// progress file is polled. (The order keeps the first four fields where
// callers that predate the result file put them.)
struct PveAgentOptions {
    std::string agent_program;
    std::string guest_job_file;
    std::string guest_progress_file;
    std::chrono::milliseconds poll_interval{500};
    std::string guest_result_file = "/run/disksweep-result.jsonl";
};

// Waits for agent/ping until the deadline, starts the agent in one-shot mode
// (agent/exec, no shell: `AGENT --job-file J --progress-file P --result-file
// R`) and returns the channel to it. Nothing is written to the guest before
// the agent starts. `vm_path` is /nodes/NODE/qemu/VMID; `vm_name` only names
// the VM in errors.
Result<std::unique_ptr<AgentChannel>> open_pve_agent_channel(
    std::shared_ptr<PveApi> api, std::string vm_path, const PveAgentOptions& options,
    const std::string& vm_name, Deadline deadline, const std::atomic<bool>* cancelled);

}  // namespace ds
