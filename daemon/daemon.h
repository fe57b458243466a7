// Wiring of disksweepd: store, hypervisor, storage, recovery of what a
// previous instance left, acceleration probe, scheduler, API server, and the
// systemd lifecycle (sd_notify READY/STOPPING when NOTIFY_SOCKET is set).
#pragma once

#include <signal.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/guest_suite.h"
#include "common/result.h"
#include "daemon/backends/hypervisor/hypervisor.h"
#include "daemon/backends/hypervisor/libvirt/domain_xml.h"
#include "daemon/backends/storage/storage.h"
#include "daemon/config.h"
#include "daemon/run/resource_names.h"
#include "daemon/store/store.h"

namespace ds {

// The guest image `image` (a suite and a variant, common/guest_suite.h) in
// config.effective_image_dir()/image_subdir(image), with its manifest when
// it has one. An Error (errc::kUnavailable) names the missing file and the
// command that builds it.
Result<GuestImage> locate_guest_image(const DaemonConfig& config, const ImageChoice& image = {});

// The names this daemon gives what it creates: those of its configured
// `instance`, else of the id its database keeps (Store::instance_id).
Result<ResourceNames> daemon_resource_names(const DaemonConfig& config, Store& store);

// KVM if /dev/kvm exists and a probe guest (named names.probe(), as is its
// volume) says hello within the probe timeout and runs with KVM; TCG
// otherwise. The probe is an ordinary run attempt whose job is the hello
// (run_hello_probe, daemon/run/run_executor.h). `reason` says why.
struct AccelDecision {
    Accel accel = Accel::kTcg;
    std::string reason;
};
AccelDecision decide_acceleration(const DaemonConfig& config, const ResourceNames& names,
                                  Hypervisor& hypervisor, StorageBackend& storage,
                                  const GuestImage& image);

// Sends a state line to systemd's NOTIFY_SOCKET, if set ("READY=1", ...).
void sd_notify_state(const std::string& state);

// How often to send WATCHDOG=1: half of WATCHDOG_USEC when systemd set it
// for this process (WATCHDOG_PID absent or ours), else nullopt.
std::optional<std::chrono::milliseconds> watchdog_ping_interval();

// Waits for one of `signals` (blocked in every thread) and returns it. With
// an interval, calls `ping` each time the interval passes meanwhile (the
// watchdog: ping sends WATCHDOG=1 only when the daemon is healthy).
int wait_for_signal(const sigset_t& signals, std::optional<std::chrono::milliseconds> interval,
                    const std::function<void()>& ping);

// What a test-only daemon executable puts into the daemon it runs (the
// libvirt backend's fault-injection seam, tests/axes/injecting_daemon.cpp);
// disksweepd's main passes none.
struct DaemonSeams {
    DomainXmlFilter domain_xml_filter{};  // given to every libvirt host
};

// Runs the daemon until SIGTERM/SIGINT. Returns the process exit code.
int run_daemon(const DaemonConfig& config, const DaemonSeams& seams = {});

// disksweepd's main: the command line (parse_daemon_command_line; --help and
// --version print and return), then run_daemon. Returns the exit code (2 for
// a bad command line).
int daemon_main(int argc, char** argv, const DaemonSeams& seams = {});

}  // namespace ds
