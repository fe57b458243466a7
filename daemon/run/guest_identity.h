// One run's guest against its image's manifest (image_manifest.h), as the
// guest tells about itself: its hello (os, kernel, fio), then a MariaDB
// workload's server_version. RunAttempt loads it while preparing and checks
// at each report; the run's versions record which manifest was read and
// what it could not check.
#pragma once

#include <optional>
#include <string>

#include "common/json_fields.h"
#include "common/result.h"
#include "daemon/run/image_manifest.h"

namespace ds {

class GuestIdentity {
  public:
    // Reads the manifest at `manifest_path` ("": the image has none, and
    // nothing is checked); versions["image_manifest"] says which.
    Status load(const std::string& manifest_path, Json& versions);
    // `tool` (a GuestReport key) as the guest reported it.
    void note(const std::string& tool, const std::string& reported) { reported_[tool] = reported; }
    // Everything noted against the manifest: errc::kProtocol naming each
    // tool that differs. versions["image_manifest_unchecked"] lists the
    // tools the manifest does not record.
    Status check(Json& versions) const;

  private:
    std::optional<ImageManifest> manifest_;  // the image's, when it has one
    GuestReport reported_;
};

}  // namespace ds
