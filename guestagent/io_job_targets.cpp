#include "guestagent/io_job_targets.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <string>

#include "common/file_descriptor.h"
#include "guestagent/io_buffer.h"

namespace ds::io {
namespace {

constexpr std::size_t kLayoutChunk = 1 << 20;

// Writes [from, to) of `path` with pseudo-random data and fsyncs it,
// creating the file if needed.
Status lay_out(const std::string& path, std::uint64_t from, std::uint64_t to) {
    FileDescriptor fd(open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    if (fd.get() < 0) return io_error("cannot create " + path, errno);
    auto chunk = allocate_aligned(kLayoutChunk);
    if (!chunk) return chunk.error();
    fill_random(chunk->get(), kLayoutChunk, 0x1a70u);
    std::uint64_t offset = from;
    while (offset < to) {
        const std::size_t length =
            static_cast<std::size_t>(std::min<std::uint64_t>(kLayoutChunk, to - offset));
        const ssize_t written = pwrite(fd.get(), chunk->get(), length, static_cast<off_t>(offset));
        if (written < 0 && errno == EINTR) continue;
        if (written < 0) {
            return io_error("laying out " + path + " at offset " + std::to_string(offset), errno);
        }
        if (written == 0) {
            return make_error(errc::kIo, "laying out " + path + ": write returned 0 at offset " +
                                             std::to_string(offset));
        }
        offset += static_cast<std::uint64_t>(written);
    }
    if (fsync(fd.get()) != 0) return io_error("fsync of " + path + " after laying it out", errno);
    return ok_status();
}

// Sizes and, where needed, lays out `path` for a job of `wanted` bytes.
Result<JobTarget> prepare_file(const std::string& path, std::optional<std::uint64_t> wanted) {
    struct stat info {};
    if (stat(path.c_str(), &info) != 0) {
        if (errno != ENOENT) return io_error("cannot stat " + path, errno);
        if (!wanted) {
            return make_error(errc::kInvalidArgument,
                              "io job option 'size' is required: " + path + " does not exist");
        }
        DS_TRY(lay_out(path, 0, *wanted));
        return JobTarget{path, *wanted};
    }
    if (S_ISBLK(info.st_mode)) {
        FileDescriptor fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
        if (fd.get() < 0) return io_error("cannot open " + path, errno);
        std::uint64_t device_bytes = 0;
        if (ioctl(fd.get(), BLKGETSIZE64, &device_bytes) != 0) {
            return io_error("cannot read the size of " + path, errno);
        }
        const std::uint64_t size = wanted.value_or(device_bytes);
        if (size > device_bytes || size == 0) {
            return make_error(errc::kInvalidArgument,
                              "io job option 'size': " + std::to_string(size) +
                                  " bytes does not fit block device " + path + " of " +
                                  std::to_string(device_bytes) + " bytes");
        }
        return JobTarget{path, size};
    }
    if (S_ISCHR(info.st_mode)) {
        if (!wanted) {
            return make_error(errc::kInvalidArgument,
                              "io job option 'size' is required for character device " + path);
        }
        return JobTarget{path, *wanted};
    }
    if (!S_ISREG(info.st_mode)) {
        return make_error(errc::kInvalidArgument,
                          path + " is neither a regular file nor a block or character device");
    }
    const auto existing = static_cast<std::uint64_t>(info.st_size);
    const std::uint64_t size = wanted.value_or(existing);
    if (size == 0) {
        return make_error(errc::kInvalidArgument,
                          "io job option 'size' is required: " + path + " is empty");
    }
    if (existing < size) DS_TRY(lay_out(path, existing, size));
    return JobTarget{path, size};
}

}  // namespace

Result<std::vector<JobTarget>> prepare_targets(const JobOptions& options) {
    std::vector<JobTarget> targets;
    if (options.engine->diskless) {
        targets.assign(options.numjobs, JobTarget{"", *options.size});
        return targets;
    }
    if (!options.filename.empty()) {
        std::string path = options.filename;
        if (!options.directory.empty() && path.front() != '/') {
            path = options.directory + "/" + path;
        }
        auto target = prepare_file(path, options.size);
        if (!target) return target.error();
        targets.assign(options.numjobs, *target);
        return targets;
    }
    if (!options.size) {
        return make_error(errc::kInvalidArgument,
                          "io job option 'size' is required when the job creates its own files "
                          "(no filename)");
    }
    const std::string directory = options.directory.empty() ? "." : options.directory;
    for (unsigned job = 0; job < options.numjobs; ++job) {
        auto target = prepare_file(
            directory + "/" + options.name + "." + std::to_string(job) + ".0", options.size);
        if (!target) return target.error();
        targets.push_back(*target);
    }
    return targets;
}

}  // namespace ds::io
