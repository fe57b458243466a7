// GET /v1/hosts/check?name=NAME (docs/api.md): one host's answer, asked of
// its hypervisor now (Hypervisor::check_host). A host with nothing to check
// but its connection (libvirt) answers its state; a Proxmox host its
// release, whether the token can sweep, and what it lacks.
#pragma once

#include <optional>
#include <string>

#include "common/api/json_codec.h"

namespace ds::api {

// What the hypervisor answered. Each field is sent only by the hosts that
// have it, and encoded only when set.
struct HostCheck {
    std::optional<std::string> state;    // "connected", "unreachable", "refused"
    std::optional<std::string> error;    // why not connected
    std::optional<std::string> proxmox;  // the release
    std::optional<std::string> rules;    // the release whose rules apply
    std::optional<bool> ready;           // the token can run sweeps (Proxmox)
    // [{"path","privileges","need","used_by"}]: kept as JSON, hostctl prints
    // the report that says the same.
    Json missing;
    std::optional<std::string> monitor;  // "allowed" or "not allowed: WHY"
    std::optional<std::string> report;   // for humans, with the pveum lines

    static Result<HostCheck> from_json(const Json& json, std::string_view path = "");
    bool operator==(const HostCheck&) const = default;
};
Json to_json(const HostCheck& check);

struct HostCheckReply {
    std::optional<std::string> host;
    HostCheck check;

    static Result<HostCheckReply> from_json(const Json& json, std::string_view path = "");
    bool operator==(const HostCheckReply&) const = default;
};
Json to_json(const HostCheckReply& reply);

}  // namespace ds::api
