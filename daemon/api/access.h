// Who may use the API. The socket is 0660 root:disksweep, and every
// connection is checked again by its peer credentials (SO_PEERCRED), so a
// socket made reachable by mistake (a wrong mode, a bind mount) still lets
// in only root and members of the API group.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace ds {

inline constexpr const char* kApiGroup = "disksweep";

// The gid of `group`, or nullopt when no such group exists (then only root
// may use the API).
std::optional<gid_t> lookup_group(const std::string& group);

// Whether a peer may use the API: uid 0, or its primary gid is `api_gid`, or
// the user is a member of `api_gid` in the group database.
bool peer_may_use_api(uid_t uid, gid_t gid, std::optional<gid_t> api_gid);

}  // namespace ds
