// Job parameters of the native I/O engine: a subset of fio's job options,
// with fio's names, value syntax and meanings, read from the same JSON
// params object the agent's fio workload uses ({"rw":"randrw","bs":"4k"}).
// The options are declared once, as data, in common/io_options.h, which the
// spec parser checks workloads against too: names, values, defaults and the
// rules between options come from there. This file binds each option to its
// JobOptions field.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/io_options.h"
#include "common/result.h"
#include "common/settings.h"
#include "common/units.h"
#include "guestagent/io_engine.h"

namespace ds::io {

// fio's rw= values. kReadWrite is fio's "readwrite" (alias "rw"): mixed
// sequential; kRandRw mixed random; the mix is rwmixread.
enum class RwMode { kRead, kWrite, kRandRead, kRandWrite, kRandRw, kReadWrite };

std::string_view rw_mode_name(RwMode mode);
bool rw_is_random(RwMode mode);
bool rw_reads(RwMode mode);   // the job issues reads
bool rw_writes(RwMode mode);  // the job issues writes

// A parsed job. parse_job_options sets every field that has a default in
// common/io_options.h from there (fio 3.33's); the initialisers below are
// for jobs built in code.
struct JobOptions {
    std::string name = "disksweep-io";  // fio: name (files are <name>.<job>.0)
    std::string ioengine = "psync";     // fio's default engine on Linux
    RwMode rw = RwMode::kRead;
    unsigned rwmixread = 50;                  // percent of a mixed job's I/Os that read
    std::uint64_t bs = 4096;                  // bytes per I/O, both directions
    unsigned iodepth = 1;                     // units outstanding per job
    unsigned numjobs = 1;                     // jobs, each with its own engine instance
    std::optional<std::uint64_t> size;        // bytes per job; nullopt: the file's or device's
    std::string filename;                     // one file or device, shared by all jobs
    std::string directory;                    // without filename: per-job files in here
    bool direct = false;                      // O_DIRECT
    double runtime_s = 0;                     // 0: until `size` bytes are done
    bool time_based = false;                  // run for runtime_s, wrapping around the file
    double ramp_time_s = 0;                   // I/O before this is not measured
    unsigned iodepth_batch_submit = 1;        // units per commit (0 in params = iodepth)
    unsigned iodepth_batch_complete = 1;      // min completions per reap (0 = poll)
    unsigned iodepth_batch_complete_max = 0;  // max per reap (0 in params = the min, >= 1)
    unsigned iodepth_low = 0;                 // reap a full queue down to this (0 = iodepth)
    bool group_reporting = false;             // one merged entry in "jobs" instead of one per job
    bool thread = false;  // fio's: jobs as threads of the caller, not processes (io_job.h)
    EngineOptionValues engine_options;         // the chosen engine's own options, all of them
    const EngineDescriptor* engine = nullptr;  // resolved `ioengine`, never null once parsed
    Json given = Json::object();               // the params exactly as given
};

// The general options (engine-independent) and their aliases, as
// common/io_options.h declares them, in the order help lists them.
std::span<const OptionSpec> job_option_specs();

// Parses and validates `params` (a JSON object of fio option name -> value)
// with ds::resolve_io_options as the agent (IoOptionSetter::kAgent: name,
// filename and directory are allowed; check_io_params in workload_kinds.h
// refuses them in a workload). errc::kInvalidArgument with a message naming
// the option, e.g.
//   "io job option 'bs': \"4x\" is not a size (fio syntax: 4k, 1m, 512)";
//   "unsupported io job option 'verify'; supported: bs, direct, ...";
// and, beyond the table's checks, "io job option 'size': is required with
// ioengine=null" (an engine that opens no file needs a size). Batch sizes are
// fixed up as fio does: iodepth_batch_submit 0 -> iodepth; every batch size
// capped at iodepth; iodepth_batch_complete_max raised to the min and to at
// least 1; iodepth_low 0 (or above iodepth) -> iodepth.
Result<JobOptions> parse_job_options(const Json& params);

// Every option with its resolved value (sizes in bytes, times in seconds,
// engine options under their names), for the result's "resolved options".
Json resolved_options_json(const JobOptions& options);

// fio's value syntax (common/units.h: sizes with kb_base=1024, "4k" = 4096
// and "4KiB" = 4000; times in whole units, seconds by default), under the
// names the agent's callers use.
using ds::parse_fio_seconds;
using ds::parse_fio_size;

}  // namespace ds::io
