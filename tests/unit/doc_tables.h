// Reading the repository's markdown docs in tests, so a doc that states a
// contract (docs/api.md's error codes, docs/schema.md's tables) is checked
// against the code that keeps it. Only the plain subset the docs use: ATX
// headings ("## ...") and pipe tables whose rows start and end with '|',
// cells split on every '|' not written as "\|".
#pragma once

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "support/test_data.h"

namespace ds::test {

// A file of the repository, by its path from the root; "" when it cannot be
// read (the caller's checks then fail on the empty text).
inline std::string repository_text(const std::filesystem::path& relative) {
    std::ifstream in(repository_root() / relative, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// How many '#' start `line` when it is a heading ("### x"), else 0.
inline std::size_t heading_level(std::string_view line) {
    const std::size_t hashes = line.find_first_not_of('#');
    if (hashes == 0 || hashes == std::string_view::npos || line[hashes] != ' ') return 0;
    return hashes;
}

struct DocSection {
    std::string heading;  // the heading's text, without the '#'s
    std::string body;     // up to the next heading of the same or a higher level
};

// Every section of `doc` whose heading has exactly `level` '#'s and whose
// text starts with `prefix`, in document order.
inline std::vector<DocSection> doc_sections(const std::string& doc, std::size_t level,
                                            std::string_view prefix = "") {
    std::vector<DocSection> sections;
    std::istringstream lines(doc);
    bool inside = false;
    for (std::string line; std::getline(lines, line);) {
        const std::size_t line_level = heading_level(line);
        if (line_level != 0 && line_level <= level) {
            inside = false;
            const std::string text = line.substr(line_level + 1);
            if (line_level == level && text.rfind(prefix, 0) == 0) {
                sections.push_back({text, ""});
                inside = true;
            }
            continue;
        }
        if (inside) sections.back().body += line + "\n";
    }
    return sections;
}

inline std::string trimmed(std::string_view text) {
    const std::size_t begin = text.find_first_not_of(" \t");
    if (begin == std::string_view::npos) return "";
    const std::size_t end = text.find_last_not_of(" \t");
    return std::string(text.substr(begin, end - begin + 1));
}

// The cells of one table row ("| a | b \| c |" -> {"a", "b | c"}).
inline std::vector<std::string> table_cells(std::string_view row) {
    std::vector<std::string> cells;
    std::string cell;
    for (std::size_t i = 1; i < row.size(); ++i) {
        if (row[i] == '\\' && i + 1 < row.size() && row[i + 1] == '|') {
            cell += '|';
            ++i;
        } else if (row[i] == '|') {
            cells.push_back(trimmed(cell));
            cell.clear();
        } else {
            cell += row[i];
        }
    }
    return cells;
}

// The body rows of every pipe table in `text` whose header row's cells are
// exactly `header`, in order (the header and the |---| line left out).
inline std::vector<std::vector<std::string>> table_rows(const std::string& text,
                                                        const std::vector<std::string>& header) {
    std::vector<std::vector<std::string>> rows;
    std::istringstream lines(text);
    bool in_table = false;
    for (std::string line; std::getline(lines, line);) {
        const bool is_row = line.size() > 1 && line.front() == '|' && line.back() == '|';
        if (!is_row) {
            in_table = false;
            continue;
        }
        if (line.rfind("|---", 0) == 0) continue;
        std::vector<std::string> cells = table_cells(line);
        if (!in_table) {
            in_table = cells == header;
            continue;
        }
        rows.push_back(std::move(cells));
    }
    return rows;
}

// `text` without one pair of surrounding back quotes ("`a`" -> "a").
inline std::string unquoted(const std::string& text) {
    if (text.size() >= 2 && text.front() == '`' && text.back() == '`')
        return text.substr(1, text.size() - 2);
    return text;
}

// The lines of `lines` that `other` lacks: checking that two descriptions
// of one thing agree, a failure shows each side's extra lines.
inline std::set<std::string> missing_from(const std::set<std::string>& lines,
                                          const std::set<std::string>& other) {
    std::set<std::string> missing;
    for (const auto& line : lines) {
        if (other.count(line) == 0) missing.insert(line);
    }
    return missing;
}

}  // namespace ds::test
