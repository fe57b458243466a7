// The options of workload kind "io" (the agent's native engine,
// docs/io-engine.md), declared once, as data: fio's names, value syntax
// (common/units.h, kb_base=1024) and defaults for the subset the engine
// implements. The spec parser checks a [[workload]] against this table and the
// agent parses the job message's params with it, so both accept and refuse
// exactly the same names and values; docs/spec.md lists the table.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/settings.h"

namespace ds {

// How an option's value is written.
enum class IoValueType {
    kEnum,   // one of `values`, a string
    kSize,   // bytes: an integer, or a string in fio's size syntax ("4k" = 4096, "4KiB" = 4000)
    kCount,  // an integer, or a string of decimal digits
    kBool,   // true/false, 1/0, "1"/"0", "true"/"false"
    kTime,   // whole seconds as an integer, or a string in fio's time syntax ("10s", "500ms")
    kName,   // a non-empty string without '/'
    kPath,   // a non-empty path, one only (fio's ':' lists are not implemented)
};

// Who gives the options being checked.
enum class IoOptionSetter {
    kWorkload,  // a sweep's [[workload]], and so the job message's params
    kAgent,     // the agent itself (and ds-io): also the options it owns
};

struct IoOptionDef {
    std::string_view name;  // fio's spelling
    IoValueType type;
    // fio 3.33's default, in the option's own syntax; "" = none, or derived
    // from other options (the help says how).
    std::string_view default_value;
    std::string_view help;
    std::vector<std::string_view> values = {};  // kEnum: the accepted values
    // kCount and kSize: the accepted range, inclusive (bytes for kSize).
    std::uint64_t min = 0;
    std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    // An engine's own option: valid only with ioengine=`engine`. "" = any.
    std::string_view engine = {};
    // Set by the agent: the workload's files live below the mount point and
    // are named after the workload, so a workload may not say where.
    bool agent_owned = false;
};

// Every option, in the order docs and help list them.
std::span<const IoOptionDef> io_options();

// Another name fio gives an option, e.g. "blocksize" for "bs".
struct IoOptionAlias {
    std::string_view alias;
    std::string_view option;
};
std::span<const IoOptionAlias> io_option_aliases();

// The option called `name`, or of which `name` is an alias; nullptr when
// there is none.
const IoOptionDef* find_io_option(std::string_view name);
// The names a workload may give (any engine), in table order, for messages.
std::vector<std::string_view> workload_io_option_names();

// A value converted according to its definition's type; only the member for
// that type is meaningful.
struct IoOptionValue {
    std::string text;          // kEnum, kName, kPath
    bool flag = false;         // kBool
    std::uint64_t number = 0;  // kCount; kSize in bytes; kTime in microseconds
};

// The definition `setter` uses for `name` (an alias gives its option's) in a
// job whose engine is `ioengine`.
// errc::kInvalidArgument when there is none:
//   "unsupported io job option 'verify'; supported: ...; ioengine=libaio also takes: ...";
//   "io job option 'filename' is set by the agent: ...";
//   "io job option 'ring_first' is for ioengine=libaio, not psync".
Result<const IoOptionDef*> io_option_for(std::string_view name, std::string_view ioengine,
                                         IoOptionSetter setter);

// Converts `value` by `option`'s type and checks its range and values.
// errc::kInvalidArgument whose message is the problem alone, without the
// option's name: "\"4x\" is not a size (fio syntax: 4k, 1m, 512)",
// "0 is out of range 1..4096", "percentages (\"50%\") are not supported".
Result<IoOptionValue> read_io_option(const IoOptionDef& option, const Json& value);

// Resolved options by their own name (never an alias): every option that
// applies to the job's engine, given or at its default; an option without a
// default is present only when given.
using IoOptionValues = std::map<std::string, IoOptionValue, std::less<>>;

// Checks and resolves a whole params object (the ioengine first: it decides
// which engine options exist): io_option_for and read_io_option for every
// key, then the rules between options:
//   an option given under two names;
//   direct=1 needs bs to be a multiple of 512;
//   size must not be smaller than bs;
//   time_based needs runtime > 0.
// errc::kInvalidArgument "io job option 'NAME': PROBLEM", or io_option_for's.
Result<IoOptionValues> resolve_io_options(const Json& params, IoOptionSetter setter);

}  // namespace ds
