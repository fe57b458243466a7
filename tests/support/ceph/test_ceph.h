// Test support: the throwaway Ceph that tests/support/ceph/ceph-up.sh made,
// as its DIR/env describes it. ctest starts it once (fixture rbd/ceph_up) and
// names DIR in DISKSWEEP_TEST_CEPH_DIR.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include "support/env_file.h"
#include "support/skip.h"

namespace ds::test {

// What ceph-up.sh wrote to DIR/env (see the top of ceph-up.sh).
struct TestCeph {
    std::string conf;        // the clients' ceph.conf (client user's keyring)
    std::string keyring;     // the client user's keyring, root only
    std::string pool;        // the RBD pool
    std::string user;        // the client user's cephx id, without "client."
    std::string mon_host;    // IP:PORT of the one mon
    std::string admin_conf;  // a clients' ceph.conf that authenticates as client.admin
};

// The cluster of this test run, or a skip that says why there is none.
// Contract of skip_test(): call this before anything the test must clean up.
inline TestCeph test_ceph_or_skip() {
    const char* dir = std::getenv("DISKSWEEP_TEST_CEPH_DIR");
    if (dir == nullptr || *dir == '\0') {
        skip_test(
            "DISKSWEEP_TEST_CEPH_DIR is not set: run through ctest (fixture rbd/ceph_up) or "
            "start tests/support/ceph/ceph-up.sh DIR and set it to DIR");
    }
    auto env = read_assignments(std::filesystem::path(dir) / "env");
    if (env.empty()) {
        skip_test(std::string("no test Ceph in ") + dir +
                  " (ceph-up.sh skipped: Ceph not installed, or not root)");
    }
    return {env["CEPH_CONF"], env["CEPH_KEYRING"],  env["CEPH_POOL"],
            env["CEPH_USER"], env["CEPH_MON_HOST"], env["CEPH_ADMIN_CONF"]};
}

}  // namespace ds::test
