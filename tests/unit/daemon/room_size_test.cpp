// Smaller rooms (issue 35): a production source file holds one job, small
// enough to read whole, so no .cpp of common/, daemon/, guestagent/ or
// hostctl/ is over kMaxLines lines. Data tables (a row per thing) and the
// schema's migrations (append-only) grow with what they list, not with what
// they do: they are the allow-list below, each with its reason. The test
// counts the lines of every production .cpp and names each one over.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>

#include "unit/doc_tables.h"

namespace ds {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxLines = 800;

// The folders of the programs and their libraries (bench/, fuzz/ and tests/
// are not production code).
constexpr std::string_view kProductionFolders[] = {"common/", "daemon/", "guestagent/", "hostctl/"};

// Files that may be longer, as paths from the repository's root, each with
// the reason in a comment. No data table is over the limit today.
const std::set<std::string> kAllowedLong = {
    // The schema's migrations: append-only, a released one is never edited
    // (docs/schema.md), so the file grows by a migration per schema change.
    "daemon/store/migrations.cpp",
};

// Lines as `wc -l` counts them: the newlines.
std::size_t line_count(std::string_view text) {
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

// The production .cpp files, as paths from the repository's root.
std::set<std::string> production_sources() {
    std::set<std::string> files;
    const fs::path root = test::repository_root();
    for (std::string_view folder : kProductionFolders) {
        for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
            if (entry.is_regular_file() && entry.path().extension() == ".cpp")
                files.insert(fs::relative(entry.path(), root).generic_string());
        }
    }
    return files;
}

// "FILE: N lines" for each production .cpp over kMaxLines and not allowed.
std::set<std::string> over_long_sources() {
    std::set<std::string> found;
    for (const std::string& file : production_sources()) {
        const std::size_t lines = line_count(test::repository_text(file));
        if (lines > kMaxLines && !kAllowedLong.contains(file))
            found.insert(file + ": " + std::to_string(lines) + " lines");
    }
    return found;
}

TEST_CASE("no production .cpp is over the line limit, but the allowed data tables and migrations",
          "[rooms]") {
    REQUIRE(production_sources().size() > 100);
    // Catch prints the set, so a failure names every file over the limit.
    CHECK(over_long_sources() == std::set<std::string>{});
}

TEST_CASE("every file allowed to be long exists", "[rooms]") {
    const std::set<std::string> sources = production_sources();
    for (const std::string& file : kAllowedLong) {
        INFO(file);
        CHECK(sources.contains(file));
    }
}

TEST_CASE("the room size check counts lines as wc -l does", "[rooms]") {
    CHECK(line_count("") == 0);
    CHECK(line_count("one\ntwo\n") == 2);
    CHECK(line_count("one\ntwo") == 1);
}

}  // namespace
}  // namespace ds
