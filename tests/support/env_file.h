// The env files the test harnesses write into their DIR (ceph-up.sh,
// libvirtd-up.sh, remote-libvirtd.sh): KEY=VALUE lines, no quoting.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace ds::test {

// KEY=VALUE lines -> {KEY: VALUE}; {} when the file cannot be read.
inline std::map<std::string, std::string> read_assignments(const std::filesystem::path& file) {
    std::map<std::string, std::string> values;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
        const std::size_t equals = line.find('=');
        if (equals != std::string::npos) values[line.substr(0, equals)] = line.substr(equals + 1);
    }
    return values;
}

}  // namespace ds::test
