#include "guestagent/io_options.h"

#include <algorithm>
#include <array>
#include <deque>
#include <limits>

namespace ds::io {
namespace {

// How a resolved option (common/io_options.h) lands in JobOptions.
using Apply = void (*)(JobOptions&, const IoOptionValue&);

struct Binding {
    std::string_view name;
    Apply apply;
};

RwMode rw_mode_of(std::string_view text) {
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
    for (const auto& known : kModes)
        if (known.text == text) return known.mode;
    return RwMode::kRead;  // unreachable: the table's values are the modes above
}

// Counts the table lets through unbounded (batch sizes) are capped at
// iodepth later; this keeps them in range of `unsigned` meanwhile.
unsigned as_unsigned(std::uint64_t number) {
    return static_cast<unsigned>(
        std::min<std::uint64_t>(number, std::numeric_limits<unsigned>::max()));
}

double as_seconds(const IoOptionValue& value) {
    return static_cast<double>(value.number) / 1e6;
}

// Every general option of the table, by its own name (aliases resolve to it).
const std::array<Binding, 20> kBindings = {{
    {"ioengine", [](JobOptions& job, const IoOptionValue& v) { job.ioengine = v.text; }},
    {"rw", [](JobOptions& job, const IoOptionValue& v) { job.rw = rw_mode_of(v.text); }},
    {"rwmixread",
     [](JobOptions& job, const IoOptionValue& v) { job.rwmixread = as_unsigned(v.number); }},
    {"bs", [](JobOptions& job, const IoOptionValue& v) { job.bs = v.number; }},
    {"iodepth",
     [](JobOptions& job, const IoOptionValue& v) { job.iodepth = as_unsigned(v.number); }},
    {"numjobs",
     [](JobOptions& job, const IoOptionValue& v) { job.numjobs = as_unsigned(v.number); }},
    {"size", [](JobOptions& job, const IoOptionValue& v) { job.size = v.number; }},
    {"direct", [](JobOptions& job, const IoOptionValue& v) { job.direct = v.flag; }},
    {"runtime", [](JobOptions& job, const IoOptionValue& v) { job.runtime_s = as_seconds(v); }},
    {"time_based", [](JobOptions& job, const IoOptionValue& v) { job.time_based = v.flag; }},
    {"ramp_time", [](JobOptions& job, const IoOptionValue& v) { job.ramp_time_s = as_seconds(v); }},
    {"iodepth_batch_submit",
     [](JobOptions& job, const IoOptionValue& v) {
         job.iodepth_batch_submit = as_unsigned(v.number);
     }},
    {"iodepth_batch_complete_min",
     [](JobOptions& job, const IoOptionValue& v) {
         job.iodepth_batch_complete = as_unsigned(v.number);
     }},
    {"iodepth_batch_complete_max",
     [](JobOptions& job, const IoOptionValue& v) {
         job.iodepth_batch_complete_max = as_unsigned(v.number);
     }},
    {"iodepth_low",
     [](JobOptions& job, const IoOptionValue& v) { job.iodepth_low = as_unsigned(v.number); }},
    {"group_reporting",
     [](JobOptions& job, const IoOptionValue& v) { job.group_reporting = v.flag; }},
    {"thread", [](JobOptions& job, const IoOptionValue& v) { job.thread = v.flag; }},
    {"name", [](JobOptions& job, const IoOptionValue& v) { job.name = v.text; }},
    {"filename", [](JobOptions& job, const IoOptionValue& v) { job.filename = v.text; }},
    {"directory", [](JobOptions& job, const IoOptionValue& v) { job.directory = v.text; }},
}};

// An engine option's value in EngineOptionValues units (bools 0/1, sizes in
// bytes, times in microseconds, counts as they are).
std::int64_t engine_value(const IoOptionDef& option, const IoOptionValue& value) {
    if (option.type == IoValueType::kBool) return value.flag ? 1 : 0;
    return static_cast<std::int64_t>(
        std::min<std::uint64_t>(value.number, std::numeric_limits<std::int64_t>::max()));
}

Status apply(JobOptions& job, const std::string& name, const IoOptionValue& value) {
    const IoOptionDef* option = find_io_option(name);
    if (option != nullptr && !option->engine.empty()) {
        job.engine_options[name] = engine_value(*option, value);
        return ok_status();
    }
    for (const auto& binding : kBindings) {
        if (binding.name == name) {
            binding.apply(job, value);
            return ok_status();
        }
    }
    return make_error(errc::kInternal, "io job option '" + name +
                                           "' is declared in common/io_options.h but the agent "
                                           "has no binding for it (guestagent/io_options.cpp)");
}

// As fio: batch size 0 means iodepth, and none exceeds iodepth; a reap
// takes at least one, and its max is raised to its min.
void fix_batch_sizes(JobOptions& job) {
    if (job.iodepth_batch_submit == 0 || job.iodepth_batch_submit > job.iodepth) {
        job.iodepth_batch_submit = job.iodepth;
    }
    job.iodepth_batch_complete = std::min(job.iodepth_batch_complete, job.iodepth);
    job.iodepth_batch_complete_max = std::clamp(
        std::max(job.iodepth_batch_complete_max, job.iodepth_batch_complete), 1u, job.iodepth);
    if (job.iodepth_low == 0 || job.iodepth_low > job.iodepth) job.iodepth_low = job.iodepth;
}

OptionType option_type(IoValueType type) {
    switch (type) {
        case IoValueType::kBool:
            return OptionType::kBool;
        case IoValueType::kCount:
            return OptionType::kInt;
        case IoValueType::kSize:
            return OptionType::kSize;
        case IoValueType::kTime:
            return OptionType::kTime;
        case IoValueType::kEnum:
        case IoValueType::kName:
        case IoValueType::kPath:
            return OptionType::kString;
    }
    return OptionType::kString;
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

std::span<const OptionSpec> job_option_specs() {
    // The aliases' help ("alias of bs") is made here; a deque keeps the
    // strings where the specs' views point.
    static std::deque<std::string> alias_help;
    static const std::vector<OptionSpec> specs = [] {
        std::vector<OptionSpec> out;
        for (const auto& option : io_options()) {
            if (!option.engine.empty()) continue;
            const OptionType type = option_type(option.type);
            out.push_back({option.name, type, option.help});
            for (const auto& alias : io_option_aliases()) {
                if (alias.option != option.name) continue;
                alias_help.push_back("alias of " + std::string(option.name));
                out.push_back({alias.alias, type, alias_help.back()});
            }
        }
        return out;
    }();
    return specs;
}

Result<JobOptions> parse_job_options(const Json& params) {
    auto resolved = resolve_io_options(params, IoOptionSetter::kAgent);
    if (!resolved) return resolved.error();
    JobOptions job;
    job.given = params;
    for (const auto& [name, value] : *resolved) DS_TRY(apply(job, name, value));
    auto engine = engine_by_name(job.ioengine);
    if (!engine) return engine.error();
    job.engine = *engine;
    if (job.engine->diskless && !job.size) {
        return make_error(errc::kInvalidArgument,
                          "io job option 'size': is required with ioengine=" + job.ioengine);
    }
    fix_batch_sizes(job);
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
    for (const auto& [name, number] : job.engine_options) {
        const IoOptionDef* option = find_io_option(name);
        if (option != nullptr && option->type == IoValueType::kBool) {
            out[name] = number != 0;
        } else {
            out[name] = number;
        }
    }
    return out;
}

}  // namespace ds::io
