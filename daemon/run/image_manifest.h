// A guest image's manifest.json (written last by guest/build-image.sh) and
// the check that a booted guest is the build the manifest describes: its
// Debian release, kernel and tool versions. A guest that reports anything
// else (a stale image, a changed root file system, a guest that lies) fails
// its run, naming the tool, so a run is never recorded under versions it
// did not run.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace ds {

struct ImageManifest {
    std::string path;            // where it was read, for messages
    std::string suite;           // "bookworm", "trixie"
    std::string os_version_id;   // os_release.version_id ("" in older manifests)
    std::string kernel_release;  // kernel.release, uname -r of its guests
    // Debian package -> Debian version ("1:11.8.3-0+deb13u1").
    std::map<std::string, std::string> packages;
};

// errc::kInvalidArgument naming the file and what is wrong with it.
Result<ImageManifest> parse_image_manifest(std::string_view text, const std::string& path);
Result<ImageManifest> read_image_manifest(const std::string& path);

// The upstream part of a Debian version: no epoch ("1:"), no Debian
// revision (from the last '-'), no repack suffix ("+dfsg", "~"):
// "1:11.8.3-0+deb13u1" -> "11.8.3", "3.39-1" -> "3.39".
std::string upstream_version(std::string_view debian_version);

// What a guest said about itself (its hello and result), by tool as the
// manifest check names them: "os" (os-release VERSION_ID), "kernel" (uname
// -r), "fio" (fio --version), "mariadb" (SELECT VERSION()), "postgresql"
// (SHOW server_version; its major version against Debian's `postgresql`).
// Absent = not reported (a workload without a server, an agent that
// predates os).
using GuestReport = std::map<std::string, std::string>;

// Each reported tool whose version the manifest records, compared: the
// mismatches, "fio: the guest runs fio-3.33, its image's manifest
// (PATH) says 3.39-1". Empty when all agree.
std::vector<std::string> manifest_mismatches(const ImageManifest& manifest,
                                             const GuestReport& report);

// The tools the guest reported whose version the manifest does not record
// (an older manifest without os_release, say), for the run's record of what
// was not checked.
std::vector<std::string> manifest_unchecked(const ImageManifest& manifest,
                                            const GuestReport& report);

}  // namespace ds
