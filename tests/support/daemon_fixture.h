// Test support: a real disksweepd process on a temporary state dir, and the
// real hostctl binary to talk to it. Used by the integration and e2e tiers.
// Nothing here reads or touches the host's disksweep: not the default socket,
// not /var/lib/disksweep, not a running disksweepd.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/process.h"
#include "common/settings.h"

namespace ds::test {

// The disksweepd binary of this build.
std::string daemon_binary();

struct HostctlResult {
    int exit_code = -1;
    std::string out;
    std::string err;
};

class DaemonFixture {
  public:
    // Starts disksweepd (or `binary`, a test-only build of it such as the
    // axes tier's disksweepd-injecting) with `extra_args` on a fresh state
    // dir under /tmp, with its API socket in that dir and without the
    // service manager's NOTIFY_SOCKET.
    explicit DaemonFixture(std::vector<std::string> extra_args,
                           std::string binary = daemon_binary());
    ~DaemonFixture();  // SIGTERM, wait, remove the state dir

    bool ready() const { return ready_; }
    const std::string& state_dir() const { return state_dir_; }
    const std::string& socket() const { return socket_; }
    std::string database() const { return state_dir_ + "/results.db"; }
    std::string log() const;  // the daemon's stderr so far
    pid_t pid() const { return pid_; }

    HostctlResult hostctl(const std::vector<std::string>& args,
                          std::chrono::seconds timeout = std::chrono::seconds(60)) const;
    // Sends `signal` and waits for the process to exit (returns its status).
    int stop(int signal);
    // Starts the daemon again on the same state dir (after stop()).
    bool restart();

  private:
    bool launch();
    std::vector<std::string> args_;
    std::string binary_;
    std::string state_dir_;
    std::string socket_;
    pid_t pid_ = -1;
    bool ready_ = false;
};

// A directory of this test process's own, created on first use and removed
// when the process exits (ctest runs each test case in its own process).
const std::string& test_temp_dir();
// Writes `content` to `name` in test_temp_dir(); returns the path.
std::string write_temp_file(const std::string& name, const std::string& content);
// The guest images the e2e tier boots: $DISKSWEEP_TEST_IMAGE_DIR
// (scripts/test.sh builds them there and always sets it). When it is not
// set, the test skips (support/skip.h): call this first.
std::string test_image_dir();
// PIDs of running qemu-system processes whose command line mentions `needle`.
std::vector<pid_t> qemu_processes_mentioning(const std::string& needle);
std::string hostctl_binary();

}  // namespace ds::test
