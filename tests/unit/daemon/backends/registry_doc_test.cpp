// docs/spec.md's table of storages against the backend registry: a row per
// storage kind this disksweepd has, spelled with its pool syntax, naming
// exactly the hypervisor kinds that attach the disks it makes, how its
// allocation is measured for the discard check and how it clones a golden
// volume.
#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "daemon/backends/registry.h"
#include "unit/doc_tables.h"

namespace ds {
namespace {

using Lines = std::set<std::string>;

// How the doc names a hypervisor kind: `libvirt`, or "host baselines" for
// the kind that is none.
std::string doc_name(std::string_view hypervisor) {
    if (hypervisor == kHostBaselineHypervisor) return "host baselines";
    return "`" + std::string(hypervisor) + "`";
}

// "`KIND[:POOL]`: HYPERVISOR, ..." per storage kind of the registry.
Lines registry_storages() {
    Lines lines;
    for (const auto& storage : storage_kinds()) {
        std::string line =
            "`" + std::string(storage.kind) +
            (storage.pool_syntax.empty() ? "" : ":" + std::string(storage.pool_syntax)) + "`:";
        std::string separator = " ";
        for (const auto& hypervisor : hypervisor_kinds()) {
            for (DiskSourceKind attached : hypervisor.attaches) {
                if (attached != storage.produces) continue;
                line += separator + doc_name(hypervisor.name);
                separator = ", ";
            }
        }
        line += "; " + (storage.allocation.empty() ? std::string("not measured")
                                                   : std::string(storage.allocation));
        line += "; " + (storage.golden_clone.empty() ? std::string("cannot")
                                                     : std::string(storage.golden_clone));
        lines.insert(line);
    }
    return lines;
}

// The same from the doc's `| storage | the disk | pool | hypervisors |
// discard measured by |` table.
Lines doc_storages() {
    const auto matrix = test::doc_sections(test::repository_text("docs/spec.md"), 3, "Storages");
    REQUIRE(matrix.size() == 1);
    Lines lines;
    for (const auto& row :
         test::table_rows(matrix[0].body, {"storage", "the disk", "pool", "hypervisors",
                                           "discard measured by", "golden volume clone"})) {
        REQUIRE(row.size() == 6);
        lines.insert(row[0] + ": " + row[3] + "; " + row[4] + "; " + row[5]);
    }
    return lines;
}

}  // namespace

TEST_CASE("docs/spec.md lists every storage kind with the hypervisors that attach it",
          "[registry][docs]") {
    const Lines registry = registry_storages();
    const Lines doc = doc_storages();
    REQUIRE(registry.size() >= 4);
    CHECK(test::missing_from(registry, doc) == Lines{});
    CHECK(test::missing_from(doc, registry) == Lines{});
}

}  // namespace ds
