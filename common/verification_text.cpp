#include "common/verification_text.h"

#include "common/compare_text.h"
#include "common/json_fields.h"
#include "common/text.h"

namespace ds {

using json_read::field;
using json_read::string_or_empty;
using json_read::text_field;

namespace {

// What tells a comparison's row apart from the others, for a line about it.
std::string row_label(const Json& row, const NarrowColumns& columns) {
    std::vector<std::string> parts;
    for (const std::string& axis : columns.axes)
        parts.push_back(axis + "=" + setting_text(field(row, "settings"), axis));
    if (parts.empty()) parts.push_back(text_field(row, "config_id").substr(0, 12));
    if (columns.workload) parts.push_back("workload " + text_field(row, "workload"));
    return join(parts, " ");
}

}  // namespace

std::string not_checked_text(const Json& entry) {
    std::string where = string_or_empty(entry, "level");
    if (where.empty()) where = "a level";
    const std::string setting = string_or_empty(entry, "setting");
    if (!setting.empty()) where += ", " + setting;
    std::string reason = string_or_empty(entry, "reason");
    if (reason.empty()) reason = "no reason given";
    return where + ": not checked: " + reason;
}

std::vector<std::string> not_checked_lines(const Json& not_checked) {
    std::vector<std::string> lines;
    if (!not_checked.is_array()) return lines;
    for (const Json& entry : not_checked) {
        std::string line = not_checked_text(entry);
        if (field(entry, "fails_run") == true) {
            line += " (failed the run)";
        } else if (field(entry, "forbidden") == true) {
            line += " (not allowed by the host)";
        }
        if (const Json& runs = field(entry, "runs"); runs.is_number_integer())
            line += " (" + std::to_string(runs.get<long long>()) +
                    (runs.get<long long>() == 1 ? " run)" : " runs)");
        lines.push_back(std::move(line));
    }
    return lines;
}

std::vector<std::string> compare_not_checked_lines(const Json& compare) {
    std::vector<std::string> lines;
    const NarrowColumns columns = narrow_columns(compare);
    const Json& rows = field(compare, "rows");
    if (!rows.is_array()) return lines;
    for (const Json& row : rows) {
        for (const std::string& line : not_checked_lines(field(row, "not_checked")))
            lines.push_back(row_label(row, columns) + ": " + line);
    }
    return lines;
}

}  // namespace ds
