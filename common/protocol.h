// Host <-> guest agent protocol (docs/agent-protocol.md): newline-delimited
// JSON, every message an object {"v": kVersion, "type": "...", ...}, at most
// kMaxMessageBytes per line. The guest is untrusted: anything malformed,
// oversized or of an unexpected type is an Error, never a crash.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/settings.h"

namespace ds::protocol {

inline constexpr int kVersion = 2;
inline constexpr std::size_t kMaxMessageBytes = 8u << 20;  // fio JSON fits easily
// JSON values (scalars, objects, arrays) one message may hold. Parsed, a value
// takes 16 to ~80 bytes however short its text ("0," or "{},"), so without
// this an 8 MiB line could become hundreds of MiB in memory. fio's JSON for
// 64 jobs has about 20,000.
inline constexpr std::size_t kMaxMessageValues = 1u << 18;
// The most a LineReader reads at once.
inline constexpr std::size_t kReadChunkBytes = 64u << 10;
inline constexpr std::string_view kChannelName = "org.disksweep.agent.0";
// Serial numbers by which the guest finds its disks without udev.
inline constexpr std::string_view kRootDiskSerial = "disksweep-root";
inline constexpr std::string_view kDataDiskSerial = "disksweep-data";
// A checker guest (docs/durability.md) gets crash images as extra disks,
// crash_disk_serial(0), (1), ..., and checks them in one boot (job.check_disks):
// at most this many per guest.
inline constexpr std::size_t kMaxCheckDisks = 16;
// virtio-blk hands the guest at most 20 bytes of a disk's serial
// (VIRTIO_BLK_ID_BYTES); a longer one would be found under a cut name.
inline constexpr std::size_t kMaxDiskSerialBytes = 20;
// Why `serial` cannot name a disk the agent looks up, or "" when it can:
// 1..kMaxDiskSerialBytes bytes of A-Z a-z 0-9 '-' '_' (no '.' or '/': the
// agent makes a directory of that name).
std::string disk_serial_problem(std::string_view serial);
// "disksweep-crash-INDEX", at most 18 bytes for INDEX < kMaxCheckDisks.
std::string crash_disk_serial(std::size_t index);

// Message types, guest -> host: hello, progress, ack, mark_ready, trim_ready,
//                               result, error.
//                host -> guest: job, mark, trim, shutdown.
// trim_ready and trim are exchanged only when the job asked for them
// (job.trim, which the host sets only for an agent whose hello announces the
// "trim" capability), so a peer that does not know them never sees them;
// mark_ready and mark likewise (job.mark, the "mark" capability).
inline constexpr std::string_view kHello = "hello";
inline constexpr std::string_view kJob = "job";
inline constexpr std::string_view kProgress = "progress";
inline constexpr std::string_view kResult = "result";
inline constexpr std::string_view kError = "error";
inline constexpr std::string_view kShutdown = "shutdown";
inline constexpr std::string_view kTrimReady = "trim_ready";
inline constexpr std::string_view kTrim = "trim";
// A durability run's measured window (docs/durability.md): the guest has
// synced its setup and waits; the host makes it durable, marks the write
// log, then answers `mark`.
inline constexpr std::string_view kMarkReady = "mark_ready";
inline constexpr std::string_view kMark = "mark";
// One acknowledged record of a `ledger` workload, sent the moment the guest
// saw it acknowledged (docs/agent-protocol.md). Only ledger jobs send it, and
// only a host that knows the ledger kind sends those.
inline constexpr std::string_view kAck = "ack";
// The hello capability of an agent that can stop before its trim and wait
// for the host's `trim` (an agent on a stream; not the one-shot agent).
inline constexpr std::string_view kTrimCapability = "trim";
// The agent can stop before a ledger's first measured write and wait for the
// host's `mark` (job.mark; an agent on a stream).
inline constexpr std::string_view kMarkCapability = "mark";
// The agent knows job.dataset ("prepare", "prepared": golden volumes). The
// host sends it only to an agent that announces this: an older agent would
// ignore it and format a golden volume's clone.
inline constexpr std::string_view kDatasetCapability = "dataset";
// The agent checks crash images (job.check, docs/durability.md): the host
// sends a durability run's checker job only to an agent that announces it.
inline constexpr std::string_view kCheckCapability = "check";

// Serialises one message: {"v":kVersion,"type":type, ...payload} + '\n'.
// `payload` must be an object; its "v"/"type" keys are overwritten.
std::string encode(std::string_view type, const Json& payload);

// Parses one line (without '\n'). Checks: valid JSON nesting at most 64
// levels and holding at most kMaxMessageValues values, an object, "v" ==
// kVersion, "type" a known string. Error code errc::kProtocol.
Result<Json> decode(std::string_view line);

// Reads newline-delimited messages from a file descriptor with a bound on
// line size and a deadline. Does not own the fd.
//
// Memory bound: the reader never holds more than max_line + kReadChunkBytes
// bytes (its buffer's capacity, not only its size: it grows by explicit
// reservation, never past that), however long a peer talks without a newline.
class LineReader {
  public:
    explicit LineReader(int fd, std::size_t max_line = kMaxMessageBytes);
    // Returns the next complete line, or: errc::kTimeout when the deadline
    // passes, errc::kProtocol when a line exceeds max_line (as soon as more
    // than max_line bytes without a newline are buffered), errc::kIo on EOF
    // ("channel closed") or a read error. After kProtocol the buffered bytes
    // are dropped.
    Result<std::string> read_line(std::chrono::steady_clock::time_point deadline);

    // Bytes the reader holds allocated now (at most max_line + kReadChunkBytes).
    std::size_t buffer_capacity() const { return buffer_.capacity(); }

  private:
    Result<std::string> take_line(std::size_t newline);
    // Moves the pending bytes to the front and makes room for one more chunk.
    void make_room();
    // Waits for input until the deadline and appends what one read() returns.
    Result<std::size_t> read_chunk(std::chrono::steady_clock::time_point deadline);
    std::size_t pending() const { return buffer_.size() - start_; }
    void drop_pending();

    int fd_;
    std::size_t max_line_;
    std::vector<char> buffer_;  // the pending bytes are [start_, size())
    std::size_t start_ = 0;
    std::size_t scanned_ = 0;  // pending bytes already known to hold no '\n'
};

// Writes all of `data`, retrying on EINTR/partial writes.
Status write_all(int fd, std::string_view data);

}  // namespace ds::protocol
