// disksweepd's configuration: command-line flags and a config file, declared
// once as a table (kDaemonOptions in config.cpp) from which parsing, --help
// and the effective-config dump all come.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/settings.h"

namespace ds {

enum class AccelChoice { kAuto, kKvm, kTcg };

struct DaemonConfig {
    std::string state_dir = "/var/lib/disksweep";  // database, volumes, embedded libvirt root
    std::string socket_path = "/run/disksweep/disksweepd.sock";
    std::string database;        // default: <state_dir>/results.db
    std::string image_dir;       // default: <state_dir>/images (guest/build-image.sh output)
    std::string volume_dir;      // default: <state_dir>/volumes (file storage backend)
    std::string hypervisor_uri;  // default: qemu:///embed?root=<state_dir>/libvirt
    AccelChoice accel = AccelChoice::kAuto;
    int max_parallel_runs = 1;
    int boot_timeout_s = 60;   // guest must say hello within this
    int run_timeout_s = 900;   // whole run, after hello
    int probe_timeout_s = 20;  // KVM probe boot
    int vcpus = 1;
    int memory_mib = 1024;
    bool keep_failed_console_logs = true;
    // `storage` lines (repeatable): "KIND[:POOL][,KEY=VALUE...]", e.g.
    // "rbd:rbd,mon_host=127.0.0.1:6789,id=disksweep,keyring=/etc/ceph/k".
    // The file storage ("file", in volume_dir) is configured unless a
    // `file` line replaces it (ds::storage_kinds() lists kinds and keys).
    std::vector<std::string> storages;
    // `host` lines (repeatable): "KIND:NAME[,KEY=VALUE...]", more hosts runs
    // are placed on besides the daemon's own libvirt connection ("local",
    // max_parallel_runs slots); daemon/backends/hosts.h.
    std::vector<std::string> hosts;
    // This daemon's instance name, part of every guest, volume and probe
    // name it creates (ds::ResourceNames); "" = the id its database keeps
    // (Store::instance_id). Valid per check_instance_name
    // (daemon/run/resource_names.h).
    std::string instance;
    // Where durability runs read the host's writeback settings
    // (dirty_expire_centisecs, dirty_writeback_centisecs): this host's, or a
    // directory holding the two files of the host being modelled.
    std::string vm_sysctl_dir = "/proc/sys/vm";

    // The storage lines in effect: `storages`, plus "file" when none is a
    // file line.
    std::vector<std::string> effective_storages() const;

    std::string effective_database() const;
    std::string effective_image_dir() const;
    std::string effective_volume_dir() const;
    std::string effective_hypervisor_uri() const;
    std::string embedded_root() const;  // <state_dir>/libvirt
    std::string run_dir() const;        // <state_dir>/runs: sockets and console logs
    // <state_dir>/durability: durability runs' pre-run copies, write logs
    // and crash images (daemon/run/durability_trial.h), a directory per run.
    std::string durability_dir() const;
    Json to_json() const;
};

// Outcome of parsing argv: either run with a config, or print text (help,
// version) and exit with a code.
struct ParsedCommandLine {
    DaemonConfig config;
    bool exit_now = false;
    int exit_code = 0;
    std::string output;
};

// Flags win over the config file (--config FILE); unknown keys in the file
// are errors naming the file and key, as is an invalid `instance` (naming
// the flag, or the file and line).
Result<ParsedCommandLine> parse_daemon_command_line(int argc, const char* const* argv);

}  // namespace ds
