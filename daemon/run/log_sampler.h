// The write log's size against the host's clock while a durability run's
// guest runs (daemon/durability/log_clock.h says what the samples are for
// and how exact they are). One thread stats the log every `interval` from
// start() to stop(); nothing it does can throw out of it.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "daemon/durability/log_clock.h"

namespace ds {

class LogSampler {
  public:
    static constexpr std::chrono::milliseconds kInterval{100};

    // Starts sampling `log_path` now: time 0 is this call (the mark).
    LogSampler(std::string log_path, std::chrono::milliseconds interval = kInterval);
    ~LogSampler();
    LogSampler(const LogSampler&) = delete;
    LogSampler& operator=(const LogSampler&) = delete;

    // Stops the thread after one last sample and returns every sample (a
    // size that could not be read is not a sample). Idempotent.
    std::vector<durability::LogSample> stop();

  private:
    void sample_once();
    void run(std::stop_token stop);

    std::string log_path_;
    std::chrono::milliseconds interval_;
    std::chrono::steady_clock::time_point origin_;
    std::mutex mutex_;
    std::vector<durability::LogSample> samples_;
    std::jthread thread_;
};

}  // namespace ds
