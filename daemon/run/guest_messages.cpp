#include "daemon/run/guest_messages.h"

#include <array>
#include <cstdint>
#include <limits>
#include <span>

#include "common/json_fields.h"

namespace ds::guest {
namespace {

// What a field must hold.
enum class Shape {
    kString,      // a string of at most kMaxFieldBytes
    kText,        // a string for people, cut to kMaxTextBytes
    kCount,       // an integer 0..2^63-1
    kSmallCount,  // an integer 0..kMaxSmallCount (CPUs, queues)
    kBit,         // an integer 0 or 1
    kBoolean,     // true or false
    kSeconds,     // a number 0..kMaxReportedSeconds
    kFraction,    // a number 0..1
    kAnyObject,   // an object whose content is checked elsewhere
    kStringList,  // an array of kString
    kStringMap,   // an object of kString, keys within kMaxFieldBytes too
    kRecord,      // an object with its own field list
};

enum class Presence { kRequired, kOptional };

struct Field {
    std::string_view key;
    Shape shape;
    Presence presence = Presence::kOptional;
    std::span<const Field> fields = {};  // kRecord: the record's fields
};

// The schemas, one table per object (docs/agent-protocol.md, "Messages").
// clang-format off
constexpr std::array kOsFields = {
    Field{"id", Shape::kString, Presence::kRequired},
    Field{"version_id", Shape::kString},
    Field{"codename", Shape::kString},
};

constexpr std::array kHelloFields = {
    Field{"agent_version", Shape::kString, Presence::kRequired},
    Field{"protocol", Shape::kCount, Presence::kRequired},
    Field{"kernel", Shape::kString, Presence::kRequired},
    Field{"fio_version", Shape::kString, Presence::kRequired},
    Field{"capabilities", Shape::kStringList, Presence::kRequired},
    Field{"os", Shape::kRecord, Presence::kOptional, kOsFields},
};

constexpr std::array kProgressFields = {
    Field{"phase", Shape::kText, Presence::kRequired},
    Field{"message", Shape::kText, Presence::kRequired},
    Field{"elapsed_s", Shape::kSeconds, Presence::kRequired},
    Field{"fraction", Shape::kFraction},
};

constexpr std::array kTimingFields = {
    Field{"tune_s", Shape::kSeconds},
    Field{"format_s", Shape::kSeconds},
    Field{"mount_s", Shape::kSeconds},
    Field{"post_format_s", Shape::kSeconds},
    Field{"bench_s", Shape::kSeconds},
    Field{"prepare_s", Shape::kSeconds},  // a golden volume's preparation (job.dataset "prepare")
};

constexpr std::array kVersionFields = {
    Field{"kernel", Shape::kString},
    Field{"fio", Shape::kString},
    Field{"agent", Shape::kString},
};

constexpr std::array kBtrfsProfileFields = {
    Field{"data", Shape::kString},
    Field{"metadata", Shape::kString},
    Field{"system", Shape::kString},
};

// Every key is optional: the agent leaves out what it could not read.
constexpr std::array kReadbackFields = {
    Field{"device", Shape::kString},
    Field{"fs_type", Shape::kString},
    Field{"mount_options", Shape::kString},
    Field{"rotational", Shape::kBit},
    Field{"discard_max_bytes", Shape::kCount},
    Field{"logical_block_size", Shape::kCount},
    Field{"read_ahead_kb", Shape::kCount},
    Field{"nr_requests", Shape::kCount},
    Field{"scheduler", Shape::kString},
    Field{"write_cache", Shape::kString},
    Field{"serial", Shape::kString},
    Field{"mount_source", Shape::kString},
    Field{"driver", Shape::kString},
    Field{"hw_queues", Shape::kSmallCount},
    Field{"online_cpus", Shape::kSmallCount},
    Field{"btrfs", Shape::kRecord, Presence::kOptional, kBtrfsProfileFields},
    Field{"work_dir_attributes", Shape::kString},
    Field{"nocow", Shape::kBoolean},
    Field{"server_variables", Shape::kStringMap},
    Field{"server_version", Shape::kString},
    Field{"trim_removed_bytes", Shape::kCount},
    Field{"trimmed_bytes", Shape::kCount},
    Field{"trim_error", Shape::kString},
};

// The guest's CPU time over the job by state (the agent's /proc/stat "cpu"
// line, all CPUs together): seconds, each within kMaxReportedSeconds.
constexpr std::array kGuestCpuFields = {
    Field{"user_s", Shape::kSeconds},
    Field{"nice_s", Shape::kSeconds},
    Field{"system_s", Shape::kSeconds},
    Field{"idle_s", Shape::kSeconds},
    Field{"iowait_s", Shape::kSeconds},
    Field{"irq_s", Shape::kSeconds},
    Field{"softirq_s", Shape::kSeconds},
    Field{"steal_s", Shape::kSeconds},
};

constexpr std::array kResultFields = {
    Field{"run_id", Shape::kString, Presence::kRequired},
    Field{"output", Shape::kAnyObject, Presence::kRequired},
    Field{"metrics", Shape::kAnyObject},  // re-derived by the host, never read
    Field{"timings", Shape::kRecord, Presence::kRequired, kTimingFields},
    Field{"readback", Shape::kRecord, Presence::kRequired, kReadbackFields},
    Field{"versions", Shape::kRecord, Presence::kRequired, kVersionFields},
    Field{"guest_cpu", Shape::kRecord, Presence::kOptional, kGuestCpuFields},
};

constexpr std::array kReadyFields = {
    Field{"run_id", Shape::kString, Presence::kRequired},
};

constexpr std::array kAckFields = {
    Field{"run_id", Shape::kString, Presence::kRequired},
    Field{"id", Shape::kCount, Presence::kRequired},
};

constexpr std::array kErrorFields = {
    Field{"run_id", Shape::kString},
    Field{"phase", Shape::kText, Presence::kRequired},
    Field{"message", Shape::kText, Presence::kRequired},
    Field{"code", Shape::kString},
};
// clang-format on

Error violation(const std::string& path, const std::string& what) {
    return make_error(errc::kProtocol, path + ": " + what);
}

Error wrong_type(const std::string& path, std::string_view expected, const Json& value) {
    return violation(path, "expected " + std::string(expected) + ", got " + value.type_name());
}

// A key the guest chose, as it appears in an error's path: short and
// printable whatever the guest sent.
std::string path_key(std::string_view key) {
    constexpr std::size_t kShown = 64;
    std::string shown;
    for (char c : key.substr(0, kShown)) {
        const auto byte = static_cast<unsigned char>(c);
        shown.push_back(byte >= 0x20 && byte < 0x7f ? c : '?');
    }
    if (key.size() > kShown) shown += "...";
    return shown;
}

Result<Json> check_string(const Json& value, const std::string& path) {
    if (!value.is_string()) return wrong_type(path, "a string", value);
    const std::size_t size = value.get_ref<const std::string&>().size();
    if (size > kMaxFieldBytes) {
        return violation(path, "a string of " + std::to_string(size) +
                                   " bytes, longer than the limit of " +
                                   std::to_string(kMaxFieldBytes));
    }
    return value;
}

Result<Json> check_integer(const Json& value, const std::string& path, std::int64_t max) {
    if (!value.is_number()) return wrong_type(path, "an integer", value);
    if (!value.is_number_integer())
        return violation(path, "expected an integer, got " + value.dump());
    const bool in_range = value.is_number_unsigned()
                              ? value.get<std::uint64_t>() <= static_cast<std::uint64_t>(max)
                              : value.get<std::int64_t>() >= 0 && value.get<std::int64_t>() <= max;
    if (!in_range) {
        return violation(path, value.dump() + " is out of range (0.." + std::to_string(max) + ")");
    }
    return value;
}

Result<Json> check_number(const Json& value, const std::string& path, double max) {
    if (!value.is_number()) return wrong_type(path, "a number", value);
    const double number = value.get<double>();
    if (!(number >= 0 && number <= max)) {
        return violation(path, value.dump() + " is out of range (0.." + Json(max).dump() + ")");
    }
    return value;
}

Result<Json> check_string_list(const Json& value, const std::string& path) {
    if (!value.is_array()) return wrong_type(path, "an array of strings", value);
    for (std::size_t i = 0; i < value.size(); ++i) {
        DS_ASSIGN_OR_RETURN(auto item,
                            check_string(value[i], path + "[" + std::to_string(i) + "]"));
    }
    return value;
}

Result<Json> check_string_map(const Json& value, const std::string& path) {
    if (!value.is_object()) return wrong_type(path, "an object of strings", value);
    for (const auto& [key, item] : value.items()) {
        const std::string item_path = path + "." + path_key(key);
        if (key.size() > kMaxFieldBytes) {
            return violation(item_path, "a key of " + std::to_string(key.size()) +
                                            " bytes, longer than the limit of " +
                                            std::to_string(kMaxFieldBytes));
        }
        DS_ASSIGN_OR_RETURN(auto checked, check_string(item, item_path));
    }
    return value;
}

Result<Json> check_record(Json& object, const std::string& path, std::span<const Field> fields);

// `value` checked against `field`; what is kept is moved out of `value`.
Result<Json> check_field(Json& value, const std::string& path, const Field& field) {
    switch (field.shape) {
        case Shape::kString:
            return check_string(value, path);
        case Shape::kText:
            if (!value.is_string()) return wrong_type(path, "a string", value);
            return Json(cut_text(value.get_ref<const std::string&>()));
        case Shape::kCount:
            return check_integer(value, path, std::numeric_limits<std::int64_t>::max());
        case Shape::kSmallCount:
            return check_integer(value, path, kMaxSmallCount);
        case Shape::kBit:
            return check_integer(value, path, 1);
        case Shape::kBoolean:
            if (!value.is_boolean()) return wrong_type(path, "a boolean", value);
            return value;
        case Shape::kSeconds:
            return check_number(value, path, kMaxReportedSeconds);
        case Shape::kFraction:
            return check_number(value, path, 1.0);
        case Shape::kAnyObject:
            if (!value.is_object()) return wrong_type(path, "an object", value);
            return std::move(value);
        case Shape::kStringList:
            return check_string_list(value, path);
        case Shape::kStringMap:
            return check_string_map(value, path);
        case Shape::kRecord:
            return check_record(value, path, field.fields);
    }
    return violation(path, "has no schema (bug)");
}

// An object holding only `fields`, each checked; absent or null optional
// fields are left out.
Result<Json> check_record(Json& object, const std::string& path, std::span<const Field> fields) {
    if (!object.is_object()) return wrong_type(path, "an object", object);
    Json checked = Json::object();
    for (const Field& field : fields) {
        const std::string key(field.key);
        const std::string field_path = path + "." + key;
        const auto found = object.find(key);
        if (found == object.end() || (found->is_null() && field.presence == Presence::kOptional)) {
            if (field.presence == Presence::kRequired) return violation(field_path, "missing");
            continue;
        }
        DS_ASSIGN_OR_RETURN(auto value, check_field(*found, field_path, field));
        checked[key] = std::move(value);
    }
    return checked;
}

// Readers of a checked record: the schema guarantees type and presence, and
// they stay non-throwing even if it did not (strings: json_read::string_or_empty).

std::optional<double> number_at(const Json& record, const char* key) {
    const auto found = record.find(key);
    if (found == record.end() || !found->is_number()) return std::nullopt;
    return found->get<double>();
}

long long integer_at(const Json& record, const char* key) {
    const auto found = record.find(key);
    return found != record.end() && found->is_number_integer() ? found->get<long long>() : 0;
}

// The members of record[key] whose values are of type T (nothing if it is
// not an object).
template <class T, class Check>
std::map<std::string, T> members_at(const Json& record, const char* key, Check is_type) {
    std::map<std::string, T> members;
    const auto found = record.find(key);
    if (found == record.end() || !found->is_object()) return members;
    for (const auto& [name, value] : found->items()) {
        if (is_type(value)) members[name] = value.template get<T>();
    }
    return members;
}

// record[key] moved out, or `fallback` when absent.
Json take(Json& record, const char* key, Json fallback) {
    const auto found = record.find(key);
    return found == record.end() ? std::move(fallback) : std::move(*found);
}

}  // namespace

std::string cut_text(std::string_view text, std::size_t max_bytes) {
    if (text.size() <= max_bytes) return std::string(text);
    std::size_t end = max_bytes;
    // text[end] is the first byte left out; while it continues a character
    // (10xxxxxx), leave out that character's earlier bytes too (at most 3).
    for (int step = 0; step < 3 && end > 0; ++step) {
        if ((static_cast<unsigned char>(text[end]) & 0xC0) != 0x80) break;
        --end;
    }
    return std::string(text.substr(0, end)) + "...";
}

Result<Hello> parse_hello(Json message) {
    DS_ASSIGN_OR_RETURN(auto checked, check_record(message, "hello", kHelloFields));
    const Json& record = checked;
    Hello hello;
    hello.agent_version = json_read::string_or_empty(record, "agent_version");
    hello.protocol = integer_at(record, "protocol");
    hello.kernel = json_read::string_or_empty(record, "kernel");
    hello.fio_version = json_read::string_or_empty(record, "fio_version");
    if (const auto os = record.find("os"); os != record.end()) {
        hello.os = GuestOs{json_read::string_or_empty(*os, "id"),
                           json_read::string_or_empty(*os, "version_id"),
                           json_read::string_or_empty(*os, "codename")};
    }
    const auto capabilities = record.find("capabilities");
    if (capabilities != record.end() && capabilities->is_array()) {
        for (const Json& capability : *capabilities) {
            if (capability.is_string()) hello.capabilities.push_back(capability.get<std::string>());
        }
    }
    return hello;
}

Result<Progress> parse_progress(Json message) {
    DS_ASSIGN_OR_RETURN(auto checked, check_record(message, "progress", kProgressFields));
    const Json& record = checked;
    Progress progress;
    progress.phase = json_read::string_or_empty(record, "phase");
    progress.message = json_read::string_or_empty(record, "message");
    progress.elapsed_s = number_at(record, "elapsed_s").value_or(0);
    progress.fraction = number_at(record, "fraction");
    return progress;
}

Result<ResultMessage> parse_result(Json message) {
    DS_ASSIGN_OR_RETURN(auto checked, check_record(message, "result", kResultFields));
    Json& record = checked;
    ResultMessage result;
    result.run_id = json_read::string_or_empty(record, "run_id");
    result.output = take(record, "output", Json::object());
    result.timings =
        members_at<double>(record, "timings", [](const Json& value) { return value.is_number(); });
    result.versions = members_at<std::string>(record, "versions",
                                              [](const Json& value) { return value.is_string(); });
    result.readback = take(record, "readback", Json::object());
    result.guest_cpu = take(record, "guest_cpu", Json::object());
    return result;
}

Result<Ready> parse_ready(Json message, std::string_view type) {
    DS_ASSIGN_OR_RETURN(auto checked, check_record(message, std::string(type), kReadyFields));
    return Ready{json_read::string_or_empty(checked, "run_id")};
}

Result<Ack> parse_ack(Json message) {
    DS_ASSIGN_OR_RETURN(auto checked, check_record(message, "ack", kAckFields));
    return Ack{json_read::string_or_empty(checked, "run_id"), integer_at(checked, "id")};
}

Result<ErrorMessage> parse_error(Json message) {
    DS_ASSIGN_OR_RETURN(auto checked, check_record(message, "error", kErrorFields));
    const Json& record = checked;
    ErrorMessage error;
    if (record.contains("run_id")) error.run_id = json_read::string_or_empty(record, "run_id");
    error.phase = json_read::string_or_empty(record, "phase");
    error.message = json_read::string_or_empty(record, "message");
    error.code = json_read::string_or_empty(record, "code");
    return error;
}

}  // namespace ds::guest
