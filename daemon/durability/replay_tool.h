// disksweep-replay: a durability run's crash states rebuilt by hand
// (docs/durability.md, "A crash state by hand"), from the write log and the
// pre-run copy a run keeps with `durability = { keep_files = true }`:
//
//   disksweep-replay list LOG
//       the log's summary and its FLUSH entries (entry, byte offset);
//   disksweep-replay flush LOG BASE OUT ENTRY
//       OUT = BASE with every entry up to and including FLUSH entry ENTRY:
//       a power cut right after that flush, nothing of the disk cache kept;
//   disksweep-replay state LOG BASE OUT K --cache MODE --seed S
//                    --crash-points N [--from B] [--to B] [--no-volatile-cache]
//                    [--mark B] [--host-writeback FILE]
//       OUT = crash state K exactly as the daemon built it, from the values
//       its applied_settings.durability records (model -> cache mode: any
//       mode but unsafe for flush-barriers; mark.log_offset -> --mark); with
//       --host-writeback FILE (the record's host_writeback object saved as
//       JSON: its window_s and clock) state K of the host-writeback model.
//
// Every form takes --size-limit BYTES (default: BASE's size, right for a raw
// volume): no log entry may write past it. Errors name what is wrong; the
// exit status is 0, or 2 for a usage error, 1 for anything else.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace ds::durability {

int replay_tool_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace ds::durability
