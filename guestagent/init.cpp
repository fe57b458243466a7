#include "guestagent/init.h"

#include <signal.h>
#include <sys/random.h>
#include <sys/reboot.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "guestagent/log.h"

namespace ds::agent {

bool is_pid1() {
    return ::getpid() == 1;
}

void wait_for_random_pool() {
    unsigned char byte = 0;
    if (::getrandom(&byte, 1, GRND_NONBLOCK) == 1 || errno != EAGAIN) return;
    log_line("waiting for the kernel's random pool (the guest has no hardware RNG)");
    while (::getrandom(&byte, 1, 0) < 0 && errno == EINTR) {
    }
}

void run_as_init(const std::function<int()>& session) {
    // As init we define the environment: the initramfs PATH (/bin) lacks
    // the sbin directories of the real root where mkfs and modprobe live.
    ::setenv("PATH", kInitPath, /*overwrite=*/1);
    const pid_t child = ::fork();
    if (child == 0) {
        // The session process: default signal dispositions, its own exit.
        int status = 1;
        try {
            status = session();
        } catch (const std::exception& e) {
            log_line(std::string("session aborted by an exception: ") + e.what());
        } catch (...) {
            log_line("session aborted by an unknown exception");
        }
        std::fflush(nullptr);
        ::_exit(status);
    }
    if (child < 0) {
        // Cannot fork: run the session here; exceptions must not escape PID 1.
        log_line(std::string("fork failed (") + std::strerror(errno) +
                 "); running the session in PID 1");
        try {
            (void)session();
        } catch (...) {
            log_line("session aborted by an exception");
        }
    } else {
        for (;;) {
            int status = 0;
            const pid_t reaped = ::waitpid(-1, &status, 0);
            if (reaped < 0) {
                if (errno == EINTR) continue;
                break;  // ECHILD: nothing left to wait for
            }
            if (reaped != child) continue;  // an orphan: reaped, nothing else to do
            if (WIFEXITED(status)) {
                log_line("session ended with exit status " + std::to_string(WEXITSTATUS(status)));
            } else if (WIFSIGNALED(status)) {
                log_line("session killed by signal " + std::to_string(WTERMSIG(status)));
            }
            break;
        }
    }
    log_line("syncing and powering off");
    ::sync();
    ::reboot(RB_POWER_OFF);
    log_line(std::string("power off failed: ") + std::strerror(errno));
    for (;;) ::pause();
}

}  // namespace ds::agent
