// The guest's CPU time from /proc/stat.
#include "guestagent/cpu_stat.h"

#include <catch2/catch.hpp>

namespace ds::agent {
namespace {

TEST_CASE("cpu stat: the all-CPU line's first eight counters", "[cpu_stat]") {
    const std::optional<CpuTicks> ticks =
        parse_proc_stat_cpu("cpu  10 1 20 300 4 5 6 7 0 0\ncpu0 10 1 20 300 4 5 6 7 0 0\n");
    REQUIRE(ticks);
    CHECK(*ticks == CpuTicks{10, 1, 20, 300, 4, 5, 6, 7});
    CHECK_FALSE(parse_proc_stat_cpu("cpu0 1 2 3 4 5 6 7 8\n"));
    CHECK_FALSE(parse_proc_stat_cpu("cpu  1 2 3\n"));
    CHECK(read_cpu_ticks("/proc").has_value());
}

TEST_CASE("cpu stat: the difference in seconds, a counter going back counts 0", "[cpu_stat]") {
    const Json seconds =
        cpu_seconds_between({10, 0, 20, 300, 4, 5, 6, 7}, {60, 0, 45, 400, 4, 6, 6, 3}, 100);
    CHECK(seconds == Json{{"user_s", 0.5},
                          {"nice_s", 0.0},
                          {"system_s", 0.25},
                          {"idle_s", 1.0},
                          {"iowait_s", 0.0},
                          {"irq_s", 0.01},
                          {"softirq_s", 0.0},
                          {"steal_s", 0.0}});
}

}  // namespace
}  // namespace ds::agent
