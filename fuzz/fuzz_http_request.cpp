// Bytes from an API client: the daemon's HTTP/1.1 request parser (the server
// parses each request head with the same code, common/http_message.cpp), then the
// API's route matcher (daemon/api/route_match.h) on the decoded path, which
// may be as long as the largest request head (scripts and bench/fuzz.sh run
// this target with -max_len of that size, fuzz/lib.sh). Errors are fine;
// crashes, sanitizer reports, exceptions, hangs and broken properties are not.
#include <string>
#include <string_view>
#include <vector>

#include "common/http.h"
#include "daemon/api/route_match.h"
#include "fuzz/fuzz_input.h"

namespace {

// The shapes of the API's routes (daemon/api/api.cpp): literal segments
// only, a '*' last, a '*' between literals.
const std::vector<std::string_view> kPatterns = {"/v1/sweeps", "/v1/sweeps/*", "/v1/sweeps/*/runs",
                                                 "/v1/configurations/*/results"};

// `pattern` with each '*' replaced by the next of `params`: for a match, the
// path itself (up to a leading '/', which the matcher does not require).
std::string fill_in(std::string_view pattern, const ds::RouteParams& params) {
    std::string path;
    std::size_t next = 0;
    for (char c : pattern) {
        if (c == '*' && next < params.size())
            path += params[next++];
        else
            path += c;
    }
    return path;
}

// A match captures one non-empty segment without '/' per '*', and putting
// them back into the pattern gives the path again.
void check_route_match(std::string_view pattern, std::string_view path) {
    const auto params = ds::RoutePattern(pattern).match(path);
    if (!params) return;
    for (const auto& param : *params) {
        ds::fuzz::require(!param.empty() && param.find('/') == std::string::npos,
                          "a route parameter is one non-empty path segment");
    }
    ds::fuzz::require(fill_in(pattern, *params) == path,
                      "a matched path is its pattern with the parameters filled in");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto request = ds::http::parse_request(ds::fuzz::as_text(data, size));
    if (!request.ok()) return 0;
    // A decoded path is what the routes see: it must still be a path.
    ds::fuzz::require(!request->path.empty() && request->path.front() == '/',
                      "a parsed request's path starts with '/'");
    for (std::string_view pattern : kPatterns) check_route_match(pattern, request->path);
    return 0;
}
