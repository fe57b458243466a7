// Shared expectations for tests of the libvirt backend: what the live domain
// XML must report for a configuration, and the reference study's disk.
#pragma once

#include <string>

#include "common/settings.h"

namespace ds::test {

// What parse_applied_disk_settings must give back for `config`.
inline Json expected_applied(const StorageConfig& config) {
    return Json{
        {"bus", std::string(to_string(config.bus))},
        {"cache", std::string(to_string(config.cache))},
        {"aio", std::string(to_string(config.aio))},
        {"discard", config.discard},
        {"detect_zeroes", std::string(to_string(config.detect_zeroes))},
        {"ssd", config.ssd},
        {"iothread", config.iothread},
        {"image_format", std::string(to_string(config.image_format))},
    };
}

// A configuration that differs from the defaults only in its cache mode and
// file system (type, label and mount options).
inline StorageConfig cache_and_filesystem(CacheMode cache, const std::string& filesystem,
                                          const std::string& mount_options = "") {
    StorageConfig config;
    config.cache = cache;
    config.filesystem.label = filesystem;
    config.filesystem.type = filesystem;
    config.filesystem.mount_options = mount_options;
    return config;
}

// The reference Ceph study's disk: scsi-single with an IO thread, SSD
// emulation, discard, cache=unsafe (plus io_uring and detect_zeroes=unmap).
inline StorageConfig reference_disk_config() {
    StorageConfig config;
    config.bus = Bus::kScsiSingle;
    config.cache = CacheMode::kUnsafe;
    config.aio = AioMode::kIoUring;
    config.discard = true;
    config.detect_zeroes = DetectZeroes::kUnmap;
    config.ssd = true;
    config.iothread = true;
    return config;
}

}  // namespace ds::test
