// protocol::decode over the worst shape a guest can send: one line holding an
// array of N empty objects, for N doubling up to kMaxMessageValues. The
// decoder must take linear time (nlohmann's parser callback, used for the
// bounds before, rescanned the enclosing array at each object's end:
// 262,144 "{}" took a minute). Prints N, the best of 3 times, ns per value
// and the ratio to the previous row: about 2 is linear, about 4 quadratic.
// Usage: decode_speed   (not a timed test; prints the figures)

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "common/protocol.h"

namespace {

std::string array_of_objects(std::size_t count) {
    std::string line = R"({"v":2,"type":"progress","x":[{})";
    line.reserve(line.size() + 3 * count + 2);
    for (std::size_t i = 1; i < count; ++i) line += ",{}";
    line += "]}";
    return line;
}

// Best of three decodes of `line`, in milliseconds; negative when it fails.
double best_decode_ms(const std::string& line) {
    double best = 1e12;
    for (int round = 0; round < 3; ++round) {
        const auto start = std::chrono::steady_clock::now();
        if (!ds::protocol::decode(line).ok()) return -1;
        const std::chrono::duration<double, std::milli> took =
            std::chrono::steady_clock::now() - start;
        best = std::min(best, took.count());
    }
    return best;
}

}  // namespace

int main() {
    // The message object, the values of "v" and "type", and the array are
    // four of the values.
    const std::size_t largest = ds::protocol::kMaxMessageValues - 4;
    std::printf("%10s %12s %12s %8s\n", "objects", "best ms", "ns/value", "ratio");
    double previous = 0;
    for (int halvings = 6; halvings >= 0; --halvings) {
        const std::size_t count = largest >> halvings;
        const double ms = best_decode_ms(array_of_objects(count));
        if (ms < 0) {
            std::fprintf(stderr, "decode_speed: %zu objects did not decode\n", count);
            return 1;
        }
        std::printf("%10zu %12.2f %12.1f %8.2f\n", count, ms, ms * 1e6 / double(count),
                    previous > 0 ? ms / previous : 0.0);
        previous = ms;
    }
    return 0;
}
