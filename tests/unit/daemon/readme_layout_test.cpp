// The README's layout table against the tree: the daemon's folders are named
// for the stages of a sweep, and a newcomer learns each one's job from that
// table, so every folder of daemon/ (and of daemon/backends/) has a row, and
// every row names a folder that exists.
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>
#include <string>

#include "unit/doc_tables.h"

namespace ds {
namespace {

namespace fs = std::filesystem;
using Folders = std::set<std::string>;

// The folders the layout table lists ("daemon/run/", with the slash).
Folders layout_rows() {
    Folders folders;
    const std::string readme = test::repository_text("README.md");
    for (const auto& row : test::table_rows(readme, {"folder", "what"})) {
        if (!row.empty()) folders.insert(test::unquoted(row[0]));
    }
    return folders;
}

// The folders directly below `parent` (a path from the repository root).
Folders child_folders(const std::string& parent) {
    Folders folders;
    for (const auto& entry : fs::directory_iterator(test::repository_root() / parent)) {
        if (entry.is_directory()) folders.insert(parent + entry.path().filename().string() + "/");
    }
    return folders;
}

TEST_CASE("every folder of daemon/ and daemon/backends/ has a row in the README's layout",
          "[docs]") {
    const Folders rows = layout_rows();
    REQUIRE(rows.count("daemon/") == 1);
    Folders expected = child_folders("daemon/");
    expected.merge(child_folders("daemon/backends/"));
    // Catch prints both sets, so a failure names each folder without a row.
    CHECK(test::missing_from(expected, rows) == Folders{});
}

TEST_CASE("every row of the README's layout names a folder that exists", "[docs]") {
    const Folders rows = layout_rows();
    REQUIRE(rows.size() > 10);
    Folders missing;
    for (const auto& folder : rows) {
        if (!fs::is_directory(test::repository_root() / folder)) missing.insert(folder);
    }
    CHECK(missing == Folders{});
}

}  // namespace
}  // namespace ds
