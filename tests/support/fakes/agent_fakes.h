// Test doubles for the agent's seams: a scripted ProcessRunner, a GuestSystem
// that records mounts into a fake /proc/mounts, a fake sysfs/procfs/dev tree
// in a temporary directory, and the host end of a socketpair channel.
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/process.h"
#include "common/protocol.h"
#include "guestagent/channel.h"
#include "guestagent/discovery.h"
#include "guestagent/guest_system.h"
#include "support/temp_dir.h"
#include "support/test_data.h"

namespace ds::agent::testing {

namespace fs = std::filesystem;

inline std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream content;
    content << in.rdbuf();
    return content.str();
}

inline void write_text(const fs::path& path, std::string_view text) {
    fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary);
    out << text;
}

// Real fio 3.33 output recorded on the development host (tests/data/fio).
inline std::string recorded_fio_output(const std::string& name = "randrw_4k_numjobs1.json") {
    return ds::test::test_data_text(fs::path("fio") / name);
}

using ds::test::TempDir;

// A guest as sysfs/procfs/dev show it: root disk vda (virtio-blk serial), data
// disk sdb (SCSI, serial in VPD page 0x80), the agent's virtio-serial port.
class FakeGuestTree {
  public:
    FakeGuestTree() {
        write_text(sys() / "block/vda/serial", "disksweep-root\n");
        write_text(sys() / "block/vda/queue/rotational", "1\n");
        add_scsi_disk("sdb", "disksweep-data");
        write_text(sys() / "class/virtio-ports/vport0p0/name", "org.qemu.guest_agent.0\n");
        write_text(sys() / "class/virtio-ports/vport0p1/name", "org.disksweep.agent.0\n");
        write_text(proc() / "filesystems", "nodev\tsysfs\nnodev\ttmpfs\n\text4\n\tbtrfs\n");
        write_text(proc() / "mounts", "sysfs /sys sysfs rw,nosuid 0 0\n");
        write_text(dev() / "vda", "");
        write_text(os_release(), "ID=debian\nVERSION_ID=\"12\"\nVERSION_CODENAME=bookworm\n");
    }

    // A SCSI disk whose VPD page 0x80 carries `serial` (space padded, as
    // some devices do), with queue settings of an emulated SSD.
    void add_scsi_disk(const std::string& name, const std::string& serial) {
        std::string page = {'\0', '\x80', '\0', static_cast<char>(serial.size() + 2)};
        page += serial + "  ";
        write_text(sys() / "block" / name / "device/vpd_pg80", page);
        write_text(sys() / "block" / name / "queue/rotational", "0\n");
        write_text(sys() / "block" / name / "queue/discard_max_bytes", "1073741824\n");
        write_text(sys() / "block" / name / "queue/logical_block_size", "512\n");
        write_text(sys() / "block" / name / "queue/read_ahead_kb", "128\n");
        write_text(sys() / "block" / name / "queue/scheduler", "mq-deadline kyber [none]\n");
        write_text(sys() / "block" / name / "queue/nr_requests", "256\n");
        write_text(dev() / name, "");
    }

    // A virtio-blk disk: its serial in /sys/block/NAME/serial.
    void add_virtio_disk(const std::string& name, const std::string& serial) {
        write_text(sys() / "block" / name / "serial", serial + "\n");
        write_text(sys() / "block" / name / "queue/rotational", "1\n");
        write_text(dev() / name, "");
    }

    SystemRoots roots() const {
        return {sys().string(), proc().string(), dev().string(), os_release().string()};
    }
    fs::path os_release() const { return dir_.path() / "etc/os-release"; }
    fs::path sys() const { return dir_.path() / "sys"; }
    fs::path proc() const { return dir_.path() / "proc"; }
    fs::path dev() const { return dir_.path() / "dev"; }
    fs::path mnt() const { return dir_.path() / "mnt/disksweep"; }

  private:
    TempDir dir_;
};

// What this host's btrfs-progs v6.2 and e2fsprogs 1.47.0 printed on a loop
// device (kernel 6.18): `btrfs filesystem df` of a fresh `mkfs.btrfs -m dup`,
// and `lsattr -d` of a mount point after `chattr +C`.
inline constexpr std::string_view kBtrfsDfMetadataDup =
    "Data, single: total=8.00MiB, used=0.00B\n"
    "System, DUP: total=8.00MiB, used=16.00KiB\n"
    "Metadata, DUP: total=32.00MiB, used=128.00KiB\n"
    "GlobalReserve, single: total=5.50MiB, used=0.00B\n";
inline constexpr std::string_view kLsattrNocow = "---------------C------ m\n";

// Scripted programs. By default: fio --version prints fio-3.33, fio runs for
// `fio_delay` and prints the recorded randrw output, `btrfs filesystem df`
// prints kBtrfsDfMetadataDup, `lsattr -d` prints `lsattr_output`, everything
// else exits 0.
// `script` may override any command (return nullopt to fall through).
class FakeProcessRunner : public ProcessRunner {
  public:
    using Script = std::function<std::optional<Result<ProcessOutput>>(
        const std::vector<std::string>& argv, std::chrono::milliseconds timeout)>;

    Result<ProcessOutput> run(const std::vector<std::string>& argv,
                              std::chrono::milliseconds timeout) override {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            commands_.push_back(argv);
        }
        if (script) {
            if (auto scripted = script(argv, timeout)) return *scripted;
        }
        ProcessOutput output;
        output.exit_code = 0;
        if (argv.size() == 2 && argv[0] == "fio" && argv[1] == "--version") {
            output.stdout_text = "fio-3.33\n";
        } else if (!argv.empty() && argv[0] == "fio") {
            std::this_thread::sleep_for(fio_delay);
            output.stdout_text = fio_stdout;
        } else if (argv.size() == 4 && argv[0] == "btrfs" && argv[1] == "filesystem" &&
                   argv[2] == "df") {
            output.stdout_text = std::string(kBtrfsDfMetadataDup);
        } else if (argv.size() == 3 && argv[0] == "lsattr" && argv[1] == "-d") {
            output.stdout_text = lsattr_output;
        }
        return output;
    }

    std::vector<std::vector<std::string>> commands() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return commands_;
    }
    // The first recorded command whose argv[0] is `program`.
    std::optional<std::vector<std::string>> command(const std::string& program) const {
        for (const auto& argv : commands()) {
            if (!argv.empty() && argv[0] == program) return argv;
        }
        return std::nullopt;
    }
    // The last recorded command whose argv[0] is `program` (and whose argv[1]
    // is not "--version").
    std::optional<std::vector<std::string>> last_command(const std::string& program) const {
        std::optional<std::vector<std::string>> found;
        for (const auto& argv : commands()) {
            if (!argv.empty() && argv[0] == program && (argv.size() < 2 || argv[1] != "--version"))
                found = argv;
        }
        return found;
    }

    Script script;
    std::chrono::milliseconds fio_delay{0};
    std::string fio_stdout = recorded_fio_output();
    std::string lsattr_output = "---------------------- m\n";

  private:
    mutable std::mutex mutex_;
    std::vector<std::vector<std::string>> commands_;
};

// Records calls; a mount appends the entry the kernel would show to the fake
// /proc/mounts (generic option "rw,relatime" first, as the kernel prints).
// Directories are really created (the tree is a temporary directory). A
// sysfs attribute write behaves as the kernel's: `refusals` maps a path to
// the errno text the store fails with, a scheduler not in the file's list
// is refused with "Invalid argument", an offered one becomes the bracketed
// entry; other attributes take the value as written.
class FakeGuestSystem : public GuestSystem {
  public:
    explicit FakeGuestSystem(fs::path proc_root) : proc_root_(std::move(proc_root)) {}

    Status make_directories(const std::string& path) override {
        directories.push_back(path);
        std::error_code error;
        fs::create_directories(path, error);
        return ok_status();
    }
    Status mount(const std::string& device, const std::string& target, const std::string& fs_type,
                 const std::string& options) override {
        mounts.push_back({device, target, fs_type, options});
        if (!mount_error.empty()) return make_error(errc::kIo, mount_error);
        std::ofstream(proc_root_ / "mounts", std::ios::app)
            << device << " " << target << " " << fs_type << " rw,relatime"
            << (options.empty() ? "" : "," + options) << " 0 0\n";
        return ok_status();
    }
    Status unmount(const std::string& target) override {
        unmounts.push_back(target);
        if (busy_unmounts > 0) {
            --busy_unmounts;
            return make_error(errc::kIo, "umount " + target + ": Device or resource busy");
        }
        return ok_status();
    }
    std::vector<std::string> kill_processes_using(const std::string& path) override {
        kills.push_back(path);
        return {"4242 (fio)"};
    }
    void sync() override { ++syncs; }
    Status write_attribute(const std::string& path, const std::string& value) override {
        attribute_writes.push_back({path, value});
        const auto refuse = [&](const std::string& reason) {
            return make_error(errc::kIo, "cannot write '" + value + "' to " + path + ": " + reason);
        };
        if (const auto refusal = refusals.find(path); refusal != refusals.end()) {
            return refuse(refusal->second);
        }
        if (!fs::exists(path)) return refuse("No such file or directory");
        if (fs::path(path).filename() == "scheduler") {
            std::istringstream words(read_text(path));
            std::string word, rewritten;
            bool offered = false;
            while (words >> word) {
                if (word.front() == '[') word = word.substr(1, word.size() - 2);
                if (word == value) offered = true;
                rewritten +=
                    (rewritten.empty() ? "" : " ") + (word == value ? "[" + word + "]" : word);
            }
            if (!offered) return refuse("Invalid argument");
            write_text(path, rewritten + "\n");
            return ok_status();
        }
        write_text(path, value + "\n");
        return ok_status();
    }
    std::string kernel_release() override { return "6.1.0-test-amd64"; }
    Result<std::uint64_t> remove_contents(const std::string& directory) override {
        removed_directories.push_back(directory);
        return removed_bytes;
    }
    Result<std::uint64_t> trim(const std::string& mount_point) override {
        trims.push_back(mount_point);
        if (!trim_error.empty()) return make_error(errc::kIo, trim_error);
        return trimmed_bytes;
    }

    struct MountCall {
        std::string device, target, fs_type, options;
    };
    std::vector<std::string> directories;
    std::vector<MountCall> mounts;
    std::vector<std::string> unmounts;
    std::vector<std::pair<std::string, std::string>> attribute_writes;  // (path, value)
    std::map<std::string, std::string> refusals;                        // sysfs path -> errno text
    int syncs = 0;
    int busy_unmounts = 0;                         // this many unmounts fail with EBUSY first
    std::vector<std::string> kills;                // kill_processes_using calls
    std::string mount_error;                       // non-empty: mount fails with this message
    std::vector<std::string> removed_directories;  // remove_contents calls
    std::vector<std::string> trims;                // trim calls
    std::uint64_t removed_bytes = 32u << 20;       // what remove_contents reports
    std::uint64_t trimmed_bytes = 500u << 20;      // what trim reports
    std::string trim_error;                        // non-empty: trim fails with this message

  private:
    fs::path proc_root_;
};

// The host's end of a socketpair whose other end is the agent's Channel.
class HostEnd {
  public:
    HostEnd() {
        int fds[2];
        REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
        host_fd_ = fds[0];
        agent_channel_ = std::make_unique<FdChannel>(fds[1]);
        reader_ = std::make_unique<protocol::LineReader>(host_fd_);
    }
    ~HostEnd() { close(); }
    void close() {
        if (host_fd_ >= 0) ::close(host_fd_);
        host_fd_ = -1;
    }

    Channel& agent_channel() { return *agent_channel_; }

    void send(std::string_view type, const Json& payload) {
        REQUIRE(protocol::write_all(host_fd_, protocol::encode(type, payload)).ok());
    }
    void send_raw(std::string_view bytes) { REQUIRE(protocol::write_all(host_fd_, bytes).ok()); }

    // The next message; fails the test if none arrives within 10 s.
    Json next() {
        auto line = reader_->read_line(std::chrono::steady_clock::now() + std::chrono::seconds(10));
        INFO((line.ok() ? std::string() : line.error().message));
        REQUIRE(line.ok());
        auto message = protocol::decode(*line);
        INFO((message.ok() ? std::string() : message.error().message));
        REQUIRE(message.ok());
        return *message;
    }
    // Skips progress messages (collecting them) until a message of another type.
    Json next_non_progress(std::vector<Json>* progress = nullptr) {
        for (;;) {
            Json message = next();
            if (message["type"] != protocol::kProgress) return message;
            if (progress) progress->push_back(message);
        }
    }
    // True when the agent closed its end (read returns EOF) within 5 s.
    bool agent_closed() {
        auto line = reader_->read_line(std::chrono::steady_clock::now() + std::chrono::seconds(5));
        return !line.ok() && line.error().code == errc::kIo;
    }

    // Releases the agent's channel (the agent side closes on destruction).
    void close_agent_side() { agent_channel_.reset(); }

  private:
    int host_fd_ = -1;
    std::unique_ptr<Channel> agent_channel_;
    std::unique_ptr<protocol::LineReader> reader_;
};

}  // namespace ds::agent::testing
