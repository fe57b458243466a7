#include "guestagent/io_buffer.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "common/errno_text.h"

namespace ds::io {

void fill_random(void* buffer, std::size_t bytes, std::uint64_t seed) {
    Random random(seed);
    auto* words = static_cast<std::uint64_t*>(buffer);
    for (std::size_t i = 0; i < bytes / sizeof(std::uint64_t); ++i) words[i] = random.next();
}

void AlignedFree::operator()(void* memory) const {
    std::free(memory);
}

Result<AlignedBuffer> allocate_aligned(std::size_t bytes) {
    void* memory = nullptr;
    const int result = posix_memalign(&memory, kBufferAlignment, std::max<std::size_t>(bytes, 1));
    if (result != 0) {
        return make_error(errc::kIo, "cannot allocate " + std::to_string(bytes) +
                                         " bytes of I/O buffers: " + describe_errno(result));
    }
    return AlignedBuffer(memory);
}

}  // namespace ds::io
