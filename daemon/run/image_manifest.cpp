#include "daemon/run/image_manifest.h"

#include <array>
#include <fstream>
#include <sstream>

#include "common/json_fields.h"

namespace ds {
namespace {

// How each tool a guest reports is found in the manifest and compared. One
// row per tool; the manifest check knows nothing else.
struct ToolRule {
    std::string_view tool;     // GuestReport key
    std::string_view package;  // the manifest's package ("" = a field of its own)
    // The part of the guest's report that must equal the manifest's value
    // (upstream_version of the package, or the field as written).
    std::string (*reported_version)(std::string_view reported);
};

std::string as_written(std::string_view reported) {
    return std::string(reported);
}

// "fio-3.39" -> "3.39".
std::string fio_version(std::string_view reported) {
    if (reported.starts_with("fio-")) reported.remove_prefix(4);
    return std::string(reported);
}

// "11.8.3-MariaDB-0+deb13u1 from Debian" -> "11.8.3".
std::string mariadb_version(std::string_view reported) {
    return std::string(reported.substr(0, reported.find('-')));
}

// "15.20 (Debian 15.20-0+deb12u1)" -> "15": Debian's `postgresql`, which the
// manifest lists, pins the major version only.
std::string postgresql_major(std::string_view reported) {
    return std::string(reported.substr(0, reported.find('.')));
}

constexpr std::array kToolRules = {
    ToolRule{"os", "", as_written},
    ToolRule{"kernel", "", as_written},
    ToolRule{"fio", "fio", fio_version},
    ToolRule{"mariadb", "mariadb-server", mariadb_version},
    ToolRule{"postgresql", "postgresql", postgresql_major},
};

// The manifest's value for `rule`, "" when it records none.
std::string expected_of(const ImageManifest& manifest, const ToolRule& rule) {
    if (rule.tool == "os") return manifest.os_version_id;
    if (rule.tool == "kernel") return manifest.kernel_release;
    const auto found = manifest.packages.find(std::string(rule.package));
    return found == manifest.packages.end() ? "" : found->second;
}

std::string compared_expected(const ToolRule& rule, const std::string& expected) {
    return rule.package.empty() ? expected : upstream_version(expected);
}

std::string string_at(const Json& object, const char* key) {
    const auto found = object.find(key);
    return found != object.end() && found->is_string() ? found->get<std::string>() : "";
}

}  // namespace

std::string upstream_version(std::string_view debian_version) {
    if (const auto colon = debian_version.find(':'); colon != std::string_view::npos)
        debian_version.remove_prefix(colon + 1);
    if (const auto dash = debian_version.rfind('-'); dash != std::string_view::npos)
        debian_version = debian_version.substr(0, dash);
    const auto suffix = debian_version.find_first_of("+~");
    return std::string(debian_version.substr(0, suffix));
}

Result<ImageManifest> parse_image_manifest(std::string_view text, const std::string& path) {
    Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded() || !json.is_object()) {
        return make_error(errc::kInvalidArgument,
                          "guest image manifest " + path + " is not a JSON object");
    }
    ImageManifest manifest;
    manifest.path = path;
    manifest.suite = string_at(json, "suite");
    if (const auto os = json.find("os_release"); os != json.end() && os->is_object())
        manifest.os_version_id = string_at(*os, "version_id");
    if (const auto kernel = json.find("kernel"); kernel != json.end() && kernel->is_object())
        manifest.kernel_release = string_at(*kernel, "release");
    if (manifest.kernel_release.empty()) {
        return make_error(errc::kInvalidArgument,
                          "guest image manifest " + path + " has no kernel.release");
    }
    if (const auto packages = json.find("packages");
        packages != json.end() && packages->is_object()) {
        for (const auto& [name, version] : packages->items()) {
            if (version.is_string()) manifest.packages[name] = version.get<std::string>();
        }
    }
    return manifest;
}

Result<ImageManifest> read_image_manifest(const std::string& path) {
    std::ifstream in(path);
    if (!in) {
        return make_error(errc::kUnavailable, "cannot read guest image manifest " + path);
    }
    std::ostringstream text;
    text << in.rdbuf();
    return parse_image_manifest(text.str(), path);
}

std::vector<std::string> manifest_mismatches(const ImageManifest& manifest,
                                             const GuestReport& report) {
    std::vector<std::string> mismatches;
    for (const ToolRule& rule : kToolRules) {
        const auto reported = report.find(std::string(rule.tool));
        const std::string expected = expected_of(manifest, rule);
        if (reported == report.end() || expected.empty()) continue;
        if (rule.reported_version(reported->second) == compared_expected(rule, expected)) continue;
        mismatches.push_back(std::string(rule.tool) + ": the guest runs " +
                             (reported->second.empty() ? "none" : reported->second) +
                             ", its image's manifest (" + manifest.path + ") says " + expected);
    }
    return mismatches;
}

std::vector<std::string> manifest_unchecked(const ImageManifest& manifest,
                                            const GuestReport& report) {
    std::vector<std::string> unchecked;
    for (const ToolRule& rule : kToolRules) {
        if (report.contains(std::string(rule.tool)) && expected_of(manifest, rule).empty())
            unchecked.emplace_back(rule.tool);
    }
    return unchecked;
}

}  // namespace ds
