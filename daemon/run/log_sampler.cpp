#include "daemon/run/log_sampler.h"

#include <sys/stat.h>

#include <condition_variable>

namespace ds {

LogSampler::LogSampler(std::string log_path, std::chrono::milliseconds interval)
    : log_path_(std::move(log_path)),
      interval_(interval),
      origin_(std::chrono::steady_clock::now()) {
    sample_once();
    thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

LogSampler::~LogSampler() {
    (void)stop();
}

void LogSampler::sample_once() {
    struct stat info {};
    if (::stat(log_path_.c_str(), &info) != 0) return;
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - origin_).count();
    std::lock_guard lock(mutex_);
    samples_.push_back({seconds, static_cast<std::uint64_t>(info.st_size)});
}

void LogSampler::run(std::stop_token stop) {
    // stat() and push_back are all it does: a bad_alloc is the only thing
    // that could throw, and a sample lost to it only widens the bounds.
    std::mutex wait_mutex;
    std::condition_variable_any wake;
    while (!stop.stop_requested()) {
        std::unique_lock lock(wait_mutex);
        wake.wait_for(lock, stop, interval_, [] { return false; });
        if (stop.stop_requested()) break;
        try {
            sample_once();
        } catch (...) {
        }
    }
}

std::vector<durability::LogSample> LogSampler::stop() {
    if (thread_.joinable()) {
        thread_.request_stop();
        thread_.join();
        try {
            sample_once();
        } catch (...) {
        }
    }
    std::lock_guard lock(mutex_);
    return samples_;
}

}  // namespace ds
