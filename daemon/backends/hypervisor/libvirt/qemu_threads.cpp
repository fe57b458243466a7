#include "daemon/backends/hypervisor/libvirt/qemu_threads.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <system_error>

namespace ds {
namespace {

namespace fs = std::filesystem;

// utime and stime are fields 14 and 15 of stat(5); after the command name
// (field 2) comes field 3, so utime is the word at index 11 after it.
constexpr int kUtimeAfterComm = 11;

std::optional<std::string> file_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The whitespace-separated words of `text`.
std::vector<std::string_view> words(std::string_view text) {
    std::vector<std::string_view> found;
    std::size_t at = 0;
    while (at < text.size()) {
        const std::size_t start = text.find_first_not_of(" \n", at);
        if (start == std::string_view::npos) break;
        std::size_t end = text.find_first_of(" \n", start);
        if (end == std::string_view::npos) end = text.size();
        found.push_back(text.substr(start, end - start));
        at = end;
    }
    return found;
}

std::optional<std::uint64_t> unsigned_number(std::string_view word) {
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), value);
    if (error != std::errc() || end != word.data() + word.size()) return std::nullopt;
    return value;
}

Result<std::vector<long>> thread_ids(const Json& reply, std::string_view command) {
    // Named, not a temporary: GCC 12 at -O2 warns (-Warray-bounds, a false
    // positive) on a temporary std::string's operator+ here.
    const std::string command_name(command);
    if (!reply.is_array())
        return make_error(errc::kHypervisor, command_name + " did not return a list");
    std::vector<long> ids;
    for (const Json& entry : reply) {
        const auto id = entry.is_object() ? entry.find("thread-id") : entry.end();
        if (id == entry.end() || !id->is_number_integer() || id->get<long>() <= 0) {
            return make_error(errc::kHypervisor,
                              command_name + " lists an entry without a thread-id");
        }
        ids.push_back(id->get<long>());
    }
    // Single-threaded TCG runs every vCPU on one thread, which
    // query-cpus-fast then names once per vCPU: count each thread once.
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    return ids;
}

double seconds_of(std::uint64_t ticks, long ticks_per_second) {
    return static_cast<double>(ticks) / static_cast<double>(ticks_per_second);
}

// The named threads' ticks (a thread not alive counts 0).
std::uint64_t ticks_of(const QemuCpuReading& reading, const std::vector<long>& tids) {
    std::uint64_t ticks = 0;
    for (long tid : tids) {
        const auto thread = reading.threads.find(tid);
        if (thread != reading.threads.end()) ticks += thread->second.total();
    }
    return ticks;
}

}  // namespace

Result<TaskCpuTicks> parse_task_stat(std::string_view text) {
    const std::size_t comm_end = text.rfind(')');
    if (comm_end == std::string_view::npos) {
        return make_error(errc::kInvalidArgument, "a stat line without a command name");
    }
    const std::vector<std::string_view> fields = words(text.substr(comm_end + 1));
    if (fields.size() <= kUtimeAfterComm + 1) {
        return make_error(
            errc::kInvalidArgument,
            "a stat line with " + std::to_string(fields.size()) + " fields after the command name");
    }
    const auto user = unsigned_number(fields[kUtimeAfterComm]);
    const auto system = unsigned_number(fields[kUtimeAfterComm + 1]);
    if (!user || !system) {
        return make_error(errc::kInvalidArgument, "a stat line whose utime/stime are not counts");
    }
    return TaskCpuTicks{*user, *system};
}

Result<QemuThreadRoles> thread_roles_from_qmp(const Json& cpus_fast, const Json& iothreads) {
    QemuThreadRoles roles;
    DS_ASSIGN_OR_RETURN(roles.vcpus, thread_ids(cpus_fast, "query-cpus-fast"));
    DS_ASSIGN_OR_RETURN(roles.iothreads, thread_ids(iothreads, "query-iothreads"));
    return roles;
}

Result<QemuThreadRoles> read_qemu_thread_roles(const QmpTransport& qmp) {
    Json replies[2];
    const char* commands[2] = {"query-cpus-fast", "query-iothreads"};
    for (int i = 0; i < 2; ++i) {
        const std::string command = qmp_command(commands[i]);
        DS_ASSIGN_OR_RETURN(std::string reply, qmp(command));
        DS_ASSIGN_OR_RETURN(replies[i], qmp_return(command, reply));
    }
    return thread_roles_from_qmp(replies[0], replies[1]);
}

Json cpu_times_by_role(const QemuCpuReading& reading, const QemuThreadRoles& roles,
                       long ticks_per_second) {
    const std::uint64_t vcpu = ticks_of(reading, roles.vcpus);
    const std::uint64_t iothread = ticks_of(reading, roles.iothreads);
    const std::uint64_t main_loop = ticks_of(reading, {reading.pid});
    const std::uint64_t named = vcpu + iothread + main_loop;
    const std::uint64_t total = reading.process.total();
    return Json{{"vcpu_s", seconds_of(vcpu, ticks_per_second)},
                {"iothread_s", seconds_of(iothread, ticks_per_second)},
                {"main_loop_s", seconds_of(main_loop, ticks_per_second)},
                {"other_s", seconds_of(total > named ? total - named : 0, ticks_per_second)},
                {"total_s", seconds_of(total, ticks_per_second)},
                {"vcpu_threads", roles.vcpus.size()},
                {"iothreads", roles.iothreads.size()}};
}

Result<QemuCpuReading> read_qemu_cpu(long pid, const std::string& proc_root) {
    const fs::path process = fs::path(proc_root) / std::to_string(pid);
    const std::optional<std::string> stat = file_text(process / "stat");
    if (!stat) return make_error(errc::kNotFound, "no process " + process.string());
    QemuCpuReading reading;
    reading.pid = pid;
    Result<TaskCpuTicks> ticks = parse_task_stat(*stat);
    if (!ticks.ok())
        return make_error(errc::kIo, process.string() + "/stat: " + ticks.error().message);
    reading.process = *ticks;
    std::error_code ec;
    for (fs::directory_iterator task(process / "task", ec), end; !ec && task != end;
         task.increment(ec)) {
        const auto tid = unsigned_number(task->path().filename().string());
        const std::optional<std::string> text = file_text(task->path() / "stat");
        if (!tid || !text) continue;  // ended meanwhile
        Result<TaskCpuTicks> thread = parse_task_stat(*text);
        if (thread.ok()) reading.threads[static_cast<long>(*tid)] = *thread;
    }
    if (ec)
        return make_error(errc::kIo, "cannot list " + process.string() + "/task: " + ec.message());
    return reading;
}

}  // namespace ds
