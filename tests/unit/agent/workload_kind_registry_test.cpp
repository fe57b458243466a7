// The agent's runners and the common workload kinds name the same kinds: a
// kind with a descriptor but no runner would pass the spec parser and fail
// in every guest; a runner without a descriptor could never be asked for.
#include <catch2/catch.hpp>
#include <string_view>
#include <vector>

#include "common/workload_kind.h"
#include "guestagent/workload_kinds.h"

namespace ds {

TEST_CASE("the agent's runner registry and the workload kinds name the same kinds",
          "[workload_kinds]") {
    std::vector<std::string_view> runners;
    for (const auto& entry : agent::workload_kind_table()) runners.push_back(entry.kind);
    CHECK(runners == workload_kind_names());
}

TEST_CASE("every workload kind has its parsers and a primary metric", "[workload_kinds]") {
    for (const WorkloadKind& kind : workload_kinds()) {
        INFO(kind.name);
        CHECK(kind.metrics != nullptr);
        CHECK(kind.series != nullptr);
        CHECK_FALSE(kind.primary_metric.name.empty());
        CHECK(find_workload_kind(kind.name) == &kind);
        CHECK(agent::find_workload_kind_entry(kind.name) != nullptr);
    }
    CHECK(find_workload_kind("tpcc") == nullptr);
}

}  // namespace ds
