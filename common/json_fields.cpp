#include "common/json_fields.h"

#include <cmath>

#include "common/compare_text.h"  // format_setting_value

namespace ds {
namespace json_read {
namespace {
const Json kNull = nullptr;
}  // namespace

const Json& field(const Json& object, std::string_view key) {
    if (!object.is_object()) return kNull;
    auto it = object.find(key);
    return it == object.end() ? kNull : *it;
}

std::string text_of(const Json& value, std::string_view fallback) {
    if (value.is_string()) {
        const auto& text = value.get_ref<const std::string&>();
        return text.empty() ? std::string(fallback) : text;
    }
    if (value.is_null()) return std::string(fallback);
    return format_setting_value(value);
}

std::string text_field(const Json& object, std::string_view key, std::string_view fallback) {
    return text_of(field(object, key), fallback);
}

std::optional<double> number_field(const Json& object, std::string_view key) {
    const Json& value = field(object, key);
    if (!value.is_number()) return std::nullopt;
    double number = value.get<double>();
    if (!std::isfinite(number)) return std::nullopt;
    return number;
}

long integer_field(const Json& object, std::string_view key, long fallback) {
    auto number = number_field(object, key);
    return number ? static_cast<long>(std::llround(*number)) : fallback;
}

std::vector<std::string> string_list(const Json& array) {
    std::vector<std::string> items;
    if (!array.is_array()) return items;
    for (const auto& item : array) items.push_back(text_of(item, ""));
    return items;
}
std::string string_or_empty(const Json& object, std::string_view key) {
    const Json& value = field(object, key);
    return value.is_string() ? value.get<std::string>() : std::string();
}
}  // namespace json_read

}  // namespace ds
