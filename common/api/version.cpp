#include "common/api/version.h"

namespace ds::api {

Result<VersionReply> VersionReply::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    VersionReply reply;
    in.read("api", reply.api);
    in.read("version", reply.version);
    in.read("capabilities", reply.capabilities);
    return in.finish(std::move(reply));
}

Json to_json(const VersionReply& reply) {
    return {{"api", value_or_null(reply.api)},
            {"version", value_or_null(reply.version)},
            {"capabilities", reply.capabilities}};
}

}  // namespace ds::api
