// Typed schemas of the messages the guest agent sends the host
// (docs/agent-protocol.md): hello, progress, ack, trim_ready, result, error. The guest is
// untrusted, so every message is checked here before anything uses it, and
// the daemon reads guest data only through these structs.
//
// Contract of every parse_*():
//  * input: a message protocol::decode() accepted (an object with "v" and a
//    known "type"); its "type" is not looked at again.
//  * a field the daemon uses must be present (unless the schema says
//    optional), of its type, numbers within their range, data strings within
//    kMaxFieldBytes. An optional field that is null counts as absent.
//  * a violation is errc::kProtocol whose message names the field by its
//    path, e.g. "result.readback.fs_type: expected a string, got number".
//  * fields the daemon does not know are dropped (the protocol's version
//    rule: receivers ignore them); nothing of them is kept or stored.
//  * free text meant for people (progress phase/message, error phase/message)
//    is cut to kMaxTextBytes instead of refused.
// Never throws on any JSON.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/settings.h"

namespace ds::guest {

// Longest string the daemon accepts in a data field of hello or result (a
// version, a readback value, a run id, a map key). Longer fails the run: a
// cut value would no longer be what the guest read back.
inline constexpr std::size_t kMaxFieldBytes = 4096;
// Free text for people is cut to this many bytes (at a UTF-8 character
// boundary) followed by "...": what the daemon forwards or keeps of a progress
// message or an agent error stays this small whatever the guest sends.
inline constexpr std::size_t kMaxTextBytes = 4096;
// Largest CPU or queue count the guest may report (Linux's NR_CPUS limit).
inline constexpr std::int64_t kMaxSmallCount = 8192;
// Longest duration the guest may report (progress elapsed_s, result
// timings): 30 days, well past any workload the agent accepts (7 days).
inline constexpr double kMaxReportedSeconds = 30.0 * 24 * 3600;

// hello: the agent introduces itself (all fields required).
// The guest's os-release (each a kString; version_id and codename may be "").
struct GuestOs {
    std::string id;
    std::string version_id;
    std::string codename;
};

struct Hello {
    std::string agent_version;
    long long protocol = 0;  // an integer >= 0, informational ("v" is what counts)
    std::string kernel;
    std::string fio_version;  // "" when the guest has no fio
    std::vector<std::string> capabilities;
    std::optional<GuestOs> os;  // absent: an agent that predates it
};

// progress: advisory; its text is cut, never refused for length.
struct Progress {
    std::string phase;               // cut to kMaxTextBytes
    std::string message;             // cut to kMaxTextBytes
    double elapsed_s = 0;            // 0..kMaxReportedSeconds
    std::optional<double> fraction;  // 0..1 when present
};

// result: everything the daemon takes from a finished job.
struct ResultMessage {
    std::string run_id;
    // An object; its content is the workload's raw output, checked by
    // metrics_from_workload_output. ("metrics" of the message, which the
    // daemon re-derives instead of trusting, is checked to be an object and
    // then dropped.)
    Json output;
    // Known keys only: tune_s, format_s, mount_s, post_format_s, bench_s,
    // each 0..kMaxReportedSeconds.
    std::map<std::string, double> timings;
    // Known keys only: kernel, fio, agent.
    std::map<std::string, std::string> versions;
    // An object holding only the readback keys of docs/agent-protocol.md,
    // each of its type: strings device, fs_type, mount_options, scheduler,
    // write_cache, serial, mount_source, driver, work_dir_attributes,
    // server_version; integers >= 0 discard_max_bytes, logical_block_size,
    // read_ahead_kb, nr_requests; hw_queues and online_cpus
    // 0..kMaxSmallCount; rotational 0 or 1;
    // boolean nocow; btrfs {data, metadata, system: string};
    // server_variables {name: string}; after a trim (job.trim) integers >= 0
    // trim_removed_bytes, trimmed_bytes and string trim_error.
    Json readback = Json::object();
    // Optional (older agents send none: {}): the guest's CPU seconds over
    // the job by state, only the keys user_s, nice_s, system_s, idle_s,
    // iowait_s, irq_s, softirq_s, steal_s, each 0..kMaxReportedSeconds.
    Json guest_cpu = Json::object();
};

// trim_ready (the workload is done and on the disk; the agent waits for the
// host's trim) and mark_ready (a ledger's setup is on the disk; the agent
// waits for the host's mark): sent only when the job asked for them.
struct Ready {
    std::string run_id;
};

// ack: record `id` of a ledger workload was acknowledged in the guest
// (daemon/run/ack_ledger.h checks the sequence).
struct Ack {
    std::string run_id;
    long long id = 0;  // 0..2^63-1 here; the ledger wants 1, 2, 3, ...
};

// error: the agent's report of a failed job.
struct ErrorMessage {
    std::optional<std::string> run_id;  // null or absent: no usable job arrived
    std::string phase;                  // cut to kMaxTextBytes
    std::string message;                // cut to kMaxTextBytes
    std::string code;                   // "" when absent; "timeout", "no_space" are known
};

// Each takes the decoded message by value: what it keeps (a result's output
// of up to the 8 MiB message bound) is moved out of it, not copied.
Result<Hello> parse_hello(Json message);
Result<Progress> parse_progress(Json message);
Result<ResultMessage> parse_result(Json message);
Result<ErrorMessage> parse_error(Json message);
// `type`: protocol::kTrimReady or kMarkReady (the schema is the same).
Result<Ready> parse_ready(Json message, std::string_view type);
Result<Ack> parse_ack(Json message);

// `text` if it has at most max_bytes bytes; otherwise its first max_bytes
// bytes, shortened to end on a UTF-8 character boundary (so the result stays
// valid UTF-8 when `text` was), followed by "...".
std::string cut_text(std::string_view text, std::size_t max_bytes = kMaxTextBytes);

}  // namespace ds::guest
