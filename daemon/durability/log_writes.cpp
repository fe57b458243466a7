#include "daemon/durability/log_writes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <limits>

#include "common/errno_text.h"
#include "common/file_descriptor.h"

namespace ds::durability {
namespace {

// Both structs are little-endian on disk whatever the host is.
std::uint64_t little_endian(const char* bytes, int width) {
    std::uint64_t value = 0;
    for (int i = width - 1; i >= 0; --i)
        value = (value << 8) | static_cast<unsigned char>(bytes[i]);
    return value;
}

Error bad_log(const std::string& what) {
    return make_error(errc::kInvalidArgument, "write log: " + what);
}

Error bad_entry(std::uint64_t index, std::uint64_t offset, const std::string& what) {
    return bad_log("log entry " + std::to_string(index) + " at byte " + std::to_string(offset) +
                   ": " + what);
}

// The fields of struct log_write_super.
struct SuperBlock {
    std::uint64_t magic = 0;
    std::uint64_t version = 0;
    std::uint64_t nr_entries = 0;
    std::uint32_t sector_size = 0;
};

Result<SuperBlock> read_super_block(int fd, std::uint64_t file_size) {
    if (file_size < log_format::kSuperBytes) {
        return bad_log("the log is " + std::to_string(file_size) +
                       " bytes, shorter than its super block (" +
                       std::to_string(log_format::kSuperBytes) + ")");
    }
    std::vector<char> bytes;
    DS_TRY(read_log_bytes(fd, 0, log_format::kSuperBytes, bytes));
    SuperBlock super{little_endian(&bytes[0], 8), little_endian(&bytes[8], 8),
                     little_endian(&bytes[16], 8),
                     static_cast<std::uint32_t>(little_endian(&bytes[24], 4))};
    return super;
}

// The checks QEMU's blk_log_writes_open makes on a log it appends to, and
// that the entries fit in the file at all (so a lying nr_entries cannot make
// us reserve or loop for billions of entries).
Status check_super_block(const SuperBlock& super, std::uint64_t file_size) {
    if (super.magic != log_format::kMagic)
        return bad_log("bad super block magic (not a write log)");
    if (super.version != log_format::kVersion) {
        return bad_log("unsupported version " + std::to_string(super.version));
    }
    const std::uint32_t size = super.sector_size;
    const bool power_of_two = size != 0 && (size & (size - 1)) == 0;
    if (!power_of_two || size < log_format::kMinSectorSize || size > log_format::kMaxSectorSize) {
        return bad_log("invalid sector size " + std::to_string(size));
    }
    // Every entry takes at least its own sector, after the super block's.
    const std::uint64_t room = file_size < size ? 0 : (file_size - size) / size;
    if (super.nr_entries > room) {
        return bad_log("the super block counts " + std::to_string(super.nr_entries) +
                       " entries, but a log of " + std::to_string(file_size) +
                       " bytes holds at most " + std::to_string(room));
    }
    return ok_status();
}

// Where an entry's data ends, checked against the file: nr_sectors comes
// from the log and may be anything.
Status place_entry_data(LogEntry& entry, std::uint64_t index, std::uint32_t sector_size,
                        std::uint64_t file_size) {
    entry.data_offset = entry.offset + sector_size;
    const bool carries_data = !entry.is_discard() && (entry.flags & log_format::kFlagMark) == 0;
    const std::uint64_t room =
        file_size < entry.data_offset ? 0 : (file_size - entry.data_offset) / sector_size;
    if (carries_data && entry.nr_sectors > room) {
        return bad_entry(index, entry.offset,
                         std::to_string(entry.nr_sectors) + " sectors of data, but the log has " +
                             std::to_string(room) + " sectors left (truncated or corrupt)");
    }
    entry.data_bytes = carries_data ? entry.nr_sectors * sector_size : 0;
    entry.end_offset = entry.data_offset + entry.data_bytes;
    return ok_status();
}

// Whether the entry's device range fits in 64-bit byte offsets; the
// replayer checks it against the image's size.
Status check_device_range(const LogEntry& entry, std::uint64_t index, std::uint32_t sector_size) {
    const std::uint64_t max_sectors = std::numeric_limits<std::uint64_t>::max() / sector_size;
    if (entry.sector > max_sectors || entry.nr_sectors > max_sectors - entry.sector) {
        return bad_entry(index, entry.offset,
                         "device range sector " + std::to_string(entry.sector) + " + " +
                             std::to_string(entry.nr_sectors) + " overflows");
    }
    return ok_status();
}

// dm-log-writes's data_len: a MARK's text length inside the entry sector,
// or (its inline-data case) the byte length of the data that follows. QEMU
// writes 0.
Status check_data_len(LogEntry& entry, std::uint64_t index, std::uint64_t data_len,
                      const std::vector<char>& sector) {
    if ((entry.flags & log_format::kFlagMark) != 0) {
        if (data_len > sector.size() - log_format::kEntryHeaderBytes) {
            return bad_entry(
                index, entry.offset,
                "mark of " + std::to_string(data_len) + " bytes does not fit in its sector");
        }
        const char* text = sector.data() + log_format::kEntryHeaderBytes;
        entry.mark.assign(text, std::find(text, text + data_len, '\0'));
        return ok_status();
    }
    if (data_len != 0 && data_len != entry.data_bytes) {
        return bad_entry(index, entry.offset,
                         "data_len " + std::to_string(data_len) + " disagrees with " +
                             std::to_string(entry.nr_sectors) + " sectors of data");
    }
    return ok_status();
}

Result<LogEntry> read_entry(int fd, std::uint64_t index, std::uint64_t offset,
                            std::uint32_t sector_size, std::uint64_t file_size) {
    if (offset > file_size || file_size - offset < sector_size) {
        return bad_entry(index, offset, "the log ends inside the entry's sector (truncated)");
    }
    std::vector<char> sector;
    DS_TRY(read_log_bytes(fd, offset, sector_size, sector));
    LogEntry entry;
    entry.offset = offset;
    entry.sector = little_endian(&sector[0], 8);
    entry.nr_sectors = little_endian(&sector[8], 8);
    entry.flags = little_endian(&sector[16], 8);
    if ((entry.flags & ~log_format::kKnownFlags) != 0) {
        return bad_entry(index, offset, "unknown flags " + std::to_string(entry.flags));
    }
    DS_TRY(check_device_range(entry, index, sector_size));
    DS_TRY(place_entry_data(entry, index, sector_size, file_size));
    DS_TRY(check_data_len(entry, index, little_endian(&sector[24], 8), sector));
    return entry;
}

}  // namespace

std::size_t LogIndex::entries_complete_at(std::uint64_t log_size) const {
    // end_offset grows with the index: entries are laid out one after another.
    const auto first_incomplete =
        std::find_if(entries.begin(), entries.end(),
                     [log_size](const LogEntry& entry) { return entry.end_offset > log_size; });
    return static_cast<std::size_t>(first_incomplete - entries.begin());
}

Status read_log_bytes(int log_fd, std::uint64_t offset, std::uint64_t bytes,
                      std::vector<char>& out) {
    out.resize(bytes);
    std::uint64_t done = 0;
    while (done < bytes) {
        const ssize_t got =
            ::pread(log_fd, out.data() + done, bytes - done, static_cast<off_t>(offset + done));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            return make_error(errc::kIo, "write log: read at byte " +
                                             std::to_string(offset + done) + ": " +
                                             describe_errno(errno));
        }
        if (got == 0) {
            return make_error(errc::kIo, "write log: ends at byte " +
                                             std::to_string(offset + done) + ", " +
                                             std::to_string(bytes - done) + " bytes short");
        }
        done += static_cast<std::uint64_t>(got);
    }
    return ok_status();
}

Result<LogIndex> read_log(const std::string& path) {
    FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat status {};
    if (!fd.valid() || ::fstat(fd.get(), &status) != 0) {
        return make_error(errc::kIo, "write log " + path + ": " + describe_errno(errno));
    }
    LogIndex index;
    index.file_size = static_cast<std::uint64_t>(status.st_size);
    DS_ASSIGN_OR_RETURN(const SuperBlock super, read_super_block(fd.get(), index.file_size));
    DS_TRY(check_super_block(super, index.file_size));
    index.sector_size = super.sector_size;
    std::uint64_t offset = super.sector_size;  // entries start at sector 1
    for (std::uint64_t i = 0; i < super.nr_entries; ++i) {
        DS_ASSIGN_OR_RETURN(LogEntry entry,
                            read_entry(fd.get(), i, offset, super.sector_size, index.file_size));
        offset = entry.end_offset;
        index.entries.push_back(std::move(entry));
    }
    index.uncounted_bytes = index.file_size - offset;
    return index;
}

}  // namespace ds::durability
