// The one accessor handlers read query parameters through: it answers only
// for what the route declares, so the route table (and docs/api.md, checked
// against it) cannot drift from what the handlers read.
#include "daemon/api/route_query.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "daemon/api/api.h"
#include "daemon/apply/apply_snippets.h"

namespace ds {
namespace {

constexpr QueryParameter kDeclared[] = {{"name", QueryPresence::kRequired}, {"metric"}, {"all"}};

}  // namespace

TEST_CASE("a route's query: declared parameters read, undeclared refused", "[api][query]") {
    const QueryValues sent = {{"metric", "tps"}, {"all", "maybe"}, {"other", "x"}};
    const RouteQuery query(sent, kDeclared);

    auto metric = query.find("metric");
    REQUIRE(metric.ok());
    REQUIRE(metric.value() != nullptr);
    CHECK(*metric.value() == "tps");
    auto absent = query.find("name");
    REQUIRE(absent.ok());
    CHECK(absent.value() == nullptr);

    // A parameter the client sent but the route does not declare is not
    // readable: a handler asking for it is a bug of the daemon.
    for (const char* undeclared : {"other", "limit"}) {
        auto read = query.find(undeclared);
        REQUIRE_FALSE(read.ok());
        CHECK(read.error().code == errc::kInternal);
        CHECK_FALSE(query.flag(undeclared).ok());
    }

    auto flag = query.flag("all");
    REQUIRE_FALSE(flag.ok());
    CHECK(flag.error().code == errc::kInvalidArgument);
    CHECK(flag.error().message ==
          "query parameter 'all' must be true or false (1 or 0), not 'maybe'");
}

TEST_CASE("a route's query: required parameters", "[api][query]") {
    const QueryValues empty_name = {{"name", ""}};
    for (const QueryValues& sent : {QueryValues{}, empty_name}) {
        auto missing = RouteQuery(sent, kDeclared).required("name", "the host");
        REQUIRE_FALSE(missing.ok());
        CHECK(missing.error().code == errc::kInvalidArgument);
        CHECK(missing.error().message == "query parameter 'name' (the host) is required");
    }
    const QueryValues sent = {{"name", "pve/pve1"}};
    const RouteQuery query(sent, kDeclared);
    auto name = query.required("name", "the host");
    REQUIRE(name.ok());
    CHECK(name.value() == "pve/pve1");
    // Only a parameter declared required is read as one.
    auto optional = query.required("metric", "the metric");
    REQUIRE_FALSE(optional.ok());
    CHECK(optional.error().code == errc::kInternal);
}

TEST_CASE("a route's query: all of it only for a reader of the declared names", "[api][query]") {
    const QueryValues sent = {{"metric", "tps"}, {"unknown", "1"}};
    const RouteQuery query(sent, kDeclared);
    constexpr std::string_view kSame[] = {"all", "name", "metric"};
    auto all = query.all(kSame);
    REQUIRE(all.ok());
    CHECK(all.value() == sent);
    constexpr std::string_view kFewer[] = {"name", "metric"};
    constexpr std::string_view kOthers[] = {"name", "metric", "limit"};
    using Known = std::span<const std::string_view>;
    for (Known known : {Known(kFewer), Known(kOthers)}) {
        auto refused = query.all(known);
        REQUIRE_FALSE(refused.ok());
        CHECK(refused.error().code == errc::kInternal);
    }
}

TEST_CASE("the apply route declares what apply_request_from_query knows", "[api][query]") {
    std::vector<std::string_view> declared;
    for (const RouteDoc& route : api_routes()) {
        if (route.pattern != "/v1/configurations/*/apply") continue;
        for (const QueryParameter& parameter : route.query) declared.push_back(parameter.name);
    }
    const auto known = apply_query_parameters();
    CHECK(declared == std::vector<std::string_view>(known.begin(), known.end()));
}

}  // namespace ds
