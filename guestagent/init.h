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

}  // namespace ds::agent
