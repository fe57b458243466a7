// The workload kinds the agent runs, as data: each kind's up-front param
// check (run by parse_job before the disk is touched) and its runner
// (workload.h). The agent dispatches through this table only. Everything
// else about a kind (spec options, image, metrics, compare view) is its
// descriptor in common/workload_kind.h; this table names exactly the kinds
// that one does (tests/unit/agent/workload_kind_registry_test.cpp), so
// adding a kind is one descriptor there and one row here.
#pragma once

#include <span>
#include <string_view>

#include "common/result.h"
#include "common/settings.h"
#include "guestagent/workload.h"

namespace ds::agent {

struct WorkloadKindEntry {
    std::string_view kind;
    // errc::kInvalidArgument naming the bad param.
    Status (*check_params)(const Workload& workload);
    WorkloadRunner run;
};

// fio, io, mariadb-atis, sysbench-oltp (in ds::workload_kinds()' order).
std::span<const WorkloadKindEntry> workload_kind_table();
// nullptr for an unknown kind.
const WorkloadKindEntry* find_workload_kind_entry(std::string_view kind);

// Kind `fio`: fio 3.33 as a child process (fio_job.h builds its command,
// refusing what common/fio_options.h guards, as the spec parser does).
// fio reports as json+ (with the latency bins metrics_from_fio_json pools).
// The job file of params.job_file is written to ctx.scratch_dir/NAME.fio.
// fio writes per-job per-second logs below ctx.scratch_dir/fio-logs/ (emptied
// first), which are added to its report's job entries and then removed
// (common/fio_logs.h: attach_fio_samples; a missing or garbled log leaves
// the series out and is logged, it does not fail the run).
// fio is killed at ctx.time_limit (errc::kTimeout "fio was stopped after
// N s: ..."); a failing fio is errc::kAgent with its stderr tail, or errc::kIo
// when that says "No space left on device"; so is a job that reports an
// error in fio's JSON.
Status check_fio_params(const Workload& workload);
Result<WorkloadOutput> run_fio_workload(const Workload& workload, WorkloadContext& ctx);

// Kind `io`: the agent's own engine (ds::io::run_io_job) on a thread, with
// directory = ctx.work_dir and name = the workload's name. check_io_params
// checks the params against common/io_options.h as the spec parser does
// (so filename, directory and name, the agent's, are refused), then as the
// engine will run them. At ctx.time_limit the stop flag is set and
// the run ends with errc::kTimeout "io job NAME was stopped after N s: ...";
// engine errors pass through (an ENOSPC is errc::kIo naming it).
Status check_io_params(const Workload& workload);
Result<WorkloadOutput> run_io_workload(const Workload& workload, WorkloadContext& ctx);

}  // namespace ds::agent
