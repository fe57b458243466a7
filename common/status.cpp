#include "common/status.h"

#include <array>
#include <nlohmann/json.hpp>
#include <ostream>
#include <utility>

namespace ds {
namespace {

// One table per enum: the spelling of each value, in lifecycle order.
constexpr std::array<std::pair<RunStatus, std::string_view>, 6> kRunStatusNames = {{
    {RunStatus::kPending, "pending"},
    {RunStatus::kRunning, "running"},
    {RunStatus::kSucceeded, "succeeded"},
    {RunStatus::kFailed, "failed"},
    {RunStatus::kTimedOut, "timed_out"},
    {RunStatus::kCancelled, "cancelled"},
}};

constexpr std::array<std::pair<SweepStatus, std::string_view>, 5> kSweepStatusNames = {{
    {SweepStatus::kQueued, "queued"},
    {SweepStatus::kRunning, "running"},
    {SweepStatus::kSucceeded, "succeeded"},
    {SweepStatus::kFailed, "failed"},
    {SweepStatus::kCancelled, "cancelled"},
}};

template <class Enum, std::size_t N>
constexpr std::array<Enum, N> values_of(
    const std::array<std::pair<Enum, std::string_view>, N>& names) {
    std::array<Enum, N> values{};
    for (std::size_t i = 0; i < N; ++i) values[i] = names[i].first;
    return values;
}

template <class Enum, std::size_t N>
constexpr std::array<std::string_view, N> names_of(
    const std::array<std::pair<Enum, std::string_view>, N>& names) {
    std::array<std::string_view, N> spellings{};
    for (std::size_t i = 0; i < N; ++i) spellings[i] = names[i].second;
    return spellings;
}

constexpr auto kRunStatuses = values_of(kRunStatusNames);
constexpr auto kRunStatusSpellings = names_of(kRunStatusNames);
constexpr auto kSweepStatuses = values_of(kSweepStatusNames);

template <class Enum, std::size_t N>
std::string name_in(const std::array<std::pair<Enum, std::string_view>, N>& names, Enum value) {
    for (const auto& [candidate, name] : names) {
        if (candidate == value) return std::string(name);
    }
    return "unknown";  // only a value cast from an integer outside the enum
}

template <class Enum, std::size_t N>
std::optional<Enum> value_in(const std::array<std::pair<Enum, std::string_view>, N>& names,
                             std::string_view text) {
    for (const auto& [value, name] : names) {
        if (name == text) return value;
    }
    return std::nullopt;
}

}  // namespace

std::string to_string(RunStatus status) {
    return name_in(kRunStatusNames, status);
}

std::string to_string(SweepStatus status) {
    return name_in(kSweepStatusNames, status);
}

void to_json(nlohmann::json& json, RunStatus status) {
    json = to_string(status);
}

void to_json(nlohmann::json& json, SweepStatus status) {
    json = to_string(status);
}

std::ostream& operator<<(std::ostream& out, RunStatus status) {
    return out << to_string(status);
}

std::ostream& operator<<(std::ostream& out, SweepStatus status) {
    return out << to_string(status);
}

std::optional<RunStatus> parse_run_status(std::string_view text) {
    return value_in(kRunStatusNames, text);
}

std::optional<SweepStatus> parse_sweep_status(std::string_view text) {
    return value_in(kSweepStatusNames, text);
}

bool is_final(RunStatus status) {
    return status != RunStatus::kPending && status != RunStatus::kRunning;
}

bool is_final(SweepStatus status) {
    return status != SweepStatus::kQueued && status != SweepStatus::kRunning;
}

std::span<const RunStatus> all_run_status_values() {
    return kRunStatuses;
}

std::span<const SweepStatus> all_sweep_status_values() {
    return kSweepStatuses;
}

std::span<const std::string_view> all_run_status_names() {
    return kRunStatusSpellings;
}

}  // namespace ds
