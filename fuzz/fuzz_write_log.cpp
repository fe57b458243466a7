// A durability run's write log as QEMU's blklogwrites left it, through what
// the daemon does with it (daemon/run/durability_trial.cpp): read_log, the
// crash states of every cache mode, and the replay of the last state onto a
// small image. The log is untrusted (the guest chose every write in it, and
// a killed QEMU cuts it short): errors are fine; crashes, sanitizer reports,
// huge allocations and writes past the image's limit are not.
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "daemon/durability/crash_states.h"
#include "daemon/durability/log_writes.h"
#include "daemon/durability/replay.h"
#include "fuzz/fuzz_input.h"

namespace {

// The replayed image may not grow past this (apply_entries' size_limit).
constexpr std::uint64_t kImageLimit = 1u << 20;

// An in-memory file holding `bytes`, its /proc path for the code that opens
// paths; -1 when the kernel refuses one.
struct MemoryFile {
    explicit MemoryFile(const char* name) : fd(memfd_create(name, 0)) {}
    ~MemoryFile() {
        if (fd >= 0) close(fd);
    }
    std::string path() const { return "/proc/self/fd/" + std::to_string(fd); }
    int fd;
};

std::uint64_t file_size(int fd) {
    struct stat info {};
    return fstat(fd, &info) == 0 ? static_cast<std::uint64_t>(info.st_size) : 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace ds::durability;
    MemoryFile log("fuzz-log");
    MemoryFile image("fuzz-image");
    if (log.fd < 0 || image.fd < 0) return 0;
    if (size > 0 && write(log.fd, data, size) != static_cast<ssize_t>(size)) return 0;
    auto index = read_log(log.path());
    if (!index.ok()) return 0;
    ds::fuzz::require(index->entries_complete_at(index->file_size) <= index->entries.size(),
                      "no more entries complete than counted");
    CrashModelOptions options;
    options.max_crash_points = 8;
    options.volatile_cache = true;
    options.seed = size;
    for (ds::CacheMode cache : {ds::CacheMode::kNone, ds::CacheMode::kUnsafe}) {
        const auto states = crash_states(*index, cache, options);
        if (states.empty() || ftruncate(image.fd, 64 * 1024) != 0) continue;
        const auto& applied = states.back().applied;
        (void)apply_entries(*index, log.path(), image.path(), applied, kImageLimit);
        ds::fuzz::require(file_size(image.fd) <= kImageLimit, "the image stays within its limit");
    }
    return 0;
}
