// The recorded outputs in tests/data (real fio, MariaDB and sysbench runs;
// each folder's README says how they were made), read by path below it.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace ds::test {

// The repository's root, absolute and in normal form (test_data.cpp: from
// CMake, not from __FILE__, which ccache's base_dir makes relative; see
// scripts/ccache.sh).
std::filesystem::path repository_root();

inline std::filesystem::path test_data_dir() {
    return repository_root() / "tests" / "data";
}

// The whole file, or "" when it cannot be read (the caller's checks then fail
// on the empty text, naming what they expected).
inline std::string test_data_text(const std::filesystem::path& relative) {
    std::ifstream in(test_data_dir() / relative, std::ios::binary);
    std::stringstream content;
    content << in.rdbuf();
    return content.str();
}

}  // namespace ds::test
