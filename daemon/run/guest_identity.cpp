#include "daemon/run/guest_identity.h"

#include <utility>
#include <vector>

#include "common/text.h"

namespace ds {

Status GuestIdentity::load(const std::string& manifest_path, Json& versions) {
    if (manifest_path.empty()) {
        versions["image_manifest"] = "none: the guest's tool versions were not checked";
        return ok_status();
    }
    DS_ASSIGN_OR_RETURN(auto manifest, read_image_manifest(manifest_path));
    manifest_ = std::move(manifest);
    versions["image_manifest"] = manifest_path;
    return ok_status();
}

Status GuestIdentity::check(Json& versions) const {
    if (!manifest_) return ok_status();
    const std::vector<std::string> unchecked = manifest_unchecked(*manifest_, reported_);
    if (unchecked.empty()) {
        versions.erase("image_manifest_unchecked");
    } else {
        versions["image_manifest_unchecked"] = join(unchecked, ", ");
    }
    const std::vector<std::string> mismatches = manifest_mismatches(*manifest_, reported_);
    if (mismatches.empty()) return ok_status();
    return make_error(errc::kProtocol,
                      "the guest is not the build its image's manifest describes (rebuild the "
                      "image: scripts/build-guest-image.sh): " +
                          join(mismatches, "; "));
}

}  // namespace ds
