#include "common/api/hosts.h"

namespace ds::api {

Result<HostCheck> HostCheck::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    HostCheck check;
    in.read("state", check.state);
    in.read("error", check.error);
    in.read("proxmox", check.proxmox);
    in.read("rules", check.rules);
    in.read("ready", check.ready);
    in.read("missing", check.missing);
    in.read("monitor", check.monitor);
    in.read("report", check.report);
    return in.finish(std::move(check));
}

Json to_json(const HostCheck& check) {
    Json json = Json::object();
    auto put = [&json](const char* key, const auto& value) {
        if (value) json[key] = *value;
    };
    put("state", check.state);
    put("error", check.error);
    put("proxmox", check.proxmox);
    put("rules", check.rules);
    put("ready", check.ready);
    if (!check.missing.is_null()) json["missing"] = check.missing;
    put("monitor", check.monitor);
    put("report", check.report);
    return json;
}

Result<HostCheckReply> HostCheckReply::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    HostCheckReply reply;
    in.read("host", reply.host);
    in.read("check", reply.check);
    return in.finish(std::move(reply));
}

Json to_json(const HostCheckReply& reply) {
    return {{"host", value_or_null(reply.host)}, {"check", to_json(reply.check)}};
}

}  // namespace ds::api
