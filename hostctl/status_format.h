// How hostctl prints what it asks of the daemon itself: its version, its
// status (instance, hypervisor, hosts, storages, guest images) and the check
// of one host.
#pragma once

#include <string>
#include <string_view>

#include "common/api/hosts.h"
#include "common/api/status.h"
#include "common/api/version.h"
#include "hostctl/format.h"

namespace ds::hostctl {

// GET /v1/version reply, next to hostctl's own version.
std::string format_version(const api::VersionReply& reply, std::string_view client_version);
// GET /v1/status: instance (and its names' prefix), acceleration (and why),
// hypervisor, guest image, paths.
std::string format_status(const api::StatusReply& reply);

// `hosts check NAME` (GET /v1/hosts/check): the host's answer; for a
// Proxmox host its release, whether the token can sweep, what it lacks and
// the pveum lines that grant it.
std::string format_host_check(const api::HostCheckReply& reply);

}  // namespace ds::hostctl
