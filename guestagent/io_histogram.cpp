#include "guestagent/io_histogram.h"

#include <algorithm>
#include <cmath>

namespace ds::io {

LatencyHistogram::LatencyHistogram() : counts_(kBucketCount, 0) {}

void LatencyHistogram::merge(const LatencyHistogram& other) {
    for (unsigned i = 0; i < kBucketCount; ++i) counts_[i] += other.counts_[i];
    count_ += other.count_;
    sum_ += other.sum_;
    sum_squares_ += other.sum_squares_;
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
}

void LatencyHistogram::reset() {
    std::fill(counts_.begin(), counts_.end(), 0);
    count_ = 0;
    min_ = UINT64_MAX;
    max_ = 0;
    sum_ = 0;
    sum_squares_ = 0;
}

double LatencyHistogram::mean() const {
    return count_ ? sum_ / static_cast<double>(count_) : 0.0;
}

double LatencyHistogram::stddev() const {
    if (count_ == 0) return 0.0;
    const double mean_value = mean();
    const double variance = sum_squares_ / static_cast<double>(count_) - mean_value * mean_value;
    return variance > 0 ? std::sqrt(variance) : 0.0;
}

std::uint64_t LatencyHistogram::bucket_low(unsigned bucket) {
    constexpr unsigned kLinearLimit = 1u << kSubBucketBits;
    if (bucket < kLinearLimit) return bucket;
    const unsigned shift = (bucket >> kSubBucketBits) - 1;
    const std::uint64_t sub = (bucket & (kLinearLimit - 1)) + kLinearLimit;
    return sub << shift;
}

std::uint64_t LatencyHistogram::bucket_width(unsigned bucket) {
    constexpr unsigned kLinearLimit = 1u << kSubBucketBits;
    if (bucket < kLinearLimit) return 1;
    return 1ull << ((bucket >> kSubBucketBits) - 1);
}

std::optional<LatencyHistogram> LatencyHistogram::restore(std::span<const std::uint64_t> counts,
                                                          std::uint64_t min, std::uint64_t max,
                                                          double sum, double sum_squares) {
    if (counts.size() != kBucketCount) return std::nullopt;
    LatencyHistogram out;
    std::copy(counts.begin(), counts.end(), out.counts_.begin());
    for (const std::uint64_t count : counts) out.count_ += count;
    if (out.count_ > 0) {
        if (min > max) return std::nullopt;
        out.min_ = min;
        out.max_ = max;
        out.sum_ = sum;
        out.sum_squares_ = sum_squares;
    }
    return out;
}

std::uint64_t LatencyHistogram::percentile(double percent) const {
    if (count_ == 0) return 0;
    const double clamped = std::clamp(percent, 0.0, 100.0);
    std::uint64_t rank =
        static_cast<std::uint64_t>(std::ceil(clamped / 100.0 * static_cast<double>(count_)));
    rank = std::clamp<std::uint64_t>(rank, 1, count_);
    std::uint64_t seen = 0;
    for (unsigned bucket = 0; bucket < kBucketCount; ++bucket) {
        seen += counts_[bucket];
        if (seen < rank) continue;
        const std::uint64_t middle = bucket_low(bucket) + (bucket_width(bucket) - 1) / 2;
        return std::clamp(middle, min_, max_);
    }
    return max_;
}

}  // namespace ds::io
