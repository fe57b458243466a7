#include "guestagent/discovery.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "common/text.h"

namespace ds::agent {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    std::ostringstream content;
    content << in.rdbuf();
    if (in.bad()) return std::nullopt;
    return content.str();
}

std::string trim(std::string_view text) {
    const auto is_padding = [](char c) {
        return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\0';
    };
    while (!text.empty() && is_padding(text.front())) text.remove_prefix(1);
    while (!text.empty() && is_padding(text.back())) text.remove_suffix(1);
    return std::string(text);
}

// Sorted directory entry names; empty when the directory is missing.
std::vector<std::string> list_directory(const fs::path& directory) {
    std::vector<std::string> names;
    std::error_code error;
    for (fs::directory_iterator it(directory, error), end; !error && it != end;
         it.increment(error)) {
        names.push_back(it->path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
}

std::string disk_serial(const fs::path& block_dir) {
    if (auto serial = read_file(block_dir / "serial")) return trim(*serial);
    if (auto page = read_file(block_dir / "device" / "vpd_pg80")) {
        return serial_from_vpd_page80(*page);
    }
    return {};
}

// /proc/mounts escapes space, tab, newline and backslash as \ooo.
std::string decode_mount_field(std::string_view field) {
    std::string out;
    for (std::size_t i = 0; i < field.size(); ++i) {
        if (field[i] == '\\' && i + 3 < field.size()) {
            int value = 0;
            const auto digits = field.substr(i + 1, 3);
            const auto [end, error] =
                std::from_chars(digits.data(), digits.data() + digits.size(), value, 8);
            if (error == std::errc() && end == digits.data() + digits.size()) {
                out.push_back(static_cast<char>(value));
                i += 3;
                continue;
            }
        }
        out.push_back(field[i]);
    }
    return out;
}

std::optional<long long> read_integer(const fs::path& path) {
    const auto text = read_file(path);
    if (!text) return std::nullopt;
    const std::string value = trim(*text);
    long long number = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (error != std::errc() || end != value.data() + value.size()) return std::nullopt;
    return number;
}

// The driver of the disk's host adapter: walking up the disk's sysfs device
// chain, the first bound driver other than "sd" (the SCSI disk driver every
// SCSI or SATA disk has). virtio-blk: virtio_blk; scsi-hd: virtio_scsi;
// SATA: ahci. "" when none is bound.
std::string host_driver(const fs::path& block_dir) {
    std::error_code error;
    fs::path device = fs::canonical(block_dir / "device", error);
    if (error) return {};
    for (; !device.empty() && device != device.root_path(); device = device.parent_path()) {
        const fs::path link = fs::read_symlink(device / "driver", error);
        if (error) continue;
        const std::string driver = link.filename().string();
        if (driver != "sd") return driver;
    }
    return {};
}

// The number of CPUs in a kernel CPU list such as "0-3,6" (cpu/online).
std::optional<long long> count_cpu_list(std::string_view list) {
    long long count = 0;
    std::istringstream ranges{trim(list)};
    std::string range;
    while (std::getline(ranges, range, ',')) {
        const auto dash = range.find('-');
        long long first = 0;
        long long last = 0;
        const std::string first_text = range.substr(0, dash);
        const std::string last_text =
            dash == std::string::npos ? first_text : range.substr(dash + 1);
        const auto parse = [](const std::string& text, long long& out) {
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
            return ec == std::errc() && end == text.data() + text.size();
        };
        if (!parse(first_text, first) || !parse(last_text, last) || last < first)
            return std::nullopt;
        count += last - first + 1;
    }
    if (count == 0) return std::nullopt;
    return count;
}

}  // namespace

std::string serial_from_vpd_page80(std::string_view page) {
    constexpr std::size_t kHeaderBytes = 4;
    if (page.size() < kHeaderBytes) return {};
    const std::size_t length =
        (static_cast<unsigned char>(page[2]) << 8) | static_cast<unsigned char>(page[3]);
    const auto serial = page.substr(kHeaderBytes, std::min(length, page.size() - kHeaderBytes));
    return trim(serial);
}

OsRelease parse_os_release(std::string_view text) {
    OsRelease release;
    const std::pair<std::string_view, std::string*> fields[] = {
        {"ID", &release.id},
        {"VERSION_ID", &release.version_id},
        {"VERSION_CODENAME", &release.codename},
    };
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view line = text.substr(start, end - start);
        start = end + 1;
        const std::size_t equals = line.find('=');
        if (equals == std::string_view::npos) continue;
        std::string_view value = line.substr(equals + 1);
        if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
            value.back() == value.front()) {
            value = value.substr(1, value.size() - 2);
        }
        for (const auto& [key, target] : fields) {
            if (line.substr(0, equals) == key) *target = std::string(value);
        }
    }
    return release;
}

std::optional<OsRelease> read_os_release(const std::string& path) {
    const std::optional<std::string> text = read_file(path);
    if (!text) return std::nullopt;
    OsRelease release = parse_os_release(*text);
    if (release.id.empty()) return std::nullopt;
    return release;
}

Result<std::string> find_virtio_port(const SystemRoots& roots, std::string_view channel_name) {
    const fs::path ports = fs::path(roots.sysfs) / "class" / "virtio-ports";
    std::string seen;
    for (const auto& port : list_directory(ports)) {
        const std::string name = trim(read_file(ports / port / "name").value_or(""));
        if (name == channel_name) return port;
        seen += " " + port + "(name='" + name + "')";
    }
    return make_error(errc::kNotFound, "no virtio-serial port named " + std::string(channel_name) +
                                           " in " + ports.string() +
                                           "; ports:" + (seen.empty() ? " none" : seen));
}

Result<std::string> find_disk_by_serial(const SystemRoots& roots, std::string_view serial) {
    const fs::path block = fs::path(roots.sysfs) / "block";
    std::string seen;
    for (const auto& disk : list_directory(block)) {
        const std::string disk_serial_text = disk_serial(block / disk);
        if (disk_serial_text == serial) return disk;
        seen += " " + disk + "(serial='" + disk_serial_text + "')";
    }
    return make_error(errc::kNotFound, "no disk with serial " + std::string(serial) + " in " +
                                           block.string() +
                                           "; disks:" + (seen.empty() ? " none" : seen));
}

std::optional<MountEntry> find_mount(const SystemRoots& roots, std::string_view mount_point) {
    std::ifstream in(fs::path(roots.proc) / "mounts");
    std::optional<MountEntry> found;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        MountEntry entry;
        if (!(fields >> entry.device >> entry.mount_point >> entry.fs_type >> entry.options)) {
            continue;
        }
        entry.device = decode_mount_field(entry.device);
        entry.mount_point = decode_mount_field(entry.mount_point);
        entry.options = decode_mount_field(entry.options);
        if (entry.mount_point == mount_point) found = std::move(entry);
    }
    return found;
}

bool filesystem_registered(const SystemRoots& roots, std::string_view fs_type) {
    std::ifstream in(fs::path(roots.proc) / "filesystems");
    std::string line;
    while (std::getline(in, line)) {
        // "nodev\tsysfs" or "\text4"
        const auto tab = line.rfind('\t');
        if (trim(tab == std::string::npos ? line : line.substr(tab + 1)) == fs_type) return true;
    }
    return false;
}

SchedulerList parse_scheduler_list(std::string_view text) {
    SchedulerList list;
    std::istringstream words{std::string(text)};
    std::string word;
    while (words >> word) {
        if (word.size() >= 2 && word.front() == '[' && word.back() == ']') {
            word = word.substr(1, word.size() - 2);
            list.active = word;
        }
        list.offered.push_back(word);
    }
    if (list.active.empty() && list.offered.size() == 1) list.active = list.offered.front();
    return list;
}

Result<BtrfsProfiles> parse_btrfs_df_profiles(std::string_view text) {
    BtrfsProfiles profiles;
    const auto add = [](std::string& target, const std::string& profile) {
        // Keep each distinct profile once, in output order.
        std::string listed = "," + target + ",";
        if (listed.find("," + profile + ",") != std::string::npos) return;
        target += (target.empty() ? "" : ",") + profile;
    };
    std::istringstream lines{std::string(text)};
    std::string line;
    int number = 0;
    while (std::getline(lines, line)) {
        ++number;
        const std::string trimmed = trim(line);
        if (trimmed.empty()) continue;
        const auto comma = trimmed.find(", ");
        const auto colon = trimmed.find(':');
        if (comma == std::string::npos || colon == std::string::npos || colon < comma) {
            return make_error(errc::kInvalidArgument,
                              "btrfs filesystem df line " + std::to_string(number) +
                                  " is not 'TYPE, PROFILE: ...': '" + trimmed + "'");
        }
        const std::string type = trimmed.substr(0, comma);
        const std::string profile = ascii_lower(trimmed.substr(comma + 2, colon - comma - 2));
        if (type == "Data") {
            add(profiles.data, profile);
        } else if (type == "Metadata") {
            add(profiles.metadata, profile);
        } else if (type == "Data+Metadata") {
            add(profiles.data, profile);
            add(profiles.metadata, profile);
        } else if (type == "System") {
            add(profiles.system, profile);
        }
        // GlobalReserve and types a newer btrfs may print: not profiles.
    }
    for (const auto& [name, value] :
         {std::pair<const char*, const std::string&>{"data", profiles.data},
          {"metadata", profiles.metadata},
          {"system", profiles.system}}) {
        if (value.empty()) {
            return make_error(errc::kInvalidArgument,
                              std::string("btrfs filesystem df shows no ") + name + " profile");
        }
    }
    return profiles;
}

Json to_json(const BtrfsProfiles& profiles) {
    return {{"data", profiles.data}, {"metadata", profiles.metadata}, {"system", profiles.system}};
}

Result<std::string> parse_lsattr_flags(std::string_view text) {
    const std::string first_line = std::string(text.substr(0, text.find('\n')));
    std::istringstream fields(first_line);
    std::string flags;
    fields >> flags;
    const bool valid = !flags.empty() && std::all_of(flags.begin(), flags.end(), [](char c) {
        return c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    });
    if (!valid) {
        return make_error(errc::kInvalidArgument,
                          "lsattr -d printed no attribute flags: '" + first_line + "'");
    }
    return flags;
}

Json read_disk_readback(const SystemRoots& roots, const std::string& device_name,
                        std::string_view mount_point) {
    Json readback = Json::object();
    readback["device"] = device_name;
    if (const auto mount = find_mount(roots, mount_point)) {
        readback["fs_type"] = mount->fs_type;
        readback["mount_options"] = mount->options;
        readback["mount_source"] = mount->device;
    }
    const fs::path block_dir = fs::path(roots.sysfs) / "block" / device_name;
    if (std::string serial = disk_serial(block_dir); !serial.empty()) readback["serial"] = serial;
    if (std::string driver = host_driver(block_dir); !driver.empty()) readback["driver"] = driver;
    if (std::error_code error; fs::is_directory(block_dir / "mq", error))
        readback["hw_queues"] = list_directory(block_dir / "mq").size();
    if (const auto online = read_file(fs::path(roots.sysfs) / "devices/system/cpu/online")) {
        if (const auto cpus = count_cpu_list(*online)) readback["online_cpus"] = *cpus;
    }
    const fs::path queue = block_dir / "queue";
    if (const auto write_cache = read_file(queue / "write_cache"))
        readback["write_cache"] = trim(*write_cache);
    for (const char* key : {"rotational", "discard_max_bytes", "logical_block_size",
                            "read_ahead_kb", "nr_requests"}) {
        if (const auto value = read_integer(queue / key)) readback[key] = *value;
    }
    if (const auto schedulers = read_file(queue / "scheduler")) {
        const SchedulerList list = parse_scheduler_list(*schedulers);
        if (!list.active.empty()) readback["scheduler"] = list.active;
    }
    return readback;
}

}  // namespace ds::agent
