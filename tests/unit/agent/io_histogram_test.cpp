// The engine's log-linear latency histogram against exact sorted
// percentiles.
#include "guestagent/io_histogram.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

using ds::io::LatencyHistogram;

namespace {

// The value at rank ceil(p/100 * n) (at least 1) of sorted `values`.
std::uint64_t exact_percentile(const std::vector<std::uint64_t>& sorted, double percent) {
    auto rank = static_cast<std::size_t>(std::ceil(percent / 100.0 * sorted.size()));
    rank = std::clamp<std::size_t>(rank, 1, sorted.size());
    return sorted[rank - 1];
}

}  // namespace

TEST_CASE("histogram: buckets tile the value range with bounded width", "[io_histogram]") {
    unsigned previous = 0;
    for (std::uint64_t value = 0; value < (1u << 20); value += 1 + value / 300) {
        const unsigned bucket = LatencyHistogram::bucket_of(value);
        INFO(value);
        REQUIRE(bucket < LatencyHistogram::kBucketCount);
        CHECK(bucket >= previous);
        CHECK(LatencyHistogram::bucket_low(bucket) <= value);
        CHECK(value <
              LatencyHistogram::bucket_low(bucket) + LatencyHistogram::bucket_width(bucket));
        if (value >= 128) {
            CHECK(static_cast<double>(LatencyHistogram::bucket_width(bucket)) /
                      static_cast<double>(LatencyHistogram::bucket_low(bucket)) <=
                  1.0 / 128);
        }
        previous = bucket;
    }
    // Exact below 128 ns; the top bucket takes everything from 2^44 ns on.
    CHECK(LatencyHistogram::bucket_width(LatencyHistogram::bucket_of(127)) == 1);
    CHECK(LatencyHistogram::bucket_of(UINT64_MAX) == LatencyHistogram::kBucketCount - 1);
    CHECK(LatencyHistogram::bucket_of((1ull << 44) - 1) == LatencyHistogram::kBucketCount - 1);
}

TEST_CASE("histogram: percentiles are within the stated relative error of the exact ones",
          "[io_histogram]") {
    std::mt19937_64 generator(7);
    // Latency-like: log-normal around 100 us with a heavy tail, plus some
    // exact small values.
    std::lognormal_distribution<double> latency(std::log(100000.0), 1.2);
    std::vector<std::uint64_t> values;
    LatencyHistogram histogram;
    for (int i = 0; i < 200000; ++i) {
        const auto value = i % 50 == 0 ? static_cast<std::uint64_t>(i % 97)
                                       : static_cast<std::uint64_t>(latency(generator));
        values.push_back(value);
        histogram.record(value);
    }
    std::sort(values.begin(), values.end());
    std::uint64_t previous = 0;
    for (double percent : {0.0, 0.5, 1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9,
                           99.95, 99.99, 99.999, 100.0}) {
        const auto exact = exact_percentile(values, percent);
        const auto reported = histogram.percentile(percent);
        INFO("p" << percent << " exact " << exact << " reported " << reported);
        CHECK(std::abs(static_cast<double>(reported) - static_cast<double>(exact)) <=
              LatencyHistogram::kMaxRelativeError * static_cast<double>(exact));
        CHECK(reported >= previous);  // monotone in the percentile
        previous = reported;
    }
    CHECK(histogram.count() == values.size());
    CHECK(histogram.min() == values.front());
    CHECK(histogram.max() == values.back());
    CHECK(histogram.percentile(100) == values.back());
    double sum = 0;
    for (auto value : values) sum += static_cast<double>(value);
    CHECK(histogram.mean() == Approx(sum / static_cast<double>(values.size())).epsilon(1e-9));
}

TEST_CASE("histogram: merging equals recording everything in one", "[io_histogram]") {
    LatencyHistogram a, b, all;
    std::mt19937_64 generator(11);
    std::uniform_int_distribution<std::uint64_t> small(1000, 5000), large(1000000, 9000000);
    for (int i = 0; i < 10000; ++i) {
        const auto x = small(generator), y = large(generator);
        a.record(x);
        b.record(y);
        all.record(x);
        all.record(y);
    }
    a.merge(b);
    CHECK(a.count() == all.count());
    CHECK(a.min() == all.min());
    CHECK(a.max() == all.max());
    CHECK(a.mean() == Approx(all.mean()));
    CHECK(a.stddev() == Approx(all.stddev()));
    for (double percent : {1.0, 50.0, 90.0, 99.0, 99.9})
        CHECK(a.percentile(percent) == all.percentile(percent));
    // Half the values are >= 1 ms: p50 is still a small one (up to the
    // bucket resolution), p51 a large one.
    CHECK(a.percentile(50) <= 5000 * (1 + LatencyHistogram::kMaxRelativeError));
    CHECK(a.percentile(51) >= 1000000);
}

TEST_CASE("histogram: empty, constant and reset", "[io_histogram]") {
    LatencyHistogram histogram;
    CHECK(histogram.count() == 0);
    CHECK(histogram.percentile(99) == 0);
    CHECK(histogram.mean() == 0);
    CHECK(histogram.min() == 0);
    for (int i = 0; i < 100; ++i) histogram.record(123456);
    CHECK(histogram.percentile(1) == 123456);  // clamped to [min, max]
    CHECK(histogram.percentile(99.99) == 123456);
    CHECK(histogram.stddev() == Approx(0).margin(1.0));
    histogram.reset();
    CHECK(histogram.count() == 0);
    CHECK(histogram.max() == 0);
}

TEST_CASE("histogram: restore rebuilds a histogram from its raw state", "[io_histogram]") {
    LatencyHistogram original;
    std::mt19937_64 generator(5);
    std::uniform_int_distribution<std::uint64_t> values(100, 50000000);
    for (int i = 0; i < 5000; ++i) original.record(values(generator));
    const auto copy = LatencyHistogram::restore(original.counts(), original.min(), original.max(),
                                                original.sum(), original.sum_squares());
    REQUIRE(copy.has_value());
    CHECK(copy->count() == original.count());
    CHECK(copy->min() == original.min());
    CHECK(copy->max() == original.max());
    CHECK(copy->mean() == original.mean());
    CHECK(copy->stddev() == original.stddev());
    for (double percent : {1.0, 50.0, 99.0, 99.99})
        CHECK(copy->percentile(percent) == original.percentile(percent));

    const LatencyHistogram empty;
    const auto empty_copy =
        LatencyHistogram::restore(empty.counts(), empty.min(), empty.max(), 0, 0);
    REQUIRE(empty_copy.has_value());
    CHECK(empty_copy->count() == 0);
    CHECK(empty_copy->min() == 0);

    // Not a histogram: the wrong number of buckets, or min above max.
    const std::vector<std::uint64_t> too_few(10, 1);
    CHECK_FALSE(LatencyHistogram::restore(too_few, 1, 2, 3, 4).has_value());
    CHECK_FALSE(LatencyHistogram::restore(original.counts(), 9, 1, 0, 0).has_value());
}
