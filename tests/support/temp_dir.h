// A fresh directory under the system temp dir for one test, removed with
// everything in it when the test ends.
#pragma once

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <string_view>

namespace ds::test {

class TempDir {
  public:
    explicit TempDir(std::string_view prefix = "disksweep-test")
        : TempDir(std::filesystem::temp_directory_path(), prefix) {}
    // Below `base` instead of the temp dir: e.g. /var/tmp, on disk, where
    // the temp dir may be a tmpfs.
    TempDir(const std::filesystem::path& base, std::string_view prefix) {
        std::string pattern = (base / (std::string(prefix) + "-XXXXXX")).string();
        REQUIRE(::mkdtemp(pattern.data()) != nullptr);
        path_ = pattern;
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::filesystem::path& path() const { return path_; }
    std::string file(const std::string& name) const { return (path_ / name).string(); }

  private:
    std::filesystem::path path_;
};

}  // namespace ds::test
