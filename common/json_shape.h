// One checker for JSON objects from a party we do not trust (the guest
// agent's messages, what PVE relays from a guest's qemu-guest-agent): an
// object against a table of its fields, each of a shape, declared as data.
// The tables stay beside their protocols and cite their sources
// (daemon/run/guest_messages.cpp, daemon/backends/hypervisor/proxmox/
// pve_agent_channel.cpp); this holds their vocabulary and the one check.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>

#include "common/json_fields.h"
#include "common/result.h"

namespace ds::json_shape {

// What a value must be.
enum class Kind {
    kString,      // a string of at most max_bytes
    kInteger,     // an integer (a JSON number without a fraction) min..max
    kNumber,      // a number, integers included, 0..max_number
    kBoolean,     // true or false
    kFlag,        // true, false, 0 or 1 (PVE turns a guest's boolean into 1/0)
    kAnyObject,   // an object whose content is checked elsewhere
    kStringList,  // an array of strings, each of at most max_bytes
    kStringMap,   // an object of strings; keys and values of at most max_bytes
    kRecord,      // an object with its own field table (Field::fields)
};

inline constexpr std::size_t kAnyLength = std::numeric_limits<std::size_t>::max();

// A kind and its limits; build one with the functions below.
struct Shape {
    Kind kind;
    std::size_t max_bytes = kAnyLength;                           // the string kinds
    std::int64_t min = std::numeric_limits<std::int64_t>::min();  // kInteger
    std::int64_t max = std::numeric_limits<std::int64_t>::max();  // kInteger
    double max_number = 0;                                        // kNumber
};

constexpr Shape string(std::size_t max_bytes = kAnyLength) {
    return {Kind::kString, max_bytes};
}
// integer(): any int64; integer(0): 0..2^63-1.
constexpr Shape integer(std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                        std::int64_t max = std::numeric_limits<std::int64_t>::max()) {
    return {Kind::kInteger, kAnyLength, min, max};
}
constexpr Shape number(double max) {
    return {.kind = Kind::kNumber, .max_number = max};
}
constexpr Shape boolean() {
    return {Kind::kBoolean};
}
constexpr Shape flag() {
    return {Kind::kFlag};
}
constexpr Shape any_object() {
    return {Kind::kAnyObject};
}
constexpr Shape string_list(std::size_t max_bytes) {
    return {Kind::kStringList, max_bytes};
}
constexpr Shape string_map(std::size_t max_bytes) {
    return {Kind::kStringMap, max_bytes};
}
constexpr Shape record() {
    return {Kind::kRecord};
}

enum class Presence { kRequired, kOptional };

struct Field {
    std::string_view key;
    Shape shape;
    Presence presence = Presence::kOptional;
    std::span<const Field> fields = {};  // a kRecord's fields
};

// How a violation reads; both name the field by its path below the subject.
enum class Wording {
    // "hello.os.id: expected a string, got number", "hello.kernel: missing",
    // "ack.id: -2 is out of range (0..9223372036854775807)".
    kPath,
    // "agent/exec field 'pid' is a string, expected an integer",
    // "agent/exec answered without field 'pid'",
    // "agent/exec answered an array, expected an object".
    kField,
};

// What a violation becomes: an Error of `code` (errc::*) naming `subject`,
// what the object is ("hello", "agent/exec-status"), in `wording`.
struct ErrorForm {
    std::string_view code;
    std::string_view subject;
    Wording wording;
};

// `object` checked against `fields`: the object of the fields the table
// names, each of its shape (and a kRecord's own fields, recursively), moved
// out of `object`. A required field must be present; a null field counts as
// absent; keys the table does not name are left out. The first violation, in
// the table's order, is the error. Never throws on any JSON.
Result<Json> check_object(Json& object, std::span<const Field> fields, const ErrorForm& form);

}  // namespace ds::json_shape
