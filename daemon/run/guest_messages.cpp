#include "daemon/run/guest_messages.h"

#include <array>
#include <span>

#include "common/json_fields.h"
#include "common/json_shape.h"

namespace ds::guest {
namespace {

using json_shape::Field;
using json_shape::Presence;
using json_shape::Shape;

// What a field must hold (the limits are guest_messages.h's).
constexpr Shape kString = json_shape::string(kMaxFieldBytes);
// A string for people, of any length here: the parse_* that read it cut it
// to kMaxTextBytes.
constexpr Shape kText = json_shape::string();
constexpr Shape kCount = json_shape::integer(0);                       // 0..2^63-1
constexpr Shape kSmallCount = json_shape::integer(0, kMaxSmallCount);  // CPUs, queues
constexpr Shape kBit = json_shape::integer(0, 1);
constexpr Shape kBoolean = json_shape::boolean();
constexpr Shape kSeconds = json_shape::number(kMaxReportedSeconds);
constexpr Shape kFraction = json_shape::number(1.0);
// An object whose content is checked elsewhere.
constexpr Shape kAnyObject = json_shape::any_object();
constexpr Shape kStringList = json_shape::string_list(kMaxFieldBytes);
// Keys within kMaxFieldBytes too.
constexpr Shape kStringMap = json_shape::string_map(kMaxFieldBytes);
constexpr Shape kRecord = json_shape::record();

// The schemas, one table per object (docs/agent-protocol.md, "Messages").
// clang-format off
constexpr std::array kOsFields = {
    Field{"id", kString, Presence::kRequired},
    Field{"version_id", kString},
    Field{"codename", kString},
};

constexpr std::array kHelloFields = {
    Field{"agent_version", kString, Presence::kRequired},
    Field{"protocol", kCount, Presence::kRequired},
    Field{"kernel", kString, Presence::kRequired},
    Field{"fio_version", kString, Presence::kRequired},
    Field{"capabilities", kStringList, Presence::kRequired},
    Field{"os", kRecord, Presence::kOptional, kOsFields},
};

constexpr std::array kProgressFields = {
    Field{"phase", kText, Presence::kRequired},
    Field{"message", kText, Presence::kRequired},
    Field{"elapsed_s", kSeconds, Presence::kRequired},
    Field{"fraction", kFraction},
};

constexpr std::array kTimingFields = {
    Field{"tune_s", kSeconds},
    Field{"format_s", kSeconds},
    Field{"mount_s", kSeconds},
    Field{"post_format_s", kSeconds},
    Field{"bench_s", kSeconds},
    Field{"prepare_s", kSeconds},  // a golden volume's preparation (job.dataset "prepare")
};

constexpr std::array kVersionFields = {
    Field{"kernel", kString},
    Field{"fio", kString},
    Field{"agent", kString},
};

constexpr std::array kBtrfsProfileFields = {
    Field{"data", kString},
    Field{"metadata", kString},
    Field{"system", kString},
};

// Every key is optional: the agent leaves out what it could not read.
constexpr std::array kReadbackFields = {
    Field{"device", kString},
    Field{"fs_type", kString},
    Field{"mount_options", kString},
    Field{"rotational", kBit},
    Field{"discard_max_bytes", kCount},
    Field{"logical_block_size", kCount},
    Field{"read_ahead_kb", kCount},
    Field{"nr_requests", kCount},
    Field{"scheduler", kString},
    Field{"write_cache", kString},
    Field{"serial", kString},
    Field{"mount_source", kString},
    Field{"driver", kString},
    Field{"hw_queues", kSmallCount},
    Field{"online_cpus", kSmallCount},
    Field{"btrfs", kRecord, Presence::kOptional, kBtrfsProfileFields},
    Field{"work_dir_attributes", kString},
    Field{"nocow", kBoolean},
    Field{"server_variables", kStringMap},
    Field{"server_version", kString},
    Field{"trim_removed_bytes", kCount},
    Field{"trimmed_bytes", kCount},
    Field{"trim_error", kString},
};

// The guest's CPU time over the job by state (the agent's /proc/stat "cpu"
// line, all CPUs together): seconds, each within kMaxReportedSeconds.
constexpr std::array kGuestCpuFields = {
    Field{"user_s", kSeconds},
    Field{"nice_s", kSeconds},
    Field{"system_s", kSeconds},
    Field{"idle_s", kSeconds},
    Field{"iowait_s", kSeconds},
    Field{"irq_s", kSeconds},
    Field{"softirq_s", kSeconds},
    Field{"steal_s", kSeconds},
};

constexpr std::array kResultFields = {
    Field{"run_id", kString, Presence::kRequired},
    Field{"output", kAnyObject, Presence::kRequired},
    Field{"metrics", kAnyObject},  // re-derived by the host, never read
    Field{"timings", kRecord, Presence::kRequired, kTimingFields},
    Field{"readback", kRecord, Presence::kRequired, kReadbackFields},
    Field{"versions", kRecord, Presence::kRequired, kVersionFields},
    Field{"guest_cpu", kRecord, Presence::kOptional, kGuestCpuFields},
};

constexpr std::array kReadyFields = {
    Field{"run_id", kString, Presence::kRequired},
};

constexpr std::array kAckFields = {
    Field{"run_id", kString, Presence::kRequired},
    Field{"id", kCount, Presence::kRequired},
};

constexpr std::array kErrorFields = {
    Field{"run_id", kString},
    Field{"phase", kText, Presence::kRequired},
    Field{"message", kText, Presence::kRequired},
    Field{"code", kString},
};
// clang-format on

// `message` checked against `fields`; a violation names the field by its path
// below `type` ("result.readback.fs_type: expected a string, got number").
Result<Json> check_message(Json& message, std::string_view type, std::span<const Field> fields) {
    return json_shape::check_object(message, fields,
                                    {errc::kProtocol, type, json_shape::Wording::kPath});
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
    DS_ASSIGN_OR_RETURN(auto checked, check_message(message, "hello", kHelloFields));
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
    DS_ASSIGN_OR_RETURN(auto checked, check_message(message, "progress", kProgressFields));
    const Json& record = checked;
    Progress progress;
    progress.phase = cut_text(json_read::string_or_empty(record, "phase"));
    progress.message = cut_text(json_read::string_or_empty(record, "message"));
    progress.elapsed_s = number_at(record, "elapsed_s").value_or(0);
    progress.fraction = number_at(record, "fraction");
    return progress;
}

Result<ResultMessage> parse_result(Json message) {
    DS_ASSIGN_OR_RETURN(auto checked, check_message(message, "result", kResultFields));
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
    DS_ASSIGN_OR_RETURN(auto checked, check_message(message, type, kReadyFields));
    return Ready{json_read::string_or_empty(checked, "run_id")};
}

Result<Ack> parse_ack(Json message) {
    DS_ASSIGN_OR_RETURN(auto checked, check_message(message, "ack", kAckFields));
    return Ack{json_read::string_or_empty(checked, "run_id"), integer_at(checked, "id")};
}

Result<ErrorMessage> parse_error(Json message) {
    DS_ASSIGN_OR_RETURN(auto checked, check_message(message, "error", kErrorFields));
    const Json& record = checked;
    ErrorMessage error;
    if (record.contains("run_id")) error.run_id = json_read::string_or_empty(record, "run_id");
    error.phase = cut_text(json_read::string_or_empty(record, "phase"));
    error.message = cut_text(json_read::string_or_empty(record, "message"));
    error.code = json_read::string_or_empty(record, "code");
    return error;
}

}  // namespace ds::guest
