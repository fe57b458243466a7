// The file storage backend: each data volume is a file in one directory, raw
// (sparse) or qcow2 (made by qemu-img, the real tool).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/process.h"
#include "daemon/backends/storage/file/file_clone.h"
#include "daemon/backends/storage/storage.h"

namespace ds {

class FileStorage : public StorageBackend {
  public:
    // `processes` runs qemu-img for qcow2 volumes (raw ones need no tool;
    // without it a qcow2 volume is refused).
    // `clone_policy`: whether clone_volume may reflink (tests force the copy).
    FileStorage(std::string directory, std::shared_ptr<ProcessRunner> processes,
                FileClonePolicy clone_policy = FileClonePolicy::kAny);
    std::string name() const override { return "file"; }
    DiskSourceKind produces() const override { return DiskSourceKind::kFile; }
    Result<Volume> create_volume(const std::string& name, const StorageConfig& config) override;
    Status remove_volume(const std::string& name) override;
    Result<std::vector<std::string>> list_volumes(const std::string& prefix) override;
    // st_blocks × 512 of the volume's file: what the host file system holds
    // for it (a raw file's holes and a qcow2 file's punched clusters are not
    // counted). errc::kNotFound when the volume has no file.
    Result<std::uint64_t> allocated_bytes(const std::string& name) override;
    // clone_file of the golden's file (in config.image_format, as the golden
    // was made): method "reflink" or "sparse-copy".
    Result<ClonedVolume> clone_volume(const std::string& golden, const std::string& name,
                                      const StorageConfig& config) override;

  private:
    std::string path_of(const std::string& name, ImageFormat format) const;
    std::string directory_;
    std::shared_ptr<ProcessRunner> processes_;
    FileClonePolicy clone_policy_;
};

}  // namespace ds
