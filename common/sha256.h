// SHA-256 (FIPS 180-4), for configuration identities, computed by OpenSSL's
// libcrypto (EVP), not by code of our own.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace ds {

// The 32-byte digest of `data`.
std::array<std::uint8_t, 32> sha256_digest(std::string_view data);

// The digest as 64 lower-case hex digits.
std::string sha256_hex(std::string_view data);

// The same for the content of the file at `path`, read in chunks (a guest
// image's root disk is a gigabyte). errc::kIo naming the file when it cannot
// be read.
Result<std::string> sha256_file_hex(const std::string& path);

}  // namespace ds
