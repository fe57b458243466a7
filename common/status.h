// The lifecycle states of a run and of a sweep, as types. Their spellings
// (to_string) are what the store keeps in its TEXT columns (checked there by
// CHECK constraints), what the API emits and what hostctl reads back from
// it: append only, never rename one.
#pragma once

#include <iosfwd>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ds {

enum class RunStatus {
    kPending,
    kRunning,
    kSucceeded,
    kFailed,
    // The workload's time limit (or the daemon's deadline for its result)
    // passed; the run was stopped and measured nothing.
    kTimedOut,
    kCancelled,
};

enum class SweepStatus {
    kQueued,
    kRunning,
    kSucceeded,
    kFailed,
    kCancelled,
};

// "pending", "running", "succeeded", "failed", "timed_out", "cancelled".
std::string to_string(RunStatus status);
// "queued", "running", "succeeded", "failed", "cancelled".
std::string to_string(SweepStatus status);

// A status put into JSON is its spelling (nlohmann would otherwise write the
// enum's integer). No from_json: text read back goes through parse_*_status,
// whose caller decides what an unknown spelling means.
void to_json(nlohmann::json& json, RunStatus status);
void to_json(nlohmann::json& json, SweepStatus status);

// The spelling, for logs and test messages.
std::ostream& operator<<(std::ostream& out, RunStatus status);
std::ostream& operator<<(std::ostream& out, SweepStatus status);

// The status spelled `text` (exactly as to_string spells it); nullopt for
// any other text.
std::optional<RunStatus> parse_run_status(std::string_view text);
std::optional<SweepStatus> parse_sweep_status(std::string_view text);

// A final status never changes again: succeeded, failed, timed_out and
// cancelled for a run; succeeded, failed and cancelled for a sweep.
bool is_final(RunStatus status);
bool is_final(SweepStatus status);

// Every status in lifecycle order.
std::span<const RunStatus> all_run_status_values();
std::span<const SweepStatus> all_sweep_status_values();
// The spellings of all_run_status_values(), in the same order.
std::span<const std::string_view> all_run_status_names();

}  // namespace ds
