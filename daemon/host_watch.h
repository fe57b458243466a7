// Keeps the hosts whose connection can be lost (remote libvirt hosts) in
// view while the daemon runs (issue 20). Every interval it asks each host's
// hypervisor whether it answers (Hypervisor::reachability, which opens a
// lost connection again: `hostctl status` shows the answer), and once a host
// is reached again after it was cut off (Hypervisor::take_reconnected), or
// for the first time after the daemon started without it, it cleans up what
// the daemon left there meanwhile: the guests and volumes of runs that no
// longer run (recover_host_leftovers). Runs that failed because the host
// went away could not tear down there; this is where their leftovers go.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "daemon/backends/hosts.h"
#include "daemon/run/resource_names.h"
#include "daemon/store/store.h"

namespace ds {

class HostWatch {
  public:
    static constexpr std::chrono::seconds kDefaultInterval{2};

    // Starts the thread. `hosts` and everything else outlive the watch.
    HostWatch(std::vector<Host*> hosts, const ResourceNames& names, Store& store,
              std::function<void(const std::string&)> log,
              std::chrono::milliseconds interval = kDefaultInterval);
    // Stops and joins the thread.
    ~HostWatch();
    HostWatch(const HostWatch&) = delete;
    HostWatch& operator=(const HostWatch&) = delete;

  private:
    void loop();
    void check(Host& host);
    // VM names of the runs running now (their resources are not leftovers).
    std::set<std::string> running_vms();

    std::vector<Host*> hosts_;
    const ResourceNames& names_;
    Store& store_;
    std::function<void(const std::string&)> log_;
    std::chrono::milliseconds interval_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stop_ = false;  // guarded by mutex_
    std::thread thread_;
};

}  // namespace ds
