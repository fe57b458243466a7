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
// "local (libvirt, 1 at once, tcg), pve1 (proxmox, 2 at once, kvm)": where
// runs are placed.
std::string format_hosts(const Json& hosts) {
    if (!hosts.is_array()) return "?";
    std::vector<std::string> described;
    for (const Json& host : hosts) {
        if (!host.is_object()) continue;
        // A Proxmox host's release and the rules that apply to it.
        const Json& versions = field(host, "versions");
        const std::string release =
            versions.contains("proxmox")
                ? " " + text_field(versions, "proxmox", "?") +
                      (versions.contains("proxmox_rules")
                           ? " (rules " + text_field(versions, "proxmox_rules", "?") + ")"
                           : "")
                : "";
        described.push_back(format_setting_value(host.value("name", Json("?"))) + " (" +
                            format_setting_value(host.value("kind", Json("?"))) + release + ", " +
                            format_setting_value(host.value("parallel", Json("?"))) + " at once, " +
                            format_setting_value(host.value("accel", Json("?"))) + ")");
    }
    return described.empty() ? "none" : join(described, ", ");
}
// "              node2: backed off until T (2 failures in a row): REASON"
// per host whose last runs failed by its fault (its "placement").
std::string host_failure_lines(const Json& hosts) {
    if (!hosts.is_array()) return "";
    std::string text;
    for (const Json& host : hosts) {
        const Json& connection = field(host, "connection");
        if (text_field(connection, "state", "") == "unreachable") {
            text += "              " + format_setting_value(host.value("name", Json("?"))) +
                    ": unreachable: " + single_line(text_field(connection, "error", "?")) + "\n";
        }
        const Json& placement = field(host, "placement");
        const long failures = integer_field(placement, "consecutive_failures");
        if (failures <= 0) continue;
        const Json& until = field(placement, "backed_off_until");
        text += "              " + format_setting_value(host.value("name", Json("?"))) + ": " +
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
std::string format_guest_images(const Json& images) {
    if (!images.is_array()) return "";
    std::map<std::string, std::vector<const Json*>> by_suite;
    std::vector<std::string> order;
    for (const Json& image : images) {
        if (!image.is_object()) continue;
        const std::string suite = image.value("suite", std::string("?"));
        if (!by_suite.contains(suite)) order.push_back(suite);
        by_suite[suite].push_back(&image);
    }
    std::string out;
    for (const std::string& suite : order) {
        std::vector<std::string> ready, missing;
        std::string kernel, problem;
        for (const Json* image : by_suite[suite]) {
            const std::string variant = image->value("variant", std::string());
            const std::string name = variant.empty() ? "base" : variant;
            if (image->value("ready", false)) {
                ready.push_back(name);
                if (kernel.empty()) kernel = image->value("kernel", std::string());
            } else {
                missing.push_back(name);
                if (problem.empty()) problem = image->value("problem", std::string());
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

std::string format_status(const Json& reply) {
    auto text = [](const Json& object, const char* key) {
        return object.is_object() && object.contains(key) ? format_setting_value(object[key])
                                                          : std::string("?");
    };
    const Json& hypervisor = reply.value("hypervisor", Json::object());
    const Json& versions = reply.value("versions", Json::object());
    const Json& image = reply.value("guest_image", Json::object());
    const Json& config = reply.value("config", Json::object());
    std::string out;
    out += "disksweepd " + text(reply, "version") + " (API " + text(reply, "api") + ")\n";
    // A daemon from before instances sends none: no line rather than "?".
    if (const Json& instance = reply.value("instance", Json()); instance.is_object()) {
        out += "instance:     " + text(instance, "name") + " (" + text(instance, "source") +
               "), guests and volumes named " + text(instance, "resource_prefix") + "*\n";
    }
    out += "acceleration: " + text(reply, "accel") + " (" + text(reply, "accel_reason") + ")\n";
    out += "hypervisor:   " + text(hypervisor, "backend") + " " + text(hypervisor, "uri") +
           " (libvirt " + text(versions, "libvirt") + ", qemu " + text(versions, "qemu") + ")\n";
    out += "hosts:        " + format_hosts(reply.value("hosts", Json::array())) + "\n";
    out += host_failure_lines(reply.value("hosts", Json::array()));
    out += "storages:     " + format_storages(reply.value("backends", Json::object())) + "\n";
    bool ready = image.is_object() && image.value("ready", false);
    out += "guest image:  " +
           (ready ? text(config, "image_dir") : "NOT READY: " + text(image, "problem")) + "\n";
    out += format_guest_images(reply.value("guest_images", Json()));
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
