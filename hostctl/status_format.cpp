#include "hostctl/status_format.h"

#include <map>
#include <vector>

#include "common/text.h"

namespace ds::hostctl {
std::string format_version(const api::VersionReply& reply, std::string_view client_version) {
    std::string text = "hostctl " + std::string(client_version) + "\n";
    text += "disksweepd " + shown(reply.version) + " (API " + shown(reply.api) + ")\n";
    if (!reply.capabilities.empty())
        text += "capabilities: " + join(reply.capabilities, ", ") + "\n";
    return text;
}

namespace {
// "file (file disks), rbd:rbd (rbd disks)": what sweeps may name as storage.
std::string format_storages(const Json& backends) {
    if (!backends.is_object() || !backends.contains("storages") ||
        !backends["storages"].is_array()) {
        return "?";
    }
    std::vector<std::string> storages;
    for (const Json& storage : backends["storages"]) {
        if (!storage.is_object()) continue;
        storages.push_back(format_setting_value(storage.value("name", Json("?"))) + " (" +
                           format_setting_value(storage.value("produces", Json("?"))) + " disks)");
    }
    return storages.empty() ? "none" : join(storages, ", ");
}
// A field of the reply as hostctl has always shown it: "?" when absent.
std::string known(const std::optional<std::string>& text) {
    return text.value_or("?");
}
std::string known(const std::optional<std::int64_t>& number) {
    return shown(number, "?");
}

// "local (libvirt, 1 at once, tcg), pve1 (proxmox, 2 at once, kvm)": where
// runs are placed.
std::string format_hosts(const std::vector<api::HostStatus>& hosts) {
    std::vector<std::string> described;
    for (const api::HostStatus& host : hosts) {
        // A Proxmox host's release and the rules that apply to it.
        const Json& versions = host.versions;
        const std::string release =
            versions.contains("proxmox")
                ? " " + text_field(versions, "proxmox", "?") +
                      (versions.contains("proxmox_rules")
                           ? " (rules " + text_field(versions, "proxmox_rules", "?") + ")"
                           : "")
                : "";
        described.push_back(known(host.name) + " (" + known(host.kind) + release + ", " +
                            known(host.parallel) + " at once, " + known(host.accel) + ")");
    }
    return described.empty() ? "none" : join(described, ", ");
}
// "              node2: backed off until T (2 failures in a row): REASON"
// per host whose last runs failed by its fault (its "placement").
std::string host_failure_lines(const std::vector<api::HostStatus>& hosts) {
    std::string text;
    for (const api::HostStatus& host : hosts) {
        const Json& connection = host.connection;
        if (text_field(connection, "state", "") == "unreachable") {
            text += "              " + known(host.name) +
                    ": unreachable: " + single_line(text_field(connection, "error", "?")) + "\n";
        }
        const Json& placement = host.placement;
        const long failures = integer_field(placement, "consecutive_failures");
        if (failures <= 0) continue;
        const Json& until = field(placement, "backed_off_until");
        text += "              " + known(host.name) + ": " +
                (until.is_string() ? "backed off until " + until.get<std::string>() + " (" : "(") +
                plural(failures, "failure", "failures") +
                " in a row): " + single_line(text_field(placement, "last_failure", "?")) + "\n";
    }
    return text;
}
}  // namespace

namespace {
// One line per suite: its images ready (with the kernel), or what builds
// them. A daemon from before suites sends none: no lines.
std::string format_guest_images(const std::vector<api::GuestImageStatus>& images) {
    std::map<std::string, std::vector<const api::GuestImageStatus*>> by_suite;
    std::vector<std::string> order;
    for (const api::GuestImageStatus& image : images) {
        const std::string suite = image.suite.value_or("?");
        if (!by_suite.contains(suite)) order.push_back(suite);
        by_suite[suite].push_back(&image);
    }
    std::string out;
    for (const std::string& suite : order) {
        std::vector<std::string> ready, missing;
        std::string kernel, problem;
        for (const api::GuestImageStatus* image : by_suite[suite]) {
            const std::string variant = image->variant.value_or("");
            const std::string name = variant.empty() ? "base" : variant;
            if (image->ready.value_or(false)) {
                ready.push_back(name);
                if (kernel.empty()) kernel = image->kernel.value_or("");
            } else {
                missing.push_back(name);
                if (problem.empty()) problem = image->problem.value_or("");
            }
        }
        out += "  " + suite + ": ";
        if (!ready.empty()) {
            out += join(ready, ", ") + (kernel.empty() ? "" : " (kernel " + kernel + ")");
        }
        if (!missing.empty()) {
            const auto build = problem.find("build it with: ");
            out += std::string(ready.empty() ? "" : "; ") + "not built: " + join(missing, ", ") +
                   (build == std::string::npos ? "" : " (" + problem.substr(build) + ")");
        }
        out += "\n";
    }
    return out.empty() ? "" : "guest suites:\n" + out;
}
}  // namespace

std::string format_status(const api::StatusReply& reply) {
    auto text = [](const Json& object, const char* key) {
        return object.is_object() && object.contains(key) ? format_setting_value(object[key])
                                                          : std::string("?");
    };
    const api::HypervisorStatus hypervisor = reply.hypervisor.value_or(api::HypervisorStatus{});
    const Json& config = reply.config;
    std::string out;
    out += "disksweepd " + known(reply.version) + " (API " + known(reply.api) + ")\n";
    // A daemon from before instances sends none: no line rather than "?".
    if (const auto& instance = reply.instance) {
        out += "instance:     " + known(instance->name) + " (" + known(instance->source) +
               "), guests and volumes named " + known(instance->resource_prefix) + "*\n";
    }
    out += "acceleration: " + known(reply.accel) + " (" + known(reply.accel_reason) + ")\n";
    out += "hypervisor:   " + known(hypervisor.backend) + " " + known(hypervisor.uri) +
           " (libvirt " + text(reply.versions, "libvirt") + ", qemu " +
           text(reply.versions, "qemu") + ")\n";
    out += "hosts:        " + format_hosts(reply.hosts) + "\n";
    out += host_failure_lines(reply.hosts);
    out += "storages:     " + format_storages(reply.backends) + "\n";
    const bool ready = reply.guest_image && reply.guest_image->ready.value_or(false);
    out += "guest image:  " +
           (ready ? text(config, "image_dir")
                  : "NOT READY: " + (reply.guest_image ? known(reply.guest_image->problem) : "?")) +
           "\n";
    out += format_guest_images(reply.guest_images);
    out += "database:     " + text(config, "database") + "\n";
    out += "parallel:     " + text(config, "max_parallel_runs") + " run(s) at once\n";
    return out;
}

std::string format_host_check(const api::HostCheckReply& reply) {
    const api::HostCheck& check = reply.check;
    const std::string name = shown(reply.host, "?");
    if (!check.ready) {
        // A host with nothing to check but its connection (libvirt).
        std::string out = name + ": " + shown(check.state, "?");
        if (check.error && !check.error->empty()) out += ": " + single_line(*check.error);
        return out + "\n";
    }
    std::string out = name + ": Proxmox VE " + shown(check.proxmox, "?") + " (rules of " +
                      shown(check.rules, "?") +
                      "): " + (*check.ready ? "ready to sweep" : "CANNOT SWEEP") + "\n";
    out += "QEMU monitor: " + shown(check.monitor, "?") + "\n";
    return out + check.report.value_or("");
}

}  // namespace ds::hostctl
