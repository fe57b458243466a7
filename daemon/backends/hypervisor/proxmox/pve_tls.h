// Whom the PVE client trusts, checked on every connection:
//  * a CA file: the server's chain must lead to it and its certificate name
//    the host (curl + OpenSSL verification, only this CA, not the system's);
//  * a pinned SHA-256 fingerprint of the server's own certificate, as
//    Proxmox's clients pin a node ("AA:BB:..." as the GUI and
//    `pvenode cert info` show it): only the leaf is compared, so a node's
//    self-signed certificate works without a CA;
//  * or both: chain and pin must hold.
// Both are checked in OpenSSL's verify callback, installed through
// CURLOPT_SSL_CTX_FUNCTION: it refuses a chain OpenSSL could not verify
// against the CA file (remembering why), and computes X509_digest(SHA-256)
// of the leaf the server presented, refusing the handshake on a mismatch.
// curl's own checks stay on where they apply (the host name with a CA file).
//
// Internal to the Proxmox client (pve_client.cpp).
#pragma once

#include <curl/curl.h>
#include <openssl/x509.h>

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace ds {

using PveFingerprint = std::array<unsigned char, 32>;

// "AA:BB:..." (32 bytes; any case; colons optional) as bytes.
Result<PveFingerprint> parse_pve_fingerprint(std::string_view text);
// Upper-case, colon-separated, as PVE shows it.
std::string format_pve_fingerprint(const PveFingerprint& fingerprint);

struct PveTrust {
    std::string ca_file;                   // "" = no chain verification
    std::optional<PveFingerprint> pinned;  // nullopt = no pin
};

// The certificate check of one transfer: install() before curl_easy_perform,
// then after_success() or explain_failure(). Lives as long as the transfer.
class PveTlsCheck {
  public:
    explicit PveTlsCheck(const PveTrust& trust) : trust_(trust) {}
    PveTlsCheck(const PveTlsCheck&) = delete;
    PveTlsCheck& operator=(const PveTlsCheck&) = delete;

    // Sets the handle's TLS options; refuses a trust with neither CA nor pin.
    Status install(CURL* curl);
    // A pinned transfer that succeeded must have compared the leaf: guards
    // against a path where the callback never ran (e.g. a resumed session).
    Status after_success() const;
    // Why the handshake failed, for an error message: the fingerprint seen
    // against the pinned one, or the chain problem, or curl's own words.
    std::string explain_failure(std::string_view curl_message) const;

    // For the OpenSSL verify callback: one certificate of the chain.
    bool on_certificate(bool preverified, X509_STORE_CTX* store);

  private:
    const PveTrust& trust_;
    std::optional<PveFingerprint> seen_leaf_;
    bool leaf_matched_ = false;
    std::string chain_problem_;
};

}  // namespace ds
