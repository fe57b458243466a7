// What a workload of kind "fio" may pass to fio, declared once, as data: the
// options the agent sets itself, the options that would take the measurement
// off the filesystem under test (or run commands, or change settings the
// configuration records), and the I/O engines that do their I/O on the job's
// files. The spec parser refuses them up front (with the position), the agent
// again before it runs fio; docs/spec.md lists the table with its reasons.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/settings.h"

namespace ds {

enum class FioOptionRule {
    kAgentOwned,     // the agent sets it: job name, directory, output, per-second logs
    kRefused,        // never, for the reason given
    kAllowedValues,  // only with one of `allowed_values` (exactly as written)
};

struct FioOptionGuard {
    std::string_view name;  // as fio spells it (job options use '_', command-line options '-')
    FioOptionRule rule;
    std::string_view reason;                            // why, for errors and docs
    std::vector<std::string_view> allowed_values = {};  // kAllowedValues
};

// Every guarded option, in the order docs list them.
std::span<const FioOptionGuard> fio_option_guards();

// The ioengine values a fio workload may use: engines whose I/O goes to the
// job's files below the mount point (the ioengine guard's allowed values).
std::span<const std::string_view> fio_allowed_engines();

// Where an option reaches fio.
enum class FioOptionPlace {
    // As --NAME=VALUE (named params and `options`). fio reads its command
    // line with getopt_long, which also takes any unambiguous abbreviation
    // ("--exec_pre=..." runs exec_prerun, "--directo=..." sets directory), so
    // a name that begins a guarded name is refused too, unless it is itself a
    // whole fio option (getopt prefers an exact match): see the table.
    kCommandLine,
    // As NAME=VALUE in a job file: fio matches whole names only.
    kJobFile,
};

// Why fio may not be given NAME=VALUE at `place`, or nullopt when it may,
// as a phrase that follows the option's name: "is refused: fio would do its
// I/O on that file or device instead of the filesystem under test", "is set
// by the agent and cannot be overridden: ...", "is refused with value 'sg':
// ...; allowed: ...". Names
// are compared ignoring case and with '-' as '_' (fio is stricter, so this
// refuses more, never less).
std::optional<std::string> fio_option_refusal(std::string_view name, std::string_view value,
                                              FioOptionPlace place);

// A param value as fio is given it: strings as written, booleans 1/0, numbers
// as JSON spells them; nullopt for null, arrays and objects.
std::optional<std::string> fio_value_text(const Json& value);

// Checks the text of a fio job file: every option line passes
// fio_option_refusal (kJobFile) except `name`, which may name a job; job
// names (section headers and name=) must not contain '/' or '$' (fio makes
// file names from them, below `directory`); `include` is refused (the
// included file is not checked). errc::kInvalidArgument naming the line:
// "line 4 sets 'filename', which is refused: ...", "line 3 sets
// 'directory', which the agent sets: ...", "line 1: 'include' is refused".
Status check_fio_job_file(std::string_view text);

}  // namespace ds
