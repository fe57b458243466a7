// The replayer: a crash image is a copy of the volume as it was before the
// run, with a chosen set of the log's entries applied (crash_states.h says
// which). Our own: xfstests' replay-log is not packaged by Debian.
//
// Images are plain files written in place, not qcow2 overlays: an entry's
// data goes in with one pwrite at its byte offset and a discard is a hole
// punch, all inside this process (an overlay would need qemu-io per crash
// state and a command line per entry), and a raw file is what the host's
// own tools (fsck, a loop mount) and the checker guest open as they are.
// The copy is cheap where the file system allows: a reflink (FICLONE:
// btrfs, XFS with reflink) shares every extent and costs nothing; elsewhere
// (this host's ext4) a sparse copy copies only the allocated ranges
// (SEEK_DATA/SEEK_HOLE with copy_file_range), so an image costs what the
// pre-run volume holds, not its size.
//
// A discard punches a hole (FALLOC_FL_PUNCH_HOLE), falling back to writing
// zeros where the file system cannot punch: that is what QEMU's file-posix
// does with discard=unmap on a raw file (the guest reads zeros after it), it
// keeps the image sparse, and a file system that relies on discarded
// blocks still holding their old data is wrong on real disks too.
//
// The log sits below the volume's format node (docs/durability.md), so its
// offsets are the volume file's own: a qcow2 volume is replayed as the
// qcow2 file, metadata and all, which is what a host crash leaves of it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "common/result.h"
#include "daemon/durability/log_writes.h"

namespace ds::durability {

enum class CopyMethod { kReflink, kSparseCopy };
std::string_view to_string(CopyMethod method);  // "reflink" | "sparse-copy"

// Copies the file `source` to `target` (created; an existing one is
// replaced), by reflink where the file system shares extents, else by a
// sparse copy. The target has the source's size. errc::kIo naming the file
// and the step on failure.
Result<CopyMethod> clone_image(const std::string& source, const std::string& target);

// Applies the entries of `index` whose positions `applied` lists (ascending,
// each < index.entries.size()) onto the image file `image`, in log order:
// data entries are written at sector * sector_size, discards punched. FLUSH
// and MARK entries change nothing. No entry may reach past `size_limit`
// bytes of the image (the log is untrusted; a qcow2 volume's file may grow,
// a raw one may not: the caller says how far). Errors name the entry.
Status apply_entries(const LogIndex& index, const std::string& log_path, const std::string& image,
                     std::span<const std::size_t> applied, std::uint64_t size_limit);

// A crash image in one step: `target` = a clone of `pre_run_volume` (the
// volume as it was before the run) with `applied` replayed onto it, as
// apply_entries does. Returns how the copy was made.
Result<CopyMethod> build_crash_image(const std::string& pre_run_volume, const LogIndex& index,
                                     const std::string& log_path,
                                     std::span<const std::size_t> applied,
                                     const std::string& target, std::uint64_t size_limit);

// The positions 0..count-1: the entries of a plain replay up to a point.
std::vector<std::size_t> first_entries(std::size_t count);

}  // namespace ds::durability
