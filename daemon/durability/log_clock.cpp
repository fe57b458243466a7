#include "daemon/durability/log_clock.h"

#include <algorithm>
#include <utility>

namespace ds::durability {

LogClock::LogClock(std::vector<LogSample> samples) {
    samples_.reserve(samples.size());
    for (const LogSample& sample : samples) {
        if (!samples_.empty() &&
            (sample.seconds < samples_.back().seconds || sample.bytes < samples_.back().bytes)) {
            continue;
        }
        samples_.push_back(sample);
    }
}

double LogClock::written_by(std::uint64_t end_offset) const {
    const auto reached = std::find_if(samples_.begin(), samples_.end(),
                                      [&](const LogSample& s) { return s.bytes >= end_offset; });
    return reached == samples_.end() ? kNever : reached->seconds;
}

double LogClock::crash_not_before(std::uint64_t log_offset) const {
    double latest = 0;
    for (const LogSample& sample : samples_) {
        if (sample.bytes >= log_offset) break;
        latest = sample.seconds;
    }
    return latest;
}

double LogClock::max_gap_s() const {
    double gap = 0;
    for (std::size_t i = 1; i < samples_.size(); ++i)
        gap = std::max(gap, samples_[i].seconds - samples_[i - 1].seconds);
    return gap;
}

Json LogClock::to_json() const {
    // The samples that bound some entry: each change of size and the sample
    // before it; the bounds computed from this series are the same.
    Json series = Json::array();
    for (std::size_t i = 0; i < samples_.size() && series.size() < kMaxStoredSamples; ++i) {
        const bool first_or_last = i == 0 || i + 1 == samples_.size();
        const bool changes = i > 0 && samples_[i].bytes != samples_[i - 1].bytes;
        const bool before_change =
            i + 1 < samples_.size() && samples_[i + 1].bytes != samples_[i].bytes;
        if (first_or_last || changes || before_change)
            series.push_back(Json::array({samples_[i].seconds, samples_[i].bytes}));
    }
    return Json{
        {"samples", samples_.size()}, {"max_gap_s", max_gap_s()}, {"series", std::move(series)}};
}

Result<LogClock> LogClock::from_json(const Json& clock) {
    const Json& series = json_read::field(clock, "series");
    if (!series.is_array())
        return make_error(errc::kInvalidArgument, "the clock has no \"series\" array");
    std::vector<LogSample> samples;
    for (std::size_t i = 0; i < series.size(); ++i) {
        const Json& pair = series[i];
        if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number() ||
            !pair[1].is_number_unsigned()) {
            return make_error(errc::kInvalidArgument, "clock series[" + std::to_string(i) +
                                                          "]: expected [seconds, log bytes], got " +
                                                          pair.dump());
        }
        samples.push_back({pair[0].get<double>(), pair[1].get<std::uint64_t>()});
    }
    return LogClock(std::move(samples));
}

}  // namespace ds::durability
