#include "common/guest_suite.h"

namespace ds {

const GuestSuiteDef* find_guest_suite(std::string_view name) {
    for (const GuestSuiteDef& suite : kGuestSuites) {
        if (suite.name == name) return &suite;
    }
    return nullptr;
}

std::vector<std::string_view> guest_suite_names() {
    std::vector<std::string_view> names;
    for (const GuestSuiteDef& suite : kGuestSuites) names.push_back(suite.name);
    return names;
}

std::string image_subdir(const ImageChoice& image) {
    const GuestSuiteDef* suite = find_guest_suite(image.suite);
    std::string dir(suite != nullptr ? suite->image_subdir : std::string_view(image.suite));
    if (image.variant.empty()) return dir;
    return dir.empty() ? image.variant : dir + "/" + image.variant;
}

std::string describe_image(const ImageChoice& image) {
    const std::string what =
        image.variant.empty() ? "guest image" : "guest image variant '" + image.variant + "'";
    return what + " (" + image.suite + ")";
}

std::string image_build_command(const ImageChoice& image, std::string_view image_dir) {
    std::string command = "scripts/build-guest-image.sh";
    if (image.suite != kDefaultGuestSuite) command += " --suite " + image.suite;
    return command + " " + std::string(image_dir);
}

}  // namespace ds
