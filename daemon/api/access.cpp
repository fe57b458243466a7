#include "daemon/api/access.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

namespace ds {

std::optional<gid_t> lookup_group(const std::string& group) {
    std::vector<char> buffer(16384);
    struct group entry {};
    struct group* found = nullptr;
    if (::getgrnam_r(group.c_str(), &entry, buffer.data(), buffer.size(), &found) != 0 ||
        found == nullptr) {
        return std::nullopt;
    }
    return found->gr_gid;
}

namespace {
// The user's groups from the group database (supplementary included).
bool user_in_group(uid_t uid, gid_t primary, gid_t wanted) {
    std::vector<char> buffer(16384);
    struct passwd entry {};
    struct passwd* found = nullptr;
    if (::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) != 0 || found == nullptr) {
        return false;
    }
    int count = 64;
    std::vector<gid_t> groups(static_cast<std::size_t>(count));
    if (::getgrouplist(found->pw_name, primary, groups.data(), &count) < 0) {
        groups.resize(static_cast<std::size_t>(count));
        if (::getgrouplist(found->pw_name, primary, groups.data(), &count) < 0) return false;
    }
    groups.resize(static_cast<std::size_t>(count));
    return std::find(groups.begin(), groups.end(), wanted) != groups.end();
}
}  // namespace

bool peer_may_use_api(uid_t uid, gid_t gid, std::optional<gid_t> api_gid) {
    if (uid == 0) return true;
    if (!api_gid) return false;
    return gid == *api_gid || user_in_group(uid, gid, *api_gid);
}

}  // namespace ds
