#include "common/fio_job.h"

#include <cstring>

#include "common/fio_logs.h"
#include "common/fio_options.h"
#include "common/process.h"
#include "common/text.h"
#include "common/units.h"

namespace ds {
namespace {

constexpr std::size_t kStderrTailBytes = 2000;
constexpr std::string_view kNoSpaceText = "No space left on device";

Error invalid_param(const std::string& name, const std::string& what) {
    return make_error(errc::kInvalidArgument, "workload param '" + name + "' " + what);
}

// fio's time syntax, as the native engine reads it (one parser serves both).
std::optional<double> parse_fio_time(const Json& value) {
    if (value.is_number()) return value.get<double>();
    if (!value.is_string()) return std::nullopt;
    return parse_fio_seconds(value.get_ref<const std::string&>());
}

// "--NAME=VALUE" for one option; `prefix` ("options.") names where it came
// from in errors.
Result<std::string> fio_argument(const std::string& name, const Json& value,
                                 const std::string& prefix) {
    const std::string where = prefix + name;
    if (name.empty()) return invalid_param(where, "has an empty name");
    if (name.front() == '-') return invalid_param(where, "must not start with '-'");
    if (name.find_first_of("= \t\n") != std::string::npos) {
        return invalid_param(where, "must not contain '=' or whitespace");
    }
    const auto text = fio_value_text(value);
    if (!text) {
        return invalid_param(where, std::string("is a ") + value.type_name() +
                                        ", expected a string, number or boolean");
    }
    if (auto refusal = fio_option_refusal(name, *text, FioOptionPlace::kCommandLine)) {
        return invalid_param(where, *refusal);
    }
    return "--" + name + "=" + *text;
}

// A job file: the whole job, so nothing else may come with it; its lines
// pass the guards of common/fio_options.h (check_fio_job_file).
Status check_job_file(const Json& job_file, const Json& params) {
    const std::string key(kFioJobFileKey);
    if (!job_file.is_string() || job_file.get_ref<const std::string&>().empty()) {
        return invalid_param(key, "is " + std::string(job_file.type_name()) +
                                      (job_file.is_string() ? " (empty)" : "") +
                                      ", expected the text of a fio job file");
    }
    if (params.size() != 1) {
        std::string others;
        for (const auto& [name, value] : params.items()) {
            if (name != key) others += (others.empty() ? "" : ", ") + name;
        }
        return invalid_param(
            key, "is a whole job and cannot be combined with other params (" + others + ")");
    }
    const Status lines = check_fio_job_file(job_file.get_ref<const std::string&>());
    if (!lines.ok()) return invalid_param(key, lines.error().message);
    return ok_status();
}

// The options that point fio at `target`.
void append_target(std::vector<std::string>& argv, const FioTarget& target) {
    if (const auto* directory = std::get_if<FioDirectory>(&target)) {
        argv.push_back("--directory=" + directory->path);
    } else if (const auto* volume = std::get_if<FioRawVolume>(&target)) {
        argv.push_back("--filename=" + volume->path);
    } else if (const auto* rbd = std::get_if<FioRbdImage>(&target)) {
        argv.insert(argv.end(), {"--ioengine=rbd", "--pool=" + rbd->pool, "--rbdname=" + rbd->image,
                                 "--clientname=" + rbd->client});
    }
}

}  // namespace

Result<std::vector<std::string>> build_fio_command(const std::string& workload_name,
                                                   const Json& params, const FioTarget& target,
                                                   const std::string& job_file_path,
                                                   const std::string& log_prefix) {
    const std::vector<std::string> logs =
        log_prefix.empty() ? std::vector<std::string>() : fio_log_options(log_prefix);
    if (!params.is_object()) {
        return make_error(errc::kInvalidArgument, std::string("workload params is a ") +
                                                      params.type_name() + ", expected an object");
    }
    if (const auto job_file = params.find(kFioJobFileKey); job_file != params.end()) {
        DS_TRY(check_job_file(*job_file, params));
        const auto* directory = std::get_if<FioDirectory>(&target);
        if (directory == nullptr) {
            return invalid_param(std::string(kFioJobFileKey),
                                 "names its own files below a directory, so it cannot run on a "
                                 "raw volume or an RBD image");
        }
        std::vector<std::string> argv = {"fio", std::string(kFioOutputFormat),
                                         "--directory=" + directory->path};
        argv.insert(argv.end(), logs.begin(), logs.end());
        argv.push_back(job_file_path);
        return argv;
    }
    std::vector<std::string> argv = {"fio", std::string(kFioOutputFormat),
                                     "--name=" + workload_name};
    append_target(argv, target);
    argv.insert(argv.end(), logs.begin(), logs.end());
    const bool engine_is_the_targets = std::holds_alternative<FioRbdImage>(target);
    const Json* options = nullptr;
    for (const auto& [name, value] : params.items()) {
        if (name == kFioOptionsKey) {
            if (!value.is_object()) {
                return invalid_param(name, std::string("is a ") + value.type_name() +
                                               ", expected a table of fio options");
            }
            options = &value;
            continue;
        }
        auto argument = fio_argument(name, value, "");
        if (!argument) return argument.error();
        if (!(engine_is_the_targets && name == "ioengine")) argv.push_back(std::move(*argument));
    }
    if (options != nullptr) {
        for (const auto& [name, value] : options->items()) {
            if (params.contains(name)) {
                return invalid_param(std::string(kFioOptionsKey) + "." + name,
                                     "is also given as a named option");
            }
            DS_ASSIGN_OR_RETURN(auto argument,
                                fio_argument(name, value, std::string(kFioOptionsKey) + "."));
            if (!(engine_is_the_targets && name == "ioengine")) argv.push_back(std::move(argument));
        }
    }
    return argv;
}

Json effective_fio_options(const Json& params) {
    Json merged = Json::object();
    if (!params.is_object()) return merged;
    for (const auto& [name, value] : params.items()) {
        if (name == kFioOptionsKey) {
            if (value.is_object()) {
                for (const auto& [option, option_value] : value.items()) {
                    merged[option] = option_value;
                }
            }
        } else if (name != kFioJobFileKey) {
            merged[name] = value;
        }
    }
    return merged;
}

std::string describe_fio_failure(const std::vector<std::string>& argv,
                                 const std::string& stderr_text, int exit_code, int signal) {
    std::string tail = trim_trailing(stderr_text);
    if (tail.size() > kStderrTailBytes) {
        tail = "..." + tail.substr(tail.size() - kStderrTailBytes);
        // The cause of a full disk is the line that says so, maybe early on.
        const auto no_space = stderr_text.find(kNoSpaceText);
        if (no_space != std::string::npos && tail.find(kNoSpaceText) == std::string::npos) {
            const auto line_start = stderr_text.rfind('\n', no_space);
            const auto line_end = stderr_text.find('\n', no_space);
            const auto from = line_start == std::string::npos ? 0 : line_start + 1;
            tail = stderr_text.substr(
                       from, line_end == std::string::npos ? std::string::npos : line_end - from) +
                   "\n" + tail;
        }
    }
    const std::string how = signal ? "killed by signal " + std::to_string(signal)
                                   : "exit code " + std::to_string(exit_code);
    return describe_command(argv) + " failed (" + how + ")" + (tail.empty() ? "" : ": " + tail);
}

std::optional<std::string> fio_job_error(const Json& fio_json) {
    const auto jobs = fio_json.find("jobs");
    if (jobs == fio_json.end() || !jobs->is_array()) return std::nullopt;
    for (const auto& job : *jobs) {
        const auto error = job.find("error");
        if (error == job.end() || !error->is_number_integer() || error->get<int>() == 0) continue;
        const int code = error->get<int>();
        return "fio job " + job.value("jobname", std::string("?")) + " ended with error " +
               std::to_string(code) + " (" + std::strerror(code) + ")";
    }
    return std::nullopt;
}

std::optional<double> planned_fio_seconds(const Json& given) {
    const Json params = effective_fio_options(given);
    if (!params.contains("runtime")) return std::nullopt;
    auto runtime = parse_fio_time(params["runtime"]);
    if (!runtime || *runtime <= 0) return std::nullopt;
    if (params.contains("ramp_time")) {
        if (auto ramp = parse_fio_time(params["ramp_time"]); ramp && *ramp > 0) *runtime += *ramp;
    }
    return runtime;
}

Result<Json> parse_fio_stdout(std::string_view stdout_text) {
    std::size_t start = stdout_text.rfind('{', 0) == 0 ? 0 : stdout_text.find("\n{");
    if (start == std::string_view::npos) {
        return make_error(errc::kAgent, "fio printed no JSON document; stdout starts with: " +
                                            std::string(stdout_text.substr(0, 200)));
    }
    if (stdout_text[start] == '\n') ++start;
    const std::size_t end = stdout_text.rfind('}');
    if (end == std::string_view::npos || end < start) {
        return make_error(errc::kAgent, "fio's JSON output is truncated");
    }
    const auto document = stdout_text.substr(start, end - start + 1);
    try {
        return Json::parse(document);
    } catch (const Json::exception& e) {
        return make_error(errc::kAgent,
                          std::string("fio's JSON output does not parse: ") + e.what());
    }
}

}  // namespace ds
