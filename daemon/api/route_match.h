// The API's route matcher (daemon/api/api.cpp), in a header of its own so
// that the HTTP fuzz target (fuzz/fuzz_http_request.cpp) and the unit tests
// run the same code without the rest of the daemon.
//
// A route's pattern is a path of segments, "/v1/sweeps/*/runs", where a
// segment '*' matches any one non-empty segment. Matching walks the path
// once, segment by segment, and stops at the first segment that differs: no
// regex, no backtracking, so a path as long as the largest request head
// (http::ServerLimits::max_head_bytes) costs time linear in its length. The
// matcher counts the bytes it reads (MatchWork), so tests bound that work by
// the path's length instead of timing it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ds {

// The path segments a pattern's '*'s matched, in order.
using RouteParams = std::vector<std::string>;

// The bytes of paths that matching read: each scan for a segment's end (its
// '/' included), each comparison with a literal segment and each copy into
// RouteParams counts the bytes it touched. A path's byte is scanned once and
// then compared or copied at most once, so one match reads at most twice the
// path's length; more means a byte is read again and again (quadratic time).
struct MatchWork {
    std::size_t bytes_read = 0;
};

class RoutePattern {
  public:
    // `pattern` starts with '/'; a '*' stands for a whole segment.
    explicit RoutePattern(std::string_view pattern) {
        std::string_view rest = without_leading_slash(pattern);
        while (true) {
            const std::size_t slash = rest.find('/');
            segments_.emplace_back(rest.substr(0, slash));
            if (slash == std::string_view::npos) break;
            rest.remove_prefix(slash + 1);
        }
    }

    // The '*' segments when `path` (a request's decoded path, without the
    // query) has exactly the pattern's segments, else nullopt. A trailing or
    // doubled '/' makes an extra, empty segment: "/v1/sweeps/" does not match
    // "/v1/sweeps", and no '*' matches an empty segment. Adds the bytes it
    // read to `work` when given.
    std::optional<RouteParams> match(std::string_view path, MatchWork* work = nullptr) const {
        MatchWork uncounted;
        MatchWork& counted = work ? *work : uncounted;
        std::string_view rest = without_leading_slash(path);
        RouteParams params;
        for (std::size_t i = 0; i < segments_.size(); ++i) {
            const std::size_t slash = rest.find('/');
            counted.bytes_read += slash == std::string_view::npos ? rest.size() : slash + 1;
            const bool last_in_pattern = i + 1 == segments_.size();
            // The path ends before the pattern does, or goes on after it.
            if (last_in_pattern != (slash == std::string_view::npos)) return std::nullopt;
            const std::string_view segment = rest.substr(0, slash);
            if (segments_[i] != "*") {
                counted.bytes_read += std::min(segment.size(), segments_[i].size());
                if (segment != segments_[i]) return std::nullopt;
            } else if (segment.empty()) {
                return std::nullopt;
            } else {
                counted.bytes_read += segment.size();
                params.emplace_back(segment);
            }
            if (!last_in_pattern) rest.remove_prefix(slash + 1);
        }
        return params;
    }

  private:
    static std::string_view without_leading_slash(std::string_view path) {
        return path.starts_with('/') ? path.substr(1) : path;
    }

    std::vector<std::string> segments_;
};

}  // namespace ds
