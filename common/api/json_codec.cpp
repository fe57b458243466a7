#include "common/api/json_codec.h"

namespace ds::api {

ObjectReader::ObjectReader(const Json& value, std::string_view path) : object_(value), path_(path) {
    if (!value.is_object()) {
        const std::string where = path_.empty() ? std::string() : path_ + ": ";
        error_ = make_error(errc::kProtocol,
                            where + "expected an object, got " + std::string(value.type_name()));
    }
}

const Json* ObjectReader::present(std::string_view key) const {
    if (error_) return nullptr;
    const Json& value = json_read::field(object_, key);
    return value.is_null() ? nullptr : &value;
}

std::string ObjectReader::path_of(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

bool ObjectReader::expect(bool ok, const Json& value, const std::string& path,
                          std::string_view wanted) {
    if (!ok && !error_) {
        error_ = make_error(errc::kProtocol, path + ": expected " + std::string(wanted) + ", got " +
                                                 std::string(value.type_name()));
    }
    return ok;
}

void ObjectReader::read(std::string_view key, std::optional<std::string>& target) {
    const Json* value = present(key);
    if (value && expect(value->is_string(), *value, path_of(key), "a string"))
        target = value->get<std::string>();
}

void ObjectReader::read(std::string_view key, std::optional<std::int64_t>& target) {
    const Json* value = present(key);
    if (value && expect(value->is_number_integer(), *value, path_of(key), "an integer"))
        target = value->get<std::int64_t>();
}

void ObjectReader::read(std::string_view key, std::optional<double>& target) {
    const Json* value = present(key);
    if (value && expect(value->is_number(), *value, path_of(key), "a number"))
        target = value->get<double>();
}

void ObjectReader::read(std::string_view key, std::optional<bool>& target) {
    const Json* value = present(key);
    if (value && expect(value->is_boolean(), *value, path_of(key), "a boolean"))
        target = value->get<bool>();
}

void ObjectReader::read(std::string_view key, std::int64_t& target) {
    std::optional<std::int64_t> value;
    read(key, value);
    if (value) target = *value;
}

namespace {
// What each element of a list of scalars must be, and how it is read.
template <class T>
struct ListElement;
template <>
struct ListElement<std::string> {
    static constexpr std::string_view kWanted = "a string";
    static bool fits(const Json& item) { return item.is_string(); }
};
template <>
struct ListElement<std::int64_t> {
    static constexpr std::string_view kWanted = "an integer";
    static bool fits(const Json& item) { return item.is_number_integer(); }
};
}  // namespace

template <class T>
void ObjectReader::read_list(std::string_view key, std::vector<T>& target) {
    const Json* list = present(key);
    if (!list || !expect(list->is_array(), *list, path_of(key), "an array")) return;
    std::vector<T> items;
    for (std::size_t i = 0; i < list->size(); ++i) {
        const Json& item = (*list)[i];
        if (!expect(ListElement<T>::fits(item), item, path_of(key) + "[" + std::to_string(i) + "]",
                    ListElement<T>::kWanted))
            return;
        items.push_back(item.get<T>());
    }
    target = std::move(items);
}

void ObjectReader::read(std::string_view key, std::vector<std::string>& target) {
    read_list(key, target);
}

void ObjectReader::read(std::string_view key, std::vector<std::int64_t>& target) {
    read_list(key, target);
}

void ObjectReader::read(std::string_view key, Json& target) {
    if (const Json* value = present(key)) target = *value;
}

void ObjectReader::read(std::string_view key, std::optional<Json>& target) {
    if (const Json* value = present(key)) target = *value;
}

}  // namespace ds::api
