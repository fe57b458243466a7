// The daemon's folders are layers (issue 35): a file may include its own
// folder's headers and those of the folders below it, never one above, so a
// newcomer following a sweep from the API down never climbs back up. The
// order is the data below; the test reads every #include line of common/ and
// daemon/ and names each one that climbs.
#include <catch2/catch.hpp>
#include <filesystem>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "unit/doc_tables.h"

namespace ds {
namespace {

namespace fs = std::filesystem;

// The layers, lowest first, as folders from the repository's root. A file
// belongs to the longest folder that holds it: daemon/backends/storage/rbd/
// is daemon/backends/, daemon/daemon.cpp is daemon/.
constexpr std::string_view kLayers[] = {
    "common/",        // what the daemon, the agent and hostctl share
    "daemon/model/",  // the value types below spec/ and store/, and the statistics on them
    // The write log and its crash states: plain files and their own library
    // (disksweep_durability links only disksweep_common); the libvirt
    // backend puts a run's disk on that log (write_log_disk.cpp).
    "daemon/durability/",
    // The backends as data: spec/ checks a spec's names against registry.h.
    "daemon/backends/", "daemon/spec/", "daemon/store/", "daemon/plan/", "daemon/run/",
    "daemon/compare/",  // reads plans (the baseline) and runs (golden volumes)
    "daemon/report/", "daemon/apply/",
    "daemon/schedule/",  // settles adaptive rounds from compare/
    "daemon/api/",
    "daemon/",  // the process: main, config, start-up, recovery
};

// Inclusions that climb and are left as they are for now, each with the
// reason: {"daemon/x/file.h", "daemon/y/other.h"} beside a comment. None.
struct AllowedClimb {
    std::string_view file;
    std::string_view included;
};
const std::vector<AllowedClimb> kAllowedClimbs = {};

// The index in kLayers of the folder that holds `path`, if one does.
std::optional<std::size_t> layer_of(std::string_view path) {
    std::optional<std::size_t> layer;
    for (std::size_t i = 0; i < std::size(kLayers); ++i) {
        const bool holds = path.starts_with(kLayers[i]);
        if (holds && (!layer || kLayers[i].size() > kLayers[*layer].size())) layer = i;
    }
    return layer;
}

// The quoted #include paths of a file's text, in order.
std::vector<std::string> included_paths(const std::string& text) {
    static const std::regex kInclude(R"re(^\s*#\s*include\s*"([^"]+)")re");
    std::vector<std::string> paths;
    std::istringstream lines(text);
    std::string line;
    std::smatch match;
    while (std::getline(lines, line)) {
        if (std::regex_search(line, match, kInclude)) paths.push_back(match[1]);
    }
    return paths;
}

bool allowed(const std::string& file, const std::string& included) {
    for (const AllowedClimb& climb : kAllowedClimbs) {
        if (climb.file == file && climb.included == included) return true;
    }
    return false;
}

// The sources and headers below `folder`, as paths from the repository's root.
std::vector<std::string> sources_below(const std::string& folder) {
    std::vector<std::string> files;
    const fs::path root = test::repository_root();
    for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
        const std::string extension = entry.path().extension().string();
        if (entry.is_regular_file() && (extension == ".h" || extension == ".cpp"))
            files.push_back(fs::relative(entry.path(), root).generic_string());
    }
    return files;
}

// "FILE includes INCLUDED (FILE's layer < INCLUDED's)" for each climb.
std::set<std::string> climbs() {
    std::set<std::string> found;
    for (const char* folder : {"common/", "daemon/"}) {
        for (const std::string& file : sources_below(folder)) {
            const auto own = layer_of(file);
            for (const std::string& included : included_paths(test::repository_text(file))) {
                const auto other = layer_of(included);
                if (!own || !other || *other <= *own || allowed(file, included)) continue;
                found.insert(file + " includes " + included + " (" + std::string(kLayers[*own]) +
                             " is below " + std::string(kLayers[*other]) + ")");
            }
        }
    }
    return found;
}

TEST_CASE("no folder of the daemon includes one above it", "[layering]") {
    REQUIRE(sources_below("daemon/").size() > 100);
    // Catch prints the set, so a failure names every climbing #include.
    CHECK(climbs() == std::set<std::string>{});
}

TEST_CASE("every folder of daemon/ has its place among the layers", "[layering]") {
    std::set<std::string> without_place;
    for (const auto& entry : fs::directory_iterator(test::repository_root() / "daemon")) {
        const std::string folder = "daemon/" + entry.path().filename().string() + "/";
        if (entry.is_directory() && layer_of(folder) == layer_of("daemon/"))
            without_place.insert(folder);
    }
    CHECK(without_place == std::set<std::string>{});
}

TEST_CASE("the layering check sees a climb", "[layering]") {
    CHECK(*layer_of("daemon/store/store.h") < *layer_of("daemon/compare/comparison.h"));
    CHECK(*layer_of("daemon/backends/storage/rbd/rbd_storage.cpp") ==
          *layer_of("daemon/backends/registry.h"));
    CHECK(included_paths("#include <x>\n#include \"daemon/a/b.h\"\n  # include \"c.h\"\n") ==
          std::vector<std::string>{"daemon/a/b.h", "c.h"});
}

// The store decodes a run's configuration and workload once, when it reads
// the run (RunRecord holds StorageConfig and Workload); no code of the daemon
// above it decodes them again. The decoders, and the calls left elsewhere,
// each with the reason, are the data.
constexpr std::string_view kRecordDecoders[] = {"storage_config_from_json(", "workload_from_json("};
struct AllowedDecode {
    std::string_view file;
    std::string_view decoder;
};
const std::vector<AllowedDecode> kAllowedDecodes = {
    // A configuration as Store::get_configuration answers it (the
    // configurations table, not a run); the row then says "settings_error"
    // when it no longer decodes.
    {"daemon/compare/compare.cpp", "storage_config_from_json("},
    {"daemon/apply/configuration_apply.cpp", "storage_config_from_json("},
};

bool allowed_decode(const std::string& file, std::string_view decoder) {
    for (const AllowedDecode& decode : kAllowedDecodes) {
        if (decode.file == file && decode.decoder == decoder) return true;
    }
    return false;
}

TEST_CASE("only the store decodes a run's configuration and workload", "[layering]") {
    std::set<std::string> decodes;
    for (const std::string& file : sources_below("daemon/")) {
        if (layer_of(file) == layer_of("daemon/store/")) continue;
        const std::string text = test::repository_text(file);
        for (std::string_view decoder : kRecordDecoders) {
            if (text.find(decoder) != std::string::npos && !allowed_decode(file, decoder))
                decodes.insert(file + " calls " + std::string(decoder) + ")");
        }
    }
    CHECK(decodes == std::set<std::string>{});
}

}  // namespace
}  // namespace ds
