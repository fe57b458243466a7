#include "common/sha256.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

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

namespace {

std::string hex(const std::array<std::uint8_t, 32>& digest) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(64);
    for (std::uint8_t byte : digest) {
        out.push_back(kHex[byte >> 4]);
        out.push_back(kHex[byte & 0x0f]);
    }
    return out;
}

struct DigestFree {
    void operator()(EVP_MD_CTX* context) const { EVP_MD_CTX_free(context); }
};

}  // namespace

std::string sha256_hex(std::string_view data) {
    return hex(sha256_digest(data));
}

Result<std::string> sha256_file_hex(const std::string& path) {
    std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!file) return make_error(errc::kIo, "cannot read " + path + ": " + std::strerror(errno));
    std::unique_ptr<EVP_MD_CTX, DigestFree> context(EVP_MD_CTX_new());
    if (!context || EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1) {
        return make_error(errc::kIo, "OpenSSL cannot start a SHA-256 digest");
    }
    std::vector<char> buffer(1 << 20);
    std::size_t got = 0;
    while ((got = std::fread(buffer.data(), 1, buffer.size(), file.get())) > 0) {
        EVP_DigestUpdate(context.get(), buffer.data(), got);
    }
    if (std::ferror(file.get())) return make_error(errc::kIo, "cannot read " + path);
    std::array<std::uint8_t, 32> digest{};
    unsigned int length = 0;
    if (EVP_DigestFinal_ex(context.get(), digest.data(), &length) != 1 || length != 32) {
        return make_error(errc::kIo, "OpenSSL cannot finish a SHA-256 digest");
    }
    return hex(digest);
}

}  // namespace ds
