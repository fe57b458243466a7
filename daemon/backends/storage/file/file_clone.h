// A copy of a volume file that costs as little as the host's file system
// allows: a reflink (the FICLONE ioctl: btrfs, XFS with reflink, bcachefs),
// which shares every extent until one side writes, or else a sparse copy
// that copies only the data ranges (SEEK_DATA/SEEK_HOLE) and leaves the
// holes holes. The golden volumes of file storage are cloned this way.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace ds {

enum class FileCloneMethod { kReflink, kSparseCopy };
std::string_view to_string(FileCloneMethod);  // "reflink" "sparse-copy"

// Whether clone_file may try a reflink first (kAny), or must copy (tests of
// the copy on a file system that would reflink).
enum class FileClonePolicy { kAny, kSparseCopyOnly };

// Creates `to` (which must not exist: O_EXCL, mode 0600) with the content and
// size of `from`. On failure nothing is left at `to`. errc::kStorage naming
// the file and the failing call.
Result<FileCloneMethod> clone_file(const std::string& from, const std::string& to,
                                   FileClonePolicy policy = FileClonePolicy::kAny);

}  // namespace ds
