// Test support: a loop device over a sparse file, detached when the object
// goes, whatever the test did (a failed REQUIRE unwinds through it). For
// tests that give disksweep a real block device (root only).
#pragma once

#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/process.h"

namespace ds::test {

class LoopDevice {
  public:
    // Creates `backing_file` sparse with `bytes` and attaches it to a free
    // loop device; path() is "" and error() says why when that failed.
    LoopDevice(const std::filesystem::path& backing_file, std::uintmax_t bytes)
        : backing_file_(backing_file.string()) {
        { std::ofstream create(backing_file); }
        std::filesystem::resize_file(backing_file, bytes);
        auto attached = runner_.run({"losetup", "--find", "--show", backing_file_}, kTimeout);
        if (attached.ok() && attached->exit_code == 0) {
            path_ = attached->stdout_text.substr(0, attached->stdout_text.find('\n'));
        } else {
            error_ = attached.ok() ? attached->stderr_text : attached.error().message;
        }
    }
    ~LoopDevice() {
        if (!path_.empty()) (void)runner_.run({"losetup", "-d", path_}, kTimeout);
    }
    LoopDevice(const LoopDevice&) = delete;
    LoopDevice& operator=(const LoopDevice&) = delete;

    const std::string& path() const { return path_; }
    const std::string& error() const { return error_; }
    const std::string& backing_file() const { return backing_file_; }
    // The bytes the backing file holds allocated (st_blocks × 512).
    std::uint64_t allocated_bytes() const {
        struct stat info {};
        if (::stat(backing_file_.c_str(), &info) != 0) return 0;
        return static_cast<std::uint64_t>(info.st_blocks) * 512u;
    }

  private:
    static constexpr std::chrono::seconds kTimeout{60};
    RealProcessRunner runner_;
    std::string backing_file_;
    std::string path_;
    std::string error_;
};

}  // namespace ds::test
