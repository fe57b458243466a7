#include "daemon/api/route_query.h"

#include <algorithm>

namespace ds {
namespace {

Error undeclared(std::string_view name, std::string_view how) {
    return make_error(errc::kInternal, "the handler reads query parameter '" + std::string(name) +
                                           "', which its route does not declare" +
                                           std::string(how) + " (daemon/api/api.cpp's routes)");
}

}  // namespace

const QueryParameter* RouteQuery::declaration(std::string_view name) const {
    const auto found = std::find_if(declared_.begin(), declared_.end(),
                                    [name](const QueryParameter& p) { return p.name == name; });
    return found == declared_.end() ? nullptr : &*found;
}

Result<const std::string*> RouteQuery::find(std::string_view name) const {
    if (!declaration(name)) return undeclared(name, "");
    const auto given = sent_.find(std::string(name));
    return given == sent_.end() ? nullptr : &given->second;
}

Result<std::string> RouteQuery::required(std::string_view name, std::string_view what) const {
    const QueryParameter* declared = declaration(name);
    if (!declared || declared->presence != QueryPresence::kRequired)
        return undeclared(name, " as required");
    const auto given = sent_.find(std::string(name));
    if (given == sent_.end() || given->second.empty()) {
        return make_error(errc::kInvalidArgument, "query parameter '" + std::string(name) + "' (" +
                                                      std::string(what) + ") is required");
    }
    return given->second;
}

Result<bool> RouteQuery::flag(std::string_view name) const {
    DS_ASSIGN_OR_RETURN(const std::string* given, find(name));
    if (!given) return false;
    if (*given == "true" || *given == "1") return true;
    if (*given == "false" || *given == "0") return false;
    return make_error(errc::kInvalidArgument, "query parameter '" + std::string(name) +
                                                  "' must be true or false (1 or 0), not '" +
                                                  *given + "'");
}

Result<QueryValues> RouteQuery::all(std::span<const std::string_view> known) const {
    const bool same = known.size() == declared_.size() &&
                      std::all_of(known.begin(), known.end(),
                                  [this](std::string_view name) { return declaration(name); });
    if (!same) {
        return make_error(errc::kInternal,
                          "the handler's reader knows other query parameters than its route "
                          "declares (daemon/api/api.cpp's routes)");
    }
    return sent_;
}

}  // namespace ds
