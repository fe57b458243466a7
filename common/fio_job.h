// Turning a workload's fio parameters into a fio command line, and fio's
// output back into JSON. Shared by the guest agent (fio on the filesystem
// under test) and disksweepd (the host baseline: the same job on the raw
// volume, with no guest).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/result.h"
#include "common/settings.h"

namespace ds {

// Params keys with a meaning of their own (fio passthrough):
//   "options":  an object of any further fio options, name -> string,
//               number or boolean, passed like the named ones;
//   "job_file": a whole fio job file (string); the agent writes it to a
//               scratch file and runs fio on it.
inline constexpr std::string_view kFioOptionsKey = "options";
inline constexpr std::string_view kFioJobFileKey = "job_file";

// Where fio does its I/O.
// Files below a directory: the guest's jobs, on the mounted filesystem.
struct FioDirectory {
    std::string path;
};
// A whole regular file or block device, with no filesystem: the host
// baseline on a file volume or a thin LV.
struct FioRawVolume {
    std::string path;
};
// An RBD image through librbd (fio's rbd engine, which replaces the
// workload's ioengine). librados finds the monitors and key through the
// ceph.conf in CEPH_CONF, which the caller sets.
struct FioRbdImage {
    std::string pool;
    std::string image;
    std::string client;  // cephx id without "client."
};
using FioTarget = std::variant<FioDirectory, FioRawVolume, FioRbdImage>;

// fio's report format: json+ is json plus each job's clat_ns.bins, the
// histograms from which metrics_from_fio_json pools the jobs' latency
// percentiles (common/fio_metrics.h).
inline constexpr std::string_view kFioOutputFormat = "--output-format=json+";

// The fio command for a workload.
// Without job_file:
//   fio --output-format=json+ --name=NAME TARGET... LOGS... --KEY=VALUE...
//   with the named params in the object's (sorted) key order, then those of
//   `options` in theirs. Values: strings as is, numbers as JSON spells them,
//   booleans as 1/0. TARGET is --directory=DIR, --filename=PATH, or
//   --ioengine=rbd --pool=P --rbdname=I --clientname=C (the workload's own
//   ioengine is then left out).
// With job_file (alone: no other params; only on a FioDirectory, since the
//   job file names its own files below it):
//   fio --output-format=json+ --directory=DIR LOGS... JOB_FILE_PATH
//   (`job_file_path` is where the caller writes the text; options before it
//   apply to every job of the file).
// LOGS are fio_log_options(log_prefix) (common/fio_logs.h: per-job
// per-second iops and bandwidth logs), present when `log_prefix` is not
// empty.
// errc::kInvalidArgument for a non-object `params` or `options`, an option
// name that is empty, starts with '-', contains '=' or whitespace, an option
// (named or in `options`) that ds::fio_option_refusal refuses on the command
// line (common/fio_options.h: the agent's own, those that leave the
// filesystem under test or run commands, engines other than the allowed
// ones, abbreviations of any of them), an option given both named and in
// `options`, a value that is null, an array or an object; a job_file that is
// not a non-empty string, comes with other params, fails
// ds::check_fio_job_file (naming the line), or is given for another target.
Result<std::vector<std::string>> build_fio_command(const std::string& workload_name,
                                                   const Json& params, const FioTarget& target,
                                                   const std::string& job_file_path = "",
                                                   const std::string& log_prefix = "");

// The named params and `options` as one object (what fio is given on its
// command line), for planned_fio_seconds. Non-objects give an empty object.
Json effective_fio_options(const Json& params);

// How long the fio run is planned to take: runtime + ramp_time (named or in
// `options`), parsed the way fio does (a number with an optional unit
// us/ms/s/m/h/d, default seconds). nullopt when `runtime` is absent or unparseable (progress then
// carries no fraction).
std::optional<double> planned_fio_seconds(const Json& params);

// "fio ... failed (exit code 1): <stderr tail>" (at most 2000 bytes of
// stderr; when the stderr holds a "No space left on device" line that the
// tail cut off, that line is kept too, so the cause is never lost).
std::string describe_fio_failure(const std::vector<std::string>& argv,
                                 const std::string& stderr_text, int exit_code, int signal);

// The first job of fio's JSON whose "error" is not 0, as
// "fio job NAME ended with error 28 (No space left on device)"; nullopt
// when every job succeeded.
std::optional<std::string> fio_job_error(const Json& fio_json);

// The JSON document in fio's stdout. fio may print notes before it, so this
// parses from the first line that starts with '{' to the last '}'.
// errc::kAgent with an excerpt when there is none or it does not parse.
Result<Json> parse_fio_stdout(std::string_view stdout_text);

}  // namespace ds
