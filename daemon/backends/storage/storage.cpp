#include "daemon/backends/storage/storage.h"

#include <type_traits>

namespace ds {

namespace {
template <class... Ts>
struct Overloaded : Ts... {
    using Ts::operator()...;
};
// Spelled out for clang 14 (the fuzz and sanitizer builds), which does not
// deduce an aggregate's template arguments from its initializers.
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;
}  // namespace

DiskSourceKind kind_of(const DiskSource& source) {
    return std::visit(Overloaded{[](const FileDisk&) { return DiskSourceKind::kFile; },
                                 [](const BlockDisk&) { return DiskSourceKind::kBlock; },
                                 [](const RbdDisk&) { return DiskSourceKind::kRbd; },
                                 [](const HypervisorAllocatedDisk&) {
                                     return DiskSourceKind::kHypervisorAllocated;
                                 }},
                      source);
}

std::string_view to_string(DiskSourceKind kind) {
    switch (kind) {
        case DiskSourceKind::kFile:
            return "file";
        case DiskSourceKind::kBlock:
            return "block";
        case DiskSourceKind::kRbd:
            return "rbd";
        case DiskSourceKind::kHypervisorAllocated:
            break;
    }
    return "hypervisor-allocated";
}

Json to_json(const DiskSource& source) {
    Json json = std::visit(
        Overloaded{[](const FileDisk& disk) {
                       return Json{{"path", disk.path}, {"format", to_string(disk.format)}};
                   },
                   [](const BlockDisk& disk) {
                       return Json{{"path", disk.path}};
                   },
                   [](const RbdDisk& disk) {
                       // Paths of the auth files, never their content.
                       return Json{{"pool", disk.pool},         {"image", disk.image},
                                   {"monitors", disk.monitors}, {"user", disk.user},
                                   {"keyring", disk.keyring},   {"ceph_conf", disk.ceph_conf}};
                   },
                   [](const HypervisorAllocatedDisk& disk) {
                       return Json{{"storage", disk.storage}, {"size_bytes", disk.size_bytes}};
                   }},
        source);
    json["kind"] = to_string(kind_of(source));
    return json;
}

Status require_raw_format(const std::string& backend, std::string_view what,
                          const StorageConfig& config) {
    if (config.image_format == ImageFormat::kRaw) return ok_status();
    return make_error(errc::kInvalidArgument,
                      backend + ": " + std::string(what) +
                          " has no image format (QEMU sees it raw); image_format must be raw, "
                          "not " +
                          std::string(to_string(config.image_format)));
}

Result<std::uint64_t> StorageBackend::allocated_bytes(const std::string&) {
    return make_error(errc::kUnsupported,
                      "storage '" + name() + "' cannot measure a volume's allocated bytes");
}

Result<ClonedVolume> StorageBackend::clone_volume(const std::string& golden, const std::string&,
                                                  const StorageConfig&) {
    return make_error(errc::kUnsupported,
                      "storage '" + name() + "' cannot clone the golden volume " + golden);
}

}  // namespace ds
