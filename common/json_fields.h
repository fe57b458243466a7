// Reading fields of JSON that may come from anywhere (an older or newer
// daemon, a guest, QEMU, PVE) without ever throwing: a missing or mistyped
// field reads as a fallback.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ds {

using Json = nlohmann::json;

namespace json_read {
// object[key], or null when `object` is not an object or has no such key.
const Json& field(const Json& object, std::string_view key);
// A string as it is ("" reads as `fallback`), null as `fallback`, anything
// else as format_setting_value().
std::string text_of(const Json& value, std::string_view fallback = "-");
std::string text_field(const Json& object, std::string_view key, std::string_view fallback = "-");
// A finite number, or nullopt.
std::optional<double> number_field(const Json& object, std::string_view key);
// The number rounded to an integer, or `fallback`.
long integer_field(const Json& object, std::string_view key, long fallback = 0);
// The items of an array as text (text_of with fallback ""); empty for a non-array.
std::vector<std::string> string_list(const Json& array);
// object[key] when `object` is an object holding a string there, else "":
// unlike text_field, any other value (a number, null) also reads as "".
std::string string_or_empty(const Json& object, std::string_view key);
}  // namespace json_read

}  // namespace ds
