// Block-layer tuning of the data disk (job message `block`,
// docs/agent-protocol.md): the I/O scheduler, read_ahead_kb and
// nr_requests, written to /sys/block/DEV/queue before the disk is formatted.
// Writes go through GuestSystem::write_attribute under roots.sysfs, so unit
// tests run on a fake sysfs tree and can make the "kernel" refuse a value.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/process.h"
#include "common/result.h"
#include "common/settings.h"
#include "guestagent/discovery.h"
#include "guestagent/guest_system.h"

namespace ds::agent {

// What the host asked for; an absent value is left as the kernel has it.
struct BlockTuning {
    std::optional<std::string> scheduler;  // "none", "mq-deadline", "bfq", "kyber"
    std::optional<long long> read_ahead_kb;
    std::optional<long long> nr_requests;

    bool empty() const { return !scheduler && !read_ahead_kb && !nr_requests; }
    bool operator==(const BlockTuning&) const = default;
};

// Reads the job's `block` object; absent or null = nothing to tune.
// errc::kInvalidArgument naming the field ("job.block.nr_requests: ...") for
// an unknown key (a tuning the agent would silently skip), a scheduler that
// is empty or not a plain name, read_ahead_kb < 0, nr_requests < 1.
Result<BlockTuning> parse_block_tuning(const Json* block);

// The kernel module that provides `scheduler` when it is not built in:
// bfq -> "bfq", kyber -> "kyber-iosched", mq-deadline -> "mq-deadline";
// "" for others (none is always there).
std::string_view scheduler_module(std::string_view scheduler);

// Applies `tuning` to disk `device_name` (roots.sysfs/block/DEV/queue):
// scheduler first (switching the elevator resets nr_requests to the new
// scheduler's default), then read_ahead_kb, then nr_requests. A scheduler
// the queue does not offer is loaded with `modprobe MODULE` first; a failing
// modprobe only matters if the write is then refused. A refused write is
// errc::kIo with the sysfs path, the value and the errno text, plus for a
// scheduler what the queue offers and what modprobe said.
// `note` receives a line for each action (progress for the host).
Status apply_block_tuning(const BlockTuning& tuning, const std::string& device_name,
                          const SystemRoots& roots, GuestSystem& system, ProcessRunner& runner,
                          std::chrono::milliseconds command_timeout,
                          const std::function<void(const std::string&)>& note);

}  // namespace ds::agent
