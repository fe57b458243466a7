// GET /v1/status (docs/api.md): what this daemon is and has, for
// `hostctl status` and for the daemon's own plan (how many runs at once).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/api/json_codec.h"

namespace ds::api {

// This daemon's instance: its name, the prefix of every guest and volume
// it creates, and "configured" or "generated".
struct InstanceStatus {
    std::optional<std::string> name;
    std::optional<std::string> resource_prefix;
    std::optional<std::string> source;

    static Result<InstanceStatus> from_json(const Json& json, std::string_view path = "");
    bool operator==(const InstanceStatus&) const = default;
};
Json to_json(const InstanceStatus& instance);

// The local libvirt connection.
struct HypervisorStatus {
    std::optional<std::string> backend;
    std::optional<std::string> uri;

    static Result<HypervisorStatus> from_json(const Json& json, std::string_view path = "");
    bool operator==(const HypervisorStatus&) const = default;
};
Json to_json(const HypervisorStatus& hypervisor);

// One host runs are placed on. Its versions, connection and placement are
// kept as JSON, in the shapes their owners give them (docs/api.md): each
// hypervisor names its own versions (libvirt, qemu; proxmox, proxmox_rules)
// and its own connection fields (Hypervisor::reachability: "state",
// "error", ...), and HostPool::placement_status is read by the daemon's
// tests as JSON. hostctl reads the few it prints by name.
struct HostStatus {
    std::optional<std::string> name;
    std::optional<std::string> kind;
    std::optional<std::string> detail;
    std::optional<std::int64_t> parallel;  // its run slots
    std::optional<std::string> accel;
    std::optional<std::string> accel_reason;
    Json versions;
    Json connection;
    Json placement;  // {"busy", "parallel", "consecutive_failures", "backed_off_until", ...}

    static Result<HostStatus> from_json(const Json& json, std::string_view path = "");
    bool operator==(const HostStatus&) const = default;
};
Json to_json(const HostStatus& host);

// Whether the default guest image is there, and why not.
struct GuestImageState {
    std::optional<bool> ready;
    std::optional<std::string> problem;

    static Result<GuestImageState> from_json(const Json& json, std::string_view path = "");
    bool operator==(const GuestImageState&) const = default;
};
Json to_json(const GuestImageState& image);

// One guest suite's image variant ("" for the base image): ready with its
// manifest's kernel, or not with the problem (and the command that builds it).
struct GuestImageStatus {
    std::optional<std::string> suite;
    std::optional<std::string> variant;
    std::optional<bool> ready;
    std::optional<std::string> kernel;   // sent only when ready and known
    std::optional<std::string> problem;  // sent only when not ready

    static Result<GuestImageStatus> from_json(const Json& json, std::string_view path = "");
    bool operator==(const GuestImageStatus&) const = default;
};
Json to_json(const GuestImageStatus& image);

// The whole reply. Each field is encoded only when set (a daemon sets them
// all; an API without a status source answers its version alone), and
// the lists only when not empty. The versions, backends and configuration
// are kept as JSON: they are the hypervisor's, the backend catalog's
// (BackendCatalog::to_json) and DaemonConfig::to_json's, whose keys those
// document; hostctl reads a few of them by name.
struct StatusReply {
    std::optional<std::int64_t> api;     // kApiVersion
    std::optional<std::string> version;  // disksweep_version()
    std::optional<InstanceStatus> instance;
    std::optional<std::string> accel;  // the local host's acceleration, and why
    std::optional<std::string> accel_reason;
    std::optional<HypervisorStatus> hypervisor;
    Json versions;                  // {"libvirt", "qemu"} of the local hypervisor
    Json backends;                  // {"hypervisors", "hosts", "storages": [{"name", "produces"}]}
    std::vector<HostStatus> hosts;  // `local` first
    std::optional<GuestImageState> guest_image;
    std::vector<GuestImageStatus> guest_images;  // every suite's, none from an older daemon
    Json config;  // the effective configuration: "image_dir", "database", "max_parallel_runs", ...

    static Result<StatusReply> from_json(const Json& json, std::string_view path = "");
    bool operator==(const StatusReply&) const = default;
};
Json to_json(const StatusReply& reply);

}  // namespace ds::api
