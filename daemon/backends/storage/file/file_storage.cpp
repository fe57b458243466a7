#include "daemon/backends/storage/file/file_storage.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "common/file_descriptor.h"

namespace ds {
namespace fs = std::filesystem;

namespace {

// qemu-img create of a few GiB takes well under a second; this is for a
// host whose disk stalls.
constexpr std::chrono::seconds kQemuImgTimeout{120};

}  // namespace

FileStorage::FileStorage(std::string directory, std::shared_ptr<ProcessRunner> processes,
                         FileClonePolicy clone_policy)
    : directory_(std::move(directory)),
      processes_(std::move(processes)),
      clone_policy_(clone_policy) {}

std::string FileStorage::path_of(const std::string& name, ImageFormat format) const {
    return directory_ + "/" + name + (format == ImageFormat::kQcow2 ? ".qcow2" : ".raw");
}

Result<Volume> FileStorage::create_volume(const std::string& name, const StorageConfig& config) {
    std::error_code ec;
    fs::create_directories(directory_, ec);
    if (ec) {
        return make_error(errc::kStorage,
                          "cannot create volume directory " + directory_ + ": " + ec.message());
    }
    const std::string path = path_of(name, config.image_format);
    const Volume volume{name, FileDisk{path, config.image_format}};
    if (config.image_format == ImageFormat::kQcow2) {
        if (processes_ == nullptr) {
            return make_error(errc::kStorage, "cannot create qcow2 volume " + path +
                                                  ": this file storage runs no qemu-img");
        }
        Status made = run_checked(*processes_,
                                  {"qemu-img", "create", "-q", "-f", "qcow2", path,
                                   std::to_string(config.disk_size_bytes)},
                                  kQemuImgTimeout);
        if (!made.ok()) {
            fs::remove(path, ec);
            return make_error(errc::kStorage,
                              "qemu-img create " + path + " failed: " + made.error().message);
        }
        return volume;
    }
    // Raw: a sparse file. O_EXCL so two runs can never share a volume.
    FileDescriptor fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!fd.valid()) {
        return make_error(errc::kStorage,
                          "cannot create volume " + path + ": " + std::strerror(errno));
    }
    int rc = ::ftruncate(fd.get(), static_cast<off_t>(config.disk_size_bytes));
    int saved_errno = errno;
    fd.reset();
    if (rc != 0) {
        fs::remove(path, ec);
        return make_error(errc::kStorage,
                          "cannot size volume " + path + ": " + std::strerror(saved_errno));
    }
    return volume;
}

Status FileStorage::remove_volume(const std::string& name) {
    for (ImageFormat format : {ImageFormat::kRaw, ImageFormat::kQcow2}) {
        std::error_code ec;
        fs::remove(path_of(name, format), ec);
        if (ec) {
            return make_error(errc::kStorage, "cannot remove volume " + path_of(name, format) +
                                                  ": " + ec.message());
        }
    }
    return ok_status();
}

Result<std::uint64_t> FileStorage::allocated_bytes(const std::string& name) {
    for (ImageFormat format : {ImageFormat::kRaw, ImageFormat::kQcow2}) {
        struct stat info {};
        if (::stat(path_of(name, format).c_str(), &info) == 0) {
            // st_blocks counts 512-byte units whatever the file system's
            // block size (stat(2)).
            return static_cast<std::uint64_t>(info.st_blocks) * 512u;
        }
    }
    return make_error(errc::kNotFound, "volume " + name + " has no file in " + directory_);
}

Result<ClonedVolume> FileStorage::clone_volume(const std::string& golden, const std::string& name,
                                               const StorageConfig& config) {
    const std::string path = path_of(name, config.image_format);
    DS_ASSIGN_OR_RETURN(auto method,
                        clone_file(path_of(golden, config.image_format), path, clone_policy_));
    return ClonedVolume{{name, FileDisk{path, config.image_format}},
                        std::string(to_string(method))};
}

Result<std::vector<std::string>> FileStorage::list_volumes(const std::string& prefix) {
    std::vector<std::string> names;
    std::error_code ec;
    if (!fs::exists(directory_, ec)) return names;
    for (const auto& entry : fs::directory_iterator(directory_, ec)) {
        std::string stem = entry.path().stem().string();
        std::string extension = entry.path().extension().string();
        if ((extension == ".raw" || extension == ".qcow2") && stem.rfind(prefix, 0) == 0) {
            names.push_back(stem);
        }
    }
    if (ec) {
        return make_error(errc::kStorage, "cannot list " + directory_ + ": " + ec.message());
    }
    return names;
}

}  // namespace ds
