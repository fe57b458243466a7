// The memory a native I/O job reads into and writes from: aligned for
// O_DIRECT, filled with pseudo-random data (io_job.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/result.h"

namespace ds::io {

inline constexpr std::size_t kBufferAlignment = 4096;  // O_DIRECT on any device we target

// splitmix64: fast, 64 good bits per call; seeded per job so runs repeat
// (fio's randrepeat=1).
class Random {
  public:
    explicit Random(std::uint64_t seed) : state_(seed) {}
    std::uint64_t next() {
        std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    // Uniform in [0, bound) (Lemire's multiply-shift, no division).
    std::uint64_t below(std::uint64_t bound) {
        return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * bound) >> 64);
    }

  private:
    std::uint64_t state_;
};

// Fills the whole 8-byte words of `buffer` from Random(seed).
void fill_random(void* buffer, std::size_t bytes, std::uint64_t seed);

struct AlignedFree {
    void operator()(void* memory) const;
};
using AlignedBuffer = std::unique_ptr<void, AlignedFree>;

// `bytes` (at least 1) aligned to kBufferAlignment; errc::kIo when the
// memory cannot be had.
Result<AlignedBuffer> allocate_aligned(std::size_t bytes);

}  // namespace ds::io
