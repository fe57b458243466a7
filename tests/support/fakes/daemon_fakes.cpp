#include "support/fakes/daemon_fakes.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/clock.h"
#include "common/fio_metrics.h"
#include "common/workload_output.h"
#include "support/test_data.h"

namespace ds::testing {

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream content;
    content << in.rdbuf();
    return content.str();
}

void write_text(const fs::path& path, const std::string& text) {
    if (path.has_parent_path()) fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary);
    out << text;
}

fs::path fio_data_path(const std::string& name) {
    return test::test_data_dir() / "fio" / name;
}

Json recorded_fio(const std::string& name) {
    // Throws (on a test's thread) when the file is missing or not JSON.
    return Json::parse(read_text(fio_data_path(name)));
}

void ignore_sigpipe() {
    ::signal(SIGPIPE, SIG_IGN);
}

// ---------------------------------------------------------------------------
// GuestChannel

GuestChannel::GuestChannel(int fd, const VmRequest& request, const std::atomic<bool>& stop,
                           std::function<void(const Json&)> record, std::function<void()> power_off)
    : fd_(fd),
      request_(request),
      stop_(stop),
      record_(std::move(record)),
      power_off_(std::move(power_off)) {}

GuestChannel::~GuestChannel() {
    close();
}

bool GuestChannel::send(std::string_view type, const Json& payload) {
    return send_raw(protocol::encode(type, payload));
}

bool GuestChannel::send_raw(std::string_view bytes) {
    while (!bytes.empty()) {
        if (fd_ < 0 || stop_.load()) return false;
        const ssize_t sent = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (sent < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                pollfd descriptor{fd_, POLLOUT, 0};
                ::poll(&descriptor, 1, 10);
                continue;
            }
            return false;
        }
        bytes.remove_prefix(static_cast<std::size_t>(sent));
    }
    return true;
}

std::optional<Json> GuestChannel::receive(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
        if (const auto newline = buffer_.find('\n'); newline != std::string::npos) {
            const std::string line = buffer_.substr(0, newline);
            buffer_.erase(0, newline + 1);
            auto message = protocol::decode(line);
            if (!message.ok()) {
                // The host is the trusted side; record what it sent anyway.
                Json bad = {{"type", "undecodable"}, {"line", line}};
                record_(bad);
                return bad;
            }
            record_(message.value());
            return message.value();
        }
        if (fd_ < 0 || eof_ || stop_.load()) return std::nullopt;
        if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
        pollfd descriptor{fd_, POLLIN, 0};
        if (::poll(&descriptor, 1, 10) <= 0) continue;
        char chunk[64 * 1024];
        const ssize_t count = ::read(fd_, chunk, sizeof chunk);
        if (count < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
            eof_ = true;
            continue;
        }
        if (count == 0) {
            eof_ = true;
            continue;
        }
        buffer_.append(chunk, static_cast<std::size_t>(count));
    }
}

void GuestChannel::drain() {
    while (fd_ >= 0 && !eof_) {
        char chunk[64 * 1024];
        const ssize_t count = ::read(fd_, chunk, sizeof chunk);
        if (count < 0 && errno == EINTR) continue;
        if (count <= 0) break;
        buffer_.append(chunk, static_cast<std::size_t>(count));
    }
    for (auto newline = buffer_.find('\n'); newline != std::string::npos;
         newline = buffer_.find('\n')) {
        auto message = protocol::decode(std::string_view(buffer_).substr(0, newline));
        record_(message.ok() ? message.value()
                             : Json{{"type", "undecodable"}, {"line", buffer_.substr(0, newline)}});
        buffer_.erase(0, newline + 1);
    }
}

void GuestChannel::close() {
    if (fd_ >= 0) {
        ::shutdown(fd_, SHUT_RDWR);
        ::close(fd_);
        fd_ = -1;
    }
}

void GuestChannel::power_off() {
    if (power_off_) power_off_();
    close();
}

bool GuestChannel::sleep(std::chrono::milliseconds duration) {
    const auto end = std::chrono::steady_clock::now() + duration;
    while (std::chrono::steady_clock::now() < end) {
        if (stop_.load()) return false;
        std::this_thread::sleep_for(5ms);
    }
    return !stop_.load();
}

// ---------------------------------------------------------------------------
// Guest scripts

// The guest driver behind the data disk on each bus, as Linux 6.1 shows it.
std::string guest_driver_for(Bus bus) {
    switch (bus) {
        case Bus::kVirtioBlk:
            return "virtio_blk";
        case Bus::kSata:
            return "ahci";
        default:
            return "virtio_scsi";
    }
}

Json matching_readback(const VmRequest& request, const Json& job) {
    const StorageConfig& config = request.config;
    const FilesystemSpec& filesystem = config.filesystem;
    const std::string& options = filesystem.mount_options;
    Json readback{{"device", "sdb"},
                  {"fs_type", filesystem.type},
                  {"mount_options", options.empty() ? "rw,relatime" : "rw," + options},
                  {"rotational", config.ssd ? 0 : 1},
                  {"discard_max_bytes", config.discard ? 1073741824 : 0},
                  {"logical_block_size", 512},
                  {"read_ahead_kb", config.read_ahead_kb.value_or(128)},
                  {"nr_requests", config.nr_requests.value_or(256)},
                  {"scheduler", config.scheduler == IoScheduler::kDefault
                                    ? std::string("mq-deadline")
                                    : std::string(to_string(config.scheduler))},
                  {"driver", guest_driver_for(config.bus)},
                  {"write_cache", config.cache == CacheMode::kWritethrough ||
                                          config.cache == CacheMode::kDirectsync
                                      ? "write through"
                                      : "write back"},
                  {"serial", std::string(protocol::kDataDiskSerial)},
                  {"mount_source", "/dev/sdb"},
                  {"online_cpus", 2},
                  {"hw_queues", std::min<int>(config.queues.value_or(2), 2)}};
    const auto& steps = filesystem.post_format;
    const bool nocow = std::find(steps.begin(), steps.end(), "nocow") != steps.end();
    readback["work_dir_attributes"] = nocow ? "---------------C------" : "----------------------";
    readback["nocow"] = nocow;
    if (filesystem.type == "btrfs") {
        const bool single = std::find(steps.begin(), steps.end(), "single") != steps.end();
        readback["btrfs"] = {{"data", "single"},
                             {"metadata", single ? "single" : "dup"},
                             {"system", single ? "single" : "dup"}};
    }
    // What SHOW VARIABLES prints for the variables the job asked for.
    const Json server = job.is_object() ? job.value("workload", Json::object())
                                              .value("params", Json::object())
                                              .value("server", Json::object())
                                        : Json::object();
    if (!server.empty()) {
        Json shown = Json::object();
        for (const auto& [name, value] : server.items()) {
            shown[name] = value.is_string()    ? value.get<std::string>()
                          : value.is_boolean() ? std::string(value.get<bool>() ? "ON" : "OFF")
                                               : value.dump();
        }
        readback["server_variables"] = shown;
        readback["server_version"] = "10.11.6-MariaDB-0+deb12u1";
    }
    return readback;
}

Json matching_applied_settings(const StorageConfig& config) {
    const Json all = to_json(config);
    Json applied = Json::object();
    for (const char* key :
         {"bus", "cache", "aio", "discard", "detect_zeroes", "ssd", "iothread", "image_format"}) {
        applied[key] = all.at(key);
    }
    return applied;
}

Json hello_payload(bool trims) {
    Json capabilities = {"fio", "ext4", "xfs", "btrfs", "dataset"};
    if (trims) {
        capabilities.push_back(protocol::kTrimCapability);
        capabilities.push_back(protocol::kMarkCapability);
    }
    return Json{{"agent_version", "0.1.0-fake"},
                {"protocol", protocol::kVersion},
                {"kernel", "6.1.0-fake-amd64"},
                {"fio_version", "fio-3.33"},
                {"capabilities", capabilities}};
}

GuestScript well_behaved_guest(GuestBehaviour behaviour) {
    // Prepared here, on the test's thread; the script runs on the guest's.
    const Json output = !behaviour.output.is_null() ? behaviour.output
                        : behaviour.fio.is_null()   ? recorded_fio(behaviour.fio_file)
                                                    : behaviour.fio;
    Json metrics = behaviour.metrics;
    if (metrics.is_null()) {
        auto honest = metrics_from_workload_output(behaviour.kind, output);
        metrics = honest.ok() ? Json(honest.value()) : Json::object();
    }
    return [behaviour, output, metrics](GuestChannel& channel) {
        Json hello = hello_payload(behaviour.trims);
        if (!behaviour.hello_patch.is_null()) hello.merge_patch(behaviour.hello_patch);
        if (!channel.send(protocol::kHello, hello)) return;
        auto job = channel.receive(10s);
        if (!job || job->value("type", std::string()) != protocol::kJob) return;
        const bool trim = job->value("trim", false);
        channel.send(
            protocol::kProgress,
            Json{{"phase", "format"}, {"message", "mkfs.ext4 -F /dev/sdb"}, {"elapsed_s", 0.0}});
        channel.send(
            protocol::kProgress,
            Json{{"phase", "mount"}, {"message", "mount /mnt/disksweep"}, {"elapsed_s", 0.0}});
        for (int i = 0; i < behaviour.progress_messages; ++i) {
            channel.send(protocol::kProgress,
                         Json{{"phase", "bench"},
                              {"message", "fio"},
                              {"elapsed_s", i + 1.0},
                              {"fraction", (i + 1.0) / behaviour.progress_messages}});
        }
        if (job->value("mark", false)) {
            channel.send(protocol::kMarkReady, Json{{"run_id", job->value("run_id", "")}});
            auto go = channel.receive(10s);
            if (!go || go->value("type", std::string()) != protocol::kMark) return;
        }
        if (trim) {
            channel.send(protocol::kTrimReady, Json{{"run_id", job->value("run_id", "")}});
            auto go = channel.receive(10s);
            if (!go || go->value("type", std::string()) != protocol::kTrim) return;
        }
        if (behaviour.before_result && !behaviour.before_result(channel)) return;
        Json readback = matching_readback(channel.request(), *job);
        if (trim) {
            readback["trim_removed_bytes"] = behaviour.removed_bytes;
            readback["trimmed_bytes"] = behaviour.removed_bytes;
        }
        if (!behaviour.readback_patch.is_null()) readback.merge_patch(behaviour.readback_patch);
        // A golden volume's preparation (job.dataset "prepare") reports
        // its seconds as prepare_s, as the agent does.
        const bool preparing = job->value("dataset", std::string()) == "prepare";
        Json result{{"run_id", job->value("run_id", std::string())},
                    {"timings",
                     {{"format_s", 0.25},
                      {"mount_s", 0.05},
                      {"post_format_s", 0.0},
                      {preparing ? "prepare_s" : "bench_s", preparing ? 4.0 : 2.5}}},
                    {"output", output},
                    {"metrics", metrics},
                    {"readback", readback},
                    {"versions",
                     {{"kernel", "6.1.0-fake-amd64"}, {"fio", "fio-3.33"}, {"agent", "0.1.0"}}}};
        if (!behaviour.result_patch.is_null()) result.merge_patch(behaviour.result_patch);
        channel.send(protocol::kResult, result);
    };
}

// ---------------------------------------------------------------------------
// FakeHypervisor

FakeHypervisor::FakeHypervisor() {
    ignore_sigpipe();
}

FakeHypervisor::~FakeHypervisor() {
    std::map<std::string, std::unique_ptr<Vm>> remaining;
    {
        std::lock_guard lock(mutex_);
        remaining.swap(vms_);
    }
    for (auto& [name, vm] : remaining) stop_vm(*vm);
}

void FakeHypervisor::set_guest_script(GuestScript script) {
    std::lock_guard lock(mutex_);
    script_ = std::move(script);
    no_socket_ = false;
}

void FakeHypervisor::set_no_agent_socket() {
    std::lock_guard lock(mutex_);
    no_socket_ = true;
}

void FakeHypervisor::fail_start(std::string message) {
    std::lock_guard lock(mutex_);
    start_failure_ = std::move(message);
}

void FakeHypervisor::set_applied_patch(Json patch) {
    std::lock_guard lock(mutex_);
    applied_patch_ = std::move(patch);
}

void FakeHypervisor::fail_applied_settings(std::string message) {
    std::lock_guard lock(mutex_);
    applied_failure_ = std::move(message);
}

void FakeHypervisor::throw_from_applied_settings(std::string what) {
    std::lock_guard lock(mutex_);
    applied_throw_ = std::move(what);
}

void FakeHypervisor::set_console_text(std::string text) {
    std::lock_guard lock(mutex_);
    console_text_ = std::move(text);
}

void FakeHypervisor::set_guest_files_directory(std::string directory) {
    std::lock_guard lock(mutex_);
    files_.directory = std::move(directory);
}

std::vector<std::string> FakeHypervisor::started() const {
    std::lock_guard lock(mutex_);
    return started_;
}

std::vector<std::string> FakeHypervisor::destroyed() const {
    std::lock_guard lock(mutex_);
    return destroyed_;
}

int FakeHypervisor::destroy_count(const std::string& name) const {
    std::lock_guard lock(mutex_);
    return static_cast<int>(std::count(destroyed_.begin(), destroyed_.end(), name));
}

std::vector<std::string> FakeHypervisor::live_vms() const {
    std::lock_guard lock(mutex_);
    std::vector<std::string> names;
    for (const auto& [name, vm] : vms_) names.push_back(name);
    return names;
}

std::optional<VmRequest> FakeHypervisor::request_for(const std::string& name) const {
    std::lock_guard lock(mutex_);
    auto it = requests_.find(name);
    if (it == requests_.end()) return std::nullopt;
    return it->second;
}

std::vector<Json> FakeHypervisor::guest_received(const std::string& name) const {
    std::shared_ptr<GuestLog> log;
    {
        std::lock_guard lock(mutex_);
        auto it = logs_.find(name);
        if (it == logs_.end()) return {};
        log = it->second;
    }
    std::lock_guard lock(log->mutex);
    return log->received;
}

bool FakeHypervisor::guest_connected(const std::string& name) const {
    std::lock_guard lock(mutex_);
    auto it = logs_.find(name);
    return it != logs_.end() && it->second->connected.load();
}

void FakeHypervisor::record_handles() {
    std::lock_guard lock(mutex_);
    record_handles_ = true;
}

void FakeHypervisor::set_running_accel(Accel accel) {
    std::lock_guard lock(mutex_);
    running_accel_ = accel;
}

std::vector<Json> FakeHypervisor::destroyed_by_handle() const {
    std::lock_guard lock(mutex_);
    return destroyed_by_handle_;
}

Status FakeHypervisor::destroy_recorded_vm(const std::string& vm_name, const Json& handle) {
    {
        std::lock_guard lock(mutex_);
        destroyed_by_handle_.push_back(handle);
    }
    return destroy_vm(vm_name);
}

void FakeHypervisor::set_meter_readings(std::vector<Json> disk_counters,
                                        std::vector<Json> emulator_cpu) {
    std::lock_guard lock(mutex_);
    disk_readings_ = std::move(disk_counters);
    cpu_readings_ = std::move(emulator_cpu);
}

namespace {

Result<Json> next_reading(std::vector<Json>& readings, const std::string& what) {
    if (readings.empty()) return make_error(errc::kUnsupported, "fake: no " + what + " left");
    Json reading = std::move(readings.front());
    readings.erase(readings.begin());
    return reading;
}

}  // namespace

Result<Json> FakeHypervisor::disk_counters(const std::string&) {
    std::lock_guard lock(mutex_);
    return next_reading(disk_readings_, "disk counters");
}

Result<Json> FakeHypervisor::emulator_cpu_times(const std::string&) {
    std::lock_guard lock(mutex_);
    return next_reading(cpu_readings_, "emulator CPU times");
}

Result<RunningGuest> FakeHypervisor::running_guest(const std::string&, Accel requested) {
    std::lock_guard lock(mutex_);
    if (!running_accel_) return RunningGuest{requested, "as requested", Json::object()};
    return RunningGuest{*running_accel_, "fake", Json{{"qemu", "7.2.0-vm"}}};
}

Status FakeHypervisor::start_vm(const VmRequest& request) {
    bool record = false;
    {
        std::lock_guard lock(mutex_);
        record = record_handles_;
    }
    if (record && request.record_handle) {
        DS_TRY(request.record_handle(Json{{"fake_vm", request.name}}));
    }
    std::lock_guard lock(mutex_);
    const std::string socket_path = files_.agent_socket(request.name);
    started_.push_back(request.name);
    requests_[request.name] = request;
    if (start_failure_) return make_error(errc::kHypervisor, *start_failure_);
    if (vms_.count(request.name)) {
        return make_error(errc::kHypervisor, "domain '" + request.name + "' already exists");
    }
    if (!files_.prepare(request.name)) return make_error(errc::kIo, "cannot create guest files");
    write_text(files_.console_log(request.name), console_text_);

    auto vm = std::make_unique<Vm>();
    vm->request = request;
    if (!no_socket_) {
        // Like QEMU's server socket (server=on,wait=off): bound and listening
        // before the guest boots.
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        if (socket_path.size() >= sizeof address.sun_path) {
            return make_error(errc::kHypervisor, "socket path too long");
        }
        std::strncpy(address.sun_path, socket_path.c_str(), sizeof address.sun_path - 1);
        int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
            ::listen(fd, 4) != 0) {
            std::string why = std::strerror(errno);
            if (fd >= 0) ::close(fd);
            return make_error(errc::kHypervisor, "cannot bind " + socket_path + ": " + why);
        }
        auto log = std::make_shared<GuestLog>();
        logs_[request.name] = log;
        vm->listen_fd = fd;
        vm->guest = std::thread(&FakeHypervisor::guest_main, fd, request, script_, vm->stop,
                                vm->powered_off, log);
    }
    vms_[request.name] = std::move(vm);
    return ok_status();
}

void FakeHypervisor::guest_main(int listen_fd, VmRequest request, GuestScript script,
                                std::shared_ptr<std::atomic<bool>> stop,
                                std::shared_ptr<std::atomic<bool>> powered_off,
                                std::shared_ptr<GuestLog> log) {
    int connection = -1;
    while (!stop->load() && connection < 0) {
        pollfd descriptor{listen_fd, POLLIN, 0};
        if (::poll(&descriptor, 1, 10) <= 0) continue;
        connection = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    }
    if (connection < 0) return;
    log->connected = true;
    GuestChannel channel(
        connection, request, *stop,
        [log](const Json& message) {
            std::lock_guard lock(log->mutex);
            log->received.push_back(message);
        },
        [powered_off] { powered_off->store(true); });
    if (script) script(channel);
    // The agent waits for shutdown (or the channel to close) after its
    // result; keep reading (and recording) until the VM is destroyed.
    while (!stop->load()) {
        if (channel.closed() || !channel.receive(20ms)) std::this_thread::sleep_for(5ms);
    }
    // What the host wrote before destroying the VM is in the socket buffer.
    channel.drain();
}

void FakeHypervisor::stop_vm(Vm& vm) {
    vm.stop->store(true);
    if (vm.guest.joinable()) vm.guest.join();
    if (vm.listen_fd >= 0) ::close(vm.listen_fd);
    vm.listen_fd = -1;
}

Result<Json> FakeHypervisor::applied_settings(const std::string& vm_name) {
    std::lock_guard lock(mutex_);
    if (applied_failure_) return make_error(errc::kHypervisor, *applied_failure_);
    if (applied_throw_) throw std::runtime_error(*applied_throw_);
    auto it = vms_.find(vm_name);
    if (it == vms_.end()) return make_error(errc::kNotFound, "domain '" + vm_name + "' not found");
    Json applied = matching_applied_settings(it->second->request.config);
    if (!applied_patch_.is_null()) applied.merge_patch(applied_patch_);
    return applied;
}

Result<bool> FakeHypervisor::is_running(const std::string& vm_name) {
    std::lock_guard lock(mutex_);
    auto it = vms_.find(vm_name);
    if (it == vms_.end()) return make_error(errc::kNotFound, "domain '" + vm_name + "' not found");
    return !it->second->powered_off->load();
}

Result<std::unique_ptr<AgentChannel>> FakeHypervisor::open_agent_channel(
    const std::string& vm_name, Deadline deadline, const std::atomic<bool>* cancelled) {
    std::string socket;
    {
        std::lock_guard lock(mutex_);
        socket = files_.agent_socket(vm_name);
    }
    return connect_unix_agent_channel(socket, deadline, cancelled);
}

std::string FakeHypervisor::console_tail(const std::string& vm_name, std::size_t max_bytes) {
    std::lock_guard lock(mutex_);
    return files_.console_tail(vm_name, max_bytes);
}

std::string FakeHypervisor::console_location(const std::string& vm_name) {
    std::lock_guard lock(mutex_);
    return files_.console_log(vm_name);
}

void FakeHypervisor::discard_console(const std::string& vm_name) {
    std::lock_guard lock(mutex_);
    files_.remove_console_log(vm_name);
}

Status FakeHypervisor::destroy_vm(const std::string& vm_name) {
    std::unique_ptr<Vm> vm;
    {
        std::lock_guard lock(mutex_);
        destroyed_.push_back(vm_name);
        files_.remove_socket(vm_name);
        auto it = vms_.find(vm_name);
        if (it == vms_.end()) return ok_status();  // already gone
        vm = std::move(it->second);
        vms_.erase(it);
    }
    stop_vm(*vm);
    return ok_status();
}

Result<std::vector<std::string>> FakeHypervisor::list_vms(const std::string& prefix) {
    std::lock_guard lock(mutex_);
    std::vector<std::string> names;
    for (const auto& [name, vm] : vms_) {
        if (name.rfind(prefix, 0) == 0) names.push_back(name);
    }
    return names;
}

// ---------------------------------------------------------------------------
// FakeStorage

void FakeStorage::set_allocations(std::vector<std::uint64_t> bytes) {
    std::lock_guard lock(mutex_);
    allocations_ = std::move(bytes);
    allocation_calls_ = 0;
}

Result<std::uint64_t> FakeStorage::allocated_bytes(const std::string& volume) {
    std::lock_guard lock(mutex_);
    if (allocations_.empty()) return StorageBackend::allocated_bytes(volume);
    const std::size_t at = std::min(allocation_calls_++, allocations_.size() - 1);
    return allocations_[at];
}

void FakeStorage::fail_create(std::string message) {
    std::lock_guard lock(mutex_);
    create_failure_ = std::move(message);
}

std::vector<std::string> FakeStorage::created() const {
    std::lock_guard lock(mutex_);
    return created_;
}

std::vector<std::string> FakeStorage::removed() const {
    std::lock_guard lock(mutex_);
    return removed_;
}

int FakeStorage::remove_count(const std::string& name) const {
    std::lock_guard lock(mutex_);
    return static_cast<int>(std::count(removed_.begin(), removed_.end(), name));
}

std::vector<std::string> FakeStorage::live_volumes() const {
    std::lock_guard lock(mutex_);
    return {live_.begin(), live_.end()};
}

Result<Volume> FakeStorage::create_volume(const std::string& name, const StorageConfig& config) {
    std::lock_guard lock(mutex_);
    if (create_failure_) return make_error(errc::kStorage, *create_failure_);
    if (live_.count(name)) return make_error(errc::kStorage, "volume " + name + " exists");
    live_.insert(name);
    created_.push_back(name);
    const std::string path =
        "/fake/volumes/" + name + "." + std::string(to_string(config.image_format));
    return Volume{name, FileDisk{path, config.image_format}};
}

Status FakeStorage::remove_volume(const std::string& name) {
    std::lock_guard lock(mutex_);
    removed_.push_back(name);
    live_.erase(name);
    return ok_status();
}

std::vector<std::string> FakeStorage::sealed() const {
    std::lock_guard lock(mutex_);
    return sealed_;
}

std::vector<std::string> FakeStorage::cloned() const {
    std::lock_guard lock(mutex_);
    return cloned_;
}

std::vector<std::string> FakeStorage::removed_golden() const {
    std::lock_guard lock(mutex_);
    return removed_golden_;
}

Status FakeStorage::remove_golden(const std::string& golden) {
    {
        std::lock_guard lock(mutex_);
        for (const std::string& clone : cloned_) {
            const std::string prefix = golden + ">";
            if (clone.rfind(prefix, 0) == 0 && live_.count(clone.substr(prefix.size())) > 0) {
                return make_error(errc::kConflict, "golden volume " + golden + " has clones");
            }
        }
        removed_golden_.push_back(golden);
    }
    return remove_volume(golden);
}

Status FakeStorage::seal_golden(const std::string& golden) {
    std::lock_guard lock(mutex_);
    if (live_.count(golden) == 0) return make_error(errc::kNotFound, "no volume " + golden);
    sealed_.push_back(golden);
    return ok_status();
}

Result<ClonedVolume> FakeStorage::clone_volume(const std::string& golden, const std::string& name,
                                               const StorageConfig& config) {
    std::lock_guard lock(mutex_);
    if (live_.count(golden) == 0 ||
        std::find(sealed_.begin(), sealed_.end(), golden) == sealed_.end()) {
        return make_error(errc::kNotFound, "no sealed golden volume " + golden);
    }
    live_.insert(name);
    cloned_.push_back(golden + ">" + name);
    return ClonedVolume{{name, FileDisk{"/fake/" + name, config.image_format}}, "fake-clone"};
}

Result<std::vector<std::string>> FakeStorage::list_volumes(const std::string& prefix) {
    std::lock_guard lock(mutex_);
    std::vector<std::string> names;
    for (const auto& name : live_) {
        if (name.rfind(prefix, 0) == 0) names.push_back(name);
    }
    return names;
}

// ---------------------------------------------------------------------------
// Store and events

StorageConfig reference_config() {
    StorageConfig config;
    config.bus = Bus::kScsiSingle;
    config.cache = CacheMode::kUnsafe;
    config.discard = true;
    config.ssd = true;
    config.iothread = true;
    config.filesystem.label = "ext4:noatime,data=writeback";
    config.filesystem.type = "ext4";
    config.filesystem.mount_options = "noatime,data=writeback";
    return config;
}

Workload atis_workload(Json server) {
    Workload workload{"atis", "mariadb-atis", Json{{"loop_count", 10}}, {}, 0};
    if (!server.is_null()) workload.params["server"] = std::move(server);
    return workload;
}

std::string sqlbench_atis_stdout(double total_s) {
    const long total = std::lround(total_s);
    return "Testing server 'MariaDB 10.11.6' at 2024-05-01 10:00:00\n\n"
           "ATIS table test\n\n"
           "Creating tables\n"
           "Time for create_table (28):  0 wallclock secs ( 0.00 usr  0.00 sys +  0.00 cusr  "
           "0.00 csys =  0.00 CPU)\n\n"
           "Inserting data\n"
           "Time to insert (9768):  3 wallclock secs ( 0.41 usr  0.24 sys +  0.00 cusr  0.00 "
           "csys =  0.65 CPU)\n\n"
           "Retrieving data\n"
           "Time for select_simple_join (500):  2 wallclock secs ( 0.50 usr  0.10 sys +  0.00 "
           "cusr  0.00 csys =  0.60 CPU)\n\n"
           "Removing tables\n"
           "Time to drop_table (28):  0 wallclock secs ( 0.00 usr  0.00 sys +  0.00 cusr  0.00 "
           "csys =  0.00 CPU)\n"
           "Total time: " +
           std::to_string(total) +
           " wallclock secs ( 4.02 usr  1.17 sys +  0.00 cusr  0.00 csys =  5.19 CPU)\n";
}

Workload fio_workload() {
    return Workload{"randrw",
                    "fio",
                    Json{{"rw", "randrw"}, {"bs", "4k"}, {"iodepth", 4}, {"runtime", "2s"}},
                    {},
                    0};
}

RunRecord planned_run(const StorageConfig& config, const Workload& workload, int sequence,
                      int repetition) {
    RunRecord run;
    run.sequence = sequence;
    run.repetition = repetition;
    run.config_id = config_id(config);
    run.config = config;
    run.workload_name = workload.name;
    run.workload = workload;
    return run;
}

std::unique_ptr<Store> open_store(const std::string& path) {
    auto store = Store::open(path);
    INFO((store.ok() ? "" : store.error().message));
    REQUIRE(store.ok());
    return std::move(store.value());
}

std::int64_t create_sweep(Store& store, int count, const std::string& name) {
    SweepRecord sweep;
    sweep.name = name;
    sweep.spec_toml = "name = \"" + name + "\"\n";
    sweep.spec_source = "test";
    sweep.created_at = utc_now_iso8601();
    std::vector<RunRecord> runs;
    for (int i = 0; i < count; ++i)
        runs.push_back(planned_run(reference_config(), fio_workload(), i, i));
    auto id = store.create_sweep(sweep, runs);
    INFO((id.ok() ? "" : id.error().message));
    REQUIRE(id.ok());
    return id.value();
}

EventLog::EventLog(EventBus& bus, std::int64_t sweep_id) : bus_(bus), sweep_id_(sweep_id) {
    // A cursor of 0 means "from now" at the first wait(); a marker on another
    // sweep gives a real cursor, so nothing published after this is missed.
    bus_.publish(-424242, Json{{"type", "test_marker"}});
    cursor_ = bus_.latest();
}

std::vector<Json> EventLog::take() {
    auto events = bus_.wait(sweep_id_, &cursor_, 0ms);
    seen_.insert(seen_.end(), events.begin(), events.end());
    return events;
}

const std::vector<Json>& EventLog::all() {
    take();
    return seen_;
}

bool EventLog::wait_for(const std::string& type, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
        take();
        for (const auto& event : seen_) {
            if (event.value("type", std::string()) == type) return true;
        }
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(5ms);
    }
}

std::vector<std::string> EventLog::types() {
    std::vector<std::string> out;
    for (const auto& event : all()) out.push_back(event.value("type", std::string()));
    return out;
}

ResourceNames names_of(const std::string& instance) {
    auto names = ResourceNames::for_instance(instance);
    INFO((names.ok() ? "" : names.error().message));
    REQUIRE(names.ok());
    return std::move(names).value();
}

ExecutorFixture::ExecutorFixture() {
    config.state_dir = dir.path().string();
    hypervisor.set_guest_files_directory(config.run_dir());
    store = open_store(dir.file("results.db"));
}

RunEnvironment ExecutorFixture::environment() {
    RunEnvironment env(names);
    env.hypervisor = &hypervisor;
    env.storage = &storage;
    env.store = store.get();
    env.events = &events;
    env.image = GuestImage{"/fake/vmlinuz", "/fake/initrd.img", "/fake/root.img"};
    env.image_for = image_for;
    env.guest_suite = guest_suite;
    env.accel = Accel::kTcg;
    env.observer = observer;
    env.host_processes = host_processes;
    if (clock) env.clock = clock;
    env.goldens = goldens;
    env.unchecked_levels = unchecked_levels;
    return env;
}

RunRecord ExecutorFixture::pending_run(const StorageConfig& storage_config) {
    return pending_run(storage_config, fio_workload());
}

RunRecord ExecutorFixture::pending_run(const StorageConfig& storage_config,
                                       const Workload& workload) {
    SweepRecord sweep;
    sweep.name = "executor";
    sweep.spec_toml = "name = \"executor\"\n";
    sweep.spec_source = "test";
    sweep.created_at = utc_now_iso8601();
    auto id = store->create_sweep(sweep, {planned_run(storage_config, workload, 0, 0)});
    REQUIRE(id.ok());
    auto runs = store->list_runs(id.value());
    REQUIRE(runs.ok());
    REQUIRE(runs->size() == 1);
    return runs->front();
}

RunRecord ExecutorFixture::execute(const RunRecord& run, int boot_timeout_s, int run_timeout_s) {
    std::atomic<bool> never{false};
    return execute(run, boot_timeout_s, run_timeout_s, never);
}

RunRecord ExecutorFixture::execute(const RunRecord& run, int boot_timeout_s, int run_timeout_s,
                                   const std::atomic<bool>& cancelled) {
    RunExecutor executor(environment());
    return executor.execute(run, boot_timeout_s, run_timeout_s, cancelled);
}

RunRecord ExecutorFixture::stored(std::int64_t run_id) {
    auto run = store->get_run(run_id);
    REQUIRE(run.ok());
    return run.value();
}

}  // namespace ds::testing
