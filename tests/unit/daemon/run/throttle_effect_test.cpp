#include "daemon/run/throttle_effect.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

StorageConfig throttled(std::uint64_t iops, std::uint64_t bytes_per_second) {
    StorageConfig config;
    config.iops_limit = iops;
    config.bandwidth_limit = bytes_per_second;
    return config;
}

constexpr std::uint64_t kMiB = 1 << 20;
constexpr WorkloadIo kDirect = WorkloadIo::kDirect;

}  // namespace

TEST_CASE("throttle effect: the rates are the sum of both directions", "[throttle_effect]") {
    const ThrottleRates rates = throttle_rates_of({{"read_iops", 240.0},
                                                   {"write_iops", 250.0},
                                                   {"read_bw_mib_s", 1.0},
                                                   {"write_bw_mib_s", 2.0}});
    CHECK(rates.iops == 490.0);
    CHECK(rates.bytes_per_second == 3.0 * kMiB);
    CHECK(throttle_rates_of({{"write_iops", 12.0}}).iops == 12.0);
    CHECK_FALSE(throttle_rates_of({{"elapsed_s", 3.0}}).iops);
    CHECK_FALSE(throttle_rates_of({{"read_iops", -5}}).iops);
}

TEST_CASE("throttle effect: within its limits, and near them against the unthrottled twin",
          "[throttle_effect]") {
    const ThrottleVerdict verdict = judge_throttle_effect(
        throttled(500, 8 * kMiB), kDirect, {495.0, 7.9 * kMiB}, ThrottleRates{1400.0, 20.0 * kMiB});
    CHECK(verdict.mismatches.empty());
    CHECK(verdict.record["iops_limit"]["exceeded"] == false);
    CHECK(verdict.record["iops_limit"]["lower"]["checked"] == true);
    CHECK(verdict.record["bandwidth_limit"]["reference"] == 20.0 * kMiB);
}

TEST_CASE("throttle effect: a limit not in force shows as a rate above it", "[throttle_effect]") {
    const ThrottleVerdict verdict = judge_throttle_effect(throttled(500, 8 * kMiB), kDirect,
                                                          {1300.0, 7.0 * kMiB}, std::nullopt);
    REQUIRE(verdict.mismatches.size() == 1);
    CHECK_THAT(verdict.mismatches[0],
               Catch::StartsWith("iops_limit: requested 500") && Catch::Contains("1300"));
    CHECK(verdict.record["iops_limit"]["lower"]["checked"] == false);
}

TEST_CASE("throttle effect: a lower limit in force is caught against the unthrottled twin",
          "[throttle_effect]") {
    // The injected fault: QEMU's group holds 250 where the config says 500.
    const ThrottleVerdict verdict = judge_throttle_effect(
        throttled(500, 8 * kMiB), kDirect, {250.0, 4.0 * kMiB}, ThrottleRates{1400.0, 20.0 * kMiB});
    REQUIRE(verdict.mismatches.size() == 2);
    CHECK_THAT(verdict.mismatches[0], Catch::Contains("a lower limit is in force"));
    // A slow disk is not a lower limit: the twin reached no more, so the
    // limit does not bind and that half is not checked.
    const ThrottleVerdict slow = judge_throttle_effect(
        throttled(500, 8 * kMiB), kDirect, {250.0, 4.0 * kMiB}, ThrottleRates{600.0, 4.2 * kMiB});
    CHECK(slow.mismatches.empty());
    CHECK(slow.record["iops_limit"]["lower"]["checked"] == false);
    CHECK_THAT(slow.record["iops_limit"]["lower"]["reason"].get<std::string>(),
               Catch::Contains("does not bind"));
}

TEST_CASE("throttle effect: no limits, no verdict, and no rate, not checked", "[throttle_effect]") {
    CHECK(judge_throttle_effect(StorageConfig{}, kDirect, {100.0, 1.0}, std::nullopt)
              .record.is_null());
    const ThrottleVerdict no_rate =
        judge_throttle_effect(throttled(500, 8 * kMiB), kDirect, {}, std::nullopt);
    CHECK(no_rate.mismatches.empty());
    CHECK(no_rate.record["iops_limit"]["checked"] == false);
    CHECK(unthrottled_twin(throttled(500, 8 * kMiB)).iops_limit == std::nullopt);
    // Buffered I/O's rate is the page cache's: far over the limit, and no
    // proof of anything.
    const ThrottleVerdict buffered = judge_throttle_effect(
        throttled(500, 8 * kMiB), WorkloadIo::kBuffered, {90000.0, 400.0 * kMiB}, std::nullopt);
    CHECK(buffered.mismatches.empty());
    CHECK_THAT(buffered.record["iops_limit"]["reason"].get<std::string>(),
               Catch::Contains("buffered"));
}

}  // namespace ds
