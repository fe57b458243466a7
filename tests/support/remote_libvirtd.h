// Test support: the "remote" libvirt host of tests/remote/remote-libvirtd.sh
// (issue 20), as its DIR/env describes it, and its subcommands for a test
// that crashes and restarts it. ctest starts it once (fixture
// remote/libvirtd_up) and names DIR in DISKSWEEP_TEST_REMOTE_LIBVIRTD_DIR.
#pragma once

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/process.h"
#include "support/env_file.h"
#include "support/skip.h"
#include "support/test_data.h"

namespace ds::test {

// What remote-libvirtd.sh wrote to DIR/env (see the top of the script).
struct TestRemoteLibvirtd {
    std::filesystem::path dir;  // the harness's bookkeeping (never libvirt's files)
    std::string uri;            // qemu+tcp://127.0.0.1:PORT/system
    std::string pool;           // the persistent dir pool ("disksweep")
    std::string log;            // libvirtd's log, for failure messages
};

// The remote libvirtd of this test run, or a skip that says why there is
// none. Contract of skip_test(): call this before anything the test must
// clean up.
inline TestRemoteLibvirtd test_remote_libvirtd_or_skip() {
    const char* dir = std::getenv("DISKSWEEP_TEST_REMOTE_LIBVIRTD_DIR");
    if (dir == nullptr || *dir == '\0') {
        skip_test(
            "DISKSWEEP_TEST_REMOTE_LIBVIRTD_DIR is not set: run through ctest (fixture "
            "remote/libvirtd_up) or start tests/remote/remote-libvirtd.sh up DIR and set it "
            "to DIR");
    }
    auto env = read_assignments(std::filesystem::path(dir) / "env");
    if (env.empty()) {
        skip_test(std::string("no remote test libvirtd in ") + dir +
                  " (remote-libvirtd.sh up skipped: see its output)");
    }
    return {dir, env["REMOTE_LIBVIRT_URI"], env["REMOTE_LIBVIRT_POOL"], env["REMOTE_LIBVIRTD_LOG"]};
}

// Runs `remote-libvirtd.sh SUBCOMMAND DIR` ("kill", "start"): its exit
// code and output, for the test to check. An error only when it could not
// be run at all.
inline Result<ProcessOutput> run_remote_libvirtd(const std::string& subcommand,
                                                 const TestRemoteLibvirtd& host) {
    RealProcessRunner runner;
    const auto script = repository_root() / "tests" / "remote" / "remote-libvirtd.sh";
    return runner.run({script.string(), subcommand, host.dir.string()}, std::chrono::minutes(2));
}

}  // namespace ds::test
