#include "common/sha256.h"

#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>

namespace ds {

std::array<std::uint8_t, 32> sha256_digest(std::string_view data) {
    // OpenSSL's one-shot EVP digest. It fails only when OpenSSL cannot
    // allocate or SHA-256 is unavailable, which leaves no meaningful identity:
    // that is a broken installation, reported loudly rather than hashed wrong.
    std::array<std::uint8_t, 32> digest{};
    unsigned int length = 0;
    if (EVP_Digest(data.data(), data.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1 ||
        length != digest.size()) {
        std::fputs("disksweep: OpenSSL EVP_Digest(SHA-256) failed\n", stderr);
        std::abort();
    }
    return digest;
}

std::string sha256_hex(std::string_view data) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(64);
    for (std::uint8_t byte : sha256_digest(data)) {
        out.push_back(kHex[byte >> 4]);
        out.push_back(kHex[byte & 0x0f]);
    }
    return out;
}

}  // namespace ds
