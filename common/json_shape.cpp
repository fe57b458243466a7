#include "common/json_shape.h"

#include <string>
#include <utility>

#include "common/text.h"

namespace ds::json_shape {
namespace {

// What is wrong with a value.
enum class Fault {
    kMissing,     // a required field is absent or null
    kWrongType,   // a value of another JSON type
    kNotInteger,  // a number with a fraction where an integer belongs
    kOutOfRange,  // a number outside the shape's range
    kTooLong,     // a string longer than the shape's max_bytes
    kKeyTooLong,  // a key of a kStringMap longer than its max_bytes
};

struct Violation {
    Fault fault;
    const Json* value;      // what was found; nullptr when kMissing
    Shape shape;            // what was expected
    std::size_t bytes = 0;  // kTooLong, kKeyTooLong: the length found
};

// The JSON type a shape wants, as violations name it.
std::string_view type_wanted(Kind kind) {
    switch (kind) {
        case Kind::kString:
            return "a string";
        case Kind::kInteger:
            return "an integer";
        case Kind::kNumber:
            return "a number";
        case Kind::kBoolean:
            return "a boolean";
        case Kind::kFlag:
            return "0 or 1";
        case Kind::kAnyObject:
        case Kind::kRecord:
            return "an object";
        case Kind::kStringList:
            return "an array of strings";
        case Kind::kStringMap:
            return "an object of strings";
    }
    return "a value";
}

std::string range_text(const Shape& shape) {
    if (shape.kind == Kind::kFlag) return "0..1";
    if (shape.kind == Kind::kNumber) return "0.." + Json(shape.max_number).dump();
    return std::to_string(shape.min) + ".." + std::to_string(shape.max);
}

// What a shape accepts, its limits included where they narrow the type:
// "an integer", "an integer 0..1", "a string of at most 4096 bytes".
std::string expectation(const Shape& shape) {
    const std::string type(type_wanted(shape.kind));
    const bool any_int64 = shape.min == std::numeric_limits<std::int64_t>::min() &&
                           shape.max == std::numeric_limits<std::int64_t>::max();
    if (shape.kind == Kind::kInteger && !any_int64) return type + " " + range_text(shape);
    if (shape.kind == Kind::kNumber) return type + " " + range_text(shape);
    const bool has_strings = shape.kind == Kind::kString || shape.kind == Kind::kStringList ||
                             shape.kind == Kind::kStringMap;
    if (has_strings && shape.max_bytes != kAnyLength) {
        return type + " of at most " + std::to_string(shape.max_bytes) + " bytes";
    }
    return type;
}

// "a string", "an object", "the number 7" (a number of the wrong kind or range).
std::string described(const Json& value) {
    if (value.is_number()) return "the number " + value.dump();
    const std::string type = value.type_name();
    const bool vowel =
        !type.empty() && std::string_view("aeiou").find(type[0]) != std::string::npos;
    return (vowel ? "an " : "a ") + type;
}

std::string too_long(std::string_view what, const Violation& violation) {
    return std::string(what) + " of " + std::to_string(violation.bytes) +
           " bytes, longer than the limit of " + std::to_string(violation.shape.max_bytes);
}

// Wording::kPath's text after "PATH: ".
std::string path_detail(const Violation& violation) {
    switch (violation.fault) {
        case Fault::kMissing:
            return "missing";
        case Fault::kWrongType:
            return "expected " + std::string(type_wanted(violation.shape.kind)) + ", got " +
                   violation.value->type_name();
        case Fault::kNotInteger:
            return "expected an integer, got " + violation.value->dump();
        case Fault::kOutOfRange:
            return violation.value->dump() + " is out of range (" + range_text(violation.shape) +
                   ")";
        case Fault::kTooLong:
            return too_long("a string", violation);
        case Fault::kKeyTooLong:
            return too_long("a key", violation);
    }
    return "invalid";
}

// Wording::kField's whole text.
std::string field_text(std::string_view subject, const std::string& path,
                       const Violation& violation) {
    const std::string who(subject);
    if (violation.fault == Fault::kMissing) return who + " answered without field '" + path + "'";
    const bool length = violation.fault == Fault::kTooLong || violation.fault == Fault::kKeyTooLong;
    const std::string what =
        length ? path_detail(violation)
               : described(*violation.value) + ", expected " + expectation(violation.shape);
    if (path.empty()) return who + " answered " + what;
    return who + " field '" + path + "' is " + what;
}

// A key the sender chose, as it appears in an error's path: short and
// printable whatever was sent.
std::string path_key(std::string_view key) {
    return printable_excerpt(key, 64);
}

// Where a value is in the checked object, and how its violations read.
struct Place {
    const ErrorForm& form;
    std::string path;  // below the subject: "os.id", "capabilities[2]"; "" for the object

    Place key(std::string_view name) const {
        return {form, path.empty() ? std::string(name) : path + "." + std::string(name)};
    }
    Place item(std::size_t index) const { return {form, path + "[" + std::to_string(index) + "]"}; }
    Error error(const Violation& violation) const {
        if (form.wording == Wording::kField) {
            return make_error(std::string(form.code), field_text(form.subject, path, violation));
        }
        const std::string where =
            path.empty() ? std::string(form.subject) : std::string(form.subject) + "." + path;
        return make_error(std::string(form.code), where + ": " + path_detail(violation));
    }
};

Status check_string(const Json& value, const Shape& shape, const Place& place) {
    if (!value.is_string()) return place.error({Fault::kWrongType, &value, shape});
    const std::size_t size = value.get_ref<const std::string&>().size();
    if (size > shape.max_bytes) return place.error({Fault::kTooLong, &value, shape, size});
    return ok_status();
}

bool within(const Json& value, std::int64_t min, std::int64_t max) {
    if (value.is_number_unsigned()) {
        const auto number = value.get<std::uint64_t>();
        return max >= 0 && number <= static_cast<std::uint64_t>(max) &&
               (min <= 0 || number >= static_cast<std::uint64_t>(min));
    }
    const auto number = value.get<std::int64_t>();
    return number >= min && number <= max;
}

Status check_integer(const Json& value, const Shape& shape, const Place& place) {
    if (!value.is_number()) return place.error({Fault::kWrongType, &value, shape});
    if (!value.is_number_integer()) return place.error({Fault::kNotInteger, &value, shape});
    if (!within(value, shape.min, shape.max)) {
        return place.error({Fault::kOutOfRange, &value, shape});
    }
    return ok_status();
}

Status check_number(const Json& value, const Shape& shape, const Place& place) {
    if (!value.is_number()) return place.error({Fault::kWrongType, &value, shape});
    const double number = value.get<double>();
    if (!(number >= 0 && number <= shape.max_number)) {
        return place.error({Fault::kOutOfRange, &value, shape});
    }
    return ok_status();
}

Status check_flag(const Json& value, const Shape& shape, const Place& place) {
    if (value.is_boolean()) return ok_status();
    if (!value.is_number_integer()) return place.error({Fault::kWrongType, &value, shape});
    if (value != 0 && value != 1) return place.error({Fault::kOutOfRange, &value, shape});
    return ok_status();
}

Status check_string_list(const Json& value, const Shape& shape, const Place& place) {
    if (!value.is_array()) return place.error({Fault::kWrongType, &value, shape});
    for (std::size_t i = 0; i < value.size(); ++i) {
        DS_TRY(check_string(value[i], string(shape.max_bytes), place.item(i)));
    }
    return ok_status();
}

Status check_string_map(const Json& value, const Shape& shape, const Place& place) {
    if (!value.is_object()) return place.error({Fault::kWrongType, &value, shape});
    for (const auto& [key, item] : value.items()) {
        const Place item_place = place.key(path_key(key));
        if (key.size() > shape.max_bytes) {
            return item_place.error({Fault::kKeyTooLong, &item, shape, key.size()});
        }
        DS_TRY(check_string(item, string(shape.max_bytes), item_place));
    }
    return ok_status();
}

// `value` is of `shape`; a kRecord's fields are checked by check_fields.
Status check_shape(const Json& value, const Shape& shape, const Place& place) {
    switch (shape.kind) {
        case Kind::kString:
            return check_string(value, shape, place);
        case Kind::kInteger:
            return check_integer(value, shape, place);
        case Kind::kNumber:
            return check_number(value, shape, place);
        case Kind::kFlag:
            return check_flag(value, shape, place);
        case Kind::kStringList:
            return check_string_list(value, shape, place);
        case Kind::kStringMap:
            return check_string_map(value, shape, place);
        case Kind::kBoolean:
            if (!value.is_boolean()) return place.error({Fault::kWrongType, &value, shape});
            return ok_status();
        case Kind::kAnyObject:
        case Kind::kRecord:
            if (!value.is_object()) return place.error({Fault::kWrongType, &value, shape});
            return ok_status();
    }
    return make_error(std::string(place.form.code), "a shape without a check (bug)");
}

Result<Json> check_fields(Json& object, std::span<const Field> fields, const Place& place);

// `value` checked against `field`, moved out.
Result<Json> check_field(Json& value, const Field& field, const Place& place) {
    DS_TRY(check_shape(value, field.shape, place));
    if (field.shape.kind == Kind::kRecord) return check_fields(value, field.fields, place);
    return std::move(value);
}

// `object` (an object) checked field by field.
Result<Json> check_fields(Json& object, std::span<const Field> fields, const Place& place) {
    Json checked = Json::object();
    for (const Field& field : fields) {
        const std::string key(field.key);
        const auto found = object.find(key);
        if (found == object.end() || found->is_null()) {
            if (field.presence == Presence::kRequired) {
                return place.key(key).error({Fault::kMissing, nullptr, field.shape});
            }
            continue;
        }
        DS_ASSIGN_OR_RETURN(auto value, check_field(*found, field, place.key(key)));
        checked[key] = std::move(value);
    }
    return checked;
}

}  // namespace

Result<Json> check_object(Json& object, std::span<const Field> fields, const ErrorForm& form) {
    return check_field(object, Field{"", record(), Presence::kRequired, fields}, Place{form, ""});
}

}  // namespace ds::json_shape
