// Small text helpers shared by the parsers of tool output (fio, sql-bench,
// sysbench, sysfs) and of spec values. ASCII only: everything they read is.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ds {

// `text` with A-Z mapped to a-z.
std::string ascii_lower(std::string_view text);

// `text` without leading and trailing whitespace (std::isspace: space, \t,
// \n, \v, \f, \r).
std::string_view trim_whitespace(std::string_view text);

// The whole of `text` (around whitespace) as a finite double, fixed or
// scientific, as Perl's %g, sysbench's and pgbench's %f print them; a
// leading '+' is allowed. nullopt for anything else.
std::optional<double> parse_finite_double(std::string_view text);

// `text` without the trailing newlines, carriage returns and spaces a
// command's output ends with.
std::string trim_trailing(std::string text);

// The items (any range of std::string, std::string_view or const char*) with
// `separator` between them; the separator follows only a non-empty prefix,
// so leading empty items leave no separator behind.
template <class Items>
std::string join(const Items& items, std::string_view separator) {
    std::string joined;
    for (const auto& item : items) {
        if (!joined.empty()) joined += separator;
        joined += item;
    }
    return joined;
}

// The same over what `text_of` gives for each item ("a, b" from the names
// of a table's rows).
template <typename Items, typename Projection>
std::string join(const Items& items, std::string_view separator, Projection text_of) {
    std::string joined;
    for (const auto& item : items) {
        if (!joined.empty()) joined += separator;
        joined += text_of(item);
    }
    return joined;
}

// A short, printable excerpt of untrusted input for an error message: its
// first `limit` bytes, each one outside printable ASCII as '?', followed by
// "..." when `text` is longer.
std::string printable_excerpt(std::string_view text, std::size_t limit);

// The items of a list like "a|b|c" (config values): split at `separator`,
// each trimmed, empty ones dropped.
std::vector<std::string> split_list(std::string_view text, char separator);

}  // namespace ds
