// Reading hostctl's text tables in tests: rows are found by their leading
// cells, so a check can look at one configuration's row and nothing else.
#pragma once

#include <sstream>
#include <string>

namespace ds::test {

// The first line of `table` whose first two cells (blank-separated) are
// `first` and `second`, or "" when there is none.
inline std::string table_row(const std::string& table, const std::string& first,
                             const std::string& second) {
    std::istringstream lines(table);
    for (std::string line; std::getline(lines, line);) {
        std::istringstream cells(line);
        std::string cell1, cell2;
        if (cells >> cell1 >> cell2 && cell1 == first && cell2 == second) return line;
    }
    return {};
}

}  // namespace ds::test
