#include "daemon/backends/hypervisor/local_guest_files.h"

#include <cstdio>
#include <filesystem>

namespace ds {

std::string LocalGuestFiles::agent_socket(const std::string& vm_name) const {
    return directory + "/" + vm_name + ".agent.sock";
}

std::string LocalGuestFiles::console_log(const std::string& vm_name) const {
    return directory + "/" + vm_name + ".console.log";
}

std::string LocalGuestFiles::console_tail(const std::string& vm_name, std::size_t max_bytes) const {
    const std::string path = console_log(vm_name);
    std::error_code error;
    const auto size = std::filesystem::file_size(path, error);
    if (error || size == 0) return "";
    FILE* file = std::fopen(path.c_str(), "rb");
    if (!file) return "";
    const std::size_t take = std::min<std::size_t>(size, max_bytes);
    std::fseek(file, static_cast<long>(size - take), SEEK_SET);
    std::string text(take, '\0');
    text.resize(std::fread(text.data(), 1, take, file));
    std::fclose(file);
    return text;
}

bool LocalGuestFiles::prepare(const std::string& vm_name) const {
    std::error_code error;  // never throw: callers run on scheduler workers
    std::filesystem::create_directories(directory, error);
    remove_socket(vm_name);
    remove_console_log(vm_name);
    return std::filesystem::is_directory(directory, error);
}

void LocalGuestFiles::remove_socket(const std::string& vm_name) const {
    std::error_code error;
    std::filesystem::remove(agent_socket(vm_name), error);
}

void LocalGuestFiles::remove_console_log(const std::string& vm_name) const {
    std::error_code error;
    std::filesystem::remove(console_log(vm_name), error);
}

}  // namespace ds
