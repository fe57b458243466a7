// Backends, as data. Two tables: the backend kinds this build knows (a
// hypervisor or a storage kind, with its options and what disk sources it
// produces or attaches) and, per daemon, the backends configured from them.
// A sweep is checked against what is configured before it is accepted, and
// each run looks its storage up here by name, so a result can never claim a
// backend that did not run it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/process.h"
#include "common/result.h"
#include "common/settings.h"
#include "daemon/storage/storage.h"

namespace ds {

// One `storage = ...` line of the daemon config, split:
// "rbd:rbd,mon_host=127.0.0.1:6789,id=disksweep" -> kind "rbd", pool "rbd",
// options {mon_host: ..., id: ...}. `name` is "KIND" or "KIND:POOL", the
// name a sweep spec uses.
struct StorageLine {
    std::string kind;
    std::string pool;
    std::map<std::string, std::string> options;
    std::string name() const { return pool.empty() ? kind : kind + ":" + pool; }
};
// Errors name the line's text.
Result<StorageLine> parse_storage_line(std::string_view text);

// What a storage factory may use besides its own line.
struct StorageContext {
    std::string default_file_directory;  // <state_dir>/volumes
    CommandRunner run_command;
    // For backends that read their tools' output (lvs, rbd --format json).
    std::shared_ptr<ProcessRunner> process_runner;
};

struct StorageOptionDef {
    std::string_view key;
    bool required;
    std::string_view help;
};

struct StorageKindDef {
    std::string_view kind;         // "file", "lvm-thin", "rbd"
    std::string_view pool_syntax;  // "" (no pool), "[DIR]", "VG/POOL", "POOL"
    bool pool_required;
    DiskSourceKind produces;
    std::vector<StorageOptionDef> options;
    std::string_view help;
    std::function<Result<std::unique_ptr<StorageBackend>>(const StorageLine&,
                                                          const StorageContext&)>
        make;
};
// The storage kinds built into this disksweepd (one static library each).
std::span<const StorageKindDef> storage_kinds();
const StorageKindDef* find_storage_kind(std::string_view kind);
// Checks the line against its kind's table (pool, option keys, required
// options) and builds the backend.
Result<std::unique_ptr<StorageBackend>> make_storage_backend(const StorageLine& line,
                                                             const StorageContext& context);

struct HypervisorKindDef {
    std::string_view name;                 // "libvirt"
    std::vector<DiskSourceKind> attaches;  // the disk sources it can attach
    std::string_view help;
};
std::span<const HypervisorKindDef> hypervisor_kinds();
const HypervisorKindDef* find_hypervisor_kind(std::string_view name);

// What one daemon has configured: its hypervisors (by backend name) and its
// storages (by spec name). Owns the storage backends.
class BackendCatalog {
  public:
    void add_hypervisor(std::string name, std::string detail);
    Status add_storage(std::unique_ptr<StorageBackend> storage);

    // The storage a configuration names, or an Error that names it and lists
    // what is configured.
    Result<StorageBackend*> storage_for(const StorageConfig& config) const;
    // Whether `config` can run on this daemon: its hypervisor and storage are
    // configured and the hypervisor attaches what the storage produces.
    Status check(const StorageConfig& config) const;
    std::vector<StorageBackend*> storages() const;
    // {"hypervisors":[{"name","detail","attaches"}],"storages":[{"name","produces"}]}
    Json to_json() const;

  private:
    std::string configured_storage_names() const;
    struct ConfiguredHypervisor {
        std::string name;
        std::string detail;
    };
    std::vector<ConfiguredHypervisor> hypervisors_;
    std::map<std::string, std::unique_ptr<StorageBackend>> storages_;
};

// "rbd:mypool" for a configuration (its storage and pool).
std::string storage_name(const StorageConfig& config);

}  // namespace ds
