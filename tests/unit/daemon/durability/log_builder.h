// Test support: hand-built write logs in the dm-log-writes format, laid out
// as QEMU's blklogwrites writes them (log_writes.h), with ways to make them
// lie.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "daemon/durability/log_writes.h"

namespace ds::test {

class LogBuilder {
  public:
    explicit LogBuilder(std::uint32_t sector_size = 512) : sector_size_(sector_size) {
        bytes_.assign(sector_size, 0);
    }

    // A write of `sectors` sectors at `sector`, each byte `fill`.
    LogBuilder& write(std::uint64_t sector, std::uint64_t sectors, char fill,
                      std::uint64_t flags = 0) {
        entry(sector, sectors, flags, 0);
        bytes_.append(sectors * sector_size_, fill);
        return *this;
    }
    LogBuilder& flush() { return entry(0, 0, durability::log_format::kFlagFlush, 0); }
    LogBuilder& discard(std::uint64_t sector, std::uint64_t sectors) {
        return entry(sector, sectors, durability::log_format::kFlagDiscard, 0);
    }
    // An entry sector with these fields and nothing after it.
    LogBuilder& entry(std::uint64_t sector, std::uint64_t sectors, std::uint64_t flags,
                      std::uint64_t data_len) {
        std::string header(sector_size_, '\0');
        put(header, 0, sector, 8);
        put(header, 8, sectors, 8);
        put(header, 16, flags, 8);
        put(header, 24, data_len, 8);
        bytes_ += header;
        ++entries_;
        return *this;
    }

    // The super block counting `count` entries (default: as many as built).
    std::string bytes(std::int64_t count = -1) const {
        std::string out = bytes_;
        put(out, 0, durability::log_format::kMagic, 8);
        put(out, 8, durability::log_format::kVersion, 8);
        put(out, 16, count < 0 ? entries_ : static_cast<std::uint64_t>(count), 8);
        put(out, 24, sector_size_, 4);
        return out;
    }
    void save(const std::string& path, std::int64_t count = -1) const {
        std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes(count);
    }

    static void put(std::string& out, std::size_t at, std::uint64_t value, int width) {
        for (int i = 0; i < width; ++i) out[at + i] = static_cast<char>((value >> (8 * i)) & 0xff);
    }

  private:
    std::uint32_t sector_size_;
    std::string bytes_;
    std::uint64_t entries_ = 0;
};

inline void save_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

}  // namespace ds::test
