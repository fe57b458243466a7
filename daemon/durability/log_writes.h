// The dm-log-writes format, as QEMU's blklogwrites filter writes it: a
// durability run's data disk logs every write, flush and discard the guest
// sends (docs/durability.md). This reads such a log into an index of its
// entries; replay.h applies them, crash_states.h chooses which.
//
// The format (Linux drivers/md/dm-log-writes.c, struct log_write_super and
// struct log_write_entry, log_one_block; QEMU block/blklogwrites.c, which
// copies them, blk_log_writes_co_log and blk_log_writes_co_do_log):
//  * sector 0: the super block, little-endian {u64 magic, u64 version,
//    u64 nr_entries, u32 sectorsize}, zero-padded to one log sector;
//  * from sector 1, one entry after another: an entry sector
//    {u64 sector, u64 nr_sectors, u64 flags, u64 data_len} (device sectors
//    of `sectorsize` bytes), zero-padded to one log sector (for a MARK, the
//    mark's text of data_len bytes follows the header in that sector),
//    followed by nr_sectors sectors of the write's data; a DISCARD and a
//    FLUSH carry none.
// QEMU writes data_len 0 for every entry and never sets FUA: it declares no
// FUA support, so the block layer turns a guest's FUA write into the write
// and a flush of the filter node, logged as a FLUSH entry (block/io.c,
// bdrv_driver_pwritev). A write-zeroes is logged as a write whose data is
// zeros (blk_log_writes_co_do_log). The super block's nr_entries is
// rewritten after every FLUSH entry and every log-super-update-interval
// entries (QEMU's default 4096; a durability run sets 1).
//
// The log is untrusted input (the guest chose every write in it, and a
// killed QEMU leaves it cut short): every length and offset is checked
// against the file before it is used, and a bad log is an Error naming the
// entry and its byte offset, never a crash or a huge allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace ds::durability {

// Every constant of the on-disk format, defined here once.
namespace log_format {
inline constexpr std::uint64_t kMagic = 0x6a736677736872ULL;  // WRITE_LOG_MAGIC
inline constexpr std::uint64_t kVersion = 1;                  // WRITE_LOG_VERSION
inline constexpr std::uint64_t kFlagFlush = 1u << 0;          // LOG_FLUSH_FLAG
inline constexpr std::uint64_t kFlagFua = 1u << 1;            // LOG_FUA_FLAG
inline constexpr std::uint64_t kFlagDiscard = 1u << 2;        // LOG_DISCARD_FLAG
inline constexpr std::uint64_t kFlagMark = 1u << 3;           // LOG_MARK_FLAG
inline constexpr std::uint64_t kKnownFlags = kFlagFlush | kFlagFua | kFlagDiscard | kFlagMark;
// Packed sizes of struct log_write_super and struct log_write_entry.
inline constexpr std::size_t kSuperBytes = 8 + 8 + 8 + 4;
inline constexpr std::size_t kEntryHeaderBytes = 8 + 8 + 8 + 8;
// QEMU's blk_log_writes_sector_size_valid: a power of two, at least the
// size of either struct, below 16 MiB.
inline constexpr std::uint32_t kMinSectorSize = 32;
inline constexpr std::uint32_t kMaxSectorSize = (1u << 24) - 1;
// What a durability run asks QEMU for (log-sector-size): the guest's
// logical sector size, so every guest write is a whole number of sectors.
inline constexpr std::uint32_t kRunSectorSize = 512;
}  // namespace log_format

// One logged request and where it lies in the log.
struct LogEntry {
    std::uint64_t sector = 0;       // first device sector written (sectorsize units)
    std::uint64_t nr_sectors = 0;   // sectors written or discarded
    std::uint64_t flags = 0;        // log_format::kFlag*
    std::uint64_t offset = 0;       // byte offset of the entry sector in the log
    std::uint64_t data_offset = 0;  // byte offset of its data (offset + sectorsize)
    std::uint64_t data_bytes = 0;   // bytes of data in the log (0: flush, discard, mark)
    // The log's size once this entry is written whole: the ledger records
    // the log size at each acknowledgement, and an entry with end_offset at
    // or below it was in the log before that acknowledgement.
    std::uint64_t end_offset = 0;
    std::string mark;  // a MARK's text (dm-log-writes only; QEMU writes none)

    bool is_flush() const { return (flags & log_format::kFlagFlush) != 0; }
    bool is_fua() const { return (flags & log_format::kFlagFua) != 0; }
    bool is_discard() const { return (flags & log_format::kFlagDiscard) != 0; }
    // Whether replaying it changes the device (data or a discard).
    bool changes_device() const { return data_bytes > 0 || (is_discard() && nr_sectors > 0); }
};

// A whole log, read and checked.
struct LogIndex {
    std::uint32_t sector_size = 0;  // the super block's sectorsize
    std::vector<LogEntry> entries;  // as many as the super block counts, in log order
    std::uint64_t file_size = 0;    // the log file's size when read
    // Bytes after the last counted entry: entries QEMU wrote after it last
    // rewrote the super block (none with log-super-update-interval=1 once
    // the guest stopped). Not parsed: only counted entries are trusted.
    std::uint64_t uncounted_bytes = 0;

    // How many leading entries were complete when the log was
    // `log_size` bytes long (entries whose end_offset <= log_size).
    std::size_t entries_complete_at(std::uint64_t log_size) const;
};

// Reads and checks the log at `path`. Errors (errc::kIo for a file that
// cannot be read, errc::kInvalidArgument for a log that is not one) say
// what is wrong and where: "log entry 12 at byte 6144: ...".
Result<LogIndex> read_log(const std::string& path);

// Reads exactly `bytes` at `offset` of the open log `log_fd` into `out`
// (resized to `bytes`); errc::kIo naming the offset when the file is
// shorter or cannot be read. The replayer's one way into a log's data.
Status read_log_bytes(int log_fd, std::uint64_t offset, std::uint64_t bytes,
                      std::vector<char>& out);

}  // namespace ds::durability
