// SHA-256 as specified in FIPS 180-4, section 6.2: the message is padded to a
// multiple of 512 bits (a 1 bit, zeros, then the 64-bit big-endian bit length)
// and each 512-bit block updates eight 32-bit working variables through 64
// rounds.
#include "common/sha256.h"

#include <bit>
#include <cstring>

namespace ds {
namespace {

// FIPS 180-4, 4.2.2: first 32 bits of the fractional parts of the cube roots
// of the first 64 primes.
constexpr std::array<std::uint32_t, 64> kRoundConstants = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

// FIPS 180-4, 5.3.3: first 32 bits of the fractional parts of the square
// roots of the first 8 primes.
constexpr std::array<std::uint32_t, 8> kInitialHash = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

constexpr std::size_t kBlockBytes = 64;

std::uint32_t load_big_endian32(const std::uint8_t* bytes) {
    return (std::uint32_t{bytes[0]} << 24) | (std::uint32_t{bytes[1]} << 16) |
           (std::uint32_t{bytes[2]} << 8) | std::uint32_t{bytes[3]};
}

// FIPS 180-4, 6.2.2: one block of the hash computation.
void compress_block(std::array<std::uint32_t, 8>& hash, const std::uint8_t* block) {
    std::array<std::uint32_t, 64> schedule{};
    for (int t = 0; t < 16; ++t) schedule[t] = load_big_endian32(block + 4 * t);
    for (int t = 16; t < 64; ++t) {
        const std::uint32_t w15 = schedule[t - 15];
        const std::uint32_t w2 = schedule[t - 2];
        const std::uint32_t small_sigma0 = std::rotr(w15, 7) ^ std::rotr(w15, 18) ^ (w15 >> 3);
        const std::uint32_t small_sigma1 = std::rotr(w2, 17) ^ std::rotr(w2, 19) ^ (w2 >> 10);
        schedule[t] = small_sigma1 + schedule[t - 7] + small_sigma0 + schedule[t - 16];
    }

    std::uint32_t a = hash[0], b = hash[1], c = hash[2], d = hash[3];
    std::uint32_t e = hash[4], f = hash[5], g = hash[6], h = hash[7];
    for (int t = 0; t < 64; ++t) {
        const std::uint32_t big_sigma1 = std::rotr(e, 6) ^ std::rotr(e, 11) ^ std::rotr(e, 25);
        const std::uint32_t choose = (e & f) ^ (~e & g);
        const std::uint32_t temp1 = h + big_sigma1 + choose + kRoundConstants[t] + schedule[t];
        const std::uint32_t big_sigma0 = std::rotr(a, 2) ^ std::rotr(a, 13) ^ std::rotr(a, 22);
        const std::uint32_t majority = (a & b) ^ (a & c) ^ (b & c);
        const std::uint32_t temp2 = big_sigma0 + majority;
        h = g;
        g = f;
        f = e;
        e = d + temp1;
        d = c;
        c = b;
        b = a;
        a = temp1 + temp2;
    }
    hash[0] += a;
    hash[1] += b;
    hash[2] += c;
    hash[3] += d;
    hash[4] += e;
    hash[5] += f;
    hash[6] += g;
    hash[7] += h;
}

}  // namespace

std::array<std::uint8_t, 32> sha256_digest(std::string_view data) {
    std::array<std::uint32_t, 8> hash = kInitialHash;
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(data.data());

    const std::size_t full_blocks = data.size() / kBlockBytes;
    for (std::size_t i = 0; i < full_blocks; ++i) compress_block(hash, bytes + i * kBlockBytes);

    // Padding (5.1.1): the remaining bytes, 0x80, zeros up to 56 mod 64, then
    // the message length in bits as a 64-bit big-endian integer. One or two
    // final blocks depending on whether the length still fits.
    std::array<std::uint8_t, 2 * kBlockBytes> tail{};
    const std::size_t remaining = data.size() % kBlockBytes;
    if (remaining > 0) std::memcpy(tail.data(), bytes + full_blocks * kBlockBytes, remaining);
    tail[remaining] = 0x80;
    const std::size_t tail_bytes = remaining + 1 + 8 <= kBlockBytes ? kBlockBytes : 2 * kBlockBytes;
    const std::uint64_t bit_length = static_cast<std::uint64_t>(data.size()) * 8;
    for (int i = 0; i < 8; ++i)
        tail[tail_bytes - 1 - i] = static_cast<std::uint8_t>(bit_length >> (8 * i));
    for (std::size_t offset = 0; offset < tail_bytes; offset += kBlockBytes)
        compress_block(hash, tail.data() + offset);

    std::array<std::uint8_t, 32> digest{};
    for (int i = 0; i < 8; ++i) {
        digest[4 * i] = static_cast<std::uint8_t>(hash[i] >> 24);
        digest[4 * i + 1] = static_cast<std::uint8_t>(hash[i] >> 16);
        digest[4 * i + 2] = static_cast<std::uint8_t>(hash[i] >> 8);
        digest[4 * i + 3] = static_cast<std::uint8_t>(hash[i]);
    }
    return digest;
}

std::string sha256_hex(std::string_view data) {
    static constexpr char kHexDigits[] = "0123456789abcdef";
    std::string hex;
    hex.reserve(64);
    for (std::uint8_t byte : sha256_digest(data)) {
        hex.push_back(kHexDigits[byte >> 4]);
        hex.push_back(kHexDigits[byte & 0x0f]);
    }
    return hex;
}

}  // namespace ds
