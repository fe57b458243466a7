// The Debian releases a guest image is built from, as data: the spec's
// `[guest] suite`, the image's directory below the daemon's image dir, and
// the command that builds it (scripts/build-guest-image.sh --suite). Every
// C++ place asks here. The image build's own table, guest/suites.txt, holds
// the same suites with their package renames; tests/unit/guest/suites_test.sh
// fails while the two differ.
#pragma once

#include <array>
#include <compare>
#include <string>
#include <string_view>
#include <vector>

namespace ds {

struct GuestSuiteDef {
    std::string_view name;            // Debian codename, as `[guest] suite` spells it
    std::string_view debian_version;  // os-release VERSION_ID of its guests
    // Below the image dir: "" = the image dir itself (the first suite's,
    // where images lived before there were suites).
    std::string_view image_subdir;
};

inline constexpr std::array kGuestSuites = {
    GuestSuiteDef{"bookworm", "12", ""},
    GuestSuiteDef{"trixie", "13", "trixie"},
};
// The guest a spec without `[guest] suite` runs (docs/spec.md): bookworm
// until the trixie guest passes every tier (issue 33).
inline constexpr std::string_view kDefaultGuestSuite = "bookworm";

// nullptr for an unknown name.
const GuestSuiteDef* find_guest_suite(std::string_view name);
std::vector<std::string_view> guest_suite_names();

// One guest image: a suite and a variant (ds::image_variant_for_kind: ""
// the base image, "mariadb" ...).
struct ImageChoice {
    std::string suite{kDefaultGuestSuite};
    std::string variant;
    auto operator<=>(const ImageChoice&) const = default;
};

// The image's directory relative to the image dir: "", "mariadb",
// "trixie", "trixie/mariadb". An unknown suite is taken as its own name.
std::string image_subdir(const ImageChoice& image);
// "guest image (bookworm)", "guest image variant 'mariadb' (trixie)".
std::string describe_image(const ImageChoice& image);
// The command that builds the image (with the suite's other variants) into
// `image_dir`, the daemon's image dir: the suites' and variants' parent.
std::string image_build_command(const ImageChoice& image, std::string_view image_dir);

}  // namespace ds
