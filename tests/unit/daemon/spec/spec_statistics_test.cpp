// The spec keys of the statistics (issue 10): baseline, adaptive
// repetitions, practical_difference; and plan_round.
#include <catch2/catch.hpp>

#include "daemon/plan/expand.h"
#include "daemon/spec/spec.h"

namespace ds {
namespace {

constexpr const char* kMatrix =
    "[matrix]\ncache = [\"none\", \"unsafe\"]\nfilesystem = [\"ext4\", \"btrfs\"]\n";
constexpr const char* kWorkload = "[[workload]]\nkind = \"fio\"\n";

SweepSpec parse_ok(const std::string& text) {
    Result<SweepSpec> spec = parse_sweep_spec(text, "t.toml");
    if (!spec.ok()) FAIL(spec.error().message);
    return std::move(spec).value();
}

std::string parse_error(const std::string& text) {
    Result<SweepSpec> spec = parse_sweep_spec(text, "t.toml");
    REQUIRE_FALSE(spec.ok());
    return spec.error().message;
}

TEST_CASE("repetitions: an integer is min = max, not adaptive", "[spec][statistics]") {
    const SweepSpec spec = parse_ok(std::string("name = \"t\"\nrepetitions = 4\n") + kWorkload);
    CHECK(spec.repetitions == 4);
    CHECK(spec.max_repetitions == 4);
    CHECK(spec.ci_target == 0);
    CHECK(spec.verdict_rules.practical_difference == Approx(0.02));
}

TEST_CASE("repetitions: a table makes them adaptive", "[spec][statistics]") {
    const SweepSpec spec =
        parse_ok(std::string("name = \"t\"\nrepetitions = { min = 3, max = 10, ci = \"3%\" }\n"
                             "practical_difference = \"5%\"\n") +
                 kWorkload);
    CHECK(spec.repetitions == 3);
    CHECK(spec.max_repetitions == 10);
    CHECK(spec.ci_target == Approx(0.03));
    CHECK(spec.verdict_rules.practical_difference == Approx(0.05));
    // Only `min` rounds are planned up front.
    Result<SweepPlan> plan = expand_sweep(spec);
    REQUIRE(plan.ok());
    CHECK(plan->runs.size() == 3);
}

TEST_CASE("repetitions and percentages: errors name the key and its position",
          "[spec][statistics]") {
    CHECK(parse_error(
              std::string("name = \"t\"\nrepetitions = { min = 5, max = 3, ci = \"3%\" }\n") +
              kWorkload) == "t.toml:2:32: 'repetitions.max' (3) is below 'repetitions.min' (5)");
    CHECK(parse_error(std::string("name = \"t\"\nrepetitions = { min = 3, max = 5 }\n") +
                      kWorkload) ==
          "t.toml:2:15: 'repetitions' as a table needs min, max and ci, e.g. { min = 3, max = "
          "10, ci = \"3%\" }");
    CHECK(
        parse_error(std::string("name = \"t\"\nrepetitions = { min = 3, max = 5, ci = \"0%\" }\n") +
                    kWorkload) == "t.toml:2:40: 'repetitions.ci' must be above 0%");
    CHECK(parse_error(std::string("name = \"t\"\npractical_difference = \"2\"\n") + kWorkload) ==
          "t.toml:2:24: 'practical_difference' must be a percentage from \"0%\" to below \"100%\", "
          "like \"2%\", not '2'");
    CHECK(parse_error(std::string("name = \"t\"\npractical_difference = 0.02\n") + kWorkload) ==
          "t.toml:2:24: 'practical_difference' must be a percentage string like \"2%\", not a "
          "float");
}

TEST_CASE("baseline: selects exactly one configuration", "[spec][statistics]") {
    const SweepSpec spec = parse_ok(std::string("name = \"t\"\nbaseline = { cache = \"unsafe\", "
                                                "filesystem = \"btrfs\" }\n") +
                                    kMatrix + kWorkload);
    CHECK(spec.baseline.at("cache") == "unsafe");
    Result<SweepPlan> plan = expand_sweep(spec);
    REQUIRE(plan.ok());
    REQUIRE(plan->baseline_config >= 0);
    const StorageConfig& baseline = plan->configs[static_cast<std::size_t>(plan->baseline_config)];
    CHECK(baseline.cache == CacheMode::kUnsafe);
    CHECK(baseline.filesystem.label == "btrfs");

    // Without a baseline key: none chosen by the spec (compare uses the first).
    Result<SweepPlan> without =
        expand_sweep(parse_ok(std::string("name = \"t\"\n") + kMatrix + kWorkload));
    REQUIRE(without.ok());
    CHECK(without->baseline_config == -1);
}

TEST_CASE("baseline: errors name the key and its line", "[spec][statistics]") {
    // A value the matrix does not list.
    CHECK(parse_error(std::string("name = \"t\"\nbaseline = { cache = \"writeback\" }\n") +
                      kMatrix + kWorkload) ==
          "t.toml:2:22: baseline.cache = 'writeback' is not a value of the matrix; [matrix] cache "
          "has: none, unsafe");
    // Not an axis.
    CHECK(parse_error(std::string("name = \"t\"\nbaseline = { cahce = \"none\" }\n") + kMatrix +
                      kWorkload)
              .starts_with("t.toml:2:14: unknown axis 'cahce' in 'baseline'"));
    // Selects two configurations (filesystem varies and is not named).
    const SweepSpec ambiguous = parse_ok(
        std::string("name = \"t\"\nbaseline = { cache = \"none\" }\n") + kMatrix + kWorkload);
    Result<SweepPlan> plan = expand_sweep(ambiguous);
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.error().message ==
          "t.toml:2:12: baseline = { cache = \"none\" } selects 2 configurations; name a value of "
          "each varying axis so that it selects exactly one");
}

TEST_CASE("plan_round: a later round is the one expand_sweep would plan", "[spec][statistics]") {
    SweepSpec spec = parse_ok(std::string("name = \"t\"\nrepetitions = 4\n") + kMatrix + kWorkload);
    Result<SweepPlan> full = expand_sweep(spec);
    REQUIRE(full.ok());
    spec.repetitions = 2;  // as submitted adaptively with min = 2
    Result<std::vector<PlannedRun>> round = plan_round(spec, 3, 100);
    REQUIRE(round.ok());
    REQUIRE(round->size() == 4);
    for (std::size_t i = 0; i < 4; ++i) {
        const PlannedRun& planned = full->runs[12 + i];
        CHECK((*round)[i].repetition == 3);
        CHECK((*round)[i].config_index == planned.config_index);
        CHECK((*round)[i].sequence == 100 + static_cast<int>(i));
    }
}

}  // namespace
}  // namespace ds
