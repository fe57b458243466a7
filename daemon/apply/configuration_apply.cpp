#include "daemon/apply/configuration_apply.h"

#include <algorithm>
#include <set>

#include "common/text.h"
#include "common/workload_kind.h"

namespace ds {
namespace {

// ds::config_id is the first 16 hex digits of a SHA-256.
constexpr std::size_t kConfigIdLength = 16;
// How many ambiguous matches an error lists.
constexpr std::size_t kListedMatches = 5;

bool is_lower_hex(const std::string& text) {
    return std::all_of(text.begin(), text.end(),
                       [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Every configuration the store has runs of. The store keeps no listing of
// configurations, so this reads every sweep's runs (without raw output).
Result<std::vector<std::string>> stored_config_ids(Store& store) {
    DS_ASSIGN_OR_RETURN(auto sweeps, store.list_sweeps());
    std::set<std::string> ids;
    for (const auto& sweep : sweeps) {
        DS_ASSIGN_OR_RETURN(auto runs, store.list_runs(sweep.id, RawOutput::kOmit));
        for (const auto& run : runs) ids.insert(run.config_id);
    }
    return std::vector<std::string>(ids.begin(), ids.end());
}

std::vector<std::string> names_of(const std::vector<Workload>& workloads) {
    std::vector<std::string> names;
    for (const auto& workload : workloads) names.push_back(workload.name);
    return names;
}

}  // namespace

Result<std::string> unique_config_id(const std::string& prefix,
                                     const std::vector<std::string>& candidates) {
    if (prefix.empty() || prefix.size() > kConfigIdLength || !is_lower_hex(prefix)) {
        return make_error(
            errc::kInvalidArgument,
            "a configuration id is 1 to 16 lowercase hex digits, not '" + prefix + "'");
    }
    std::vector<std::string> matches;
    for (const auto& id : candidates)
        if (id.starts_with(prefix)) matches.push_back(id);
    if (matches.empty())
        return make_error(errc::kNotFound, "no configuration id starts with " + prefix);
    if (matches.size() > 1) {
        const std::size_t shown = std::min(matches.size(), kListedMatches);
        std::vector<std::string> listed(matches.begin(), matches.begin() + shown);
        return make_error(errc::kInvalidArgument, "configuration id prefix " + prefix +
                                                      " matches " + std::to_string(matches.size()) +
                                                      " configurations (" + join(listed, ", ") +
                                                      (shown < matches.size() ? ", ..." : "") +
                                                      "): give more digits");
    }
    return matches.front();
}

Result<std::string> resolve_config_id(Store& store, const std::string& id_or_prefix) {
    if (id_or_prefix.size() == kConfigIdLength && is_lower_hex(id_or_prefix)) return id_or_prefix;
    DS_ASSIGN_OR_RETURN(auto ids, stored_config_ids(store));
    return unique_config_id(id_or_prefix, ids);
}

std::vector<Workload> server_settings_workloads(const std::vector<RunRecord>& runs,
                                                std::string_view format) {
    std::vector<Workload> workloads;
    std::set<std::string> seen;
    for (const auto& run : runs) {
        if (!kind_applies_server_settings(run.workload.kind, run.workload.params, format)) continue;
        if (seen.insert(to_json(run.workload).dump()).second) workloads.push_back(run.workload);
    }
    return workloads;
}

Result<Workload> choose_server_settings_workload(const ServerSettingsRules& rules,
                                                 const std::vector<Workload>& workloads,
                                                 const std::string& name) {
    const std::string server(rules.server);
    if (workloads.empty()) {
        const auto kinds = kinds_with_server_settings(rules);
        return make_error(errc::kInvalidArgument,
                          "this configuration ran no " + server + " workload (" +
                              join(std::vector<std::string>(kinds.begin(), kinds.end()), ", ") +
                              "): there are no server variables to print");
    }
    if (!name.empty()) {
        for (const auto& workload : workloads)
            if (workload.name == name) return workload;
        return make_error(errc::kInvalidArgument, "no " + server + " workload '" + name +
                                                      "' ran on this configuration; it ran: " +
                                                      join(names_of(workloads), ", "));
    }
    const Json first = workload_server_variables(workloads.front());
    for (const auto& workload : workloads) {
        if (workload_server_variables(workload) != first) {
            return make_error(errc::kInvalidArgument,
                              "the " + server +
                                  " workloads of this configuration set different server "
                                  "variables; choose one with workload=NAME (--workload): " +
                                  join(names_of(workloads), ", "));
        }
    }
    return workloads.front();
}

DurabilityResult applicable_durability(const std::vector<RunRecord>& runs,
                                       const ApplyRequest& request) {
    const bool server_applied = prints_server_settings(request.format) && request.workload;
    const Json applied_server =
        server_applied ? workload_server_variables(*request.workload) : Json::object();
    DurabilityResult result;
    for (const RunRecord& run : runs) {
        const Json server = workload_server_variables(run.workload);
        if (server_applied ? server == applied_server
                           : server_settings_risks(run.workload.kind, run.workload.params).empty())
            result.add(run);
    }
    return result;
}

Result<Json> apply_configuration(Store& store, const std::string& id_or_prefix,
                                 ApplyRequest request) {
    DS_ASSIGN_OR_RETURN(auto id, resolve_config_id(store, id_or_prefix));
    auto settings = store.get_configuration(id);
    if (!settings.ok()) return settings.error();
    DS_ASSIGN_OR_RETURN(auto config, storage_config_from_json(settings.value()));
    DS_ASSIGN_OR_RETURN(auto runs, store.runs_for_config(id, RawOutput::kOmit));
    if (prints_server_settings(request.format)) {
        auto workload = choose_server_settings_workload(
            *request.format.server_settings,
            server_settings_workloads(runs, format_def(request.format).name),
            request.workload_name);
        if (!workload.ok()) return workload.error();
        request.workload = workload.value();
    }
    request.durability = applicable_durability(runs, request);
    auto snippet = render_apply_snippet(config, request);
    if (!snippet.ok()) return snippet.error();
    Json answer{{"config_id", id},
                {"format", std::string(format_def(request.format).name)},
                {"settings", settings.value()},
                {"durability_risks", snippet->durability_risks},
                {"notes", snippet->notes},
                {"body", snippet->body},
                {"snippet", snippet->text},
                {"measured_durability", request.durability->to_json()}};
    answer["measured_durability"]["covers"] = snippet->measured_risks;
    if (request.workload) answer["workload"] = request.workload->name;
    return answer;
}

}  // namespace ds
