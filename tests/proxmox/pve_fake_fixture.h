// The fake PVE API (tests/support/pve_fake/pve_fake.py) in a child process,
// one per test: HTTPS on 127.0.0.1 at a port it picks and writes to a file,
// test certificates of its own (a CA, the server's certificate, an
// alternate one for TLS faults), one valid API token. Every request it gets
// is checked against PVE 8.4's API schema.
//
// The constructor skips the test (support/skip.h) when python3, the openssl
// CLI or the schema is missing, and fails it when the server does not start.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "daemon/backends/hypervisor/proxmox/pve_client.h"

namespace ds::test {

class PveFake {
  public:
    static constexpr const char* kTokenId = "root@pam!disksweep";
    static constexpr const char* kSecret = "5f0c2d1e-8a7b-4c6d-9e0f-1a2b3c4d5e6f";

    // `extra_args`: more pve_fake.py options (--fault JSON, --tls-fault, ...).
    explicit PveFake(std::vector<std::string> extra_args = {});
    ~PveFake();  // SIGTERM, wait, remove the directory
    PveFake(const PveFake&) = delete;
    PveFake& operator=(const PveFake&) = delete;

    int port() const { return port_; }
    std::string ca_file() const { return dir_ + "/certs/ca.pem"; }
    std::string fingerprint() const;        // server.pem's SHA-256, AA:BB:...
    std::string other_fingerprint() const;  // the alternate certificate's
    // A file holding `secret` with `mode` (kSecret, 0600 unless told).
    std::string secret_file(const std::string& secret = kSecret, mode_t mode = 0600) const;
    // 127.0.0.1, this port, the token, pinned to server.pem, short timeouts.
    PveClientOptions pinned_options() const;
    std::string log() const;  // the server's output so far
    // A control endpoint of the fake (/_fake/WHAT, server.py): its answer's
    // `data` as JSON text, e.g. control("GET", "state"),
    // control("DELETE", "faults").
    // Fails the test when the fake does not answer 200.
    std::string control(const std::string& method, const std::string& what,
                        const std::string& body = "") const;

  private:
    std::string dir_;
    pid_t pid_ = -1;
    int port_ = 0;
};

// A shell script for the fake's --guest-exec that runs `program` as the
// guest's program would run: its arguments that are guest paths (/run/...)
// mapped into the VM's guest root, whose /run exists as in a real guest.
std::string guest_exec_wrapper(const std::string& program);

// The PVE API schema the fake checks against: $DISKSWEEP_PVE_SCHEMA, else
// the path the build was configured with.
std::string pve_schema_path();

}  // namespace ds::test
