#include "daemon/backends/hypervisor/libvirt/libvirt_pool.h"

#include <fcntl.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "common/file_descriptor.h"
#include "common/sha256.h"
#include "daemon/backends/hypervisor/libvirt/domain_xml.h"
#include "daemon/backends/hypervisor/libvirt/libvirt_error.h"
#include "daemon/backends/hypervisor/libvirt/libvirt_hypervisor.h"

namespace ds {

namespace {

struct PoolFree {
    void operator()(virStoragePoolPtr pool) const { virStoragePoolFree(pool); }
};
struct VolumeFree {
    void operator()(virStorageVolPtr volume) const { virStorageVolFree(volume); }
};
struct StreamFree {
    void operator()(virStreamPtr stream) const { virStreamFree(stream); }
};
using PoolHandle = std::unique_ptr<_virStoragePool, PoolFree>;
using VolumeHandle = std::unique_ptr<_virStorageVol, VolumeFree>;
using StreamHandle = std::unique_ptr<_virStream, StreamFree>;

constexpr const char* kImageParts[] = {"kernel", "initrd", "root"};
constexpr std::string_view kImageMarker = "img-";

Result<PoolHandle> lookup_pool(LibvirtHypervisor& host, const std::string& pool) {
    DS_ASSIGN_OR_RETURN(virConnectPtr connection, host.live_connection());
    PoolHandle handle{virStoragePoolLookupByName(connection, pool.c_str())};
    if (!handle) {
        const bool missing = last_libvirt_error_code() == VIR_ERR_NO_STORAGE_POOL;
        return libvirt_error(missing ? errc::kNotConfigured : errc::kHypervisor,
                             "no storage pool '" + pool + "'", host.uri());
    }
    return handle;
}

// The volume `name` of the pool, or null with errc::kNotFound.
Result<VolumeHandle> lookup_volume(virStoragePoolPtr pool, const std::string& name,
                                   const std::string& uri) {
    VolumeHandle volume{virStorageVolLookupByName(pool, name.c_str())};
    if (!volume) {
        const bool missing = last_libvirt_error_code() == VIR_ERR_NO_STORAGE_VOL;
        return libvirt_error(missing ? errc::kNotFound : errc::kHypervisor,
                             "no volume '" + name + "' in the pool", uri);
    }
    return volume;
}

Result<std::string> volume_path(virStorageVolPtr volume, const std::string& uri) {
    char* path = virStorageVolGetPath(volume);
    if (path == nullptr) return libvirt_error(errc::kHypervisor, "no path for a volume", uri);
    std::string out(path);
    std::free(path);
    return out;
}

std::string volume_xml(const std::string& name, std::uint64_t capacity, ImageFormat format) {
    return "<volume type='file'><name>" + xml_escape(name) + "</name><capacity unit='bytes'>" +
           std::to_string(capacity) +
           "</capacity><allocation unit='bytes'>0</allocation><target><format type='" +
           std::string(to_string(format)) + "'/></target></volume>";
}

Result<VolumeHandle> create_pool_volume(virStoragePoolPtr pool, const std::string& name,
                                        std::uint64_t capacity, ImageFormat format,
                                        const std::string& uri) {
    VolumeHandle volume{
        virStorageVolCreateXML(pool, volume_xml(name, capacity, format).c_str(), 0)};
    if (!volume) return libvirt_error(errc::kHypervisor, "cannot create volume " + name, uri);
    return volume;
}

Status delete_volume(virStoragePoolPtr pool, const std::string& name, const std::string& uri) {
    Result<VolumeHandle> volume = lookup_volume(pool, name, uri);
    if (!volume.ok()) {
        if (volume.error().code == errc::kNotFound) return ok_status();
        return volume.error();
    }
    if (virStorageVolDelete(volume->get(), 0) < 0) {
        return libvirt_error(errc::kHypervisor, "cannot delete volume " + name, uri);
    }
    return ok_status();
}

Result<std::vector<std::string>> pool_volume_names(virStoragePoolPtr pool, const std::string& uri) {
    // What another client (or a killed daemon's half-made upload) did since
    // libvirt last looked at the directory.
    (void)virStoragePoolRefresh(pool, 0);
    reset_libvirt_error();
    virStorageVolPtr* volumes = nullptr;
    const int count = virStoragePoolListAllVolumes(pool, &volumes, 0);
    if (count < 0) return libvirt_error(errc::kHypervisor, "cannot list the pool's volumes", uri);
    std::vector<std::string> names;
    for (int i = 0; i < count; ++i) {
        VolumeHandle volume{volumes[i]};
        if (const char* name = virStorageVolGetName(volume.get())) names.emplace_back(name);
    }
    std::free(volumes);
    return names;
}

// The local file fed to virStreamSparseSendAll: data as read(2), holes as
// SEEK_DATA/SEEK_HOLE find them, so a sparse root disk uploads its data only.
struct SparseSource {
    int fd = -1;
};

int send_data(virStreamPtr, char* data, size_t bytes, void* opaque) {
    const ssize_t got = ::read(static_cast<SparseSource*>(opaque)->fd, data, bytes);
    return got < 0 ? -1 : static_cast<int>(got);
}

int find_hole(virStreamPtr, int* in_data, long long* length, void* opaque) {
    const int fd = static_cast<SparseSource*>(opaque)->fd;
    const off_t here = ::lseek(fd, 0, SEEK_CUR);
    struct stat info {};
    if (here < 0 || ::fstat(fd, &info) != 0) return -1;
    if (here >= info.st_size) {
        *in_data = 0;
        *length = 0;
        return 0;
    }
    const off_t data = ::lseek(fd, here, SEEK_DATA);
    if (data < 0 && errno != ENXIO) return -1;
    if (data == here) {
        const off_t hole = ::lseek(fd, here, SEEK_HOLE);
        *in_data = 1;
        *length = (hole < 0 ? info.st_size : hole) - here;
    } else {
        *in_data = 0;
        *length = (data < 0 ? info.st_size : data) - here;
    }
    return ::lseek(fd, here, SEEK_SET) == here ? 0 : -1;
}

int skip_hole(virStreamPtr, long long length, void* opaque) {
    return ::lseek(static_cast<SparseSource*>(opaque)->fd, length, SEEK_CUR) < 0 ? -1 : 0;
}

Status upload_file(LibvirtHypervisor& host, virStorageVolPtr volume, const std::string& path,
                   std::uint64_t size) {
    const FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) {
        return make_error(errc::kIo, "cannot read " + path + ": " + std::strerror(errno));
    }
    DS_ASSIGN_OR_RETURN(virConnectPtr connection, host.live_connection());
    StreamHandle stream{virStreamNew(connection, 0)};
    if (!stream || virStorageVolUpload(volume, stream.get(), 0, size,
                                       VIR_STORAGE_VOL_UPLOAD_SPARSE_STREAM) < 0) {
        return libvirt_error(errc::kHypervisor, "cannot start uploading " + path, host.uri());
    }
    SparseSource source{fd.get()};
    if (virStreamSparseSendAll(stream.get(), send_data, find_hole, skip_hole, &source) < 0) {
        Error error = libvirt_error(errc::kHypervisor, "cannot upload " + path, host.uri());
        virStreamAbort(stream.get());
        return error;
    }
    if (virStreamFinish(stream.get()) < 0) {
        return libvirt_error(errc::kHypervisor, "upload of " + path + " did not finish",
                             host.uri());
    }
    return ok_status();
}

}  // namespace

Status check_libvirt_dir_pool(LibvirtHypervisor& host, const std::string& pool) {
    DS_ASSIGN_OR_RETURN(PoolHandle handle, lookup_pool(host, pool));
    char* xml = virStoragePoolGetXMLDesc(handle.get(), 0);
    const std::string description = xml != nullptr ? xml : "";
    std::free(xml);
    const std::string how = "; make one with a <pool type='dir'> definition on that host";
    if (description.find("type='dir'") == std::string::npos) {
        return make_error(errc::kNotConfigured, "storage pool '" + pool + "' on " + host.uri() +
                                                    " is not a dir pool" + how);
    }
    if (virStoragePoolIsActive(handle.get()) != 1) {
        return make_error(errc::kNotConfigured, "storage pool '" + pool + "' on " + host.uri() +
                                                    " is not active (start it, or mark it "
                                                    "autostart)");
    }
    return ok_status();
}

// ---------------------------------------------------------------------------
// LibvirtPoolStorage

LibvirtPoolStorage::LibvirtPoolStorage(LibvirtHypervisor& host, std::string pool)
    : host_(host), pool_(std::move(pool)) {}

Result<Volume> LibvirtPoolStorage::create_volume(const std::string& name,
                                                 const StorageConfig& config) {
    DS_ASSIGN_OR_RETURN(PoolHandle pool, lookup_pool(host_, pool_));
    DS_ASSIGN_OR_RETURN(VolumeHandle volume,
                        create_pool_volume(pool.get(), name, config.disk_size_bytes,
                                           config.image_format, host_.uri()));
    DS_ASSIGN_OR_RETURN(std::string path, volume_path(volume.get(), host_.uri()));
    return Volume{name, FileDisk{path, config.image_format}};
}

Status LibvirtPoolStorage::remove_volume(const std::string& name) {
    DS_ASSIGN_OR_RETURN(PoolHandle pool, lookup_pool(host_, pool_));
    return delete_volume(pool.get(), name, host_.uri());
}

Result<std::vector<std::string>> LibvirtPoolStorage::list_volumes(const std::string& prefix) {
    DS_ASSIGN_OR_RETURN(PoolHandle pool, lookup_pool(host_, pool_));
    DS_ASSIGN_OR_RETURN(auto names, pool_volume_names(pool.get(), host_.uri()));
    std::vector<std::string> matching;
    for (const std::string& name : names) {
        if (name.starts_with(prefix) && !PoolImages::is_image_volume(name, prefix))
            matching.push_back(name);
    }
    return matching;
}

Result<std::uint64_t> LibvirtPoolStorage::allocated_bytes(const std::string& name) {
    DS_ASSIGN_OR_RETURN(PoolHandle pool, lookup_pool(host_, pool_));
    DS_ASSIGN_OR_RETURN(VolumeHandle volume, lookup_volume(pool.get(), name, host_.uri()));
    virStorageVolInfo info{};
    if (virStorageVolGetInfo(volume.get(), &info) < 0) {
        return libvirt_error(errc::kHypervisor, "cannot read volume " + name, host_.uri());
    }
    return static_cast<std::uint64_t>(info.allocation);
}

Json LibvirtPoolStorage::state(const std::string& /*volume*/) {
    Json state = {{"pool", pool_}, {"host", host_.uri()}};
    Result<PoolHandle> pool = lookup_pool(host_, pool_);
    virStoragePoolInfo info{};
    if (pool.ok() && virStoragePoolGetInfo(pool->get(), &info) == 0) {
        state["capacity_bytes"] = info.capacity;
        state["allocation_bytes"] = info.allocation;
        state["available_bytes"] = info.available;
    }
    reset_libvirt_error();
    return state;
}

Result<ClonedVolume> LibvirtPoolStorage::clone_volume(const std::string& golden,
                                                      const std::string& name,
                                                      const StorageConfig& config) {
    DS_ASSIGN_OR_RETURN(PoolHandle pool, lookup_pool(host_, pool_));
    DS_ASSIGN_OR_RETURN(VolumeHandle source, lookup_volume(pool.get(), golden, host_.uri()));
    const std::string xml = volume_xml(name, config.disk_size_bytes, config.image_format);
    VolumeHandle volume{virStorageVolCreateXMLFrom(pool.get(), xml.c_str(), source.get(), 0)};
    if (!volume) {
        return libvirt_error(errc::kHypervisor, "cannot copy volume " + golden + " to " + name,
                             host_.uri());
    }
    DS_ASSIGN_OR_RETURN(std::string path, volume_path(volume.get(), host_.uri()));
    return ClonedVolume{Volume{name, FileDisk{path, config.image_format}}, "libvirt-copy"};
}

// ---------------------------------------------------------------------------
// PoolImages

PoolImages::PoolImages(LibvirtHypervisor& host, std::string pool, std::string prefix)
    : host_(host), pool_(std::move(pool)), prefix_(std::move(prefix)) {}

bool PoolImages::is_image_volume(const std::string& volume, const std::string& prefix) {
    return volume.starts_with(prefix) &&
           std::string_view(volume).substr(prefix.size()).starts_with(kImageMarker);
}

Result<std::string> PoolImages::content_hash(const GuestImage& local) {
    std::string identity;
    std::string contents;
    for (const std::string& path : {local.kernel, local.initrd, local.root_disk}) {
        struct stat info {};
        if (::stat(path.c_str(), &info) != 0) {
            return make_error(errc::kUnavailable, "guest image file " + path + " is missing");
        }
        identity += path + ":" + std::to_string(info.st_ino) + ":" + std::to_string(info.st_size) +
                    ":" + std::to_string(info.st_mtim.tv_sec) + "." +
                    std::to_string(info.st_mtim.tv_nsec) + ";";
    }
    if (auto known = hashes_.find(identity); known != hashes_.end()) return known->second;
    for (const std::string& path : {local.kernel, local.initrd, local.root_disk}) {
        DS_ASSIGN_OR_RETURN(std::string file_hash, sha256_file_hex(path));
        contents += file_hash;
    }
    return hashes_[identity] = sha256_hex(contents).substr(0, 16);
}

Result<GuestImage> PoolImages::stage(const GuestImage& local) {
    std::lock_guard lock(mutex_);
    DS_ASSIGN_OR_RETURN(std::string hash, content_hash(local));
    const std::string slot = sha256_hex(local.root_disk).substr(0, 8);
    const std::string stem = prefix_ + std::string(kImageMarker) + slot + "-" + hash + "-";
    auto known = staged_.find(stem);
    if (known == staged_.end()) {
        DS_ASSIGN_OR_RETURN(GuestImage uploaded, upload(local, stem));
        known = staged_.emplace(stem, Staged{slot, hash, uploaded, 0}).first;
    }
    ++known->second.users;
    current_hash_[slot] = hash;
    remove_stale(slot);
    return known->second.image;
}

void PoolImages::release(const GuestImage& staged) {
    std::lock_guard lock(mutex_);
    for (auto& [stem, entry] : staged_) {
        if (entry.image.root_disk != staged.root_disk) continue;
        if (entry.users > 0) --entry.users;
        remove_stale(entry.slot);
        return;
    }
}

// Uploads what is not complete in the pool yet. A stem without its `done`
// marker is an upload cut short: its parts are deleted and made again.
Result<GuestImage> PoolImages::upload(const GuestImage& local, const std::string& stem) {
    DS_ASSIGN_OR_RETURN(PoolHandle pool, lookup_pool(host_, pool_));
    const std::string uri = host_.uri();
    const bool complete = lookup_volume(pool.get(), stem + "done", uri).ok();
    reset_libvirt_error();
    const std::string files[] = {local.kernel, local.initrd, local.root_disk};
    std::string paths[3];
    for (int i = 0; i < 3; ++i) {
        const std::string name = stem + kImageParts[i];
        if (!complete) {
            DS_TRY(delete_volume(pool.get(), name, uri));
            struct stat info {};
            if (::stat(files[i].c_str(), &info) != 0) {
                return make_error(errc::kUnavailable,
                                  "guest image file " + files[i] + " is missing");
            }
            const auto size = static_cast<std::uint64_t>(info.st_size);
            DS_ASSIGN_OR_RETURN(VolumeHandle volume,
                                create_pool_volume(pool.get(), name, size, ImageFormat::kRaw, uri));
            DS_TRY(upload_file(host_, volume.get(), files[i], size));
        }
        DS_ASSIGN_OR_RETURN(VolumeHandle volume, lookup_volume(pool.get(), name, uri));
        DS_ASSIGN_OR_RETURN(paths[i], volume_path(volume.get(), uri));
    }
    if (!complete) {
        DS_ASSIGN_OR_RETURN(VolumeHandle marker, create_pool_volume(pool.get(), stem + "done", 0,
                                                                    ImageFormat::kRaw, uri));
    }
    return GuestImage{paths[0], paths[1], paths[2], local.manifest};
}

void PoolImages::remove_stale(const std::string& slot) {
    const std::string slot_stem = prefix_ + std::string(kImageMarker) + slot + "-";
    const auto keep = [&](const std::string& hash) {
        if (current_hash_[slot] == hash) return true;
        const auto entry = staged_.find(slot_stem + hash + "-");
        return entry != staged_.end() && entry->second.users > 0;
    };
    Result<PoolHandle> pool = lookup_pool(host_, pool_);
    Result<std::vector<std::string>> names =
        pool.ok() ? pool_volume_names(pool->get(), host_.uri()) : pool.error();
    if (!names.ok()) return;  // tried again at the next stage or release
    for (const std::string& name : *names) {
        if (!name.starts_with(slot_stem) || name.size() < slot_stem.size() + 16) continue;
        const std::string hash = name.substr(slot_stem.size(), 16);
        if (keep(hash)) continue;
        (void)delete_volume(pool->get(), name, host_.uri());
        reset_libvirt_error();
        staged_.erase(slot_stem + hash + "-");
    }
}

}  // namespace ds
