#include "daemon/durability/replay.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <numeric>
#include <vector>

#include "common/errno_text.h"
#include "common/file_descriptor.h"

namespace ds::durability {
namespace {

Error io_error(const std::string& where, int error_number) {
    return make_error(errc::kIo, where + ": " + describe_errno(error_number));
}

Result<FileDescriptor> open_file(const std::string& path, int flags, mode_t mode = 0) {
    FileDescriptor fd(::open(path.c_str(), flags | O_CLOEXEC, mode));
    if (!fd.valid()) return io_error("open " + path, errno);
    return fd;
}

// copy_file_range of [offset, offset + length), resumed after short copies.
Status copy_range(int from, int to, std::uint64_t offset, std::uint64_t length,
                  const std::string& target) {
    auto in = static_cast<loff_t>(offset);
    auto out = static_cast<loff_t>(offset);
    while (length > 0) {
        const ssize_t copied = ::copy_file_range(from, &in, to, &out, length, 0);
        if (copied < 0 && errno == EINTR) continue;
        if (copied <= 0) return io_error("copy into " + target, copied < 0 ? errno : EIO);
        length -= static_cast<std::uint64_t>(copied);
    }
    return ok_status();
}

// Copies the allocated ranges only; the holes stay holes in the target
// because it was truncated to its size first and is never written there.
Status sparse_copy(int from, int to, std::uint64_t size, const std::string& target) {
    if (::ftruncate(to, static_cast<off_t>(size)) != 0) return io_error("size " + target, errno);
    off_t data = ::lseek(from, 0, SEEK_DATA);
    while (data >= 0 && static_cast<std::uint64_t>(data) < size) {
        off_t hole = ::lseek(from, data, SEEK_HOLE);
        if (hole < 0) hole = static_cast<off_t>(size);
        DS_TRY(copy_range(from, to, static_cast<std::uint64_t>(data),
                          static_cast<std::uint64_t>(hole - data), target));
        data = ::lseek(from, hole, SEEK_DATA);
    }
    // ENXIO: no data after the last hole, the normal end.
    if (data < 0 && errno != ENXIO) return io_error("find data in the source of " + target, errno);
    return ok_status();
}

// Zeros for a discard the file system cannot punch, in bounded chunks.
Status write_zeros(int fd, std::uint64_t offset, std::uint64_t length, const std::string& image) {
    static const std::vector<char> zeros(1 << 20, 0);
    while (length > 0) {
        const std::size_t chunk = length < zeros.size() ? length : zeros.size();
        const ssize_t done = ::pwrite(fd, zeros.data(), chunk, static_cast<off_t>(offset));
        if (done < 0 && errno == EINTR) continue;
        if (done <= 0) return io_error("zero " + image, done < 0 ? errno : EIO);
        offset += static_cast<std::uint64_t>(done);
        length -= static_cast<std::uint64_t>(done);
    }
    return ok_status();
}

Status discard_range(int fd, std::uint64_t offset, std::uint64_t length, const std::string& image) {
    if (::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                    static_cast<off_t>(length)) == 0) {
        return ok_status();
    }
    if (errno != EOPNOTSUPP) return io_error("punch a hole in " + image, errno);
    return write_zeros(fd, offset, length, image);
}

Status write_all(int fd, const std::vector<char>& data, std::uint64_t offset,
                 const std::string& image) {
    std::size_t done = 0;
    while (done < data.size()) {
        const ssize_t wrote =
            ::pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
        if (wrote < 0 && errno == EINTR) continue;
        if (wrote <= 0) return io_error("write " + image, wrote < 0 ? errno : EIO);
        done += static_cast<std::size_t>(wrote);
    }
    return ok_status();
}

// One entry onto the image. Data is read and written in bounded chunks: an
// entry's length comes from the log.
Status apply_entry(const LogEntry& entry, std::uint32_t sector_size, int log_fd, int image_fd,
                   const std::string& image) {
    constexpr std::uint64_t kChunk = 4u << 20;
    const std::uint64_t device_offset = entry.sector * sector_size;
    if (entry.is_discard()) {
        return discard_range(image_fd, device_offset, entry.nr_sectors * sector_size, image);
    }
    std::vector<char> buffer;
    for (std::uint64_t done = 0; done < entry.data_bytes; done += buffer.size()) {
        const std::uint64_t chunk = std::min(kChunk, entry.data_bytes - done);
        DS_TRY(read_log_bytes(log_fd, entry.data_offset + done, chunk, buffer));
        DS_TRY(write_all(image_fd, buffer, device_offset + done, image));
    }
    return ok_status();
}

Status check_applicable(const LogIndex& index, std::span<const std::size_t> applied,
                        std::uint64_t size_limit) {
    std::size_t previous = 0;
    for (std::size_t n = 0; n < applied.size(); ++n) {
        const std::size_t position = applied[n];
        if (position >= index.entries.size() || (n > 0 && position <= previous)) {
            return make_error(errc::kInvalidArgument,
                              "replay: entry list not ascending within the log's " +
                                  std::to_string(index.entries.size()) + " entries at " +
                                  std::to_string(position));
        }
        previous = position;
        const LogEntry& entry = index.entries[position];
        // check_device_range (log_writes.cpp) made this product safe.
        const std::uint64_t end = (entry.sector + entry.nr_sectors) * index.sector_size;
        if (entry.changes_device() && end > size_limit) {
            return make_error(errc::kInvalidArgument,
                              "replay: log entry " + std::to_string(position) + " at byte " +
                                  std::to_string(entry.offset) + " reaches byte " +
                                  std::to_string(end) + " of the image, past its limit " +
                                  std::to_string(size_limit));
        }
    }
    return ok_status();
}

}  // namespace

std::string_view to_string(CopyMethod method) {
    return method == CopyMethod::kReflink ? "reflink" : "sparse-copy";
}

Result<CopyMethod> clone_image(const std::string& source, const std::string& target) {
    DS_ASSIGN_OR_RETURN(FileDescriptor from, open_file(source, O_RDONLY));
    struct stat status {};
    if (::fstat(from.get(), &status) != 0) return io_error("stat " + source, errno);
    DS_ASSIGN_OR_RETURN(FileDescriptor to, open_file(target, O_WRONLY | O_CREAT | O_TRUNC, 0600));
    if (::ioctl(to.get(), FICLONE, from.get()) == 0) return CopyMethod::kReflink;
    // EOPNOTSUPP/EINVAL/EXDEV: this file system (or pair) shares no extents.
    DS_TRY(sparse_copy(from.get(), to.get(), static_cast<std::uint64_t>(status.st_size), target));
    return CopyMethod::kSparseCopy;
}

Status apply_entries(const LogIndex& index, const std::string& log_path, const std::string& image,
                     std::span<const std::size_t> applied, std::uint64_t size_limit) {
    DS_TRY(check_applicable(index, applied, size_limit));
    DS_ASSIGN_OR_RETURN(FileDescriptor log, open_file(log_path, O_RDONLY));
    DS_ASSIGN_OR_RETURN(FileDescriptor target, open_file(image, O_RDWR));
    for (const std::size_t position : applied) {
        const LogEntry& entry = index.entries[position];
        if (!entry.changes_device()) continue;
        DS_TRY(apply_entry(entry, index.sector_size, log.get(), target.get(), image));
    }
    if (::fsync(target.get()) != 0) return io_error("fsync " + image, errno);
    return ok_status();
}

Result<CopyMethod> build_crash_image(const std::string& pre_run_volume, const LogIndex& index,
                                     const std::string& log_path,
                                     std::span<const std::size_t> applied,
                                     const std::string& target, std::uint64_t size_limit) {
    DS_ASSIGN_OR_RETURN(const CopyMethod method, clone_image(pre_run_volume, target));
    DS_TRY(apply_entries(index, log_path, target, applied, size_limit));
    return method;
}

std::vector<std::size_t> first_entries(std::size_t count) {
    std::vector<std::size_t> positions(count);
    std::iota(positions.begin(), positions.end(), std::size_t{0});
    return positions;
}

}  // namespace ds::durability
