#include "daemon/backends/hosts.h"

#include <algorithm>
#include <charconv>
#include <chrono>

#include "common/text.h"
#include "daemon/backends/hypervisor/libvirt/libvirt_hypervisor.h"

namespace ds {

namespace {

Result<int> parse_parallel(const BackendLine& line) {
    auto found = line.options.find("parallel");
    if (found == line.options.end()) return 1;
    int value = 0;
    const std::string& text = found->second;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || value < 1 || value > 64) {
        return make_error(errc::kInvalidArgument,
                          "host '" + line.pool + "': parallel must be a whole number from 1 to 64");
    }
    return value;
}

std::vector<std::string> parse_storages(const BackendLine& line) {
    auto found = line.options.find("storages");
    if (found == line.options.end()) return {};
    return split_list(found->second, '|');
}

// The kind's storages of the host's own and the kinds it never reaches
// (HypervisorKindDef::host_storages); a `storages=` naming one of those is
// refused with the reason.
Status add_host_storages(const BackendLine& line, const HostContext& context, Host& host) {
    const HypervisorKindDef* kind = find_hypervisor_kind(line.kind);
    if (kind == nullptr || !kind->host_storages) return ok_status();
    auto storages = kind->host_storages(line, *host.hypervisor, context);
    if (!storages.ok()) {
        return make_error(storages.error().code,
                          "host '" + line.pool + "': " + storages.error().message);
    }
    host.description.unreached_kinds = storages->unreached_kinds;
    for (const std::string& storage : host.description.storages) {
        if (!host.description.reaches(storage)) {
            return make_error(errc::kInvalidArgument,
                              "host '" + line.pool + "': storage '" + storage +
                                  "' is out of its reach: " + storages->unreached_reason);
        }
    }
    host.own_storages = std::move(storages->own);
    return ok_status();
}

Result<std::unique_ptr<Host>> make_host(const BackendLine& line, const std::string& group,
                                        const HostContext& context) {
    DS_ASSIGN_OR_RETURN(auto parallel, parse_parallel(line));
    DS_ASSIGN_OR_RETURN(auto hypervisor, make_host_hypervisor(line, context));
    auto host = std::make_unique<Host>();
    const auto uri = line.options.find("uri");
    host->description = {line.pool, line.kind, uri != line.options.end() ? uri->second : line.kind,
                         parse_storages(line), group};
    host->hypervisor = std::move(hypervisor);
    host->parallel = parallel;
    DS_TRY(add_host_storages(line, context, *host));
    return host;
}

}  // namespace

Result<std::vector<std::unique_ptr<Host>>> make_configured_hosts(std::string_view line_text,
                                                                 const HostContext& context) {
    DS_ASSIGN_OR_RETURN(auto line, parse_host_line(line_text));
    const HypervisorKindDef* kind = find_hypervisor_kind(line.kind);
    std::vector<BackendLine> members{line};
    std::string group;
    if (kind != nullptr && kind->expand) {
        auto expanded = kind->expand(line);
        if (!expanded.ok()) {
            return make_error(expanded.error().code,
                              "host '" + line.pool + "': " + expanded.error().message);
        }
        if (expanded->size() != 1 || (*expanded)[0].pool != line.pool) group = line.pool;
        members = std::move(expanded).value();
    }
    std::vector<std::unique_ptr<Host>> hosts;
    for (const BackendLine& member : members) {
        DS_ASSIGN_OR_RETURN(auto host, make_host(member, group, context));
        hosts.push_back(std::move(host));
    }
    return hosts;
}

Result<std::unique_ptr<Host>> make_local_host(const std::string& hypervisor_uri, int parallel,
                                              const HostContext& context) {
    // The daemon's own host is this machine: its files (guest image, file
    // volumes, durability logs) are read here. Another machine is a host line.
    if (is_remote_libvirt_uri(hypervisor_uri)) {
        return make_error(errc::kInvalidArgument,
                          "hypervisor-uri " + hypervisor_uri +
                              " names another machine; the daemon's own host is this one. Add "
                              "that machine as a host line instead: host = libvirt:NAME,uri=" +
                              hypervisor_uri + ",pool=POOL (a dir storage pool there)");
    }
    const BackendLine line{"libvirt", std::string(kLocalHostName), {{"uri", hypervisor_uri}}};
    DS_ASSIGN_OR_RETURN(auto host, make_host(line, "", context));
    host->parallel = parallel;
    return host;
}

StorageBackend* Host::own_storage(const std::string& name) const {
    for (const auto& storage : own_storages) {
        if (storage->name() == name) return storage.get();
    }
    return nullptr;
}

HostLease::~HostLease() {
    if (pool_ != nullptr) pool_->release(host_);
}

void HostPool::add(std::unique_ptr<Host> host) {
    std::lock_guard lock(mutex_);
    hosts_.push_back(std::move(host));
    busy_.push_back(0);
}

bool HostPool::eligible(const Host& host, const StorageConfig& config,
                        const std::vector<std::string>& pinned) const {
    const HostDescription& description = host.description;
    if (description.kind != config.hypervisor) return false;
    if (!description.reaches(storage_name(config))) return false;
    return pinned.empty() ||
           std::any_of(pinned.begin(), pinned.end(), [&description](const std::string& pin) {
               return description.selected_by(pin);
           });
}

Result<HostLease> HostPool::acquire(const StorageConfig& config,
                                    const std::vector<std::string>& pinned,
                                    const std::atomic<bool>& cancelled) {
    std::unique_lock lock(mutex_);
    for (;;) {
        std::size_t best = hosts_.size();
        bool any_eligible = false;
        for (std::size_t i = 0; i < hosts_.size(); ++i) {
            if (!eligible(*hosts_[i], config, pinned)) continue;
            any_eligible = true;
            if (busy_[i] >= hosts_[i]->parallel) continue;
            if (best == hosts_.size() || busy_[i] < busy_[best]) best = i;
        }
        if (!any_eligible) {
            return make_error(errc::kNotConfigured,
                              "no " + config.hypervisor + " host reaches storage '" +
                                  storage_name(config) + "'" +
                                  (pinned.empty() ? "" : " among " + join(pinned, ", ")));
        }
        if (best < hosts_.size()) {
            ++busy_[best];
            return HostLease(this, hosts_[best].get());
        }
        if (cancelled) return make_error(errc::kCancelled, "cancelled while waiting for a host");
        slot_freed_.wait_for(lock, std::chrono::milliseconds(200));
    }
}

void HostPool::release(Host* host) {
    {
        std::lock_guard lock(mutex_);
        for (std::size_t i = 0; i < hosts_.size(); ++i) {
            if (hosts_[i].get() == host) --busy_[i];
        }
    }
    slot_freed_.notify_all();
}

std::vector<Host*> HostPool::hosts() const {
    std::lock_guard lock(mutex_);
    std::vector<Host*> out;
    for (const auto& host : hosts_) out.push_back(host.get());
    return out;
}

int HostPool::total_parallel() const {
    std::lock_guard lock(mutex_);
    int total = 0;
    for (const auto& host : hosts_) total += host->parallel;
    return total;
}

}  // namespace ds
