// Reading a few members out of a large JSON text without parsing the rest.
// The report needs each run's per-second samples (a few hundred numbers) out
// of raw outputs of 100 kB and more (fio's json+ latency histograms), for
// every run of a sweep: parsing them whole costs about 10 ms a run. This
// walks the text's structure, skipping what is not asked for at the speed of
// a byte scan, and hands only the members asked for to the JSON parser.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ds::report {

using Json = nlohmann::json;

// A member to keep: the member names from the top, "*" for every element of
// an array, e.g. {"jobs", "*", "read", "iops_per_second"}.
using JsonPath = std::vector<std::string>;

// The value of `text` with only the members on `paths` kept: objects on the
// way hold only the members that lead to one; arrays on the way keep every
// element (an element with nothing kept is an empty object), so positions
// stay; a member at the end of a path is parsed whole. nullopt when the text
// is not well-formed JSON where it was read (the parts skipped are only
// checked for balanced brackets and strings), or the top is not an object.
// Member names are compared as written (escapes are not decoded).
std::optional<Json> skim_json(std::string_view text, const std::vector<JsonPath>& paths);

}  // namespace ds::report
