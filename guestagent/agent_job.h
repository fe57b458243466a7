// The host's "job" message as the agent takes it (docs/agent-protocol.md):
// checked field by field before the disk is touched.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/settings.h"
#include "guestagent/block_tuning.h"
#include "guestagent/workload.h"

namespace ds::agent {

// A validated "job" message.
struct AgentJob {
    std::string run_id;
    FilesystemSpec filesystem;
    Workload workload;
    BlockTuning block;  // job.block; empty when absent
    int timeout_s = 0;  // the workload's time limit
    // job.trim: after the workload, report trim_ready, wait for the host's
    // trim, remove the workload's files and fstrim (docs/agent-protocol.md).
    bool trim = false;
    // job.mark (kinds that acknowledge records only): before its first
    // measured write the runner syncs, reports mark_ready and waits for the
    // host's mark (docs/agent-protocol.md, docs/durability.md).
    bool mark = false;
    // job.check: the data disk is a crash image of a ledger run; check it
    // (guestagent/crash_check.h) instead of formatting and running the
    // workload. The result's output is the check's report.
    bool check = false;
    // job.check_disks (only with check): the serials of the crash images to
    // check instead of the data disk, in order; the result's output is then
    // {"states": [report, ...]} in that order. Empty when absent.
    std::vector<std::string> check_disks;
    // job.dataset: "fresh" (absent), "prepare" (format, post-format steps and
    // the workload's preparation only: a golden volume) or "prepared" (the
    // disk is a golden volume's clone: check its file system type, mount,
    // run without formatting or preparing).
    DatasetMode dataset = DatasetMode::kFresh;
};

// Checks a decoded job message field by field. errc::kInvalidArgument naming
// the field ("job.filesystem.type: ..."); rejects file system types,
// post-format steps, block settings and workload kinds the agent cannot
// run, and params the kind's own check refuses (workload_kinds.h).
Result<AgentJob> parse_job(const Json& message);

// How the agent carries out each post-format step of the shared table
// (ds::post_format_steps(), settings.cpp). The argv ends with the mount point.
struct PostFormatCommand {
    std::string_view step;
    std::vector<std::string_view> argv_before_mount_point;
};
// nullptr for a step the agent cannot carry out (parse_job refuses it).
const PostFormatCommand* find_post_format_command(std::string_view step);

}  // namespace ds::agent
