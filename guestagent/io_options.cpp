#include "guestagent/io_options.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>

#include "common/text.h"

namespace ds::io {
namespace {

constexpr unsigned kMaxIodepth = 4096;
constexpr unsigned kMaxNumjobs = 256;
constexpr std::uint64_t kMaxBlockSize = 256ull << 20;  // IoUnit::length is 32-bit
constexpr std::uint64_t kDirectAlignment = 512;

Error invalid_option(std::string_view name, const std::string& what) {
    return make_error(errc::kInvalidArgument, "io job option '" + std::string(name) + "': " + what);
}

// A value converted according to its OptionSpec::type; only the member for
// that type is meaningful.
struct OptionValue {
    std::string text;          // kString
    bool flag = false;         // kBool
    std::uint64_t number = 0;  // kInt, kSize (bytes)
    double seconds = 0;        // kTime
};

// Converts a JSON value to `spec.type`, or says why it cannot.
Result<OptionValue> convert(const OptionSpec& spec, const Json& value) {
    OptionValue out;
    const bool is_text = value.is_string();
    const std::string text = is_text ? value.get<std::string>() : value.dump();
    switch (spec.type) {
        case OptionType::kString:
            if (!is_text && !value.is_number()) {
                return invalid_option(
                    spec.name, std::string("is a ") + value.type_name() + ", expected a string");
            }
            out.text = text;
            return out;
        case OptionType::kBool: {
            const std::string word = ascii_lower(text);
            if (value.is_boolean()) {
                out.flag = value.get<bool>();
            } else if ((value.is_number_integer() || is_text) && (word == "1" || word == "0")) {
                out.flag = word == "1";
            } else if (is_text && (word == "true" || word == "false")) {
                out.flag = word == "true";
            } else {
                return invalid_option(spec.name, text + " is not a boolean (true/false, 1/0)");
            }
            return out;
        }
        case OptionType::kInt: {
            if (value.is_number_integer() && value.get<std::int64_t>() >= 0) {
                out.number = value.get<std::uint64_t>();
                return out;
            }
            const auto [end, error] =
                std::from_chars(text.data(), text.data() + text.size(), out.number);
            if ((!is_text && !value.is_number_integer()) || error != std::errc() ||
                end != text.data() + text.size() || text.empty()) {
                return invalid_option(spec.name, text + " is not a non-negative integer");
            }
            return out;
        }
        case OptionType::kSize: {
            if (value.is_number_integer() && value.get<std::int64_t>() >= 0) {
                out.number = value.get<std::uint64_t>();
                return out;
            }
            if (!is_text) {
                return invalid_option(spec.name, text + " is not a size (fio syntax: 4k, 1m, 512)");
            }
            if (text.find('%') != std::string::npos) {
                return invalid_option(spec.name,
                                      "percentages (\"" + text + "\") are not supported");
            }
            const auto bytes = parse_fio_size(text);
            if (!bytes) {
                return invalid_option(spec.name,
                                      "\"" + text + "\" is not a size (fio syntax: 4k, 1m, 512)");
            }
            out.number = *bytes;
            return out;
        }
        case OptionType::kTime: {
            std::optional<double> seconds;
            if (value.is_number()) {
                seconds = value.get<double>();
            } else if (is_text) {
                seconds = parse_fio_seconds(text);
            }
            if (!seconds || !std::isfinite(*seconds) || *seconds < 0) {
                return invalid_option(spec.name,
                                      text + " is not a duration (fio syntax: 10, 10s, 500ms, 2m)");
            }
            out.seconds = *seconds;
            return out;
        }
    }
    return invalid_option(spec.name, "has an unknown type");
}

Result<unsigned> bounded(std::string_view name, std::uint64_t value, unsigned low, unsigned high) {
    if (value < low || value > high) {
        return invalid_option(name, std::to_string(value) + " is out of range " +
                                        std::to_string(low) + ".." + std::to_string(high));
    }
    return static_cast<unsigned>(value);
}

Status set_rw(JobOptions& job, std::string_view name, const OptionValue& value) {
    struct Mode {
        std::string_view text;
        RwMode mode;
    };
    static constexpr std::array<Mode, 7> kModes = {{{"read", RwMode::kRead},
                                                    {"write", RwMode::kWrite},
                                                    {"randread", RwMode::kRandRead},
                                                    {"randwrite", RwMode::kRandWrite},
                                                    {"randrw", RwMode::kRandRw},
                                                    {"readwrite", RwMode::kReadWrite},
                                                    {"rw", RwMode::kReadWrite}}};
    for (const auto& known : kModes) {
        if (known.text == value.text) {
            job.rw = known.mode;
            return ok_status();
        }
    }
    return invalid_option(name, "\"" + value.text +
                                    "\" is not supported; supported: read, write, randread, "
                                    "randwrite, randrw, readwrite (alias rw)");
}

Status set_bs(JobOptions& job, std::string_view name, const OptionValue& value) {
    job.bs = value.number;
    return ok_status();
}

// A count option, capped at kMaxIodepth (parse_job_options caps it further).
template <unsigned JobOptions::*Field>
Status set_count(JobOptions& job, std::string_view, const OptionValue& value) {
    job.*Field = static_cast<unsigned>(std::min<std::uint64_t>(value.number, kMaxIodepth));
    return ok_status();
}

// General options as data: the spec and how its converted value lands in
// JobOptions (range checks that need no other option happen here).
struct GeneralOption {
    OptionSpec spec;
    Status (*apply)(JobOptions&, std::string_view name, const OptionValue&);
};

const std::array<GeneralOption, 24> kGeneralOptions = {{
    {{"name", OptionType::kString, "job name; per-job files are <name>.<job>.0"},
     [](JobOptions& job, std::string_view name, const OptionValue& v) -> Status {
         if (v.text.empty() || v.text.find('/') != std::string::npos) {
             return invalid_option(name, "must be non-empty and contain no '/'");
         }
         job.name = v.text;
         return ok_status();
     }},
    {{"ioengine", OptionType::kString, "I/O engine: libaio, psync or null (default psync)"},
     // Resolved before the other options (parse_job_options).
     [](JobOptions&, std::string_view, const OptionValue&) { return ok_status(); }},
    {{"rw", OptionType::kString, "read, write, randread, randwrite, randrw, readwrite (rw)"},
     set_rw},
    {{"readwrite", OptionType::kString, "alias of rw"}, set_rw},
    {{"rwmixread", OptionType::kInt, "percent of a mixed job's I/Os that are reads (50)"},
     [](JobOptions& job, std::string_view name, const OptionValue& v) -> Status {
         auto percent = bounded(name, v.number, 0, 100);
         if (!percent) return percent.error();
         job.rwmixread = *percent;
         return ok_status();
     }},
    {{"bs", OptionType::kSize, "block size of every I/O (4k)"}, set_bs},
    {{"blocksize", OptionType::kSize, "alias of bs"}, set_bs},
    {{"iodepth", OptionType::kInt, "I/O units kept in flight per job (1)"},
     [](JobOptions& job, std::string_view name, const OptionValue& v) -> Status {
         auto depth = bounded(name, v.number, 1, kMaxIodepth);
         if (!depth) return depth.error();
         job.iodepth = *depth;
         return ok_status();
     }},
    {{"numjobs", OptionType::kInt, "jobs running the same workload, each its own process (1)"},
     [](JobOptions& job, std::string_view name, const OptionValue& v) -> Status {
         auto jobs = bounded(name, v.number, 1, kMaxNumjobs);
         if (!jobs) return jobs.error();
         job.numjobs = *jobs;
         return ok_status();
     }},
    {{"size", OptionType::kSize, "bytes of file each job works on (default: the file's size)"},
     [](JobOptions& job, std::string_view name, const OptionValue& v) -> Status {
         if (v.number == 0) return invalid_option(name, "must be > 0");
         job.size = v.number;
         return ok_status();
     }},
    {{"filename", OptionType::kString, "file or block device shared by all jobs"},
     [](JobOptions& job, std::string_view name, const OptionValue& v) -> Status {
         if (v.text.empty()) return invalid_option(name, "is empty");
         if (v.text.find(':') != std::string::npos) {
             return invalid_option(
                 name, "several files separated by ':' are not supported (\"" + v.text + "\")");
         }
         job.filename = v.text;
         return ok_status();
     }},
    {{"directory", OptionType::kString, "directory of the per-job files (default: cwd)"},
     [](JobOptions& job, std::string_view name, const OptionValue& v) -> Status {
         if (v.text.empty()) return invalid_option(name, "is empty");
         if (v.text.find(':') != std::string::npos) {
             return invalid_option(name, "several directories separated by ':' are not supported");
         }
         job.directory = v.text;
         return ok_status();
     }},
    {{"direct", OptionType::kBool, "O_DIRECT: bypass the page cache (0)"},
     [](JobOptions& job, std::string_view, const OptionValue& v) {
         job.direct = v.flag;
         return ok_status();
     }},
    {{"runtime", OptionType::kTime, "stop after this long (seconds unless a unit is given)"},
     [](JobOptions& job, std::string_view, const OptionValue& v) {
         job.runtime_s = v.seconds;
         return ok_status();
     }},
    {{"time_based", OptionType::kBool, "run for the whole runtime, wrapping around (0)"},
     [](JobOptions& job, std::string_view, const OptionValue& v) {
         job.time_based = v.flag;
         return ok_status();
     }},
    {{"ramp_time", OptionType::kTime, "run this long before measuring"},
     [](JobOptions& job, std::string_view, const OptionValue& v) {
         job.ramp_time_s = v.seconds;
         return ok_status();
     }},
    {{"iodepth_batch_submit", OptionType::kInt, "units submitted per commit (1; 0 = iodepth)"},
     set_count<&JobOptions::iodepth_batch_submit>},
    {{"iodepth_batch", OptionType::kInt, "alias of iodepth_batch_submit"},
     set_count<&JobOptions::iodepth_batch_submit>},
    {{"iodepth_batch_complete_min", OptionType::kInt,
      "least completions one reap waits for (1; 0 = also poll when the queue is not full)"},
     set_count<&JobOptions::iodepth_batch_complete>},
    {{"iodepth_batch_complete", OptionType::kInt, "alias of iodepth_batch_complete_min"},
     set_count<&JobOptions::iodepth_batch_complete>},
    {{"iodepth_batch_complete_max", OptionType::kInt,
      "most completions one reap takes (default: iodepth_batch_complete_min, at least 1)"},
     set_count<&JobOptions::iodepth_batch_complete_max>},
    {{"iodepth_low", OptionType::kInt,
      "a full queue is reaped down to this many before refilling (default: iodepth)"},
     set_count<&JobOptions::iodepth_low>},
    {{"group_reporting", OptionType::kBool, "report all jobs as one merged entry (0)"},
     [](JobOptions& job, std::string_view, const OptionValue& v) {
         job.group_reporting = v.flag;
         return ok_status();
     }},
    {{"thread", OptionType::kBool,
      "run jobs as threads of one process instead of one process (own session) each (0)"},
     [](JobOptions& job, std::string_view, const OptionValue& v) {
         job.thread = v.flag;
         return ok_status();
     }},
}};

std::string general_option_names() {
    std::vector<std::string_view> names;
    for (const auto& option : kGeneralOptions) names.push_back(option.spec.name);
    std::sort(names.begin(), names.end());
    std::string out;
    for (const auto name : names) {
        if (!out.empty()) out += ", ";
        out += name;
    }
    return out;
}

Error unsupported_option(const std::string& name, const EngineDescriptor& engine) {
    std::string message =
        "unsupported io job option '" + name + "'; supported: " + general_option_names();
    if (!engine.options.empty()) {
        message += "; ioengine=" + std::string(engine.name) + " also takes: ";
        for (std::size_t i = 0; i < engine.options.size(); ++i) {
            if (i > 0) message += ", ";
            message += engine.options[i].name;
        }
    }
    return make_error(errc::kInvalidArgument, message);
}

std::optional<std::uint64_t> scale_of(std::string_view suffix) {
    if (suffix.empty()) return 1;
    std::string unit = ascii_lower(suffix);
    if (unit.size() > 1 && unit.back() == 'b') unit.pop_back();  // "kb", "kib"
    if (unit == "b") return 1;
    static constexpr std::string_view kPrefixes = "kmgtp";
    const bool decimal = unit.size() == 2 && unit[1] == 'i';  // fio kb_base=1024: KiB = 1000
    if (unit.size() != (decimal ? 2u : 1u)) return std::nullopt;
    const auto position = kPrefixes.find(unit[0]);
    if (position == std::string_view::npos) return std::nullopt;
    std::uint64_t scale = 1;
    for (std::size_t i = 0; i <= position; ++i) scale *= decimal ? 1000 : 1024;
    return scale;
}

}  // namespace

std::string_view rw_mode_name(RwMode mode) {
    switch (mode) {
        case RwMode::kRead:
            return "read";
        case RwMode::kWrite:
            return "write";
        case RwMode::kRandRead:
            return "randread";
        case RwMode::kRandWrite:
            return "randwrite";
        case RwMode::kRandRw:
            return "randrw";
        case RwMode::kReadWrite:
            return "readwrite";
    }
    return "?";
}

bool rw_is_random(RwMode mode) {
    return mode == RwMode::kRandRead || mode == RwMode::kRandWrite || mode == RwMode::kRandRw;
}
bool rw_reads(RwMode mode) {
    return mode != RwMode::kWrite && mode != RwMode::kRandWrite;
}
bool rw_writes(RwMode mode) {
    return mode != RwMode::kRead && mode != RwMode::kRandRead;
}

std::optional<std::uint64_t> parse_fio_size(std::string_view text) {
    std::uint64_t number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc() || end == text.data()) return std::nullopt;
    const auto scale = scale_of(std::string_view(end, text.data() + text.size() - end));
    if (!scale) return std::nullopt;
    if (number > std::numeric_limits<std::uint64_t>::max() / *scale) return std::nullopt;
    return number * *scale;
}

std::optional<double> parse_fio_seconds(std::string_view text) {
    double number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc() || end == text.data()) return std::nullopt;
    const std::string unit = ascii_lower(std::string_view(end, text.data() + text.size() - end));
    struct Unit {
        std::string_view name;
        double seconds;
    };
    static constexpr std::array<Unit, 13> kUnits = {{{"", 1},
                                                     {"us", 1e-6},
                                                     {"usec", 1e-6},
                                                     {"ms", 1e-3},
                                                     {"msec", 1e-3},
                                                     {"s", 1},
                                                     {"sec", 1},
                                                     {"m", 60},
                                                     {"min", 60},
                                                     {"h", 3600},
                                                     {"hour", 3600},
                                                     {"d", 86400},
                                                     {"day", 86400}}};
    for (const auto& known : kUnits) {
        if (known.name == unit) return number * known.seconds;
    }
    return std::nullopt;
}

std::span<const OptionSpec> job_option_specs() {
    static const auto specs = [] {
        std::array<OptionSpec, kGeneralOptions.size()> out{};
        for (std::size_t i = 0; i < kGeneralOptions.size(); ++i) out[i] = kGeneralOptions[i].spec;
        return out;
    }();
    return specs;
}

Result<JobOptions> parse_job_options(const Json& params) {
    if (!params.is_object()) {
        return make_error(errc::kInvalidArgument, std::string("io job params is a ") +
                                                      params.type_name() + ", expected an object");
    }
    JobOptions job;
    job.given = params;
    // The engine first: its table decides which further names are valid.
    if (const auto engine = params.find("ioengine"); engine != params.end()) {
        if (!engine->is_string()) {
            return invalid_option(
                "ioengine", std::string("is a ") + engine->type_name() + ", expected a string");
        }
        job.ioengine = engine->get<std::string>();
    }
    auto engine = engine_by_name(job.ioengine);
    if (!engine) return invalid_option("ioengine", engine.error().message);
    job.engine = *engine;

    for (const auto& [name, value] : params.items()) {
        const auto general =
            std::find_if(kGeneralOptions.begin(), kGeneralOptions.end(),
                         [&](const GeneralOption& option) { return option.spec.name == name; });
        if (general != kGeneralOptions.end()) {
            // fio syntax this engine does not implement, named as such.
            if ((name == "bs" || name == "blocksize") && value.is_string()) {
                const auto& text = value.get_ref<const std::string&>();
                if (text.find_first_of(",:") != std::string::npos) {
                    return invalid_option(
                        name, "per-direction block sizes (\"" + text + "\") are not supported");
                }
                if (text.find('-') != std::string::npos) {
                    return invalid_option(name,
                                          "block size ranges (\"" + text + "\") are not supported");
                }
            }
            auto converted = convert(general->spec, value);
            if (!converted) return converted.error();
            DS_TRY(general->apply(job, name, *converted));
            continue;
        }
        const auto& engine_specs = job.engine->options;
        const auto own = std::find_if(engine_specs.begin(), engine_specs.end(),
                                      [&](const OptionSpec& spec) { return spec.name == name; });
        if (own == engine_specs.end()) return unsupported_option(name, *job.engine);
        auto converted = convert(*own, value);
        if (!converted) return converted.error();
        std::int64_t stored = 0;
        switch (own->type) {
            case OptionType::kBool:
                stored = converted->flag ? 1 : 0;
                break;
            case OptionType::kInt:
            case OptionType::kSize:
                stored = static_cast<std::int64_t>(std::min<std::uint64_t>(
                    converted->number, std::numeric_limits<std::int64_t>::max()));
                break;
            case OptionType::kTime:
                stored = std::llround(converted->seconds * 1e6);
                break;
            case OptionType::kString:
                return invalid_option(name, "string-valued engine options are not supported");
        }
        job.engine_options[name] = stored;
    }

    for (const OptionSpec& spec : job.engine->options) {
        job.engine_options.try_emplace(std::string(spec.name), spec.default_value);
    }

    // Checks that involve more than one option.
    if (job.bs == 0 || job.bs > kMaxBlockSize) {
        return invalid_option(
            "bs", std::to_string(job.bs) + " is out of range 1.." + std::to_string(kMaxBlockSize));
    }
    if (job.direct && job.bs % kDirectAlignment != 0) {
        return invalid_option(
            "bs", std::to_string(job.bs) + " is not a multiple of 512, which direct=1 needs");
    }
    if (job.size && *job.size < job.bs) {
        return invalid_option(
            "size", std::to_string(*job.size) + " is smaller than bs=" + std::to_string(job.bs));
    }
    if (job.time_based && job.runtime_s <= 0) {
        return invalid_option("time_based", "needs runtime > 0");
    }
    if (job.engine->diskless && !job.size) {
        return invalid_option("size", "is required with ioengine=" + job.ioengine);
    }
    // As fio: 0 means iodepth, and neither may exceed iodepth.
    if (job.iodepth_batch_submit == 0 || job.iodepth_batch_submit > job.iodepth) {
        job.iodepth_batch_submit = job.iodepth;
    }
    job.iodepth_batch_complete = std::min(job.iodepth_batch_complete, job.iodepth);
    // fio: the max defaults to the min and is raised to it; a reap takes at
    // least one.
    job.iodepth_batch_complete_max = std::clamp(
        std::max(job.iodepth_batch_complete_max, job.iodepth_batch_complete), 1u, job.iodepth);
    if (job.iodepth_low == 0 || job.iodepth_low > job.iodepth) job.iodepth_low = job.iodepth;
    return job;
}

Json resolved_options_json(const JobOptions& job) {
    Json out = {
        {"name", job.name},
        {"ioengine", job.ioengine},
        {"rw", std::string(rw_mode_name(job.rw))},
        {"rwmixread", job.rwmixread},
        {"bs", job.bs},
        {"iodepth", job.iodepth},
        {"numjobs", job.numjobs},
        {"direct", job.direct},
        {"runtime", job.runtime_s},
        {"time_based", job.time_based},
        {"ramp_time", job.ramp_time_s},
        {"iodepth_batch_submit", job.iodepth_batch_submit},
        {"iodepth_batch_complete_min", job.iodepth_batch_complete},
        {"iodepth_batch_complete_max", job.iodepth_batch_complete_max},
        {"iodepth_low", job.iodepth_low},
        {"group_reporting", job.group_reporting},
        {"thread", job.thread},
    };
    out["size"] = job.size ? Json(*job.size) : Json(nullptr);
    if (!job.filename.empty()) out["filename"] = job.filename;
    if (!job.directory.empty()) out["directory"] = job.directory;
    for (const OptionSpec& spec : job.engine->options) {
        const auto value = job.engine_options.find(spec.name);
        const std::int64_t number =
            value == job.engine_options.end() ? spec.default_value : value->second;
        if (spec.type == OptionType::kBool) {
            out[std::string(spec.name)] = number != 0;
        } else {
            out[std::string(spec.name)] = number;
        }
    }
    return out;
}

}  // namespace ds::io
