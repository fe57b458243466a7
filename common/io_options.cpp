// The io workload kind's option table, and reading params against it.
#include "common/io_options.h"

#include <algorithm>
#include <array>
#include <charconv>

#include "common/text.h"
#include "common/units.h"

namespace ds {
namespace {

// O_DIRECT I/O must be aligned to the logical block size; 512 is the
// smallest, and what fio checks bs against.
constexpr std::uint64_t kDirectAlignment = 512;

const std::vector<std::string_view> kRwModes = {"read",   "write",     "randread", "randwrite",
                                                "randrw", "readwrite", "rw"};

// Limits the engine was built for (guestagent/io_job_runner.cpp): a unit's length is
// 32-bit, and every job and unit in flight has its own buffers.
constexpr std::uint64_t kMaxBlockSize = 256ull << 20;
constexpr std::uint64_t kMaxIodepth = 4096;
constexpr std::uint64_t kMaxNumjobs = 256;

const std::vector<IoOptionDef>& option_table() {
    static const std::vector<IoOptionDef> table = {
        {.name = "ioengine",
         .type = IoValueType::kEnum,
         .default_value = "psync",
         .help = "I/O engine: libaio (Linux native AIO), io_uring (Linux io_uring), psync "
                 "(pread/pwrite) or null (no I/O: the engine's own overhead, for comparison)",
         .values = {"libaio", "io_uring", "psync", "null"}},
        {.name = "rw",
         .type = IoValueType::kEnum,
         .default_value = "read",
         .help = "I/O pattern: read, write, randread, randwrite, randrw (mixed random), "
                 "readwrite or rw (mixed sequential)",
         .values = kRwModes},
        {.name = "rwmixread",
         .type = IoValueType::kCount,
         .default_value = "50",
         .help = "percent of a mixed job's I/Os that are reads",
         .min = 0,
         .max = 100},
        {.name = "bs",
         .type = IoValueType::kSize,
         .default_value = "4k",
         .help = "block size of every I/O, both directions",
         .min = 1,
         .max = kMaxBlockSize},
        {.name = "iodepth",
         .type = IoValueType::kCount,
         .default_value = "1",
         .help = "I/O units kept in flight per job",
         .min = 1,
         .max = kMaxIodepth},
        {.name = "numjobs",
         .type = IoValueType::kCount,
         .default_value = "1",
         .help = "jobs running the same workload, each its own process (or thread)",
         .min = 1,
         .max = kMaxNumjobs},
        {.name = "size",
         .type = IoValueType::kSize,
         .default_value = "",
         .help = "bytes of file each job works on (default: the file's size; required with "
                 "per-job files and with ioengine=null)",
         .min = 1},
        {.name = "direct",
         .type = IoValueType::kBool,
         .default_value = "0",
         .help = "O_DIRECT: bypass the page cache (bs must be a multiple of 512)"},
        {.name = "runtime",
         .type = IoValueType::kTime,
         .default_value = "0",
         .help = "stop after this long (seconds unless a unit is given; 0 = when size is done)"},
        {.name = "time_based",
         .type = IoValueType::kBool,
         .default_value = "0",
         .help = "run for the whole runtime, wrapping around the file (needs runtime)"},
        {.name = "ramp_time",
         .type = IoValueType::kTime,
         .default_value = "0",
         .help = "run this long before measuring"},
        {.name = "iodepth_batch_submit",
         .type = IoValueType::kCount,
         .default_value = "1",
         .help = "units submitted per commit (0 = iodepth; capped at iodepth)"},
        {.name = "iodepth_batch_complete_min",
         .type = IoValueType::kCount,
         .default_value = "1",
         .help = "least completions one reap waits for (0 = also poll while the queue is not "
                 "full; capped at iodepth)"},
        {.name = "iodepth_batch_complete_max",
         .type = IoValueType::kCount,
         .default_value = "",
         .help = "most completions one reap takes (default: iodepth_batch_complete_min, at "
                 "least 1)"},
        {.name = "iodepth_low",
         .type = IoValueType::kCount,
         .default_value = "",
         .help = "a full queue is reaped down to this many before refilling (default and above "
                 "iodepth: iodepth)"},
        {.name = "group_reporting",
         .type = IoValueType::kBool,
         .default_value = "0",
         .help = "report all jobs as one merged entry"},
        {.name = "thread",
         .type = IoValueType::kBool,
         .default_value = "0",
         .help = "run jobs as threads of one process instead of one process (own session) each"},
        {.name = "userspace_reap",
         .type = IoValueType::kBool,
         .default_value = "0",
         .help = "fio's: when polling (iodepth_batch_complete_min=0), read completions from the "
                 "AIO ring in user space instead of calling io_getevents",
         .engine = "libaio"},
        {.name = "ring_first",
         .type = IoValueType::kBool,
         .default_value = "1",
         .help = "disksweep's: take completions already in the AIO ring without a system call, "
                 "and call io_getevents only to wait for more",
         .engine = "libaio"},
        {.name = "fixedbufs",
         .type = IoValueType::kBool,
         .default_value = "0",
         .help = "fio's: register the job's buffers with the ring once (READ_FIXED/WRITE_FIXED)",
         .engine = "io_uring"},
        {.name = "registerfiles",
         .type = IoValueType::kBool,
         .default_value = "0",
         .help = "fio's: register the job's file with the ring once (IOSQE_FIXED_FILE)",
         .engine = "io_uring"},
        {.name = "sqthread_poll",
         .type = IoValueType::kBool,
         .default_value = "0",
         .help = "fio's: a kernel thread polls the submission queue (IORING_SETUP_SQPOLL); "
                 "implies registerfiles",
         .engine = "io_uring"},
        {.name = "nonvectored",
         .type = IoValueType::kBool,
         .default_value = "1",
         .help = "fio's: IORING_OP_READ/WRITE instead of READV/WRITEV with one iovec",
         .engine = "io_uring"},
        // The agent's: it runs the job in the workload's directory below the
        // mount point, with files named after the workload, so the I/O stays
        // on the filesystem under test (ds-io sets them on its command line).
        {.name = "name",
         .type = IoValueType::kName,
         .default_value = "",
         .help = "job name; per-job files are <name>.<job>.0",
         .agent_owned = true},
        {.name = "filename",
         .type = IoValueType::kPath,
         .default_value = "",
         .help = "one file or block device shared by all jobs",
         .agent_owned = true},
        {.name = "directory",
         .type = IoValueType::kPath,
         .default_value = "",
         .help = "directory of the per-job files (default: the current directory)",
         .agent_owned = true},
    };
    return table;
}

constexpr std::array<IoOptionAlias, 4> kAliases = {{
    {"readwrite", "rw"},
    {"blocksize", "bs"},
    {"iodepth_batch", "iodepth_batch_submit"},
    {"iodepth_batch_complete", "iodepth_batch_complete_min"},
}};

Error invalid(std::string message) {
    return make_error(errc::kInvalidArgument, std::move(message));
}

Error invalid_option(std::string_view name, const Error& problem) {
    return invalid("io job option '" + std::string(name) + "': " + problem.message);
}

// A JSON value as its message text: strings as written, others as JSON.
std::string shown(const Json& value) {
    return value.is_string() ? "\"" + value.get<std::string>() + "\"" : value.dump();
}

bool is_non_negative_integer(const Json& value) {
    return value.is_number_unsigned() ||
           (value.is_number_integer() && value.get<std::int64_t>() >= 0);
}

// A non-negative integer from a JSON integer or a string of decimal digits.
std::optional<std::uint64_t> whole_number(const Json& value) {
    if (is_non_negative_integer(value)) return value.get<std::uint64_t>();
    if (!value.is_string()) return std::nullopt;
    const auto& text = value.get_ref<const std::string&>();
    std::uint64_t number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc() || text.empty() || end != text.data() + text.size())
        return std::nullopt;
    return number;
}

Result<IoOptionValue> in_range(const IoOptionDef& option, std::uint64_t number) {
    if (number < option.min || number > option.max) {
        return invalid(std::to_string(number) + " is out of range " + std::to_string(option.min) +
                       ".." + std::to_string(option.max));
    }
    IoOptionValue value;
    value.number = number;
    return value;
}

Result<IoOptionValue> read_enum(const IoOptionDef& option, const Json& value) {
    if (!value.is_string())
        return invalid(std::string("is a ") + value.type_name() + ", expected a string");
    IoOptionValue out;
    out.text = value.get<std::string>();
    if (std::find(option.values.begin(), option.values.end(), out.text) == option.values.end())
        return invalid(shown(value) + " is not supported; supported: " + join(option.values, ", "));
    return out;
}

Result<IoOptionValue> read_size(const IoOptionDef& option, const Json& value) {
    if (is_non_negative_integer(value)) return in_range(option, value.get<std::uint64_t>());
    const std::string not_a_size = shown(value) + " is not a size (fio syntax: 4k, 1m, 512)";
    if (!value.is_string()) return invalid(not_a_size);
    const auto& text = value.get_ref<const std::string&>();
    if (text.find('%') != std::string::npos)
        return invalid("percentages (" + shown(value) + ") are not supported");
    if (!text.starts_with('-') && text.find_first_of("-:") != std::string::npos)
        return invalid("ranges (" + shown(value) + ") are not supported");
    if (text.find_first_of(",/") != std::string::npos)
        return invalid("per-direction values (" + shown(value) + ") are not supported");
    const auto bytes = parse_fio_size(text);
    if (!bytes) return invalid(not_a_size);
    return in_range(option, *bytes);
}

Result<IoOptionValue> read_count(const IoOptionDef& option, const Json& value) {
    const auto number = whole_number(value);
    if (!number) return invalid(shown(value) + " is not a non-negative integer");
    return in_range(option, *number);
}

Result<IoOptionValue> read_bool(const Json& value) {
    IoOptionValue out;
    const std::string word = value.is_string() ? ascii_lower(value.get<std::string>()) : "";
    if (value.is_boolean()) {
        out.flag = value.get<bool>();
    } else if (is_non_negative_integer(value) && value.get<std::uint64_t>() <= 1) {
        out.flag = value.get<std::uint64_t>() == 1;
    } else if (word == "1" || word == "0" || word == "true" || word == "false") {
        out.flag = word == "1" || word == "true";
    } else {
        return invalid(shown(value) + " is not a boolean (true/false, 1/0)");
    }
    return out;
}

Result<IoOptionValue> read_time(const Json& value) {
    constexpr std::uint64_t kMicroseconds = 1000000;
    std::optional<std::uint64_t> microseconds;
    if (is_non_negative_integer(value)) {
        const auto seconds = value.get<std::uint64_t>();
        if (seconds <= std::numeric_limits<std::uint64_t>::max() / kMicroseconds)
            microseconds = seconds * kMicroseconds;
    } else if (value.is_string()) {
        microseconds = parse_fio_time_us(value.get_ref<const std::string&>());
    }
    if (!microseconds) {
        return invalid(shown(value) +
                       " is not a duration (fio syntax: whole numbers with an optional unit, e.g. "
                       "10, 10s, 1500ms, 2m)");
    }
    IoOptionValue out;
    out.number = *microseconds;
    return out;
}

Result<IoOptionValue> read_text(const IoOptionDef& option, const Json& value) {
    if (!value.is_string())
        return invalid(std::string("is a ") + value.type_name() + ", expected a string");
    IoOptionValue out;
    out.text = value.get<std::string>();
    if (out.text.empty()) return invalid("is empty");
    if (option.type == IoValueType::kName && out.text.find('/') != std::string::npos)
        return invalid(shown(value) + " contains '/'; a name must not");
    if (option.type == IoValueType::kPath && out.text.find(':') != std::string::npos)
        return invalid("several paths separated by ':' (" + shown(value) + ") are not supported");
    return out;
}

// Names `setter` may give, for the "supported" list: the general options
// and their aliases, sorted.
std::string supported_names(IoOptionSetter setter) {
    std::vector<std::string_view> names;
    for (const auto& option : option_table()) {
        if (!option.engine.empty()) continue;
        if (option.agent_owned && setter == IoOptionSetter::kWorkload) continue;
        names.push_back(option.name);
    }
    for (const auto& alias : kAliases) names.push_back(alias.alias);
    std::sort(names.begin(), names.end());
    return join(names, ", ");
}

std::vector<std::string_view> engine_option_names(std::string_view ioengine) {
    std::vector<std::string_view> names;
    for (const auto& option : option_table())
        if (option.engine == ioengine && !ioengine.empty()) names.push_back(option.name);
    return names;
}

Error unsupported(std::string_view name, std::string_view ioengine, IoOptionSetter setter) {
    std::string message = "unsupported io job option '" + std::string(name) +
                          "'; supported: " + supported_names(setter);
    if (const auto own = engine_option_names(ioengine); !own.empty())
        message += "; ioengine=" + std::string(ioengine) + " also takes: " + join(own, ", ");
    return invalid(std::move(message));
}

// The engine a params object names (or the default), checked.
Result<std::string> engine_of(const Json& params) {
    const IoOptionDef& option = *find_io_option("ioengine");
    const auto given = params.find("ioengine");
    auto engine = read_io_option(
        option, given == params.end() ? Json(std::string(option.default_value)) : *given);
    if (!engine) return invalid_option("ioengine", engine.error());
    return engine->text;
}

// The given options, by their own name.
Result<IoOptionValues> given_options(const Json& params, std::string_view ioengine,
                                     IoOptionSetter setter) {
    IoOptionValues values;
    std::map<std::string, std::string, std::less<>> given_as;  // own name -> name given
    for (const auto& [name, value] : params.items()) {
        auto option = io_option_for(name, ioengine, setter);
        if (!option) return option.error();
        auto converted = read_io_option(**option, value);
        if (!converted) return invalid_option(name, converted.error());
        const std::string own_name((*option)->name);
        if (const auto [first, inserted] = given_as.emplace(own_name, name); !inserted) {
            return invalid("io job option '" + own_name + "' is given twice, as '" + first->second +
                           "' and as '" + name + "'; give it once");
        }
        values.emplace(own_name, std::move(*converted));
    }
    return values;
}

// Every option of the engine that was not given, at its default.
Status add_defaults(IoOptionValues& values, std::string_view ioengine) {
    for (const auto& option : option_table()) {
        if (option.default_value.empty() || values.contains(option.name)) continue;
        if (!option.engine.empty() && option.engine != ioengine) continue;
        auto value = read_io_option(option, Json(std::string(option.default_value)));
        if (!value) {
            return make_error(errc::kInternal,
                              "io job option '" + std::string(option.name) +
                                  "': its default does not parse: " + value.error().message);
        }
        values.emplace(std::string(option.name), std::move(*value));
    }
    return ok_status();
}

// The rules between options (values holds every option with a default).
Status check_combination(const IoOptionValues& values) {
    const std::uint64_t bs = values.at("bs").number;
    if (values.at("direct").flag && bs % kDirectAlignment != 0) {
        return invalid("io job option 'bs': " + std::to_string(bs) + " is not a multiple of " +
                       std::to_string(kDirectAlignment) + ", which direct=1 needs");
    }
    if (const auto size = values.find("size"); size != values.end() && size->second.number < bs) {
        return invalid("io job option 'size': " + std::to_string(size->second.number) +
                       " is smaller than bs=" + std::to_string(bs));
    }
    if (values.at("time_based").flag && values.at("runtime").number == 0)
        return invalid("io job option 'time_based': needs runtime > 0");
    return ok_status();
}

}  // namespace

std::span<const IoOptionDef> io_options() {
    return option_table();
}

std::span<const IoOptionAlias> io_option_aliases() {
    return kAliases;
}

const IoOptionDef* find_io_option(std::string_view name) {
    for (const auto& alias : kAliases) {
        if (alias.alias == name) {
            name = alias.option;
            break;
        }
    }
    for (const auto& option : option_table())
        if (option.name == name) return &option;
    return nullptr;
}

std::vector<std::string_view> workload_io_option_names() {
    std::vector<std::string_view> names;
    for (const auto& option : option_table()) {
        if (option.agent_owned) continue;
        names.push_back(option.name);
        for (const auto& alias : kAliases)
            if (alias.option == option.name) names.push_back(alias.alias);
    }
    return names;
}

Result<const IoOptionDef*> io_option_for(std::string_view name, std::string_view ioengine,
                                         IoOptionSetter setter) {
    const IoOptionDef* option = find_io_option(name);
    if (option == nullptr) return unsupported(name, ioengine, setter);
    if (option->agent_owned && setter == IoOptionSetter::kWorkload) {
        return invalid("io job option '" + std::string(name) +
                       "' is set by the agent: the workload's files are <workload name>.<job>.0 "
                       "in the mount point of the filesystem under test");
    }
    if (!option->engine.empty() && option->engine != ioengine) {
        return invalid("io job option '" + std::string(name) + "' is for ioengine=" +
                       std::string(option->engine) + ", not " + std::string(ioengine));
    }
    return option;
}

Result<IoOptionValue> read_io_option(const IoOptionDef& option, const Json& value) {
    switch (option.type) {
        case IoValueType::kEnum:
            return read_enum(option, value);
        case IoValueType::kSize:
            return read_size(option, value);
        case IoValueType::kCount:
            return read_count(option, value);
        case IoValueType::kBool:
            return read_bool(value);
        case IoValueType::kTime:
            return read_time(value);
        case IoValueType::kName:
        case IoValueType::kPath:
            return read_text(option, value);
    }
    return make_error(errc::kInternal, "io option has an unknown type");
}

Result<IoOptionValues> resolve_io_options(const Json& params, IoOptionSetter setter) {
    if (!params.is_object()) {
        return invalid(std::string("io job params is a ") + params.type_name() +
                       ", expected an object");
    }
    DS_ASSIGN_OR_RETURN(auto engine, engine_of(params));
    auto values = given_options(params, engine, setter);
    if (!values) return values.error();
    DS_TRY(add_defaults(*values, engine));
    DS_TRY(check_combination(*values));
    return values;
}

}  // namespace ds
