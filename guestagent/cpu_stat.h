// The guest's CPU time by state, from the "cpu" line of /proc/stat (all CPUs
// together), for result.guest_cpu (docs/agent-protocol.md): what the job cost
// the guest, which the host divides by the data disk's I/Os
// (docs/host-cpu.md). Parsing and the difference are pure.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/settings.h"

namespace ds::agent {

// The first eight counters of the "cpu" line, in clock ticks, in /proc/stat's
// order: user, nice, system, idle, iowait, irq, softirq, steal.
using CpuTicks = std::array<std::uint64_t, 8>;

// The "cpu" line of a /proc/stat text; nullopt when it has none or fewer
// than eight counters (kernels before 2.6.11).
std::optional<CpuTicks> parse_proc_stat_cpu(std::string_view text);

// {"user_s", "nice_s", "system_s", "idle_s", "iowait_s", "irq_s",
//  "softirq_s", "steal_s"}: after - before in seconds. A counter that went
// backwards (it must not) counts 0.
Json cpu_seconds_between(const CpuTicks& before, const CpuTicks& after, long ticks_per_second);

// /proc/stat under `proc_root` now; nullopt when unreadable.
std::optional<CpuTicks> read_cpu_ticks(const std::string& proc_root);

}  // namespace ds::agent
