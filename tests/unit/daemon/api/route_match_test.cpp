// The API's route matcher (daemon/api/route_match.h): what a pattern
// matches and captures, and that a path as long as the largest request head
// the server accepts (http::ServerLimits::max_head_bytes) is matched or
// refused correctly and with work linear in its length, by the matcher alone
// and through the parser and the API's handler. The work is counted
// (MatchWork), not timed: bench/route_speed times it.
#include "daemon/api/route_match.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "common/http.h"
#include "daemon/api/api.h"

namespace {

using ds::MatchWork;
using ds::RouteParams;
using ds::RoutePattern;

const std::size_t kMaxHead = ds::http::ServerLimits{}.max_head_bytes;

// The most a linear match reads of `path` (MatchWork): each byte scanned
// once, then compared or copied at most once. A quadratic matcher reads
// thousands of times more of a path of 32 Ki segments.
std::size_t linear_bound(std::string_view path) {
    return 2 * path.size();
}

// `pattern`'s match of `path`, checking that it read no more than linear_bound.
std::optional<RouteParams> match_linearly(const RoutePattern& pattern, std::string_view path) {
    MatchWork work;
    auto params = pattern.match(path, &work);
    INFO("a path of " << path.size() << " bytes");
    CHECK(work.bytes_read <= linear_bound(path));
    return params;
}

std::string repeated(std::string_view piece, std::size_t length) {
    std::string text;
    while (text.size() < length) text += piece;
    text.resize(length);
    return text;
}

// "/v1/sweeps/<x...>/runs" etc.: `prefix` + filler + `suffix`, `length` bytes in all.
std::string path_of_length(std::string_view prefix, std::string_view suffix, std::size_t length) {
    return std::string(prefix) + std::string(length - prefix.size() - suffix.size(), 'x') +
           std::string(suffix);
}

}  // namespace

TEST_CASE("a route pattern matches its literal segments and captures each '*'", "[api][routes]") {
    CHECK(RoutePattern("/v1/sweeps").match("/v1/sweeps") == RouteParams{});
    CHECK(RoutePattern("/v1/sweeps/*").match("/v1/sweeps/42") == RouteParams{"42"});
    CHECK(RoutePattern("/v1/sweeps/*/runs").match("/v1/sweeps/7/runs") == RouteParams{"7"});
    CHECK(RoutePattern("/*/x/*").match("/a b/x/%2F") == RouteParams{"a b", "%2F"});
}

TEST_CASE("a route pattern refuses every other path", "[api][routes]") {
    struct Refusal {
        const char* pattern;
        const char* path;
    };
    const Refusal refusals[] = {
        {"/v1/sweeps", "/v1/sweeps/"},       // a trailing '/' is one more segment
        {"/v1/sweeps", "/v1"},               // shorter
        {"/v1/sweeps", "/v1/sweepsx"},       // a literal differs
        {"/v1/sweeps", "//v1/sweeps"},       // an empty first segment
        {"/v1/sweeps", ""},                  // nothing
        {"/v1/sweeps/*", "/v1/sweeps/"},     // '*' never matches an empty segment
        {"/v1/sweeps/*", "/v1/sweeps/1/2"},  // '*' is one segment only
        {"/v1/sweeps/*/runs", "/v1/sweeps//runs"},
        {"/v1/sweeps/*/runs", "/v1/sweeps/1/run"},
        {"/v1/sweeps/*/runs", "/v1/sweeps/1/runs/"},
    };
    for (const auto& [pattern, path] : refusals) {
        INFO("pattern " << pattern << ", path '" << path << "'");
        CHECK_FALSE(RoutePattern(pattern).match(path).has_value());
    }
}

TEST_CASE("paths of the maximum request-head length are matched or refused in linear time",
          "[api][routes]") {
    const RoutePattern sweep("/v1/sweeps/*");
    const RoutePattern runs("/v1/sweeps/*/runs");
    const RoutePattern results("/v1/configurations/*/results");
    const std::string long_id = path_of_length("/v1/sweeps/", "", kMaxHead);
    const std::string long_runs = path_of_length("/v1/sweeps/", "/runs", kMaxHead);
    const std::string slashes = repeated("/", kMaxHead);
    const std::string many_segments = "/v1/sweeps/" + repeated("a/", kMaxHead - 11);
    REQUIRE(long_id.size() == kMaxHead);
    REQUIRE(many_segments.size() == kMaxHead);

    const auto id = match_linearly(sweep, long_id);
    REQUIRE(id.has_value());
    CHECK(id->front().size() == kMaxHead - 11);
    const auto id_of_runs = match_linearly(runs, long_runs);
    REQUIRE(id_of_runs.has_value());
    CHECK(id_of_runs->front().size() == kMaxHead - 16);
    for (const RoutePattern* pattern : {&sweep, &runs, &results}) {
        CHECK_FALSE(match_linearly(*pattern, slashes).has_value());
        CHECK_FALSE(match_linearly(*pattern, many_segments).has_value());
    }
    CHECK_FALSE(match_linearly(sweep, long_runs).has_value());
    CHECK_FALSE(match_linearly(runs, long_id).has_value());
}

TEST_CASE("the API answers a request head of the maximum length at once", "[api][routes]") {
    // Routing and the id check come before any store access: no store needed.
    MatchWork routing;
    ds::ApiContext context;
    context.routing_work = &routing;
    const ds::http::Handler api = ds::make_api_handler(std::move(context));
    const std::string_view tail = " HTTP/1.1\r\nHost: x\r\n\r\n";
    struct Case {
        std::string path;
        int status;
        const char* error_code;
    };
    const Case cases[] = {
        // Matches GET /v1/sweeps/*; the id is no number.
        {path_of_length("/v1/sweeps/", "", kMaxHead - 4 - tail.size()), 400, "invalid_argument"},
        {repeated("/", kMaxHead - 4 - tail.size()), 404, "not_found"},
        {"/v1/sweeps/" + repeated("1/", kMaxHead - 4 - tail.size() - 11), 404, "not_found"},
    };
    for (const auto& [path, status, error_code] : cases) {
        const std::string head = "GET " + path + std::string(tail);
        REQUIRE(head.size() == kMaxHead);
        const auto request = ds::http::parse_request(head);
        REQUIRE(request.ok());
        REQUIRE(request->path == path);
        routing = {};
        const ds::http::Response response = api(request.value());
        // Each route tried once, each match linear.
        CHECK(routing.bytes_read <= ds::api_routes().size() * linear_bound(path));
        CHECK(response.status == status);
        const auto body = nlohmann::json::parse(response.body);
        CHECK(body.at("error").at("code") == error_code);
    }
}
