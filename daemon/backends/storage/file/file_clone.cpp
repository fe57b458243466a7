#include "daemon/backends/storage/file/file_clone.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "common/file_descriptor.h"

namespace ds {
namespace {

constexpr std::size_t kCopyChunkBytes = 1u << 20;

Error clone_error(const std::string& what, const std::string& path, int saved_errno) {
    return make_error(errc::kStorage, what + " " + path + ": " + std::strerror(saved_errno));
}

// Copies [offset, end) of `from` to the same offsets of `to`.
Status copy_range(int from, int to, off_t offset, off_t end, const std::string& to_path) {
    std::vector<char> buffer(kCopyChunkBytes);
    while (offset < end) {
        const auto wanted = static_cast<std::size_t>(
            std::min<off_t>(end - offset, static_cast<off_t>(buffer.size())));
        const ssize_t got = ::pread(from, buffer.data(), wanted, offset);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return clone_error("cannot read the golden volume for", to_path, errno);
        for (ssize_t written = 0; written < got;) {
            const ssize_t put = ::pwrite(to, buffer.data() + written,
                                         static_cast<std::size_t>(got - written), offset + written);
            if (put < 0 && errno == EINTR) continue;
            if (put < 0) return clone_error("cannot write", to_path, errno);
            written += put;
        }
        offset += got;
    }
    return ok_status();
}

// The data ranges of `from` copied into `to`, sized as `from`: holes stay
// holes (ENXIO from SEEK_DATA: no data after the offset).
Status sparse_copy(int from, int to, off_t size, const std::string& to_path) {
    if (::ftruncate(to, size) != 0) return clone_error("cannot size", to_path, errno);
    off_t offset = 0;
    while (offset < size) {
        const off_t data = ::lseek(from, offset, SEEK_DATA);
        if (data < 0 && errno == ENXIO) break;
        if (data < 0) return clone_error("cannot find the data of the golden for", to_path, errno);
        off_t hole = ::lseek(from, data, SEEK_HOLE);
        if (hole < 0) hole = size;
        DS_TRY(copy_range(from, to, data, hole, to_path));
        offset = hole;
    }
    if (::fsync(to) != 0) return clone_error("cannot fsync", to_path, errno);
    return ok_status();
}

Result<FileCloneMethod> clone_into(int from, int to, FileClonePolicy policy,
                                   const std::string& to_path) {
    // EOPNOTSUPP / EXDEV / EINVAL: the file system cannot share extents here.
    if (policy == FileClonePolicy::kAny && ::ioctl(to, FICLONE, from) == 0) {
        return FileCloneMethod::kReflink;
    }
    struct stat info {};
    if (::fstat(from, &info) != 0) return clone_error("cannot stat the golden of", to_path, errno);
    DS_TRY(sparse_copy(from, to, info.st_size, to_path));
    return FileCloneMethod::kSparseCopy;
}

}  // namespace

std::string_view to_string(FileCloneMethod method) {
    return method == FileCloneMethod::kReflink ? "reflink" : "sparse-copy";
}

Result<FileCloneMethod> clone_file(const std::string& from, const std::string& to,
                                   FileClonePolicy policy) {
    FileDescriptor source(::open(from.c_str(), O_RDONLY | O_CLOEXEC));
    if (!source.valid()) return clone_error("cannot open the golden volume", from, errno);
    FileDescriptor target(::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!target.valid()) return clone_error("cannot create", to, errno);
    auto method = clone_into(source.get(), target.get(), policy, to);
    target.reset();
    if (!method.ok()) ::unlink(to.c_str());
    return method;
}

}  // namespace ds
