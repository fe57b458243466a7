#include "guestagent/guest_system.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/klog.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "common/errno_text.h"
#include "common/file_descriptor.h"

namespace ds::agent {
namespace {

// The generic options mount(8) turns into flags. `set` adds `flag`, the
// opposite spelling clears it; "relatime"-style access-time options also
// clear the other access-time modes, as the kernel expects one of them.
struct MountFlagOption {
    std::string_view name;
    unsigned long flag;
    bool set;
};
constexpr unsigned long kAtimeModes = MS_NOATIME | MS_RELATIME | MS_STRICTATIME;
constexpr std::array<MountFlagOption, 22> kMountFlagOptions = {{
    {"ro", MS_RDONLY, true},
    {"rw", MS_RDONLY, false},
    {"nosuid", MS_NOSUID, true},
    {"suid", MS_NOSUID, false},
    {"nodev", MS_NODEV, true},
    {"dev", MS_NODEV, false},
    {"noexec", MS_NOEXEC, true},
    {"exec", MS_NOEXEC, false},
    {"sync", MS_SYNCHRONOUS, true},
    {"async", MS_SYNCHRONOUS, false},
    {"dirsync", MS_DIRSYNC, true},
    {"noatime", MS_NOATIME, true},
    {"atime", MS_NOATIME, false},
    {"nodiratime", MS_NODIRATIME, true},
    {"diratime", MS_NODIRATIME, false},
    {"relatime", MS_RELATIME, true},
    {"norelatime", MS_RELATIME, false},
    {"strictatime", MS_STRICTATIME, true},
    {"nostrictatime", MS_STRICTATIME, false},
    {"lazytime", MS_LAZYTIME, true},
    {"nolazytime", MS_LAZYTIME, false},
    {"silent", MS_SILENT, true},
}};

// The last `count` lines of the kernel log, where a file system says why it
// refused a mount (e.g. 'EXT4-fs (sdb): Unrecognized mount option "x"').
// Empty when the log cannot be read.
std::string kernel_log_tail(int count) {
    constexpr int kSyslogActionReadAll = 3;
    constexpr int kSyslogActionSizeBuffer = 10;
    const int size = ::klogctl(kSyslogActionSizeBuffer, nullptr, 0);
    if (size <= 0) return {};
    std::string log(static_cast<std::size_t>(size), '\0');
    const int got = ::klogctl(kSyslogActionReadAll, log.data(), size);
    if (got <= 0) return {};
    log.resize(static_cast<std::size_t>(got));
    while (!log.empty() && log.back() == '\n') log.pop_back();
    std::size_t start = log.size();
    for (int lines = 0; lines < count && start != std::string::npos && start > 0; ++lines) {
        start = log.rfind('\n', start - 1);
    }
    return start == std::string::npos ? log : log.substr(start + 1);
}

}  // namespace

MountRequest split_mount_options(std::string_view options) {
    MountRequest request;
    while (!options.empty()) {
        const auto comma = options.find(',');
        const std::string_view option = options.substr(0, comma);
        options = comma == std::string_view::npos ? std::string_view() : options.substr(comma + 1);
        if (option.empty() || option == "defaults") continue;
        bool generic = false;
        for (const auto& known : kMountFlagOptions) {
            if (known.name != option) continue;
            generic = true;
            if (known.set) {
                if (known.flag & kAtimeModes) request.flags &= ~kAtimeModes;
                request.flags |= known.flag;
            } else {
                request.flags &= ~known.flag;
            }
        }
        if (generic) continue;
        if (!request.data.empty()) request.data += ',';
        request.data += option;
    }
    return request;
}

Status RealGuestSystem::make_directories(const std::string& path) {
    std::error_code error;
    std::filesystem::create_directories(path, error);
    if (error)
        return make_error(errc::kIo, "cannot create directory " + path + ": " + error.message());
    return ok_status();
}

Status RealGuestSystem::mount(const std::string& device, const std::string& target,
                              const std::string& fs_type, const std::string& options) {
    const MountRequest request = split_mount_options(options);
    if (::mount(device.c_str(), target.c_str(), fs_type.c_str(), request.flags,
                request.data.empty() ? nullptr : request.data.c_str()) != 0) {
        // The kernel's reason for EINVAL (an option it rejects) is only in
        // its log, so its last lines go into the message.
        const std::string reason = errno_text(errno);
        std::string log = kernel_log_tail(2);
        return make_error(errc::kIo, "mount -t " + fs_type + " -o '" + options + "' " + device +
                                         " " + target + ": " + reason +
                                         (log.empty() ? "" : "; kernel log: " + log));
    }
    return ok_status();
}

Status RealGuestSystem::unmount(const std::string& target) {
    if (::umount2(target.c_str(), 0) != 0) {
        return make_error(errc::kIo, "umount " + target + ": " + errno_text(errno));
    }
    return ok_status();
}

Result<std::uint64_t> RealGuestSystem::remove_contents(const std::string& directory) {
    namespace fs = std::filesystem;
    std::uint64_t bytes = 0;
    std::error_code error;
    // Sizes first (a file's blocks are what its removal frees), then remove.
    for (auto it = fs::recursive_directory_iterator(directory, error);
         !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
        struct stat info {};
        if (::lstat(it->path().c_str(), &info) == 0 && S_ISREG(info.st_mode)) {
            bytes += static_cast<std::uint64_t>(info.st_blocks) * 512u;
        }
    }
    if (error) return make_error(errc::kIo, "cannot list " + directory + ": " + error.message());
    for (const auto& entry : fs::directory_iterator(directory, error)) {
        if (entry.path().filename() == "lost+found") continue;
        fs::remove_all(entry.path(), error);
        if (error) {
            return make_error(errc::kIo,
                              "cannot remove " + entry.path().string() + ": " + error.message());
        }
    }
    if (error) return make_error(errc::kIo, "cannot list " + directory + ": " + error.message());
    return bytes;
}

Result<std::uint64_t> RealGuestSystem::trim(const std::string& mount_point) {
    FileDescriptor fd(::open(mount_point.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid()) {
        return make_error(errc::kIo, "cannot open " + mount_point + ": " + errno_text(errno));
    }
    // What fstrim(8) does: the whole file system, any extent size; the
    // kernel writes back in `len` how many bytes it trimmed.
    struct fstrim_range range {};
    range.start = 0;
    range.len = UINT64_MAX;
    range.minlen = 0;
    if (::ioctl(fd.get(), FITRIM, &range) != 0) {
        return make_error(errc::kIo, "FITRIM " + mount_point + ": " + errno_text(errno));
    }
    return static_cast<std::uint64_t>(range.len);
}

void RealGuestSystem::sync() {
    ::sync();
}

Status RealGuestSystem::write_attribute(const std::string& path, const std::string& value) {
    const auto failed = [&](const std::string& reason) {
        return make_error(errc::kIo, "cannot write '" + value + "' to " + path + ": " + reason);
    };
    FileDescriptor fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd.valid()) return failed(errno_text(errno));
    // One write: a sysfs store sees exactly this buffer (a short write would
    // hand the kernel a truncated value).
    const ssize_t written = ::write(fd.get(), value.data(), value.size());
    const int write_errno = errno;
    fd.reset();
    if (written < 0) return failed(std::strerror(write_errno));
    if (static_cast<std::size_t>(written) != value.size()) {
        return failed("short write of " + std::to_string(written) + " of " +
                      std::to_string(value.size()) + " bytes");
    }
    return ok_status();
}

std::vector<std::string> RealGuestSystem::kill_processes_using(const std::string& path) {
    namespace fs = std::filesystem;
    const auto under = [&path](const fs::path& link) {
        std::error_code error;
        const std::string target = fs::read_symlink(link, error).string();
        return !error && (target == path || target.rfind(path + "/", 0) == 0);
    };
    std::vector<std::string> killed;
    const std::string self = std::to_string(::getpid());
    std::error_code error;
    for (fs::directory_iterator it("/proc", error), end; !error && it != end; it.increment(error)) {
        const std::string pid = it->path().filename().string();
        if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos ||
            pid == self) {
            continue;
        }
        bool uses = under(it->path() / "cwd");
        std::error_code fd_error;
        for (fs::directory_iterator fd(it->path() / "fd", fd_error), fd_end;
             !uses && !fd_error && fd != fd_end; fd.increment(fd_error)) {
            uses = under(fd->path());
        }
        if (!uses) continue;
        std::string comm;
        if (std::FILE* file = std::fopen((it->path() / "comm").c_str(), "r")) {
            char name[64] = {};
            if (std::fgets(name, sizeof name, file)) comm = name;
            std::fclose(file);
        }
        while (!comm.empty() && comm.back() == '\n') comm.pop_back();
        if (::kill(static_cast<pid_t>(std::stol(pid)), SIGKILL) == 0) {
            killed.push_back(pid + " (" + comm + ")");
        }
    }
    return killed;
}

std::string RealGuestSystem::kernel_release() {
    utsname names{};
    if (::uname(&names) != 0) return "unknown";
    return names.release;
}

}  // namespace ds::agent
