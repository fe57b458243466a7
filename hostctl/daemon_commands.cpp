#include "hostctl/daemon_commands.h"

#include <string>

#include "common/version.h"
#include "hostctl/status_format.h"

namespace ds::hostctl {
namespace {

ExitCode status(Invocation& invocation) {
    return print_get(invocation, "/v1/status", format_status);
}

// Exit 1 when the host cannot run sweeps (a Proxmox token lacking a
// required privilege), so a script can gate on it.
ExitCode hosts_check(Invocation& invocation) {
    ApiReply reply = invocation.client.get("/v1/hosts/check?name=" +
                                           query_component(invocation.argument("NAME")));
    if (ExitCode printed = print_reply(invocation, reply, format_host_check);
        printed != ExitCode::kOk)
        return printed;
    // A Proxmox host says whether it is ready; any other host is when connected.
    const auto answer = api::decode<api::HostCheckReply>(reply.body);
    if (!answer.ok()) return invocation.fail_to_read(answer.error());
    const api::HostCheck& check = answer->check;
    const bool ready = check.ready ? *check.ready : check.state == "connected";
    return ready ? ExitCode::kOk : ExitCode::kFailed;
}

// The daemon's versions next to hostctl's own.
std::string format_versions(const api::VersionReply& reply) {
    return format_version(reply, disksweep_version());
}

ExitCode version(Invocation& invocation) {
    return print_get(invocation, "/v1/version", format_versions);
}

}  // namespace

const std::vector<CommandSpec>& daemon_commands() {
    static const std::vector<CommandSpec> kCommands = {
        {"status",
         {},
         {},
         "show the daemon: its instance, acceleration and why, hypervisor, guest image, config",
         status},
        {"hosts check",
         {"NAME"},
         {},
         "ask host NAME (as 'status' lists it) now whether it can run sweeps: a Proxmox host's "
         "release and the token's privileges on every path a sweep touches, what is missing "
         "and the pveum lines that grant it; exit 1 when it cannot",
         hosts_check},
        {"version", {}, {}, "print the versions of hostctl and disksweepd", version},
    };
    return kCommands;
}

}  // namespace ds::hostctl
