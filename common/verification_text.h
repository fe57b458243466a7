// What a run could not verify, as text: the entries of
// applied_settings.verification.not_checked (docs/verification.md, "Levels
// not checked") and of a comparison row's "not_checked" (docs/api.md), as
// `hostctl results show`, `hostctl results compare` and the HTML report
// print them. Pure and tolerant like compare_text.h: never throws on a
// missing or mistyped field.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ds {

using Json = nlohmann::json;

// "QEMU (info block): not checked: REASON", with a setting
// "QEMU (info block), iops_limit: not checked: REASON".
std::string not_checked_text(const Json& entry);

// One line per entry: not_checked_text, then what it meant for the run(s):
// " (failed the run)" when "fails_run", " (not allowed by the host)" when
// "forbidden" and not failing, and for a comparison row's entries
// " (N runs)" from "runs". Empty for anything but a non-empty array.
std::vector<std::string> not_checked_lines(const Json& not_checked);

// A comparison's (GET /v1/sweeps/ID/compare) rows' "not_checked" entries,
// one line each: the row's varying settings (and workload, when several;
// its config id's first 12 digits when nothing varies), then the
// not_checked_lines line, e.g.
// "cache=none: QEMU (info block): not checked: ... (not allowed by the host) (4 runs)".
std::vector<std::string> compare_not_checked_lines(const Json& compare);

}  // namespace ds
