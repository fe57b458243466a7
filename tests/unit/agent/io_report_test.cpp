// The statistics a job process sends its parent: encode_job_stats and
// decode_job_stats round-trip exactly, and damaged bytes are refused with a
// reason, never misread.
#include "guestagent/io_report.h"

#include <catch2/catch.hpp>
#include <string>

using ds::io::decode_job_stats;
using ds::io::encode_job_stats;
using ds::io::JobStats;

namespace {

JobStats sample_stats() {
    JobStats stats;
    stats.job_index = 3;
    stats.runtime_ns = 2'500'000'000;
    stats.elapsed_ns = 2'600'000'000;
    stats.user_cpu_s = 0.25;
    stats.system_cpu_s = 1.75;
    stats.context_switches = 42;
    for (int d = 0; d < ds::io::kIoDirections; ++d) {
        auto& direction = stats.directions[d];
        for (std::uint64_t i = 0; i < 1000; ++i) {
            direction.clat.record(1000 + i * (d + 1) * 37);
            ++direction.ios;
            direction.bytes += 4096;
        }
        direction.short_ios = static_cast<std::uint64_t>(d);
        direction.iops_per_second = {400.0 + d, 600.5};
        direction.bw_bytes_per_second = {400.0 * 4096, 600.5 * 4096};
    }
    return stats;
}

}  // namespace

TEST_CASE("io report: job statistics survive encoding exactly", "[io_report]") {
    const JobStats original = sample_stats();
    auto decoded = decode_job_stats(encode_job_stats(original));
    REQUIRE(decoded.ok());
    CHECK(decoded->job_index == 3);
    CHECK(decoded->runtime_ns == original.runtime_ns);
    CHECK(decoded->elapsed_ns == original.elapsed_ns);
    CHECK(decoded->user_cpu_s == original.user_cpu_s);
    CHECK(decoded->system_cpu_s == original.system_cpu_s);
    CHECK(decoded->context_switches == 42);
    for (int d = 0; d < ds::io::kIoDirections; ++d) {
        INFO(d);
        const auto& from = original.directions[d];
        const auto& to = decoded->directions[d];
        CHECK(to.ios == from.ios);
        CHECK(to.bytes == from.bytes);
        CHECK(to.short_ios == from.short_ios);
        CHECK(to.iops_per_second == from.iops_per_second);
        CHECK(to.bw_bytes_per_second == from.bw_bytes_per_second);
        CHECK(to.clat.count() == from.clat.count());
        CHECK(to.clat.min() == from.clat.min());
        CHECK(to.clat.max() == from.clat.max());
        CHECK(to.clat.mean() == from.clat.mean());
        for (double percent : ds::io::kReportedPercentiles)
            CHECK(to.clat.percentile(percent) == from.clat.percentile(percent));
    }
    // Empty statistics (a job stopped before its first I/O) too.
    auto empty = decode_job_stats(encode_job_stats(JobStats{}));
    REQUIRE(empty.ok());
    CHECK(empty->directions[0].ios == 0);
    CHECK(empty->directions[1].clat.count() == 0);
}

TEST_CASE("io report: damaged job statistics are refused", "[io_report]") {
    const std::string good = encode_job_stats(sample_stats());
    // Every truncation is refused, whatever field it cuts.
    for (std::size_t length = 0; length < good.size(); length += 1 + length / 16) {
        INFO(length);
        auto decoded = decode_job_stats(std::string_view(good).substr(0, length));
        REQUIRE_FALSE(decoded.ok());
        CHECK(decoded.error().code == ds::errc::kIo);
        CHECK(decoded.error().message.find("unreadable") != std::string::npos);
    }
    auto trailing = decode_job_stats(good + "x");
    REQUIRE_FALSE(trailing.ok());
    CHECK(trailing.error().message.find("trailing bytes") != std::string::npos);
    std::string wrong_magic = good;
    wrong_magic[0] ^= 1;
    auto magic = decode_job_stats(wrong_magic);
    REQUIRE_FALSE(magic.ok());
    CHECK(magic.error().message.find("wrong magic") != std::string::npos);
}
