#include "guestagent/fio_job.h"

#include <algorithm>
#include <array>
#include <charconv>

#include "guestagent/io_options.h"

namespace ds::agent {
namespace {

Error invalid_param(const std::string& name, const std::string& what) {
    return make_error(errc::kInvalidArgument, "workload param '" + name + "' " + what);
}

// fio's time syntax, as the native engine reads it (one parser serves both).
std::optional<double> parse_fio_time(const Json& value) {
    if (value.is_number()) return value.get<double>();
    if (!value.is_string()) return std::nullopt;
    return io::parse_fio_seconds(value.get_ref<const std::string&>());
}

}  // namespace

Result<std::vector<std::string>> build_fio_command(const std::string& workload_name,
                                                   const Json& params,
                                                   const std::string& directory) {
    if (!params.is_object()) {
        return make_error(errc::kInvalidArgument, std::string("workload params is a ") +
                                                      params.type_name() + ", expected an object");
    }
    std::vector<std::string> argv = {"fio", "--output-format=json", "--name=" + workload_name,
                                     "--directory=" + directory};
    for (const auto& [name, value] : params.items()) {
        if (name.empty()) return invalid_param(name, "has an empty name");
        if (name.front() == '-') return invalid_param(name, "must not start with '-'");
        if (name.find_first_of("= \t\n") != std::string::npos) {
            return invalid_param(name, "must not contain '=' or whitespace");
        }
        if (std::find(std::begin(kAgentOwnedFioOptions), std::end(kAgentOwnedFioOptions), name) !=
            std::end(kAgentOwnedFioOptions)) {
            return invalid_param(name, "is set by the agent and cannot be overridden");
        }
        std::string text;
        if (value.is_string()) {
            text = value.get<std::string>();
        } else if (value.is_boolean()) {
            text = value.get<bool>() ? "1" : "0";
        } else if (value.is_number()) {
            text = value.dump();
        } else {
            return invalid_param(name, std::string("is a ") + value.type_name() +
                                           ", expected a string, number or boolean");
        }
        argv.push_back("--" + name + "=" + text);
    }
    return argv;
}

std::optional<double> planned_fio_seconds(const Json& params) {
    if (!params.is_object() || !params.contains("runtime")) return std::nullopt;
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

}  // namespace ds::agent
