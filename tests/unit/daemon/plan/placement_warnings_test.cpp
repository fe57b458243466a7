// The submission's warning when a sweep's rounds may spread over more hosts
// than leave a verdict per host (daemon/plan/submission.h).
#include <catch2/catch.hpp>

#include "daemon/plan/submission.h"

using namespace ds;

namespace {

std::string spec_with(const std::string& repetitions, const std::string& hypervisor_keys) {
    return "name = \"spread\"\nrepetitions = " + repetitions + "\n[hypervisor]\n" +
           hypervisor_keys +
           "\n[matrix]\ncache = [\"none\", \"writeback\"]\n[[workload]]\nkind = \"fio\"\n"
           "rw = \"randread\"\nbs = \"4k\"\nsize = \"16m\"\nruntime = \"1s\"\n";
}

std::vector<std::string> warnings_for(const std::string& spec, int host_count) {
    auto submission = plan_submission(spec, "spread.toml", SweepTimeouts{60, 900});
    INFO((submission.ok() ? "" : submission.error().message));
    REQUIRE(submission.ok());
    BackendCatalog catalog;
    for (int i = 0; i < host_count; ++i) {
        const std::string name = i == 0 ? "local" : "node" + std::to_string(i + 1);
        REQUIRE(catalog.add_host({.name = name, .kind = "libvirt", .detail = "test"}).ok());
    }
    return placement_warnings(submission.value(), catalog);
}

}  // namespace

TEST_CASE(
    "a sweep whose rounds may spread over hosts too thinly for a verdict is warned, with "
    "what to do",
    "[submission][placement]") {
    const auto warnings = warnings_for(spec_with("2", ""), 2);
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0] ==
          "the sweep's 2 round(s) may spread over 2 hosts (local, node2): each round runs on one "
          "host and compare keeps hosts apart, so each host gets about 1.0 round(s), and a "
          "verdict on a host needs 3 rounds there; ask for at least 6 repetitions, pin a host "
          "([hypervisor] hosts = [\"local\"]), or say identical_hosts = true if the hosts are "
          "alike");
    // Adaptive: the most rounds it may reach counts.
    CHECK(warnings_for(spec_with("{ min = 2, max = 5, ci = \"3%\" }", ""), 2).size() == 1);
    CHECK_THAT(warnings_for(spec_with("5", ""), 3).at(0),
               Catch::Contains("spread over 3 hosts (local, node2, node3)") &&
                   Catch::Contains("about 1.7 round(s)"));
}

TEST_CASE("no placement warning for one host, a pinned host, identical hosts or enough rounds",
          "[submission][placement]") {
    CHECK(warnings_for(spec_with("2", ""), 1).empty());
    CHECK(warnings_for(spec_with("2", "hosts = [\"node2\"]"), 2).empty());
    CHECK(warnings_for(spec_with("2", "identical_hosts = true"), 2).empty());
    CHECK(warnings_for(spec_with("6", ""), 2).empty());
    CHECK(warnings_for(spec_with("{ min = 2, max = 6, ci = \"3%\" }", ""), 2).empty());
}
