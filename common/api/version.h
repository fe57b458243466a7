// GET /v1/version (docs/api.md): the daemon's version, its API version and
// the capabilities clients ask for instead of comparing versions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/api/json_codec.h"

namespace ds::api {

struct VersionReply {
    std::optional<std::int64_t> api;     // kApiVersion
    std::optional<std::string> version;  // disksweep_version()
    std::vector<std::string> capabilities;

    static Result<VersionReply> from_json(const Json& json, std::string_view path = "");
    bool operator==(const VersionReply&) const = default;
};
Json to_json(const VersionReply& reply);

}  // namespace ds::api
