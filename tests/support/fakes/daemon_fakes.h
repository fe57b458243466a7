// Test doubles for the daemon's seams (hypervisor, storage) plus helpers for
// unit tests of its orchestration: a real Store in a temporary directory, a
// real EventBus, and a scripted fake guest agent that plays the guest side of
// docs/agent-protocol.md over the same kind of unix socket QEMU would bind.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/protocol.h"
#include "common/settings.h"
#include "daemon/backends/hypervisor/hypervisor.h"
#include "daemon/backends/hypervisor/local_guest_files.h"
#include "daemon/backends/storage/storage.h"
#include "daemon/config.h"
#include "daemon/run/events.h"
#include "daemon/run/run_executor.h"
#include "daemon/store/store.h"
#include "support/temp_dir.h"

namespace ds::testing {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// A fresh directory under /tmp (short path: agent sockets live inside it),
using ds::test::TempDir;

std::string read_text(const fs::path& path);
void write_text(const fs::path& path, const std::string& text);

// Real fio 3.33 output recorded on the development host (tests/data/fio).
fs::path fio_data_path(const std::string& name);
Json recorded_fio(const std::string& name = "randrw_4k_numjobs1.json");

// SIGPIPE must not kill the test binary when one side writes to a closed
// channel (disksweepd ignores it too, daemon.cpp run_daemon).
void ignore_sigpipe();

// ---------------------------------------------------------------------------
// The scripted fake guest agent.

// The guest's end of one agent channel, handed to a script. Every wait is cut
// short when the hypervisor destroys the VM.
class GuestChannel {
  public:
    GuestChannel(int fd, const VmRequest& request, const std::atomic<bool>& stop,
                 std::function<void(const Json&)> record, std::function<void()> power_off);
    ~GuestChannel();

    const VmRequest& request() const { return request_; }

    // Sends one encoded protocol message; false when the host end is gone.
    bool send(std::string_view type, const Json& payload);
    // Sends raw bytes (garbage, oversized lines, other versions).
    bool send_raw(std::string_view bytes);
    // Next message from the host, or nothing on timeout, EOF or destroy.
    std::optional<Json> receive(std::chrono::milliseconds timeout);
    // Records whatever complete messages are already buffered, without
    // waiting (after the VM was destroyed).
    void drain();
    // Closes the channel (the host reads EOF).
    void close();
    // The guest powers off: the hypervisor reports it not running, then the
    // channel closes.
    void power_off();
    // Sleeps, returning early (false) when the VM is destroyed.
    bool sleep(std::chrono::milliseconds duration);
    bool stopped() const { return stop_.load(); }
    bool closed() const { return fd_ < 0; }

  private:
    int fd_;
    const VmRequest& request_;
    const std::atomic<bool>& stop_;
    std::function<void(const Json&)> record_;
    std::function<void()> power_off_;
    std::string buffer_;
    bool eof_ = false;
};

using GuestScript = std::function<void(GuestChannel&)>;

// What the agent would read back for `request` when every setting is in
// force: fs_type, mount_options (as /proc/mounts prints them), rotational 0
// exactly when ssd was requested, discard_max_bytes > 0 when discard was.
// Also: the block settings, btrfs profiles and nocow the configuration asks
// for, and (from `job`, when given) the server variables its workload sets,
// as SHOW VARIABLES would print them.
Json matching_readback(const VmRequest& request, const Json& job = Json());

// The hypervisor's view of `config` when everything is in force (the keys
// verify_settings checks).
Json matching_applied_settings(const StorageConfig& config);

// Knobs of the well-behaved guest script.
struct GuestBehaviour {
    std::string fio_file = "randrw_4k_numjobs1.json";
    Json fio;                   // when set, sent instead of the recorded file
    Json output;                // when set, result.output (instead of any fio output)
    std::string kind = "fio";   // the workload kind `output` is of (for honest metrics)
    Json readback_patch;        // JSON merge patch applied to matching_readback()
    Json result_patch;          // JSON merge patch applied to the whole result message
    Json hello_patch;           // JSON merge patch applied to hello_payload()
    Json metrics;               // the guest's own (untrusted) metrics
    int progress_messages = 2;  // bench progress messages before the result
    // Called (on the guest thread) after the job arrived and before the
    // result; returning false ends the script there (the guest goes silent).
    std::function<bool(GuestChannel&)> before_result;
    // Announce "trim" in hello; a job with "trim" then gets trim_ready, the
    // host's trim is awaited, and the readback reports `removed_bytes`.
    bool trims = false;
    std::uint64_t removed_bytes = 32u << 20;
};

// hello -> job -> progress (format, bench...) -> result.
GuestScript well_behaved_guest(GuestBehaviour behaviour = {});
// The standard hello message (with the stream agent's "trim" and "mark"
// capabilities when `trims`).
Json hello_payload(bool trims = false);

// ---------------------------------------------------------------------------
// FakeHypervisor: records every call; start_vm binds the guest's agent socket
// where LocalGuestFiles puts it (as QEMU does for the libvirt backend) and runs the guest script on
// a thread against the first connection; destroy_vm stops and joins that thread.
class FakeHypervisor : public Hypervisor {
  public:
    FakeHypervisor();
    ~FakeHypervisor() override;

    // --- configuration (before the run) ---
    // The script every started guest plays. No script: QEMU never creates
    // the agent socket.
    void set_guest_script(GuestScript script);
    void set_no_agent_socket();
    void fail_start(std::string message);
    // JSON merge patch applied to what applied_settings() reports.
    void set_applied_patch(Json patch);
    void fail_applied_settings(std::string message);
    // applied_settings() throws std::runtime_error(what) (after the VM
    // started): a seam with a bug, for the executor's last-resort boundary.
    void throw_from_applied_settings(std::string what);
    void set_console_text(std::string text);
    // Where agent sockets and console logs go (LocalGuestFiles); set before
    // the first start_vm.
    void set_guest_files_directory(std::string directory);
    // start_vm gives VmRequest::record_handle {"fake_vm": NAME} before it
    // creates the guest (as Proxmox does before its clone).
    void record_handles();
    // What running_guest() reports, with the guest's own QEMU version
    // "7.2.0-vm" (default: as requested, no versions of its own).
    void set_running_accel(Accel accel);
    // disk_counters() and emulator_cpu_times() answer these readings in
    // turn, one per call; once they are used up, errc::kUnsupported (as a
    // backend without them, the default).
    void set_meter_readings(std::vector<Json> disk_counters, std::vector<Json> emulator_cpu);

    // --- recorded ---
    std::vector<std::string> started() const;
    std::vector<std::string> destroyed() const;
    int destroy_count(const std::string& name) const;
    // destroy_recorded_vm's calls: the handles, in order.
    std::vector<Json> destroyed_by_handle() const;
    std::vector<std::string> live_vms() const;
    std::optional<VmRequest> request_for(const std::string& name) const;
    // Messages the guest of `name` received from the host, in order (kept
    // after the VM is destroyed).
    std::vector<Json> guest_received(const std::string& name) const;
    // Did the guest of `name` get a connection from the host at all?
    bool guest_connected(const std::string& name) const;

    // --- Hypervisor ---
    std::string name() const override { return "fake"; }
    Status start_vm(const VmRequest& request) override;
    Result<Json> applied_settings(const std::string& vm_name) override;
    Result<bool> is_running(const std::string& vm_name) override;
    Result<std::unique_ptr<AgentChannel>> open_agent_channel(
        const std::string& vm_name, Deadline deadline, const std::atomic<bool>* cancelled) override;
    std::string console_tail(const std::string& vm_name, std::size_t max_bytes) override;
    std::string console_location(const std::string& vm_name) override;
    void discard_console(const std::string& vm_name) override;
    Status destroy_vm(const std::string& vm_name) override;
    Status destroy_recorded_vm(const std::string& vm_name, const Json& handle) override;
    Result<RunningGuest> running_guest(const std::string& vm_name, Accel requested) override;
    Result<Json> disk_counters(const std::string& vm_name) override;
    Result<Json> emulator_cpu_times(const std::string& vm_name) override;
    Result<std::vector<std::string>> list_vms(const std::string& prefix) override;
    Json versions() override { return Json{{"qemu", "7.2.0-fake"}, {"libvirt", "9.0.0-fake"}}; }

  private:
    struct GuestLog {
        std::mutex mutex;
        std::vector<Json> received;
        std::atomic<bool> connected{false};
    };
    struct Vm {
        VmRequest request;
        std::shared_ptr<std::atomic<bool>> stop = std::make_shared<std::atomic<bool>>(false);
        std::shared_ptr<std::atomic<bool>> powered_off = std::make_shared<std::atomic<bool>>(false);
        int listen_fd = -1;
        std::thread guest;
    };
    static void guest_main(int listen_fd, VmRequest request, GuestScript script,
                           std::shared_ptr<std::atomic<bool>> stop,
                           std::shared_ptr<std::atomic<bool>> powered_off,
                           std::shared_ptr<GuestLog> log);
    static void stop_vm(Vm& vm);

    mutable std::mutex mutex_;
    GuestScript script_;
    bool no_socket_ = false;
    bool record_handles_ = false;
    std::optional<Accel> running_accel_;
    std::vector<Json> disk_readings_;  // guarded; answered front first
    std::vector<Json> cpu_readings_;   // guarded; answered front first
    std::vector<Json> destroyed_by_handle_;
    std::optional<std::string> start_failure_;
    std::optional<std::string> applied_failure_;
    std::optional<std::string> applied_throw_;
    Json applied_patch_;
    std::string console_text_ = "[    0.000000] Linux version 6.1.0-fake (fake guest)\n";
    LocalGuestFiles files_{"/tmp/disksweep-fake-guests"};
    std::map<std::string, std::unique_ptr<Vm>> vms_;
    std::map<std::string, std::shared_ptr<GuestLog>> logs_;
    std::map<std::string, VmRequest> requests_;
    std::vector<std::string> started_;
    std::vector<std::string> destroyed_;
};

// ---------------------------------------------------------------------------
// FakeStorage: in-memory volumes; records create/remove.
class FakeStorage : public StorageBackend {
  public:
    void fail_create(std::string message);
    // What allocated_bytes answers, one value per call in order (the last
    // one repeated); none: errc::kUnsupported, as the default backend.
    void set_allocations(std::vector<std::uint64_t> bytes);
    Result<std::uint64_t> allocated_bytes(const std::string& volume) override;

    std::vector<std::string> created() const;
    std::vector<std::string> removed() const;
    int remove_count(const std::string& name) const;
    std::vector<std::string> live_volumes() const;
    // Golden volumes: what was sealed, each clone as "GOLDEN>NAME", and
    // what remove_golden removed.
    std::vector<std::string> sealed() const;
    std::vector<std::string> cloned() const;
    std::vector<std::string> removed_golden() const;

    std::string name() const override { return "fake"; }
    DiskSourceKind produces() const override { return DiskSourceKind::kFile; }
    Result<Volume> create_volume(const std::string& name, const StorageConfig& config) override;
    Status remove_volume(const std::string& name) override;
    Result<std::vector<std::string>> list_volumes(const std::string& prefix) override;
    Status seal_golden(const std::string& golden) override;
    // A live volume `name` (method "fake-clone") when `golden` is live and sealed.
    Result<ClonedVolume> clone_volume(const std::string& golden, const std::string& name,
                                      const StorageConfig& config) override;
    // As RBD: refused (kConflict) while a clone of it is live.
    Status remove_golden(const std::string& golden) override;

  private:
    mutable std::mutex mutex_;
    std::vector<std::string> sealed_;
    std::vector<std::string> cloned_;
    std::vector<std::string> removed_golden_;
    std::optional<std::string> create_failure_;
    std::set<std::string> live_;
    std::vector<std::string> created_;
    std::vector<std::string> removed_;
    std::vector<std::uint64_t> allocations_;
    std::size_t allocation_calls_ = 0;
};

// ---------------------------------------------------------------------------
// Store and event helpers.

// ssd + discard + scsi-single + iothread + cache=unsafe, ext4 with mount
// options: the Ceph reference study's disk.
StorageConfig reference_config();
Workload fio_workload();
// A mariadb-atis workload (loop_count 10), with `server` variables if given.
Workload atis_workload(Json server = Json());
// sql-bench test-ATIS output as the runner captures it, ending in
// "Total time: N wallclock secs" with N = round(total_s).
std::string sqlbench_atis_stdout(double total_s);
RunRecord planned_run(const StorageConfig& config, const Workload& workload, int sequence,
                      int repetition);

std::unique_ptr<Store> open_store(const std::string& path);
// Creates a sweep of `count` runs of reference_config() (sequences 0..count-1)
// and returns its id.
std::int64_t create_sweep(Store& store, int count, const std::string& name = "sweep");

// Collects the events of one sweep published after construction.
class EventLog {
  public:
    EventLog(EventBus& bus, std::int64_t sweep_id);
    // Everything new since the last call (does not wait).
    std::vector<Json> take();
    // Everything so far (accumulated across calls to all()).
    const std::vector<Json>& all();
    // Waits up to `timeout` until an event of `type` has been seen.
    bool wait_for(const std::string& type, std::chrono::milliseconds timeout);
    std::vector<std::string> types();

  private:
    EventBus& bus_;
    std::int64_t sweep_id_;
    std::uint64_t cursor_;
    std::vector<Json> seen_;
};

// The names of `instance` (a valid instance name: the test fails otherwise).
ResourceNames names_of(const std::string& instance);

// Everything a RunExecutor needs, with fakes behind the seams.
struct ExecutorFixture {
    // The instance whose names the fixture's runs (and recovery) use.
    static constexpr const char* kInstance = "fixture1";

    ExecutorFixture();
    TempDir dir;
    DaemonConfig config;
    ResourceNames names = names_of(kInstance);
    std::unique_ptr<Store> store;
    EventBus events;
    FakeHypervisor hypervisor;
    FakeStorage storage;

    // Handed to RunEnvironment::image_for (unset: the base image) and
    // RunEnvironment::guest_suite (unset: the default suite).
    std::function<Result<GuestImage>(const ImageChoice& image)> image_for;
    std::function<std::string(std::int64_t sweep_id)> guest_suite;
    RunObserver* observer = nullptr;          // handed to RunEnvironment::observer
    ProcessRunner* host_processes = nullptr;  // handed to RunEnvironment::host_processes
    const Clock* clock = nullptr;             // handed to RunEnvironment::clock (unset: real)
    GoldenVolumes* goldens = nullptr;         // handed to RunEnvironment::goldens
    // Handed to RunEnvironment::unchecked_levels (unset: the default).
    std::function<UncheckedLevelPolicy(std::int64_t sweep_id)> unchecked_levels;

    RunEnvironment environment();
    // A new one-run sweep (of fio_workload() unless given); returns the
    // pending run as stored.
    RunRecord pending_run(const StorageConfig& config = reference_config());
    RunRecord pending_run(const StorageConfig& config, const Workload& workload);
    RunRecord execute(const RunRecord& run, int boot_timeout_s = 5, int run_timeout_s = 10);
    RunRecord execute(const RunRecord& run, int boot_timeout_s, int run_timeout_s,
                      const std::atomic<bool>& cancelled);
    RunRecord stored(std::int64_t run_id);
};

}  // namespace ds::testing
