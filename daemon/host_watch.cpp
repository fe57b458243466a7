#include "daemon/host_watch.h"

#include "daemon/recovery.h"

namespace ds {

HostWatch::HostWatch(std::vector<Host*> hosts, const ResourceNames& names, Store& store,
                     std::function<void(const std::string&)> log,
                     std::chrono::milliseconds interval)
    : hosts_(std::move(hosts)),
      names_(names),
      store_(store),
      log_(std::move(log)),
      interval_(interval),
      thread_([this] { loop(); }) {}

HostWatch::~HostWatch() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

void HostWatch::loop() {
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, interval_, [this] { return stop_; })) {
        lock.unlock();
        for (Host* host : hosts_) check(*host);
        lock.lock();
    }
}

void HostWatch::check(Host& host) {
    const std::string state = host.hypervisor->reachability().value("state", "");
    if (state != "connected" || !host.hypervisor->take_reconnected()) return;
    log_("host " + host.description.name + " reached again: cleaning up what runs left there");
    std::vector<StorageBackend*> storages;
    for (const auto& own : host.own_storages) storages.push_back(own.get());
    const RecoveryReport report =
        recover_host_leftovers(names_, *host.hypervisor, storages, running_vms(), log_);
    log_("host " + host.description.name + ": " + std::to_string(report.guests_destroyed) +
         " guest(s) destroyed, " + std::to_string(report.volumes_removed) + " volume(s) removed" +
         (report.problems.empty() ? ""
                                  : ", " + std::to_string(report.problems.size()) + " problem(s)"));
}

std::set<std::string> HostWatch::running_vms() {
    std::set<std::string> names;
    auto running = store_.runs_with_status(RunStatus::kRunning);
    if (!running.ok()) return names;
    for (const RunRecord& run : *running) {
        if (!run.vm_name.empty()) names.insert(run.vm_name);
    }
    return names;
}

}  // namespace ds
