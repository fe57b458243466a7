// Running as the guest's PID 1. An exiting PID 1 panics the kernel, and PID 1
// inherits every orphaned process, so the agent does not run the session in
// PID 1 itself: PID 1 forks the session into a child, then only reaps
// children until that child is gone (however it ended: exit, crash, abort),
// syncs and powers the guest off. Nothing in the session can make PID 1 exit.
#pragma once

#include <functional>

namespace ds::agent {

// The PATH a kernel-started init lacks (the kernel passes none).
inline constexpr const char* kInitPath =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// As PID 1: sets PATH if unset, runs `session` in a child process (its
// return value is that child's exit status), reaps until it is gone, then
// sync() and reboot(RB_POWER_OFF). Never returns: if powering off fails it
// sleeps forever.
[[noreturn]] void run_as_init(const std::function<int()>& session);

// Whether this process is PID 1.
bool is_pid1();

// Returns once the kernel's random pool is initialised, waiting for it if
// it is not. A guest without a hardware RNG (a VM without virtio-rng, a TCG
// CPU without RDRAND) may not be ready long after boot, and until it is every
// mkfs pays about 3 s under TCG in libuuid's fallbacks (measured: mkfs.ext4
// of 1 GiB 4.3 s before, 0.28 s after). One blocking getrandom() makes the
// kernel gather jitter entropy once (about 1 s under TCG). Logs when it waits.
void wait_for_random_pool();

}  // namespace ds::agent
