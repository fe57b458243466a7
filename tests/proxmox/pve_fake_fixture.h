// The fake PVE API (tests/support/pve_fake/pve_fake.py) in a child process,
// one per test: HTTPS on 127.0.0.1 at a port it picks and writes to a file,
// test certificates of its own (a CA, the server's certificate, an
// alternate one for TLS faults), the API token(s) its options give. It
// simulates PVE 8.4 or 9.1 (FakeRelease) and checks every request it gets
// against that release's API schema and its permission code.
//
// The constructor skips the test (support/skip.h) when python3, the openssl
// CLI or the release's schema is missing, and fails it when the server does
// not start.
//
// Least privilege (issue 32): least_privilege_access() writes an --access
// file granting the role of the daemon's own table (pve_version.h,
// pve_privileges) to a user and, minus chosen privileges, to its
// privilege-separated tokens, which one server then serves side by side;
// kNicTemplateState is a state whose template has a NIC, so cloning it
// needs SDN.Use on its bridge.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "daemon/backends/hypervisor/proxmox/pve_client.h"
#include "daemon/backends/hypervisor/proxmox/pve_version.h"

namespace ds::test {

// The releases the fake simulates (pve_fake.py --pve-version).
enum class FakeRelease { k8_4, k9_1 };
inline constexpr FakeRelease kFakeReleases[] = {FakeRelease::k8_4, FakeRelease::k9_1};

std::string_view fake_version(FakeRelease release);  // "8.4", "9.1"
// The daemon's rules for that release (its row of pve_releases()).
const PveRelease& release_rules(FakeRelease release);

inline constexpr const char* kRootTokenId = "root@pam!disksweep";
inline constexpr const char* kTokenSecret = "5f0c2d1e-8a7b-4c6d-9e0f-1a2b3c4d5e6f";

struct PveFakeOptions {
    FakeRelease release = FakeRelease::k8_4;
    // The token the fixture's client options use (--token); with `access`
    // it must be one of the access file's tokens.
    std::string token_id = kRootTokenId;
    std::string secret = kTokenSecret;
    std::string access;  // --access file's JSON text; "": the token may do everything
    std::string state;   // --state file's JSON text; "": the fake's default cluster
    std::vector<std::string> extra_args;  // more pve_fake.py options (--fault JSON, ...)
};

class PveFake {
  public:
    static constexpr const char* kTokenId = kRootTokenId;
    static constexpr const char* kSecret = kTokenSecret;

    // PVE 8.4, root@pam's token; `extra_args`: more pve_fake.py options
    // (--fault JSON, --tls-fault, ...).
    explicit PveFake(std::vector<std::string> extra_args = {});
    explicit PveFake(PveFakeOptions options);
    ~PveFake();  // SIGTERM, wait, remove the directory
    PveFake(const PveFake&) = delete;
    PveFake& operator=(const PveFake&) = delete;

    // What the fake prints when it refuses to start with `options` (a bad
    // access file, a schema of another release), and fails the test when it
    // starts instead.
    static std::string refusal(PveFakeOptions options);

    int port() const { return port_; }
    const std::string& token_id() const { return options_.token_id; }
    std::string ca_file() const { return dir_ + "/certs/ca.pem"; }
    std::string fingerprint() const;        // server.pem's SHA-256, AA:BB:...
    std::string other_fingerprint() const;  // the alternate certificate's
    // A file holding the options' secret, or `secret`, with `mode` (0600
    // unless told).
    std::string secret_file() const;
    std::string secret_file(const std::string& secret, mode_t mode = 0600) const;
    // 127.0.0.1, this port, the token (the options', or `token_id` with the
    // same secret), pinned to server.pem, short timeouts.
    PveClientOptions pinned_options() const;
    PveClientOptions pinned_options(const std::string& token_id) const;
    std::string log() const;  // the server's output so far
    // A control endpoint of the fake (/_fake/WHAT, server.py): its answer's
    // `data` as JSON text, e.g. control("GET", "state"),
    // control("DELETE", "faults").
    // Fails the test when the fake does not answer 200.
    std::string control(const std::string& method, const std::string& what,
                        const std::string& body = "") const;
    // The requests answered `status` (GET /_fake/requests: method, path,
    // status, message), in order.
    std::vector<Json> requests_answered(int status) const;
    // Those whose path ends with `tail` (e.g. "/monitor").
    std::vector<Json> requests_to(std::string_view tail) const;

  private:
    enum class Start { kServe, kRefuse };  // kRefuse: it must exit before it listens
    PveFake(PveFakeOptions options, Start start);
    std::vector<std::string> argv() const;
    PveFakeOptions options_;
    std::string dir_;
    pid_t pid_ = -1;
    int port_ = 0;
};

// ---- least privilege -----------------------------------------------------------------------

// The user the least-privilege access files grant the role to.
inline constexpr const char* kSweepUser = "disksweep@pve";
// The storage and bridge the role is granted on (the default state's
// storage, kNicTemplateState's bridge), besides /vms.
inline constexpr const char* kRoleStorage = "local-lvm";
inline constexpr const char* kRoleBridge = "vmbr0";

// The least-privilege role of `release`, from the daemon's table: each
// privilege of pve_privileges once, of "A|B" the first (as
// pve_role_command spells it).
std::vector<std::string> least_privilege_role(const PveRelease& release);

// A privilege-separated token of kSweepUser: NAME, and what of the role it
// lacks (each a privilege of least_privilege_role).
struct LeastPrivilegeToken {
    std::string name;
    std::vector<std::string> without;
    std::string token_id() const { return std::string(kSweepUser) + "!" + name; }
};

// The --access JSON: kSweepUser holds `role`, each token `role` minus its
// `without` (privsep: it gets what both grant), all on /vms,
// /storage/kRoleStorage and /sdn/zones/localnetwork/kRoleBridge,
// propagating, as docs/proxmox.md's pveum lines grant them; each token
// authenticates with kTokenSecret.
std::string least_privilege_access(const std::vector<std::string>& role,
                                   const std::vector<LeastPrivilegeToken>& tokens);

// A fake of `release` serving `tokens` with the release's role, the
// template with a NIC on kRoleBridge; the fixture's own token is the first.
PveFakeOptions least_privilege_fake(FakeRelease release,
                                    const std::vector<LeastPrivilegeToken>& tokens,
                                    std::vector<std::string> extra_args = {});

// The fake's default cluster (pve_fake server.py), but the template has a
// NIC on kRoleBridge, as scripts/pve-make-template.sh makes it.
extern const char* const kNicTemplateState;

// A shell script for the fake's --guest-exec that runs `program` as the
// guest's program would run: its arguments that are guest paths (/run/...)
// mapped into the VM's guest root, whose /run exists as in a real guest.
std::string guest_exec_wrapper(const std::string& program);

// The PVE API schema the fake checks against for `release`:
// $DISKSWEEP_PVE_SCHEMA (8.4) or $DISKSWEEP_PVE9_SCHEMA (9.1), else the path
// the build was configured with.
std::string pve_schema_path(FakeRelease release = FakeRelease::k8_4);

}  // namespace ds::test
