// The Proxmox VE REST client: https://HOST:8006/api2/json over libcurl.
//
// Authentication: an API token, `Authorization: PVEAPIToken=USER@REALM!TOKENID=SECRET`
// (tokens need no CSRF token). The secret is read once from a file that is
// refused unless it is a regular file of mode 0600 or stricter, owned by this
// process's user or root. The secret is never logged, never put in an error
// (any error text that would contain it is redacted) and never returned.
//
// TLS: a CA file, a pinned SHA-256 fingerprint of the node's certificate, or
// both (pve_tls.h). Nothing else: there is no "insecure" mode.
//
// Requests and answers: parameters as a query string (GET, DELETE) or a JSON
// body (POST, PUT), as pve_encoding.h's PveParams says;
// the `{"data": ...}` envelope is unwrapped. Failures are errors naming the
// call; their codes:
//   400 (PVE's `errors` map, each parameter with PVE's message) kInvalidArgument
//   401 (token refused), 403 (privilege missing), 500, others  kHypervisor
//   404                                                        kNotFound
//   501 (no such method, body too large)                       kUnsupported
//   502, 503, 504, 595, 596 (node or proxy unreachable)         kUnavailable
//   no answer within the timeout                               kTimeout
//   cannot connect                                             kUnavailable
//   TLS refused (pin mismatch, untrusted chain, wrong name)    kHypervisor
//   an answer that is not PVE's JSON envelope                  kProtocol
//
// Tasks: a call answering a UPID can be followed to its end (wait_for_task):
// its status is polled on the task's own node until "stopped" or a deadline;
// exitstatus "OK" and "WARNINGS: N" are success, anything else an error
// carrying the last lines of the task log.
//
// Thread-safe: each request uses its own curl handle (and so its own TLS
// handshake, every one of them checked).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/settings.h"
#include "daemon/backends/hypervisor/proxmox/pve_encoding.h"

namespace ds {

struct PveClientOptions {
    std::string host;  // a node's name or address
    int port = 8006;
    std::string token_id;           // USER@REALM!TOKENID
    std::string token_secret_file;  // the secret alone (a UUID), mode 0600 or stricter
    std::string ca_file;            // PEM; verify the chain and the host name against it
    std::string fingerprint;        // "AA:BB:..." SHA-256 of the node's certificate
    std::chrono::milliseconds connect_timeout{10'000};
    std::chrono::milliseconds request_timeout{60'000};
    std::chrono::milliseconds task_poll_interval{500};
};

// The keys of a Proxmox connection in the daemon config, with their meaning
// (the table pve_client_options reads).
struct PveOptionKey {
    std::string_view key;
    std::string_view help;
};
std::span<const PveOptionKey> pve_option_keys();

// An invalid option of a Proxmox connection: kInvalidArgument naming the key
// and why, never the value (it might be a secret pasted into the wrong place).
Error pve_option_error(std::string_view key, const std::string& why);
// The option's value as a whole number in [low, high], else pve_option_error.
Result<long> parse_pve_option_number(std::string_view key, std::string_view value, long low,
                                     long high);

// PveClientOptions from KEY=VALUE options (pve_option_keys()). host, token,
// token_file and ca_file and/or fingerprint are required. Errors name the key,
// never the value (it might be a secret pasted into the wrong place); a key
// that looks like the secret itself is refused with the way to give it.
Result<PveClientOptions> pve_client_options(const std::map<std::string, std::string>& options);

enum class PveMethod { kGet, kPost, kPut, kDelete };
std::string_view to_string(PveMethod);

// How a task ended, when it ended well.
struct PveTaskEnd {
    std::string exitstatus;  // "OK" or "WARNINGS: N"
    int warnings = 0;
};

// The calls of PVE's API, as the backend's parts make them: PveClient over
// HTTPS, or a test's own answers (a guest that lies, say).
class PveApi {
  public:
    virtual ~PveApi() = default;
    // `path` below /api2/json, built with pve_path(). GET and DELETE send
    // the parameters as a query string, POST and PUT as a JSON body
    // (PveParams says why). Returns the envelope's `data`.
    virtual Result<Json> call(PveMethod method, std::string_view path, const PveParams& params) = 0;
    Result<Json> get(std::string_view path, const PveParams& params = {}) {
        return call(PveMethod::kGet, path, params);
    }
    Result<Json> post(std::string_view path, const PveParams& params = {}) {
        return call(PveMethod::kPost, path, params);
    }
    Result<Json> put(std::string_view path, const PveParams& params = {}) {
        return call(PveMethod::kPut, path, params);
    }
    Result<Json> del(std::string_view path, const PveParams& params = {}) {
        return call(PveMethod::kDelete, path, params);
    }
};

class PveClient : public PveApi {
  public:
    // Checks the options, reads the token secret. Fails without contacting
    // the server.
    static Result<std::unique_ptr<PveClient>> create(PveClientOptions options);
    ~PveClient();
    PveClient(const PveClient&) = delete;
    PveClient& operator=(const PveClient&) = delete;

    // PveApi::call over HTTPS (the answers and errors above).
    Result<Json> call(PveMethod method, std::string_view path,
                      const PveParams& params = {}) override;

    // Polls the task's status until it has stopped or `timeout` has passed
    // (kTimeout). OK / WARNINGS: N -> PveTaskEnd; any other exitstatus ->
    // kHypervisor with the exitstatus and the last lines of the task log.
    Result<PveTaskEnd> wait_for_task(std::string_view upid, std::chrono::milliseconds timeout);
    // A call that answers a UPID, followed to its end.
    Result<PveTaskEnd> run_task(PveMethod method, std::string_view path, const PveParams& params,
                                std::chrono::milliseconds timeout);

    const PveClientOptions& options() const { return options_; }
    std::string base_url() const;  // https://HOST:PORT/api2/json

  private:
    struct Connection;
    PveClient(PveClientOptions options, std::unique_ptr<Connection> connection);
    Result<Json> envelope(PveMethod method, std::string_view path, const PveParams& params);
    Result<std::vector<std::string>> task_log_tail(const PveUpid& upid, int lines);
    Result<PveTaskEnd> task_end(const PveUpid& upid, const std::string& exitstatus);

    PveClientOptions options_;
    std::unique_ptr<Connection> connection_;
};

}  // namespace ds
