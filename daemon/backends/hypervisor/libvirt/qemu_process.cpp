#include "daemon/backends/hypervisor/libvirt/qemu_process.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <system_error>

#include "common/json_fields.h"

namespace ds {
namespace {

namespace fs = std::filesystem;

Error process_error(const std::string& what) {
    return make_error(errc::kHypervisor, "QEMU process: " + what);
}

std::optional<std::string> file_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<std::string> split_at_nul(const std::string& text) {
    std::vector<std::string> items;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\0', start);
        if (end == std::string::npos) end = text.size();
        items.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return items;
}

// Whether libvirt started this QEMU for `vm_name`: "-name" "guest=NAME" or
// "guest=NAME,debug-threads=on" (libvirt doubles a comma in a name; ours
// have none).
bool runs_guest(const std::vector<std::string>& argv, const std::string& vm_name) {
    const std::string wanted = "guest=" + vm_name;
    for (std::size_t i = 0; i + 1 < argv.size(); ++i) {
        if (argv[i] != "-name") continue;
        const std::string& value = argv[i + 1];
        if (value == wanted || value.starts_with(wanted + ",")) return true;
    }
    return false;
}

// The -blockdev arguments by node-name (JSON ones only: libvirt writes them so).
std::map<std::string, Json> blockdev_nodes(const std::vector<std::string>& argv) {
    std::map<std::string, Json> nodes;
    for (std::size_t i = 0; i + 1 < argv.size(); ++i) {
        if (argv[i] != "-blockdev") continue;
        Json node = Json::parse(argv[i + 1], nullptr, /*allow_exceptions=*/false);
        const std::string name = json_read::string_or_empty(node, "node-name");
        if (!name.empty()) nodes[name] = std::move(node);
    }
    return nodes;
}

// The engine the process set up (see qemu_process.h), or an error when both.
Result<std::string> aio_engine_in_use(const QemuProcessView& process) {
    const bool linux_aio = process.maps.find("/[aio]") != std::string::npos;
    bool io_uring = false;
    for (const std::string& target : process.fd_targets) {
        if (target == "anon_inode:[io_uring]") io_uring = true;
    }
    if (linux_aio && io_uring)
        return process_error("both a Linux AIO ring and an io_uring are in use");
    if (linux_aio) return std::string(to_string(AioMode::kNative));
    if (io_uring) return std::string(to_string(AioMode::kIoUring));
    return std::string(to_string(AioMode::kThreads));
}

// How many "file" children a data disk's node chain may have: format node,
// filter, protocol node, with room to spare; a loop in the arguments stops.
constexpr int kMaxNodeChain = 8;

bool discards(const Json& node) {
    return json_read::string_or_empty(node, "discard") == "unmap";
}

}  // namespace

Result<int> find_qemu_pid(const std::string& vm_name) {
    std::error_code ec;
    for (fs::directory_iterator entry("/proc", ec), end; !ec && entry != end; entry.increment(ec)) {
        const std::string pid = entry->path().filename();
        if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
        const std::optional<std::string> cmdline = file_text(entry->path() / "cmdline");
        if (!cmdline) continue;  // gone meanwhile
        if (runs_guest(split_at_nul(*cmdline), vm_name)) return std::stoi(pid);
    }
    return make_error(errc::kNotFound,
                      "QEMU process: no QEMU of guest " + vm_name + " runs on this machine");
}

Result<QemuProcessView> read_qemu_process(const std::string& vm_name) {
    DS_ASSIGN_OR_RETURN(const int found, find_qemu_pid(vm_name));
    const fs::path process = fs::path("/proc") / std::to_string(found);
    const std::string pid = std::to_string(found);
    QemuProcessView view;
    view.pid = found;
    const std::optional<std::string> cmdline = file_text(process / "cmdline");
    const std::optional<std::string> maps = file_text(process / "maps");
    if (!cmdline || !maps) return make_error(errc::kIo, "cannot read /proc/" + pid + "/maps");
    view.argv = split_at_nul(*cmdline);
    view.maps = *maps;
    std::error_code ec;
    for (fs::directory_iterator fd(process / "fd", ec), fd_end; !ec && fd != fd_end;
         fd.increment(ec)) {
        std::error_code link_error;
        const fs::path target = fs::read_symlink(fd->path(), link_error);
        if (!link_error) view.fd_targets.push_back(target.string());
    }
    if (ec) return make_error(errc::kIo, "cannot list /proc/" + pid + "/fd: " + ec.message());
    return view;
}

Result<Json> qemu_process_disk_settings(const QemuProcessView& process,
                                        const std::string& node_name) {
    const std::map<std::string, Json> nodes = blockdev_nodes(process.argv);
    const auto top = nodes.find(node_name);
    if (top == nodes.end())
        return process_error("no -blockdev with node-name '" + node_name + "' (pid " +
                             std::to_string(process.pid) + ")");
    // Down the "file" children to the protocol node: below the format node
    // there may be filters (a durability run's blklogwrites logger), and a
    // discard reaches the volume only if every node passes it on.
    auto file = top;
    bool every_node_discards = discards(top->second);
    std::string chain = top->first;
    for (int depth = 0; depth < kMaxNodeChain; ++depth) {
        const std::string file_name = json_read::string_or_empty(file->second, "file");
        if (file_name.empty()) break;
        const auto below = nodes.find(file_name);
        if (below == nodes.end())
            return process_error("node '" + file->first + "' names file node '" + file_name +
                                 "', which is not among the -blockdev arguments");
        file = below;
        every_node_discards = every_node_discards && discards(file->second);
        chain += ", " + file->first;
    }
    const Json& file_node = file->second;
    DS_ASSIGN_OR_RETURN(const std::string engine, aio_engine_in_use(process));
    const std::string configured = json_read::string_or_empty(file_node, "aio");
    const std::string effective = configured.empty() ? "threads" : configured;
    std::string aio = engine;
    if (engine == effective && configured.empty()) aio = std::string(to_string(AioMode::kDefault));
    const std::string pid = std::to_string(process.pid);
    return Json{{"aio", aio},
                {"discard", every_node_discards},
                {"pid", process.pid},
                {"sources",
                 {{"aio", "/proc/" + pid + " maps and fds: " + engine + " in use; -blockdev " +
                              file->first +
                              " aio=" + (configured.empty() ? "(QEMU's default)" : configured)},
                  {"discard", "-blockdev " + chain + " discard"}}}};
}

}  // namespace ds
