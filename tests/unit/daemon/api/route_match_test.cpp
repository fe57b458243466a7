// The API's route matcher (daemon/api/route_match.h): what a pattern
// matches and captures, and that a path as long as the largest request head
// the server accepts (http::ServerLimits::max_head_bytes) is matched or
// refused correctly and in linear time, by the matcher alone and through the
// parser and the API's handler.
#include "daemon/api/route_match.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>

#include "common/http.h"
#include "daemon/api/api.h"

namespace {

using ds::RouteParams;
using ds::RoutePattern;
using Steady = std::chrono::steady_clock;

const std::size_t kMaxHead = ds::http::ServerLimits{}.max_head_bytes;

// A bound far above linear matching of kMaxHead bytes (well under a
// millisecond a match, also under ASan) and far below quadratic (billions of
// byte comparisons for a path of 32 Ki segments).
constexpr auto kTimeBound = std::chrono::milliseconds(500);

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

    const auto start = Steady::now();
    for (int round = 0; round < 10; ++round) {
        const auto id = sweep.match(long_id);
        REQUIRE(id.has_value());
        CHECK(id->front().size() == kMaxHead - 11);
        const auto id_of_runs = runs.match(long_runs);
        REQUIRE(id_of_runs.has_value());
        CHECK(id_of_runs->front().size() == kMaxHead - 16);
        for (const RoutePattern* pattern : {&sweep, &runs, &results}) {
            CHECK_FALSE(pattern->match(slashes).has_value());
            CHECK_FALSE(pattern->match(many_segments).has_value());
        }
        CHECK_FALSE(sweep.match(long_runs).has_value());
        CHECK_FALSE(runs.match(long_id).has_value());
    }
    CHECK(Steady::now() - start < kTimeBound);
}

TEST_CASE("the API answers a request head of the maximum length at once", "[api][routes]") {
    // Routing and the id check come before any store access: no store needed.
    const ds::http::Handler api = ds::make_api_handler(ds::ApiContext{});
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
        const auto start = Steady::now();
        const auto request = ds::http::parse_request(head);
        REQUIRE(request.ok());
        REQUIRE(request->path == path);
        const ds::http::Response response = api(request.value());
        CHECK(Steady::now() - start < kTimeBound);
        CHECK(response.status == status);
        const auto body = nlohmann::json::parse(response.body);
        CHECK(body.at("error").at("code") == error_code);
    }
}
