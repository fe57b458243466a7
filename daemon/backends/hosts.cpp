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
    host.description.remote = storages->remote;
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

void HostLease::report(HostVerdict verdict, const std::string& reason) {
    if (pool_ != nullptr) pool_->record(host_, verdict, reason);
}

void HostPool::log_backoffs(std::function<void(const std::string&)> log) {
    log_ = std::move(log);
}

void HostPool::add(std::unique_ptr<Host> host) {
    std::lock_guard lock(mutex_);
    hosts_.push_back(std::move(host));
    states_.emplace_back();
}

bool HostPool::backed_off(std::size_t index, Clock::time_point now) const {
    const auto& until = states_[index].backed_off_until;
    return until && now < *until;
}

bool HostPool::has_free_slot(std::size_t index) const {
    return states_[index].busy < hosts_[index]->parallel;
}

std::size_t HostPool::index_of(const Host* host) const {
    for (std::size_t i = 0; i < hosts_.size(); ++i) {
        if (hosts_[i].get() == host) return i;
    }
    return hosts_.size();
}

Result<std::optional<std::size_t>> HostPool::choose_locked(const PlacementRequest& request) {
    const auto now = clock_.now();
    std::vector<std::size_t> usable;  // eligible and not backed off
    bool any_eligible = false;
    for (std::size_t i = 0; i < hosts_.size(); ++i) {
        if (!hosts_[i]->description.takes(request.config, request.pinned)) continue;
        if (request.needs_local_files && hosts_[i]->description.remote) continue;
        any_eligible = true;
        if (!backed_off(i, now)) usable.push_back(i);
    }
    if (!any_eligible) {
        return make_error(
            errc::kNotConfigured,
            "no " + request.config.hypervisor + " host reaches storage '" +
                storage_name(request.config) + "'" +
                (request.pinned.empty() ? "" : " among " + join(request.pinned, ", ")) +
                (request.needs_local_files
                     ? " on this machine (a durability run's write log and crash images are "
                       "files here; remote hosts cannot take it)"
                     : ""));
    }
    const RoundKey key{request.sweep_id, request.repetition, storage_name(request.config),
                       request.config.hypervisor};
    const bool in_round = request.sweep_id != 0;
    if (auto kept = rounds_.find(key); in_round && kept != rounds_.end()) {
        if (std::find(usable.begin(), usable.end(), kept->second) != usable.end()) {
            if (!has_free_slot(kept->second)) return std::optional<std::size_t>();
            return std::optional<std::size_t>(kept->second);
        }
        rounds_.erase(kept);  // its host is backed off: the round goes elsewhere
    }
    std::optional<std::size_t> best;
    for (std::size_t i : usable) {
        if (!has_free_slot(i)) continue;
        if (!best || states_[i].busy < states_[*best].busy) best = i;
    }
    if (best && in_round) rounds_[key] = *best;
    return best;
}

Result<HostLease> HostPool::acquire(const PlacementRequest& request,
                                    const std::atomic<bool>& cancelled) {
    std::unique_lock lock(mutex_);
    if (auto held = held_.find(request.run_id); request.run_id != 0 && held != held_.end()) {
        Host* host = hosts_[held->second].get();
        held_.erase(held);
        return HostLease(this, host);
    }
    for (;;) {
        DS_ASSIGN_OR_RETURN(auto chosen, choose_locked(request));
        if (chosen) {
            ++states_[*chosen].busy;
            return HostLease(this, hosts_[*chosen].get());
        }
        if (cancelled) return make_error(errc::kCancelled, "cancelled while waiting for a host");
        // Also how a backoff's end is noticed: its time is the pool's clock.
        slot_freed_.wait_for(lock, std::chrono::milliseconds(200));
    }
}

Result<HostLease> HostPool::acquire(const StorageConfig& config,
                                    const std::vector<std::string>& pinned,
                                    const std::atomic<bool>& cancelled) {
    return acquire(PlacementRequest{config, pinned}, cancelled);
}

bool HostPool::hold(const PlacementRequest& request) {
    std::lock_guard lock(mutex_);
    if (held_.count(request.run_id) != 0) return true;
    auto chosen = choose_locked(request);
    if (!chosen.ok()) return true;
    if (!chosen.value()) return false;
    ++states_[**chosen].busy;
    held_[request.run_id] = **chosen;
    return true;
}

void HostPool::release_hold(std::int64_t run_id) {
    {
        std::lock_guard lock(mutex_);
        auto held = held_.find(run_id);
        if (held == held_.end()) return;
        --states_[held->second].busy;
        held_.erase(held);
    }
    slot_freed_.notify_all();
}

void HostPool::forget_sweep(std::int64_t sweep_id) {
    std::lock_guard lock(mutex_);
    std::erase_if(rounds_,
                  [sweep_id](const auto& round) { return std::get<0>(round.first) == sweep_id; });
}

void HostPool::release(Host* host) {
    {
        std::lock_guard lock(mutex_);
        if (std::size_t i = index_of(host); i < hosts_.size()) --states_[i].busy;
    }
    slot_freed_.notify_all();
}

void HostPool::record(Host* host, HostVerdict verdict, const std::string& reason) {
    std::string announcement;
    {
        std::lock_guard lock(mutex_);
        const std::size_t i = index_of(host);
        if (i == hosts_.size() || verdict == HostVerdict::kUnjudged) return;
        HostState& state = states_[i];
        if (verdict == HostVerdict::kWorked) {
            state.consecutive_faults = 0;
            state.backed_off_until.reset();
            return;
        }
        ++state.consecutive_faults;
        // Its first line: a boot failure's reason goes on with the console's tail.
        state.last_failure = reason.substr(0, std::min(reason.find('\n'), std::size_t{500}));
        if (state.consecutive_faults < kBackoffAfterFaults) return;
        const int doublings = std::min(state.consecutive_faults - kBackoffAfterFaults, 16);
        const auto backoff =
            std::min<std::chrono::seconds>(kFirstBackoff * (1 << doublings), kMaxBackoff);
        state.backed_off_until = clock_.now() + backoff;
        announcement = "host " + host->description.name + " backed off for " +
                       std::to_string(backoff.count()) + " s after " +
                       std::to_string(state.consecutive_faults) +
                       " failures in a row by its own fault: " + state.last_failure;
    }
    if (log_) log_(announcement);
}

Json HostPool::placement_status(const Host& host) const {
    std::lock_guard lock(mutex_);
    const std::size_t i = index_of(&host);
    if (i == hosts_.size()) return Json();
    const HostState& state = states_[i];
    const auto now = clock_.now();
    Json until;
    if (backed_off(i, now)) {
        until = utc_iso8601(clock_.wall_now() +
                            std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                *state.backed_off_until - now));
    }
    return {{"busy", state.busy},
            {"parallel", host.parallel},
            {"consecutive_failures", state.consecutive_faults},
            {"backed_off_until", until},
            {"last_failure", state.last_failure.empty() ? Json() : Json(state.last_failure)}};
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
