// The query parameters of one API route: what the route declares
// (docs/api.md writes them into the path cell) and the one accessor its
// handler reads them through. The accessor answers only for the declared
// names, so a handler cannot read a parameter the route table (and so the
// doc, tests/unit/daemon/api/api_doc_test.cpp) does not list. Parameters a
// client sends that the route does not declare are not read: they are
// ignored, unless the route's reader refuses them itself (apply).
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>

#include "common/result.h"

namespace ds {

enum class QueryPresence { kOptional, kRequired };

// One query parameter a route reads. kRequired says the handler refuses a
// request without it; the handler's reader checks that, with its own message.
struct QueryParameter {
    std::string_view name;
    QueryPresence presence = QueryPresence::kOptional;
};

using QueryValues = std::map<std::string, std::string>;  // http::Request::query

class RouteQuery {
  public:
    // `sent`: the request's decoded parameters; `declared`: the route's. Both
    // must outlive the accessor.
    RouteQuery(const QueryValues& sent, std::span<const QueryParameter> declared)
        : sent_(sent), declared_(declared) {}

    // The value the request sent for the declared parameter `name`, nullptr
    // when it sent none. errc::kInternal when the route does not declare
    // `name`.
    Result<const std::string*> find(std::string_view name) const;

    // A required parameter's value: errc::kInvalidArgument "query parameter
    // 'NAME' (WHAT) is required" when it is absent or empty; errc::kInternal
    // when the route does not declare `name` as required.
    Result<std::string> required(std::string_view name, std::string_view what) const;

    // A yes/no parameter: true or 1, false or 0; absent is false. Any other
    // value is errc::kInvalidArgument; errc::kInternal as find().
    Result<bool> flag(std::string_view name) const;

    // Every parameter the request sent, for a reader that knows `known` and
    // refuses the others itself (apply_request_from_query). errc::kInternal
    // unless `known` are exactly the declared names.
    Result<QueryValues> all(std::span<const std::string_view> known) const;

  private:
    const QueryParameter* declaration(std::string_view name) const;

    const QueryValues& sent_;
    std::span<const QueryParameter> declared_;
};

}  // namespace ds
