// Completion-latency histogram of the native I/O engine: log-linear buckets
// (the HdrHistogram idea). Values below 2^kSubBucketBits ns are counted
// exactly; above, every power of two is split into 2^kSubBucketBits equal
// buckets, so a bucket is at most 1/128 of its values wide and a reported
// percentile is within 0.4% of the exact one. Fixed memory (~38 KiB), O(1)
// record, exact merge.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace ds::io {

class LatencyHistogram {
  public:
    static constexpr unsigned kSubBucketBits = 7;
    // Largest value kept in its own bucket: 2^44 ns (about 4.9 hours); larger
    // values land in the last bucket (min/max/mean stay exact).
    static constexpr unsigned kMaxValueBits = 44;
    static constexpr unsigned kBucketCount = (kMaxValueBits - kSubBucketBits + 1) << kSubBucketBits;
    // Bound on |reported - exact| / exact for percentile().
    static constexpr double kMaxRelativeError = 1.0 / (2 << kSubBucketBits);

    LatencyHistogram();

    void record(std::uint64_t value_ns) {
        ++counts_[bucket_of(value_ns)];
        ++count_;
        sum_ += static_cast<double>(value_ns);
        sum_squares_ += static_cast<double>(value_ns) * static_cast<double>(value_ns);
        if (value_ns < min_) min_ = value_ns;
        if (value_ns > max_) max_ = value_ns;
    }

    // Adds every value recorded in `other`.
    void merge(const LatencyHistogram& other);
    void reset();

    std::uint64_t count() const { return count_; }
    std::uint64_t min() const { return count_ ? min_ : 0; }
    std::uint64_t max() const { return max_; }
    double mean() const;
    double stddev() const;  // population standard deviation

    // The value at rank ceil(percent/100 * count) (at least 1) of the sorted
    // values, up to the bucket resolution: the midpoint of the bucket that
    // holds that rank, clamped to [min, max]. 0 when empty. percent in
    // [0, 100].
    std::uint64_t percentile(double percent) const;

    // The bucket index of a value, and the smallest value and width of a
    // bucket (exposed for tests).
    static unsigned bucket_of(std::uint64_t value) {
        constexpr std::uint64_t kLinearLimit = 1ull << kSubBucketBits;
        if (value < kLinearLimit) return static_cast<unsigned>(value);
        const unsigned top_bit = 63u - static_cast<unsigned>(__builtin_clzll(value));
        if (top_bit >= kMaxValueBits) return kBucketCount - 1;
        const unsigned shift = top_bit - kSubBucketBits;
        return ((shift + 1) << kSubBucketBits) +
               static_cast<unsigned>((value >> shift) - kLinearLimit);
    }
    static std::uint64_t bucket_low(unsigned bucket);
    static std::uint64_t bucket_width(unsigned bucket);

    // The raw state, so a histogram can cross a process boundary (a job run
    // as its own process sends its statistics to the parent, io_report.h):
    // every bucket's count (kBucketCount of them) and the exact sums.
    std::span<const std::uint64_t> counts() const { return counts_; }
    double sum() const { return sum_; }
    double sum_squares() const { return sum_squares_; }

    // The histogram whose counts(), min(), max(), sum() and sum_squares()
    // were these. nullopt when they cannot be one: not kBucketCount counts,
    // or min > max with values recorded.
    static std::optional<LatencyHistogram> restore(std::span<const std::uint64_t> counts,
                                                   std::uint64_t min, std::uint64_t max, double sum,
                                                   double sum_squares);

  private:
    std::vector<std::uint64_t> counts_;  // kBucketCount entries
    std::uint64_t count_ = 0;
    std::uint64_t min_ = UINT64_MAX;
    std::uint64_t max_ = 0;
    double sum_ = 0;
    double sum_squares_ = 0;
};

}  // namespace ds::io
