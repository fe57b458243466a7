#include "daemon/backends/storage/rbd/rbd_storage.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <regex>
#include <set>

#include "common/text.h"
#include "daemon/backends/option_rules.h"

namespace ds {

namespace {

// ---- The options of an rbd storage line ------------------------------------

using RbdOptionRule = OptionRule<RbdStorageOptions, RbdOptionKey>;

Error option_error(std::string_view key, const std::string& why) {
    return make_error(errc::kInvalidArgument,
                      "rbd storage option '" + std::string(key) + "': " + why);
}

// Pool and image names as this backend accepts them: a safe subset of what
// Ceph allows, and never starting with '-' (it would read as an option).
bool is_plain_name(std::string_view name) {
    if (name.empty() || name.front() == '-' || name.front() == '.') return false;
    return std::all_of(name.begin(), name.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '-' || c == '_' || c == '.';
    });
}

// Option keys are lower-case words ("mon_host").
bool is_option_word(std::string_view text) {
    return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) {
        return std::islower(c) || c == '_';
    });
}

bool has_space(std::string_view text) {
    return std::any_of(text.begin(), text.end(), [](unsigned char c) { return std::isspace(c); });
}

Status set_monitors(RbdStorageOptions& options, std::string_view key, std::string_view value) {
    std::vector<std::string> monitors;
    std::size_t start = 0;
    while (start <= value.size()) {
        std::size_t end = std::min(value.find(';', start), value.size());
        std::string_view monitor = value.substr(start, end - start);
        if (monitor.empty() || has_space(monitor)) {
            return option_error(key,
                                "expected IP:PORT[;IP:PORT...], with no empty or spaced entry");
        }
        monitors.emplace_back(monitor);
        start = end + 1;
    }
    options.monitors = std::move(monitors);
    return ok_status();
}

Status set_user(RbdStorageOptions& options, std::string_view key, std::string_view value) {
    if (value.starts_with("client.")) {
        return option_error(key, "give the cephx id without 'client.' (e.g. id=disksweep)");
    }
    if (!is_plain_name(value)) return option_error(key, "not a cephx id (letters, digits, -_.)");
    options.user = value;
    return ok_status();
}

Status set_path(std::string& field, std::string_view key, std::string_view value) {
    if (value.empty() || value.front() != '/' || has_space(value)) {
        return option_error(key, "expected an absolute path without spaces");
    }
    field = value;
    return ok_status();
}

// Each key once, as data: what it sets and what it means.
const RbdOptionRule kOptionRules[] = {
    {{"mon_host", "monitor addresses, IP:PORT[;IP:PORT...] (default: from conf)"}, set_monitors},
    {{"id", "cephx user id without 'client.' (default: Ceph's, 'admin')"}, set_user},
    {{"keyring", "path of the keyring holding the user's key, readable only by root"},
     [](RbdStorageOptions& o, std::string_view k, std::string_view v) {
         return set_path(o.keyring, k, v);
     }},
    {{"conf", "path of a ceph.conf for clients (default: Ceph's, /etc/ceph/ceph.conf)"},
     [](RbdStorageOptions& o, std::string_view k, std::string_view v) {
         return set_path(o.ceph_conf, k, v);
     }},
};

const SecretOptionKeys kSecretKeys = {
    {"key", "secret", "cephx_key", "password"},
    "the cephx key never goes in the config: put it in a keyring file readable only by root and "
    "name it with keyring=PATH"};

Status apply_option(RbdStorageOptions& options, const std::string& key, const std::string& value) {
    const std::span<const RbdOptionRule> rules(kOptionRules);
    if (!is_option_word(key)) {
        // Not echoed: it might be a pasted key.
        return make_error(errc::kInvalidArgument,
                          "rbd storage: an option name is not a lower-case word (known: " +
                              known_option_keys(rules) + ")");
    }
    return apply_option_rule(rules, kSecretKeys, option_error, options, key, value);
}

// ---- Ceph's tools and their output ------------------------------------------

// A Ceph tool: its name and how it is told to give up on an unreachable
// cluster (so that Ceph's own "timed out" message comes back, well before
// kLastResortTimeout kills the process).
struct ToolDef {
    std::string_view program;
    std::vector<std::string_view> timeout_args;
};
const ToolDef kRbdTool{"rbd",
                       {"--client_mount_timeout", "30", "--rados_mon_op_timeout", "60",
                        "--rados_osd_op_timeout", "60"}};
const ToolDef kCephTool{"ceph", {"--connect-timeout", "30"}};
constexpr std::chrono::seconds kLastResortTimeout{300};
// How many lines of a tool's stderr an error carries (the last ones: the
// tool's verdict comes last, its causes just before).
constexpr std::size_t kMessageLines = 6;

// A cephx key is the base64 of 28 bytes that starts with "AQ" (type 1).
std::string redact_cephx_keys(const std::string& text) {
    static const std::regex key(R"(AQ[A-Za-z0-9+/]{36}==)");
    return std::regex_replace(text, key, "[cephx key redacted]");
}

// Ceph's own words from a tool's stderr: log lines lose their
// "2026-11-30T09:46:31.970+0000 7fcd2b29b380 -1 " prefix, blank and repeated
// lines go, the last kMessageLines stay, joined with "; ".
std::string ceph_message(const std::string& stderr_text) {
    static const std::regex log_prefix(R"(^\d{4}-\d\d-\d\dT[0-9:.]+[+-]\d{4} [0-9a-f]+ +-?\d+ )");
    std::vector<std::string> lines;
    std::set<std::string> seen;
    std::size_t start = 0;
    while (start < stderr_text.size()) {
        std::size_t end = std::min(stderr_text.find('\n', start), stderr_text.size());
        std::string line(trim_whitespace(std::string_view(stderr_text).substr(start, end - start)));
        start = end + 1;
        line = std::regex_replace(line, log_prefix, "", std::regex_constants::format_first_only);
        if (!line.empty() && seen.insert(line).second) lines.push_back(std::move(line));
    }
    if (lines.empty()) return "no message from Ceph";
    const std::size_t first = lines.size() > kMessageLines ? lines.size() - kMessageLines : 0;
    return redact_cephx_keys(join(std::span<const std::string>(lines).subspan(first), "; "));
}

std::string how_it_ended(const ProcessOutput& output) {
    return output.signal ? "killed by signal " + std::to_string(output.signal)
                         : "exit code " + std::to_string(output.exit_code);
}

const Json* find_key(const Json& object, std::string_view key) {
    if (!object.is_object()) return nullptr;
    auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
}

}  // namespace

std::span<const RbdOptionKey> rbd_option_keys() {
    static const std::vector<RbdOptionKey> keys =
        option_keys_of(std::span<const RbdOptionRule>(kOptionRules));
    return keys;
}

Result<RbdStorageOptions> rbd_storage_options(std::string_view pool,
                                              const std::map<std::string, std::string>& options) {
    if (!is_plain_name(pool)) {
        return make_error(errc::kInvalidArgument,
                          "rbd storage: pool '" + redact_cephx_keys(std::string(pool)) +
                              "' is not a pool name (letters, digits, -_.; e.g. rbd:disksweep)");
    }
    RbdStorageOptions parsed;
    parsed.pool = pool;
    for (const auto& [key, value] : options) DS_TRY(apply_option(parsed, key, value));
    return parsed;
}

// ---- Ceph's tools, run for one backend --------------------------------------

namespace {

// The `rbd` and `ceph` command lines of one storage (its pool, monitors and
// cephx identity), their outcomes as Results, and failures as errors
// carrying Ceph's own message.
class CephTools {
  public:
    CephTools(const RbdStorageOptions& options, ProcessRunner& runner, std::string backend)
        : options_(options), runner_(runner), backend_(std::move(backend)) {}

    // The tool's output whatever its exit code; an error only when it could
    // not run or was killed at kLastResortTimeout.
    Result<ProcessOutput> run(const ToolDef& tool, const std::vector<std::string>& args) const;
    // The JSON the tool printed; an error when it failed or printed none.
    Result<Json> run_json(const ToolDef& tool, const std::vector<std::string>& args,
                          const std::string& what) const;
    Error error(const std::string& what) const {
        return make_error(errc::kStorage, backend_ + ": " + what);
    }
    Error failure(const std::string& what, const ProcessOutput& output) const {
        return error(what + ": " + ceph_message(output.stderr_text) + " (" + how_it_ended(output) +
                     ")");
    }

  private:
    std::vector<std::string> command_line(const ToolDef& tool,
                                          const std::vector<std::string>& args) const;

    const RbdStorageOptions& options_;
    ProcessRunner& runner_;
    std::string backend_;
};

// TOOL [--conf C] [--id U] [--keyring K] [--mon_host M] TIMEOUTS ARGS...
std::vector<std::string> CephTools::command_line(const ToolDef& tool,
                                                 const std::vector<std::string>& args) const {
    std::vector<std::string> argv{std::string(tool.program)};
    auto add = [&](std::string_view flag, const std::string& value) {
        if (!value.empty()) argv.insert(argv.end(), {std::string(flag), value});
    };
    add("--conf", options_.ceph_conf);
    add("--id", options_.user);
    add("--keyring", options_.keyring);
    add("--mon_host", join(options_.monitors, ","));
    argv.insert(argv.end(), tool.timeout_args.begin(), tool.timeout_args.end());
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
}

Result<ProcessOutput> CephTools::run(const ToolDef& tool,
                                     const std::vector<std::string>& args) const {
    const std::vector<std::string> argv = command_line(tool, args);
    auto output = runner_.run(argv, kLastResortTimeout);
    if (!output.ok()) {
        return error(output.error().message + " (Ceph's tools come with package ceph-common)");
    }
    if (output->timed_out) {
        return make_error(errc::kTimeout, backend_ + ": " + describe_command(argv) +
                                              " did not finish in " +
                                              std::to_string(kLastResortTimeout.count()) + " s");
    }
    return output;
}

Result<Json> CephTools::run_json(const ToolDef& tool, const std::vector<std::string>& args,
                                 const std::string& what) const {
    DS_ASSIGN_OR_RETURN(auto output, run(tool, args));
    if (output.exit_code != 0) return failure(what, output);
    Json json = Json::parse(output.stdout_text, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) {
        return error(what + ": " + std::string(tool.program) + " printed no JSON: '" +
                     redact_cephx_keys(output.stdout_text.substr(0, 200)) + "'");
    }
    return json;
}

// rbd exits with the errno of its failure. ENOENT is also what a missing
// pool gives: that is a configuration error, never "the image is gone".
bool image_is_gone(const ProcessOutput& output) {
    return output.exit_code == ENOENT &&
           output.stderr_text.find("error opening pool") == std::string::npos;
}

Status check_image_name(const std::string& backend, const std::string& name) {
    if (is_plain_name(name)) return ok_status();
    return make_error(errc::kInvalidArgument,
                      backend + ": '" + name + "' is not an image name (letters, digits, -_.)");
}

// "127.0.0.1:0/1168712605, ..." from `rbd status`, or "unknown".
std::string watchers_of(const CephTools& ceph, const std::string& pool, const std::string& image) {
    auto status = ceph.run_json(
        kRbdTool, {"status", "--pool", pool, "--image", image, "--format", "json"}, "status");
    std::vector<std::string> addresses;
    const Json* watchers = status.ok() ? find_key(*status, "watchers") : nullptr;
    if (watchers && watchers->is_array()) {
        for (const Json& watcher : *watchers) {
            const Json* address = find_key(watcher, "address");
            if (address && address->is_string()) addresses.push_back(address->get<std::string>());
        }
    }
    return addresses.empty() ? "unknown" : join(addresses, ", ");
}

// {"status": "HEALTH_OK", "checks": {...}} from `ceph health`.
Result<Json> cluster_health(const CephTools& ceph) {
    auto health = ceph.run_json(kCephTool, {"health", "--format", "json"},
                                "cannot read the cluster's health");
    if (!health.ok()) return health.error();
    const Json* status = find_key(*health, "status");
    if (!status || !status->is_string()) return ceph.error("ceph health printed no status");
    return health;
}

// The image's entry of `rbd du` ({"name", "provisioned_size", "used_size"}),
// or null when the image is gone.
Result<Json> image_usage(const CephTools& ceph, const std::string& pool, const std::string& image) {
    DS_ASSIGN_OR_RETURN(auto output, ceph.run(kRbdTool, {"du", "--pool", pool, "--image", image,
                                                         "--format", "json"}));
    if (image_is_gone(output)) return Json(nullptr);
    if (output.exit_code != 0) {
        return ceph.failure("cannot read the usage of image " + pool + "/" + image, output);
    }
    const Json du = Json::parse(output.stdout_text, nullptr, /*allow_exceptions=*/false);
    // One entry per snapshot, and the image itself: the one without "snapshot".
    const Json* images = find_key(du, "images");
    if (images && images->is_array()) {
        for (const Json& entry : *images) {
            const Json* entry_name = find_key(entry, "name");
            if (entry_name && *entry_name == image && !find_key(entry, "snapshot")) return entry;
        }
    }
    return ceph.error("rbd du printed no usage for image " + pool + "/" + image);
}

void add_health(const Json& health, Json& state) {
    state["health"] = health["status"];
    Json checks = Json::array();
    if (const Json* found = find_key(health, "checks"); found && found->is_object()) {
        for (const auto& [check, detail] : found->items()) checks.push_back(check);
    }
    state["health_checks"] = checks;
}

void add_usage(const Json& usage, Json& state) {
    for (const auto& [from, to] : {std::pair{"used_size", "volume_used_bytes"},
                                   std::pair{"provisioned_size", "volume_provisioned_bytes"}}) {
        const Json* bytes = find_key(usage, from);
        if (bytes && bytes->is_number_unsigned()) state[to] = *bytes;
    }
}

}  // namespace

// ---- The backend ------------------------------------------------------------

RbdStorage::RbdStorage(RbdStorageOptions options, std::shared_ptr<ProcessRunner> runner)
    : options_(std::move(options)), runner_(std::move(runner)) {}

Result<Volume> RbdStorage::create_volume(const std::string& name, const StorageConfig& config) {
    DS_TRY(require_raw_format(this->name(), "an RBD image", config));
    DS_TRY(check_image_name(this->name(), name));
    if (config.disk_size_bytes == 0) {
        return make_error(errc::kInvalidArgument, this->name() + ": image size 0");
    }
    const CephTools ceph(options_, *runner_, this->name());
    DS_ASSIGN_OR_RETURN(
        auto output, ceph.run(kRbdTool, {"create", "--pool", options_.pool, "--image", name,
                                         "--size", std::to_string(config.disk_size_bytes) + "B"}));
    if (output.exit_code != 0) {
        return ceph.failure("cannot create image " + options_.pool + "/" + name, output);
    }
    return rbd_volume(name);
}

Volume RbdStorage::rbd_volume(const std::string& name) const {
    return Volume{name, RbdDisk{options_.pool, name, options_.monitors, options_.user,
                                options_.keyring, options_.ceph_conf}};
}

Status RbdStorage::run_snapshot_step(const std::vector<std::string>& args, const std::string& what,
                                     std::initializer_list<int> tolerated) const {
    const CephTools ceph(options_, *runner_, name());
    DS_ASSIGN_OR_RETURN(auto output, ceph.run(kRbdTool, args));
    if (output.exit_code == 0) return ok_status();
    for (int code : tolerated) {
        if (output.exit_code == code) return ok_status();
    }
    return ceph.failure(what, output);
}

Status RbdStorage::seal_golden(const std::string& golden) {
    DS_TRY(check_image_name(name(), golden));
    const std::vector<std::string> snapshot = {
        "--pool", options_.pool, "--image", golden, "--snap", std::string(kGoldenSnapshot)};
    const std::string at = options_.pool + "/" + golden + "@" + std::string(kGoldenSnapshot);
    auto with = [&](std::string verb, std::string subverb) {
        std::vector<std::string> args = {std::move(verb), std::move(subverb)};
        args.insert(args.end(), snapshot.begin(), snapshot.end());
        return args;
    };
    DS_TRY(run_snapshot_step(with("snap", "create"), "cannot snapshot the golden image " + at));
    return run_snapshot_step(with("snap", "protect"), "cannot protect the golden snapshot " + at);
}

Result<ClonedVolume> RbdStorage::clone_volume(const std::string& golden, const std::string& name,
                                              const StorageConfig& config) {
    DS_TRY(require_raw_format(this->name(), "an RBD image", config));
    DS_TRY(check_image_name(this->name(), golden));
    DS_TRY(check_image_name(this->name(), name));
    DS_TRY(run_snapshot_step(
        {"clone", "--pool", options_.pool, "--image", golden, "--snap",
         std::string(kGoldenSnapshot), "--dest-pool", options_.pool, "--dest", name},
        "cannot clone " + options_.pool + "/" + golden + "@" + std::string(kGoldenSnapshot) +
            " to " + name));
    return ClonedVolume{rbd_volume(name), "rbd-clone"};
}

Status RbdStorage::remove_golden(const std::string& golden) {
    DS_TRY(check_image_name(name(), golden));
    const std::string at = options_.pool + "/" + golden + "@" + std::string(kGoldenSnapshot);
    const std::vector<std::string> snapshot = {
        "--pool", options_.pool, "--image", golden, "--snap", std::string(kGoldenSnapshot)};
    std::vector<std::string> unprotect = {"snap", "unprotect"};
    unprotect.insert(unprotect.end(), snapshot.begin(), snapshot.end());
    // ENOENT: no image or no snapshot (never sealed, or half removed);
    // EINVAL: the snapshot is not protected. EBUSY: clones remain.
    DS_TRY(run_snapshot_step(unprotect,
                             "cannot unprotect the golden snapshot " + at +
                                 " (clones of it still exist while Ceph answers busy)",
                             {ENOENT, EINVAL}));
    std::vector<std::string> remove = {"snap", "rm", "--no-progress"};
    remove.insert(remove.end(), snapshot.begin(), snapshot.end());
    DS_TRY(run_snapshot_step(remove, "cannot remove the golden snapshot " + at, {ENOENT}));
    return remove_volume(golden);
}

Status RbdStorage::remove_volume(const std::string& name) {
    DS_TRY(check_image_name(this->name(), name));
    const CephTools ceph(options_, *runner_, this->name());
    auto output =
        ceph.run(kRbdTool, {"rm", "--pool", options_.pool, "--image", name, "--no-progress"});
    if (!output.ok()) return output.error();
    if (output->exit_code == 0 || image_is_gone(*output)) return ok_status();
    const std::string image = options_.pool + "/" + name;
    if (output->exit_code == EBUSY) {
        return ceph.failure("image " + image + " is still open (watchers: " +
                                watchers_of(ceph, options_.pool, name) +
                                "): a guest's QEMU still holds it; stop the guest, then remove it",
                            *output);
    }
    return ceph.failure("cannot remove image " + image, *output);
}

Result<std::vector<std::string>> RbdStorage::list_volumes(const std::string& prefix) {
    const CephTools ceph(options_, *runner_, name());
    auto listed = ceph.run_json(kRbdTool, {"ls", "--pool", options_.pool, "--format", "json"},
                                "cannot list the images of pool " + options_.pool);
    if (!listed.ok()) return listed.error();
    if (!listed->is_array()) return ceph.error("rbd ls printed no list of image names");
    std::vector<std::string> names;
    for (const Json& image : *listed) {
        if (image.is_string() && image.get<std::string>().starts_with(prefix)) {
            names.push_back(image.get<std::string>());
        }
    }
    return names;
}

Result<std::uint64_t> RbdStorage::allocated_bytes(const std::string& volume) {
    DS_TRY(check_image_name(name(), volume));
    const CephTools ceph(options_, *runner_, name());
    DS_ASSIGN_OR_RETURN(auto usage, image_usage(ceph, options_.pool, volume));
    if (usage.is_null()) {
        return make_error(errc::kNotFound, name() + ": image " + volume + " is gone");
    }
    const Json* used = find_key(usage, "used_size");
    if (!used || !used->is_number_unsigned()) {
        return ceph.error("rbd du printed no used_size for image " + options_.pool + "/" + volume);
    }
    return used->get<std::uint64_t>();
}

Json RbdStorage::state(const std::string& volume) {
    const CephTools ceph(options_, *runner_, name());
    Json state = Json::object();
    std::vector<std::string> errors;
    if (auto health = cluster_health(ceph); health.ok()) {
        add_health(*health, state);
    } else {
        errors.push_back(health.error().message);
    }
    if (auto usage = image_usage(ceph, options_.pool, volume); !usage.ok()) {
        errors.push_back(usage.error().message);
    } else if (!usage->is_null()) {
        add_usage(*usage, state);
    }
    if (!errors.empty()) state["errors"] = errors;
    return state;
}

}  // namespace ds
