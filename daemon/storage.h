// The storage seam: one fresh data volume per run, removed afterwards.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/settings.h"

namespace ds {

struct Volume {
    std::string name;  // unique; starts with the daemon's prefix
    std::string path;  // what the hypervisor attaches
    ImageFormat format = ImageFormat::kRaw;
};

class StorageBackend {
  public:
    virtual ~StorageBackend() = default;
    virtual std::string name() const = 0;
    // Creates an empty volume of config.disk_size_bytes in config.image_format.
    virtual Result<Volume> create_volume(const std::string& name, const StorageConfig& config) = 0;
    // Removes the volume. Succeeds if it is already gone.
    virtual Status remove_volume(const std::string& name) = 0;
    // Volumes whose name starts with prefix (crash recovery).
    virtual Result<std::vector<std::string>> list_volumes(const std::string& prefix) = 0;
};

}  // namespace ds
