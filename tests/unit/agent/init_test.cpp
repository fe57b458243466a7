// run_as_init as a real PID 1: in a new PID namespace (root only), where
// reboot(RB_POWER_OFF) ends the namespace with init "killed by SIGINT", which
// is how the test tells a power off from an exit.
#include "guestagent/init.h"

#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <thread>

#include "support/skip.h"

namespace {

constexpr int kCannotUnshare = 100;

// Runs `session` under run_as_init as PID 1 of a fresh PID namespace. Returns
// the wait status of that PID 1 as its parent saw it, encoded by the
// intermediate process as an exit code: 200 + signal, or the exit status.
int run_as_pid1_of_new_namespace(const std::function<int()>& session) {
    std::fflush(nullptr);  // or the children would flush Catch's buffered output again
    const pid_t outer = ::fork();
    REQUIRE(outer >= 0);
    if (outer == 0) {
        if (::unshare(CLONE_NEWPID) != 0) ::_exit(kCannotUnshare);
        const pid_t init = ::fork();
        if (init < 0) ::_exit(kCannotUnshare);
        if (init == 0) {
            ds::agent::run_as_init(session);  // never returns
        }
        int status = 0;
        ::waitpid(init, &status, 0);
        ::_exit(WIFSIGNALED(status) ? 200 + WTERMSIG(status) : WEXITSTATUS(status));
    }
    int status = 0;
    ::waitpid(outer, &status, 0);
    REQUIRE(WIFEXITED(status));
    return WEXITSTATUS(status);
}

}  // namespace

TEST_CASE("init: PID 1 runs the session in a child, reaps orphans and powers off", "[init]") {
    if (::geteuid() != 0) ds::test::skip_test("needs root to create a PID namespace");
    int verdict[2];
    REQUIRE(::pipe(verdict) == 0);
    const int outcome = run_as_pid1_of_new_namespace([&verdict] {
        // An orphan: its parent exits at once, so it is reparented to PID 1
        // and only PID 1 can reap it once it exits.
        int orphan_pipe[2];
        if (::pipe(orphan_pipe) != 0) return 1;
        const pid_t middle = ::fork();
        if (middle == 0) {
            const pid_t orphan = ::fork();
            if (orphan == 0) {
                ::usleep(100'000);
                ::_exit(0);
            }
            (void)!::write(orphan_pipe[1], &orphan, sizeof orphan);
            ::_exit(0);
        }
        pid_t orphan = 0;
        (void)!::read(orphan_pipe[0], &orphan, sizeof orphan);
        ::waitpid(middle, nullptr, 0);
        std::this_thread::sleep_for(std::chrono::milliseconds(600));
        // A zombie still answers kill(pid, 0); a reaped process does not.
        const bool reaped = ::kill(orphan, 0) != 0 && errno == ESRCH;
        const char report[2] = {ds::agent::is_pid1() ? '1' : 'c', reaped ? 'R' : 'Z'};
        (void)!::write(verdict[1], report, sizeof report);
        return 7;
    });
    ::close(verdict[1]);
    if (outcome == kCannotUnshare) ds::test::skip_test("cannot create a PID namespace here");
    char report[2] = {};
    REQUIRE(::read(verdict[0], report, sizeof report) == 2);
    ::close(verdict[0]);
    CHECK(report[0] == 'c');         // the session is not PID 1 itself
    CHECK(report[1] == 'R');         // PID 1 reaped the orphan
    CHECK(outcome == 200 + SIGINT);  // powered off, did not exit with the session's 7
}

TEST_CASE("init: a session that crashes still ends in a power off", "[init]") {
    if (::geteuid() != 0) ds::test::skip_test("needs root to create a PID namespace");
    const int outcome = run_as_pid1_of_new_namespace([]() -> int {
        const rlimit no_core_dump{0, 0};
        ::setrlimit(RLIMIT_CORE, &no_core_dump);
        ::signal(SIGSEGV, SIG_DFL);
        ::raise(SIGSEGV);
        return 0;
    });
    if (outcome == kCannotUnshare) ds::test::skip_test("cannot create a PID namespace here");
    CHECK(outcome == 200 + SIGINT);
}
