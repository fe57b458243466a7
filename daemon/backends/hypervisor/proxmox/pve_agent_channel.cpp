#include "daemon/backends/hypervisor/proxmox/pve_agent_channel.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <thread>

#include "common/json_shape.h"
#include "common/protocol.h"

namespace ds {
namespace {

using Steady = std::chrono::steady_clock;
using namespace std::chrono_literals;

// agent/file-write's content: the schema's maxLength (qemu-server
// PVE/API2/Qemu/Agent.pm, file-write: 60 * 1024, "smaller than our 64k POST
// limit").
constexpr std::size_t kMaxFileWriteBytes = 61440;
constexpr auto kPingInterval = 1s;
// What an error keeps of the agent's stderr (its end: the last log lines).
constexpr std::size_t kStderrTailBytes = 2000;

// ---------------------------------------------------------------------------
// The typed schemas of what PVE relays from the guest, one table per answer
// (qemu-server PVE/API2/Qemu/Agent.pm, the `returns` of exec, exec-status
// and file-read). The values come from the guest's qemu-guest-agent and are
// passed on unchecked (qemu_exec_status only turns JSON booleans into 1/0),
// so a guest that lies can put anything there.

using json_shape::Field;
using json_shape::Presence;
using json_shape::Shape;

constexpr Shape kInteger = json_shape::integer();  // within int64
// 0 or 1 (PVE's conversion of a boolean), or a JSON boolean.
constexpr Shape kBit = json_shape::flag();
constexpr Shape kString = json_shape::string();

// clang-format off
constexpr std::array kExecFields = {
    Field{"pid", kInteger, Presence::kRequired},
};

constexpr std::array kExecStatusFields = {
    Field{"exited", kBit, Presence::kRequired},
    Field{"exitcode", kInteger},
    Field{"signal", kInteger},
    Field{"out-data", kString},
    Field{"err-data", kString},
    Field{"out-truncated", kBit},
    Field{"err-truncated", kBit},
};

constexpr std::array kFileReadFields = {
    Field{"content", kString, Presence::kRequired},
    Field{"truncated", kBit},
};
// clang-format on

// The fields of `answer` that the table names, each of its shape (moved out
// of `answer`); required ones are there. A null field counts as absent.
Result<Json> check_answer(std::string_view call, Json& answer, std::span<const Field> fields) {
    return json_shape::check_object(answer, fields,
                                    {errc::kProtocol, call, json_shape::Wording::kField});
}

// Readers of a field check_answer passed.
std::optional<std::int64_t> integer_field(const Json& answer, std::string_view key) {
    const auto found = answer.find(std::string(key));
    if (found == answer.end() || found->is_null()) return std::nullopt;
    return found->get<std::int64_t>();
}

bool bit_field(const Json& answer, std::string_view key) {
    const auto found = answer.find(std::string(key));
    if (found == answer.end() || found->is_null()) return false;
    return found->is_boolean() ? found->get<bool>() : *found == 1;
}

std::string string_field(const Json& answer, std::string_view key) {
    const auto found = answer.find(std::string(key));
    return found == answer.end() || found->is_null() ? "" : found->get<std::string>();
}

// A string of JSON made of code points 0..255 (file-read's bytes as PVE's
// JSON encoder gives them) back to those bytes.
Result<std::string> latin1_bytes(const std::string& utf8) {
    std::string bytes;
    bytes.reserve(utf8.size());
    for (std::size_t i = 0; i < utf8.size(); ++i) {
        const auto lead = static_cast<unsigned char>(utf8[i]);
        if (lead < 0x80) {
            bytes += static_cast<char>(lead);
        } else if ((lead == 0xC2 || lead == 0xC3) && i + 1 < utf8.size()) {
            const auto next = static_cast<unsigned char>(utf8[++i]);
            bytes += static_cast<char>(((lead & 0x03) << 6) | (next & 0x3F));
        } else {
            return make_error(errc::kProtocol, "agent/file-read gave a character past U+00FF");
        }
    }
    return bytes;
}

// The end of the agent's stderr, for an error text: its last bytes, control
// characters but newlines and tabs as '?'.
std::string stderr_tail(const std::string& err) {
    std::string tail =
        err.substr(err.size() > kStderrTailBytes ? err.size() - kStderrTailBytes : 0);
    for (char& c : tail) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 && c != '\n' && c != '\t') c = '?';
    }
    return tail;
}

// The job as PVE can write it: file-write base64-encodes the content's
// characters as bytes (Agent.pm, file-write: encode_base64($param->{content})),
// which dies on a character past U+00FF and writes U+0080..U+00FF as one
// byte each, not as UTF-8. So a JSON line with non-ASCII text goes with
// \u escapes instead: the same JSON, in ASCII.
std::string ascii_json_line(std::string_view line) {
    const bool ascii = std::all_of(line.begin(), line.end(),
                                   [](char c) { return static_cast<unsigned char>(c) < 0x80; });
    if (ascii) return std::string(line);
    Json parsed = Json::parse(line, nullptr, false);
    if (parsed.is_discarded()) return std::string(line);
    return parsed.dump(-1, ' ', true, Json::error_handler_t::replace) + "\n";
}

// The '\n'-terminated lines of `bytes`; `rest` gets what follows the last '\n'.
std::vector<std::string> complete_lines(std::string_view bytes, std::string* rest) {
    std::vector<std::string> lines;
    for (std::size_t newline = bytes.find('\n'); newline != std::string_view::npos;
         newline = bytes.find('\n')) {
        lines.emplace_back(bytes.substr(0, newline));
        bytes.remove_prefix(newline + 1);
    }
    if (rest) *rest = std::string(bytes);
    return lines;
}

// ---------------------------------------------------------------------------
// The guest's files through PVE.

struct GuestAgent {
    std::shared_ptr<PveApi> api;
    std::string vm_path;  // /nodes/NODE/qemu/VMID

    Status write_file(const std::string& path, std::string_view content) {
        if (content.size() > kMaxFileWriteBytes) {
            return make_error(errc::kInvalidArgument, "agent/file-write of " + path + ": " +
                                                          std::to_string(content.size()) +
                                                          " bytes, over PVE's limit of " +
                                                          std::to_string(kMaxFileWriteBytes));
        }
        auto written =
            api->post(vm_path + "/agent/file-write",
                      PveParams().set("file", path).set("content", std::string(content)));
        if (!written) return written.error();
        return ok_status();
    }

    // The file's bytes, refused past `limit` or when PVE cut them.
    Result<std::string> read_file(const std::string& path, std::size_t limit) {
        DS_ASSIGN_OR_RETURN(auto read,
                            api->get(vm_path + "/agent/file-read", PveParams().set("file", path)));
        DS_ASSIGN_OR_RETURN(const Json answer,
                            check_answer("agent/file-read", read, kFileReadFields));
        if (bit_field(answer, "truncated")) {
            return make_error(errc::kProtocol, path + " reached agent/file-read's limit of 16 MiB");
        }
        auto bytes = latin1_bytes(string_field(answer, "content"));
        if (!bytes) return bytes.error();
        if (bytes->size() > limit) {
            return make_error(errc::kProtocol, path + " holds " + std::to_string(bytes->size()) +
                                                   " bytes, over the limit of " +
                                                   std::to_string(limit));
        }
        return bytes;
    }
};

// How the agent ended, from an exec-status answer that says it exited.
std::string describe_exit(const Json& status) {
    std::string how = "the agent exited";
    if (auto code = integer_field(status, "exitcode")) how += " with code " + std::to_string(*code);
    if (auto signal = integer_field(status, "signal"))
        how += " on signal " + std::to_string(*signal);
    const std::string err = string_field(status, "err-data");
    if (!err.empty()) how += "; stderr: " + stderr_tail(err);
    return how;
}

// ---------------------------------------------------------------------------
// The channel: hello and progress from the progress file, the agent's end
// from agent/exec-status (which answers "exited" exactly once, so that answer
// is kept), then the final messages from the result file, read once.

class PveAgentChannel : public AgentChannel {
  public:
    PveAgentChannel(GuestAgent agent, const PveAgentOptions& options, std::int64_t pid,
                    const std::atomic<bool>* cancelled)
        : agent_(std::move(agent)), options_(options), pid_(pid), cancelled_(cancelled) {}

    Result<std::string> read_line(Deadline deadline) override {
        for (;;) {
            if (!lines_.empty()) {
                std::string line = std::move(lines_.front());
                lines_.pop_front();
                return line;
            }
            if (closed_) return make_error(errc::kIo, "channel closed: " + *exit_);
            DS_TRY(poll_progress());
            if (!lines_.empty()) continue;
            DS_TRY(poll_exit());
            if (exit_) {
                // What the agent wrote before it exited comes before its end.
                DS_TRY(poll_progress());
                DS_TRY(read_result());
                closed_ = true;
                continue;
            }
            if (cancelled_ && cancelled_->load()) return make_error(errc::kCancelled, "cancelled");
            if (Steady::now() >= deadline) return timeout();
            std::this_thread::sleep_for(options_.poll_interval);
        }
    }

    // The first message is the job: it goes to the job file the agent waits
    // for. The agent reads nothing after it (it ends after its result), so
    // later messages (shutdown) are dropped.
    Status write(std::string_view data) override {
        if (job_written_) return ok_status();
        DS_TRY(agent_.write_file(options_.guest_job_file, ascii_json_line(data)));
        job_written_ = true;
        return ok_status();
    }

  private:
    Error timeout() const {
        std::string what = "no message from the agent in " + options_.guest_progress_file;
        if (!progress_seen_ && !progress_error_.empty()) what += " (" + progress_error_ + ")";
        return make_error(errc::kTimeout, what);
    }

    // The progress file holds hello and the latest progress message: hello
    // is taken once, the second line whenever it changed. Until the agent
    // has written it the file does not exist, which PVE answers with a 500
    // (qemu-server Agent.pm, file-read: agent_cmd "can't open file").
    Status poll_progress() {
        auto bytes = agent_.read_file(options_.guest_progress_file, kPveProgressFileBytes);
        if (!bytes) {
            const bool not_there_yet = !progress_seen_ && bytes.error().code == errc::kHypervisor;
            if (!not_there_yet) return bytes.error();
            progress_error_ = bytes.error().message;
            return ok_status();
        }
        progress_seen_ = true;
        const std::vector<std::string> lines = complete_lines(*bytes, nullptr);
        if (lines.size() > 2) {
            return make_error(errc::kProtocol, options_.guest_progress_file + " holds " +
                                                   std::to_string(lines.size()) +
                                                   " messages, more than hello and the latest "
                                                   "progress");
        }
        if (!lines.empty() && !hello_taken_) {
            lines_.push_back(lines[0]);
            hello_taken_ = true;
        }
        if (lines.size() == 2 && lines[1] != last_progress_) {
            last_progress_ = lines[1];
            lines_.push_back(lines[1]);
        }
        return ok_status();
    }

    Status poll_exit() {
        DS_ASSIGN_OR_RETURN(auto answer, agent_.api->get(agent_.vm_path + "/agent/exec-status",
                                                         PveParams().set_integer("pid", pid_)));
        DS_ASSIGN_OR_RETURN(const Json status,
                            check_answer("agent/exec-status", answer, kExecStatusFields));
        if (bit_field(status, "exited")) exit_ = describe_exit(status);
        return ok_status();
    }

    // The final messages, once the agent has exited. No result file is no
    // message: the channel closes with how the agent ended.
    Status read_result() {
        auto bytes = agent_.read_file(options_.guest_result_file, protocol::kMaxMessageBytes + 1);
        if (!bytes) {
            if (bytes.error().code != errc::kHypervisor) return bytes.error();
            *exit_ += " (no " + options_.guest_result_file + ")";
            return ok_status();
        }
        std::string rest;
        for (std::string& line : complete_lines(*bytes, &rest)) lines_.push_back(std::move(line));
        if (!rest.empty()) {
            return make_error(errc::kProtocol,
                              options_.guest_result_file + " ends in an incomplete message");
        }
        return ok_status();
    }

    GuestAgent agent_;
    PveAgentOptions options_;
    std::int64_t pid_;
    const std::atomic<bool>* cancelled_;
    bool job_written_ = false;
    bool progress_seen_ = false;       // the progress file was read once
    std::string progress_error_;       // why it could not be read before that
    bool hello_taken_ = false;         // its first line is in lines_
    std::string last_progress_;        // its second line, when last taken
    std::deque<std::string> lines_;    // read, not yet returned
    std::optional<std::string> exit_;  // how the agent ended, once exec-status said
    bool closed_ = false;              // the result file is read: nothing more comes
};

Status wait_for_ping(GuestAgent& agent, const std::string& vm_name, Deadline deadline,
                     const std::atomic<bool>* cancelled) {
    for (;;) {
        auto ping = agent.api->post(agent.vm_path + "/agent/ping");
        if (ping) return ok_status();
        // PVE's 403 names the privilege and the path ("Permission check
        // failed (/vms/N, VM.GuestAgent.Audit|VM.GuestAgent.Unrestricted)"):
        // no guest that boots later changes it, so it ends the wait at once.
        if (ping.error().code == errc::kForbidden) {
            return make_error(errc::kForbidden, "proxmox: agent/ping of " + vm_name +
                                                    " refused: " + ping.error().message);
        }
        if (cancelled && cancelled->load()) return make_error(errc::kCancelled, "cancelled");
        if (Steady::now() >= deadline) {
            return make_error(errc::kTimeout,
                              "proxmox: the guest agent of " + vm_name +
                                  " did not answer agent/ping: " + ping.error().message);
        }
        std::this_thread::sleep_for(kPingInterval);
    }
}

}  // namespace

Result<std::unique_ptr<AgentChannel>> open_pve_agent_channel(
    std::shared_ptr<PveApi> api, std::string vm_path, const PveAgentOptions& options,
    const std::string& vm_name, Deadline deadline, const std::atomic<bool>* cancelled) {
    GuestAgent agent{std::move(api), std::move(vm_path)};
    DS_TRY(wait_for_ping(agent, vm_name, deadline, cancelled));
    // Nothing is prepared in the guest: the agent writes its files itself
    // (an empty file-write content would not even pass PVE's form decoding).
    auto exec =
        agent.api->post(agent.vm_path + "/agent/exec",
                        PveParams().set_array(
                            "command", {options.agent_program, "--job-file", options.guest_job_file,
                                        "--progress-file", options.guest_progress_file,
                                        "--result-file", options.guest_result_file}));
    if (!exec) return exec.error();
    DS_ASSIGN_OR_RETURN(const Json started, check_answer("agent/exec", *exec, kExecFields));
    return std::unique_ptr<AgentChannel>(std::make_unique<PveAgentChannel>(
        std::move(agent), options, *integer_field(started, "pid"), cancelled));
}

}  // namespace ds
