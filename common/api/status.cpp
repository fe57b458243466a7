#include "common/api/status.h"

namespace ds::api {

Result<InstanceStatus> InstanceStatus::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    InstanceStatus instance;
    in.read("name", instance.name);
    in.read("resource_prefix", instance.resource_prefix);
    in.read("source", instance.source);
    return in.finish(std::move(instance));
}

Json to_json(const InstanceStatus& instance) {
    return {{"name", value_or_null(instance.name)},
            {"resource_prefix", value_or_null(instance.resource_prefix)},
            {"source", value_or_null(instance.source)}};
}

Result<HypervisorStatus> HypervisorStatus::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    HypervisorStatus hypervisor;
    in.read("backend", hypervisor.backend);
    in.read("uri", hypervisor.uri);
    return in.finish(std::move(hypervisor));
}

Json to_json(const HypervisorStatus& hypervisor) {
    return {{"backend", value_or_null(hypervisor.backend)}, {"uri", value_or_null(hypervisor.uri)}};
}

Result<HostStatus> HostStatus::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    HostStatus host;
    in.read("name", host.name);
    in.read("kind", host.kind);
    in.read("detail", host.detail);
    in.read("parallel", host.parallel);
    in.read("accel", host.accel);
    in.read("accel_reason", host.accel_reason);
    in.read("versions", host.versions);
    in.read("connection", host.connection);
    in.read("placement", host.placement);
    return in.finish(std::move(host));
}

Json to_json(const HostStatus& host) {
    return {{"name", value_or_null(host.name)},
            {"kind", value_or_null(host.kind)},
            {"detail", value_or_null(host.detail)},
            {"parallel", value_or_null(host.parallel)},
            {"accel", value_or_null(host.accel)},
            {"accel_reason", value_or_null(host.accel_reason)},
            {"versions", host.versions},
            {"connection", host.connection},
            {"placement", host.placement}};
}

Result<GuestImageState> GuestImageState::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    GuestImageState image;
    in.read("ready", image.ready);
    in.read("problem", image.problem);
    return in.finish(std::move(image));
}

Json to_json(const GuestImageState& image) {
    return {{"ready", value_or_null(image.ready)}, {"problem", value_or_null(image.problem)}};
}

Result<GuestImageStatus> GuestImageStatus::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    GuestImageStatus image;
    in.read("suite", image.suite);
    in.read("variant", image.variant);
    in.read("ready", image.ready);
    in.read("kernel", image.kernel);
    in.read("problem", image.problem);
    return in.finish(std::move(image));
}

Json to_json(const GuestImageStatus& image) {
    Json json{{"suite", value_or_null(image.suite)},
              {"variant", value_or_null(image.variant)},
              {"ready", value_or_null(image.ready)}};
    if (image.kernel) json["kernel"] = *image.kernel;
    if (image.problem) json["problem"] = *image.problem;
    return json;
}

Result<StatusReply> StatusReply::from_json(const Json& json, std::string_view path) {
    ObjectReader in(json, path);
    StatusReply reply;
    in.read("api", reply.api);
    in.read("version", reply.version);
    in.read("instance", reply.instance);
    in.read("accel", reply.accel);
    in.read("accel_reason", reply.accel_reason);
    in.read("hypervisor", reply.hypervisor);
    in.read("versions", reply.versions);
    in.read("backends", reply.backends);
    in.read("hosts", reply.hosts);
    in.read("guest_image", reply.guest_image);
    in.read("guest_images", reply.guest_images);
    in.read("config", reply.config);
    return in.finish(std::move(reply));
}

Json to_json(const StatusReply& reply) {
    Json json = Json::object();
    if (reply.api) json["api"] = *reply.api;
    if (reply.version) json["version"] = *reply.version;
    if (reply.instance) json["instance"] = to_json(*reply.instance);
    if (reply.accel) json["accel"] = *reply.accel;
    if (reply.accel_reason) json["accel_reason"] = *reply.accel_reason;
    if (reply.hypervisor) json["hypervisor"] = to_json(*reply.hypervisor);
    if (!reply.versions.is_null()) json["versions"] = reply.versions;
    if (!reply.backends.is_null()) json["backends"] = reply.backends;
    if (!reply.hosts.empty()) json["hosts"] = json_array(reply.hosts);
    if (reply.guest_image) json["guest_image"] = to_json(*reply.guest_image);
    if (!reply.guest_images.empty()) json["guest_images"] = json_array(reply.guest_images);
    if (!reply.config.is_null()) json["config"] = reply.config;
    return json;
}

}  // namespace ds::api
