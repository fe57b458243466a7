#include "daemon/config.h"

#include <algorithm>
#include <boost/program_options.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>

#include "common/text.h"
#include "common/version.h"
#include "daemon/run/resource_names.h"

namespace ds {
namespace po = boost::program_options;

std::string DaemonConfig::effective_database() const {
    return database.empty() ? state_dir + "/results.db" : database;
}
std::string DaemonConfig::effective_image_dir() const {
    return image_dir.empty() ? state_dir + "/images" : image_dir;
}
std::string DaemonConfig::effective_volume_dir() const {
    return volume_dir.empty() ? state_dir + "/volumes" : volume_dir;
}
std::string DaemonConfig::embedded_root() const {
    return state_dir + "/libvirt";
}
std::string DaemonConfig::run_dir() const {
    return state_dir + "/runs";
}
std::string DaemonConfig::durability_dir() const {
    return state_dir + "/durability";
}
std::vector<std::string> DaemonConfig::effective_storages() const {
    std::vector<std::string> lines = storages;
    const bool has_file = std::any_of(lines.begin(), lines.end(), [](const std::string& line) {
        return line == "file" || line.rfind("file,", 0) == 0;
    });
    if (!has_file) lines.insert(lines.begin(), "file");
    return lines;
}

std::string DaemonConfig::effective_hypervisor_uri() const {
    return hypervisor_uri.empty() ? "qemu:///embed?root=" + embedded_root() : hypervisor_uri;
}

namespace {

std::string_view accel_name(AccelChoice choice) {
    switch (choice) {
        case AccelChoice::kKvm:
            return "kvm";
        case AccelChoice::kTcg:
            return "tcg";
        case AccelChoice::kAuto:
            break;
    }
    return "auto";
}

// One row per option: its name (flag and config-file key), help with the
// default, and how it lands in DaemonConfig. The single declaration of the
// daemon's options.
struct DaemonOption {
    const char* name;
    const char* help;
    std::function<po::value_semantic*(DaemonConfig&)> bind;
};

const std::vector<DaemonOption>& daemon_options() {
    static const std::vector<DaemonOption> options = {
        {"state-dir",
         "directory for the database, volumes, run files and the embedded libvirt root",
         [](DaemonConfig& c) { return po::value(&c.state_dir)->default_value(c.state_dir); }},
        {"socket", "unix socket of the HTTP API",
         [](DaemonConfig& c) { return po::value(&c.socket_path)->default_value(c.socket_path); }},
        {"database", "SQLite results database (default: STATE_DIR/results.db)",
         [](DaemonConfig& c) { return po::value(&c.database); }},
        {"image-dir", "guest image built by guest/build-image.sh (default: STATE_DIR/images)",
         [](DaemonConfig& c) { return po::value(&c.image_dir); }},
        {"volume-dir",
         "where the file storage backend creates data volumes (default: STATE_DIR/volumes)",
         [](DaemonConfig& c) { return po::value(&c.volume_dir); }},
        {"hypervisor-uri",
         "libvirt URI (default: the embedded QEMU driver qemu:///embed?root=STATE_DIR/libvirt; "
         "e.g. qemu:///system, qemu+ssh://host/system)",
         [](DaemonConfig& c) { return po::value(&c.hypervisor_uri); }},
        {"accel", "guest acceleration: auto (probe KVM, fall back to TCG), kvm, tcg",
         [](DaemonConfig& c) {
             return po::value<std::string>()->default_value("auto")->notifier(
                 [&c](const std::string& v) {
                     if (v == "kvm")
                         c.accel = AccelChoice::kKvm;
                     else if (v == "tcg")
                         c.accel = AccelChoice::kTcg;
                     else if (v == "auto")
                         c.accel = AccelChoice::kAuto;
                     else
                         throw po::validation_error(po::validation_error::invalid_option_value,
                                                    "accel", v);
                 });
         }},
        {"max-parallel-runs", "runs executed at the same time",
         [](DaemonConfig& c) {
             return po::value(&c.max_parallel_runs)->default_value(c.max_parallel_runs);
         }},
        {"boot-timeout", "seconds a guest has to boot and say hello",
         [](DaemonConfig& c) {
             return po::value(&c.boot_timeout_s)->default_value(c.boot_timeout_s);
         }},
        {"run-timeout", "seconds a run may take after hello",
         [](DaemonConfig& c) {
             return po::value(&c.run_timeout_s)->default_value(c.run_timeout_s);
         }},
        {"probe-timeout", "seconds the KVM probe guest has to say hello",
         [](DaemonConfig& c) {
             return po::value(&c.probe_timeout_s)->default_value(c.probe_timeout_s);
         }},
        {"vcpus", "virtual CPUs per guest",
         [](DaemonConfig& c) { return po::value(&c.vcpus)->default_value(c.vcpus); }},
        {"memory-mib", "guest memory in MiB",
         [](DaemonConfig& c) { return po::value(&c.memory_mib)->default_value(c.memory_mib); }},
        {"storage",
         "a storage sweeps may name, repeatable: KIND[:POOL][,KEY=VALUE...], e.g. "
         "rbd:rbd,mon_host=127.0.0.1:6789,id=disksweep,keyring=FILE,conf=FILE or "
         "lvm-thin:VG/POOL (default: file, in volume-dir)",
         [](DaemonConfig& c) { return po::value(&c.storages)->composing(); }},
        {"host",
         "another host runs may be placed on, repeatable: KIND:NAME[,KEY=VALUE...], e.g. "
         "libvirt:system,uri=qemu+unix:///system?socket=/run/libvirt/libvirt-sock,parallel=2 or "
         "proxmox:pve1,host=pve1.example,"
         "token=disksweep@pve!sweeps,token_file=FILE,fingerprint=AA:..,node=pve1,"
         "template_vmid=9000,vmid_min=9100,vmid_max=9199,storages=pve:local-lvm "
         "(the daemon's own libvirt connection is the host 'local', with max-parallel-runs)",
         [](DaemonConfig& c) { return po::value(&c.hosts)->composing(); }},
        {"vm-sysctl-dir",
         "where durability runs read the host's writeback window (dirty_expire_centisecs and "
         "dirty_writeback_centisecs): this host's, or a directory with those two files to model "
         "another host's (docs/durability.md)",
         [](DaemonConfig& c) {
             return po::value(&c.vm_sysctl_dir)->default_value(c.vm_sysctl_dir);
         }},
        {"instance",
         "this daemon's name among daemons that share a hypervisor or a storage: 1-16 lowercase "
         "letters and digits; its guests and volumes are named disksweep-INSTANCE-..., and "
         "start-up recovery removes only those (default: an id generated once and kept in the "
         "database)",
         [](DaemonConfig& c) { return po::value(&c.instance); }},
    };
    return options;
}

// boost reports an unknown config-file key without its line; find it.
int line_of_key(const std::string& path, const std::string& key) {
    std::ifstream in(path);
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
        auto start = line.find_first_not_of(" \t");
        if (start == std::string::npos || line.compare(start, key.size(), key) != 0) continue;
        char after = start + key.size() < line.size() ? line[start + key.size()] : '\0';
        if (after == ' ' || after == '\t' || after == '=' || after == '\0') return number;
    }
    return 0;
}

std::string valid_keys() {
    return join(daemon_options(), ", ", [](const auto& option) { return option.name; });
}

// The configured instance, checked; its error begins with where the value
// came from: the flag, or the config file and line (a flag wins over the file).
Status check_configured_instance(const std::string& instance, bool from_flag,
                                 const std::string& config_file) {
    Status valid = check_instance_name(instance);
    if (valid.ok()) return valid;
    const int line = from_flag ? 0 : line_of_key(config_file, "instance");
    const std::string origin =
        from_flag ? "disksweepd: --instance"
                  : config_file + (line ? ":" + std::to_string(line) : "") + ": instance";
    return make_error(errc::kInvalidArgument, origin + ": " + valid.error().message);
}

}  // namespace

Json DaemonConfig::to_json() const {
    return Json{{"state_dir", state_dir},
                {"socket", socket_path},
                {"database", effective_database()},
                {"image_dir", effective_image_dir()},
                {"volume_dir", effective_volume_dir()},
                {"hypervisor_uri", effective_hypervisor_uri()},
                {"accel", accel_name(accel)},
                {"max_parallel_runs", max_parallel_runs},
                {"boot_timeout_s", boot_timeout_s},
                {"run_timeout_s", run_timeout_s},
                {"probe_timeout_s", probe_timeout_s},
                {"vcpus", vcpus},
                {"memory_mib", memory_mib},
                {"storages", effective_storages()},
                {"hosts", hosts},
                {"instance", instance.empty() ? Json(nullptr) : Json(instance)}};
}

namespace {

// Adds the settings of `config_file` (key = value lines) to `vm`.
Status store_config_file(const std::string& config_file, const po::options_description& settings,
                         po::variables_map& vm) {
    std::ifstream in(config_file);
    if (!in) {
        return make_error(errc::kInvalidArgument,
                          "cannot read config file " + config_file + ": " + std::strerror(errno));
    }
    try {
        po::store(po::parse_config_file(in, settings, /*allow_unregistered=*/false), vm);
    } catch (const po::unknown_option& e) {
        const std::string key = e.get_option_name();
        int line = line_of_key(config_file, key);
        return make_error(errc::kInvalidArgument,
                          config_file + (line ? ":" + std::to_string(line) : "") +
                              ": unknown key '" + key + "'; valid keys: " + valid_keys());
    } catch (const po::error& e) {
        return make_error(errc::kInvalidArgument, config_file + ": " + e.what());
    }
    return ok_status();
}

Status check_limits(const DaemonConfig& config) {
    if (config.max_parallel_runs < 1 || config.boot_timeout_s < 1 || config.run_timeout_s < 1 ||
        config.vcpus < 1 || config.memory_mib < 256) {
        return make_error(errc::kInvalidArgument,
                          "disksweepd: max-parallel-runs, boot-timeout, run-timeout and vcpus must "
                          "be >= 1 and memory-mib >= 256");
    }
    return ok_status();
}

}  // namespace

Result<ParsedCommandLine> parse_daemon_command_line(int argc, const char* const* argv) {
    ParsedCommandLine parsed;
    DaemonConfig& config = parsed.config;
    std::string config_file;
    bool instance_from_flag = false;

    po::options_description generic("disksweepd options");
    generic.add_options()("help,h", "show this help")("version", "print the version")(
        "config", po::value(&config_file),
        "config file (key = value lines, same keys as the flags)")(
        "print-config", "print the effective configuration as JSON and exit");
    po::options_description settings("settings (flags or config file)");
    for (const auto& option : daemon_options()) {
        settings.add_options()(option.name, option.bind(config), option.help);
    }
    po::options_description all;
    all.add(generic).add(settings);

    po::variables_map vm;
    try {
        po::store(po::parse_command_line(argc, argv, all), vm);
        instance_from_flag = vm.count("instance") > 0;
        if (vm.count("config")) {
            config_file = vm["config"].as<std::string>();
            DS_TRY(store_config_file(config_file, settings, vm));
        }
        po::notify(vm);
    } catch (const po::error& e) {
        return make_error(errc::kInvalidArgument, std::string("disksweepd: ") + e.what());
    }

    if (vm.count("help")) {
        std::ostringstream out;
        out << "usage: disksweepd [--config FILE] [options]\n\n" << all << "\n";
        parsed.exit_now = true;
        parsed.output = out.str();
        return parsed;
    }
    if (vm.count("version")) {
        parsed.exit_now = true;
        parsed.output = "disksweepd " + std::string(disksweep_version()) + "\n";
        return parsed;
    }
    DS_TRY(check_limits(config));
    if (vm.count("instance")) {
        DS_TRY(check_configured_instance(config.instance, instance_from_flag, config_file));
    }
    if (vm.count("print-config")) {
        parsed.exit_now = true;
        parsed.output = config.to_json().dump(2) + "\n";
    }
    return parsed;
}

}  // namespace ds
