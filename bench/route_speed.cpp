// The API's routing of request paths of doubling length, up to the largest
// request head the server accepts (http::ServerLimits::max_head_bytes). Each
// shape of path is parsed from a request head and answered by the API's
// handler (routing and the id check come before any store access): one long
// id ("/v1/sweeps/xxx...", 400), only slashes ("////...", 404) and many
// segments ("/v1/sweeps/1/1/...", 404). Routing must take linear time: the
// unit test (route_match_test.cpp) bounds the bytes the matcher reads, this
// measures the seconds. Prints, per shape and length, the best of 3 times
// for kRequests requests, ns per head byte and the ratio to the previous
// row: about 2 is linear, about 4 quadratic. The time goes to parsing and
// to the error body (which quotes the path), far more than to routing.
// The largest heads' row may show 5 to 7 where a request's buffers grow past
// glibc's mmap and trim thresholds (each request then maps, faults in and
// returns its memory: 6.2 against 2.0 on a 2-core VM): run with
// GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4194304:glibc.malloc.trim_threshold=268435456
// to see the code's own ratio.
// Usage: route_speed   (not a timed test; prints the figures)

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>

#include "common/http.h"
#include "daemon/api/api.h"

namespace {

constexpr int kRequests = 100;
constexpr std::string_view kTail = " HTTP/1.1\r\nHost: x\r\n\r\n";

struct PathShape {
    const char* name;
    std::string_view prefix;  // then `filler` repeated up to the length
    std::string_view filler;
};

constexpr PathShape kShapes[] = {
    {"long id", "/v1/sweeps/", "x"},
    {"slashes", "/", "/"},
    {"segments", "/v1/sweeps/", "1/"},
};

// A request head of `head_bytes` in all whose path has `shape`.
std::string request_head(const PathShape& shape, std::size_t head_bytes) {
    const std::size_t path_bytes = head_bytes - 4 - kTail.size();  // "GET " and the tail
    std::string path(shape.prefix);
    while (path.size() < path_bytes) path += shape.filler;
    path.resize(path_bytes);
    return "GET " + path + std::string(kTail);
}

// Best of three times of kRequests parses and answers of `head`, in
// milliseconds; negative when the head does not parse.
double best_answer_ms(const ds::http::Handler& api, const std::string& head) {
    double best = 1e12;
    for (int round = 0; round < 3; ++round) {
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < kRequests; ++i) {
            const auto request = ds::http::parse_request(head);
            if (!request.ok()) return -1;
            (void)api(request.value());
        }
        const std::chrono::duration<double, std::milli> took =
            std::chrono::steady_clock::now() - start;
        best = std::min(best, took.count());
    }
    return best;
}

// One shape's rows, the head doubling up to `largest` bytes; false when a
// head did not parse.
bool print_shape(const ds::http::Handler& api, const PathShape& shape, std::size_t largest) {
    double previous = 0;
    for (int halvings = 6; halvings >= 0; --halvings) {
        const std::size_t head_bytes = largest >> halvings;
        const double ms = best_answer_ms(api, request_head(shape, head_bytes));
        if (ms < 0) {
            std::fprintf(stderr, "route_speed: a %s head of %zu bytes did not parse\n", shape.name,
                         head_bytes);
            return false;
        }
        std::printf("%10s %10zu %12.3f %10.2f %8.2f\n", shape.name, head_bytes, ms,
                    ms * 1e6 / (double(kRequests) * double(head_bytes)),
                    previous > 0 ? ms / previous : 0.0);
        previous = ms;
    }
    return true;
}

}  // namespace

int main() {
    const ds::http::Handler api = ds::make_api_handler(ds::ApiContext{});
    const std::size_t largest = ds::http::ServerLimits{}.max_head_bytes;
    std::printf("%10s %10s %12s %10s %8s\n", "path", "head bytes", "best ms", "ns/byte", "ratio");
    for (const PathShape& shape : kShapes) {
        if (!print_shape(api, shape, largest)) return 1;
    }
    return 0;
}
