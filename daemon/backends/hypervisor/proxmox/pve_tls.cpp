#include "daemon/backends/hypervisor/proxmox/pve_tls.h"

#include <openssl/evp.h>
#include <openssl/ssl.h>

#include <cctype>

namespace ds {

namespace {

Error tls_setup_error(const std::string& what) {
    return make_error(errc::kInvalidArgument, "PVE TLS: " + what);
}

// Where the verify callback finds the PveTlsCheck of its connection: an
// ex_data slot of the SSL_CTX that curl makes for the transfer.
int check_slot() {
    static const int slot = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
    return slot;
}

int verify_certificate(int preverified, X509_STORE_CTX* store) {
    auto* ssl =
        static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
    auto* check =
        ssl ? static_cast<PveTlsCheck*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), check_slot()))
            : nullptr;
    return check != nullptr && check->on_certificate(preverified == 1, store) ? 1 : 0;
}

CURLcode hook_ssl_context(CURL*, void* ssl_context, void* check) {
    auto* context = static_cast<SSL_CTX*>(ssl_context);
    if (SSL_CTX_set_ex_data(context, check_slot(), check) != 1) return CURLE_SSL_CONNECT_ERROR;
    SSL_CTX_set_verify(context, SSL_VERIFY_PEER, verify_certificate);
    return CURLE_OK;
}

std::optional<PveFingerprint> sha256_of(X509* certificate) {
    PveFingerprint digest{};
    unsigned int length = 0;
    if (certificate == nullptr ||
        X509_digest(certificate, EVP_sha256(), digest.data(), &length) != 1 ||
        length != digest.size()) {
        return std::nullopt;
    }
    return digest;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

}  // namespace

Result<PveFingerprint> parse_pve_fingerprint(std::string_view text) {
    std::string digits;
    for (char c : text) {
        if (c != ':') digits += c;
    }
    PveFingerprint bytes{};
    bool well_formed = digits.size() == 2 * bytes.size();
    for (std::size_t i = 0; well_formed && i < bytes.size(); ++i) {
        int high = hex_value(digits[2 * i]), low = hex_value(digits[2 * i + 1]);
        well_formed = high >= 0 && low >= 0;
        bytes[i] = static_cast<unsigned char>(high * 16 + low);
    }
    if (!well_formed) {
        return tls_setup_error(
            "fingerprint: expected the certificate's SHA-256 as 32 hex bytes, AA:BB:... "
            "(as `pvenode cert info` shows it)");
    }
    return bytes;
}

std::string format_pve_fingerprint(const PveFingerprint& fingerprint) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string text;
    for (unsigned char byte : fingerprint) {
        if (!text.empty()) text += ':';
        text += kHex[byte >> 4];
        text += kHex[byte & 0xF];
    }
    return text;
}

Status PveTlsCheck::install(CURL* curl) {
    if (trust_.ca_file.empty() && !trust_.pinned) {
        return tls_setup_error("neither a CA file nor a pinned fingerprint: nothing to trust");
    }
    const bool verify_chain = !trust_.ca_file.empty();
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, verify_chain ? 1L : 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, verify_chain ? 2L : 0L);
    if (verify_chain) {
        curl_easy_setopt(curl, CURLOPT_CAINFO, trust_.ca_file.c_str());
        curl_easy_setopt(curl, CURLOPT_CAPATH, nullptr);  // this CA only, not the system's
    }
    // Every handshake is a full one, so the callback sees every leaf.
    curl_easy_setopt(curl, CURLOPT_SSL_SESSIONID_CACHE, 0L);
    if (curl_easy_setopt(curl, CURLOPT_SSL_CTX_FUNCTION, hook_ssl_context) != CURLE_OK ||
        curl_easy_setopt(curl, CURLOPT_SSL_CTX_DATA, this) != CURLE_OK) {
        return tls_setup_error(
            "this libcurl cannot check certificates itself (it is not built with OpenSSL)");
    }
    return ok_status();
}

bool PveTlsCheck::on_certificate(bool preverified, X509_STORE_CTX* store) {
    if (!trust_.ca_file.empty() && !preverified) {
        chain_problem_ = X509_verify_cert_error_string(X509_STORE_CTX_get_error(store));
        return false;
    }
    // The pin concerns the server's own certificate; without a CA file the
    // rest of the chain (if any) is not judged.
    if (X509_STORE_CTX_get_error_depth(store) != 0 || !trust_.pinned) return true;
    seen_leaf_ = sha256_of(X509_STORE_CTX_get_current_cert(store));
    leaf_matched_ = seen_leaf_ && seen_leaf_ == trust_.pinned;
    if (leaf_matched_ && !preverified) X509_STORE_CTX_set_error(store, X509_V_OK);
    return leaf_matched_;
}

Status PveTlsCheck::after_success() const {
    if (trust_.pinned && !leaf_matched_) {
        return make_error(errc::kHypervisor,
                          "PVE TLS: the server's certificate was not compared with the pinned "
                          "fingerprint; refusing the answer");
    }
    return ok_status();
}

std::string PveTlsCheck::explain_failure(std::string_view curl_message) const {
    if (!chain_problem_.empty()) {
        return "the server's certificate is not trusted by the CA file " + trust_.ca_file + " (" +
               chain_problem_ + ")";
    }
    if (trust_.pinned && seen_leaf_ && !leaf_matched_) {
        return "the server's certificate has the SHA-256 fingerprint " +
               format_pve_fingerprint(*seen_leaf_) + ", not the pinned " +
               format_pve_fingerprint(*trust_.pinned);
    }
    return std::string(curl_message);
}

}  // namespace ds
