// The report tier (ctest label report): the HTML report of a realistic
// sweep, stored through the Store API (tests/support/report_fixture.h), as
// a real browser shows it. Headless Chromium (Debian's `chromium`, through
// scripts/report-screenshot.sh, the same flags the docs' images use) must
// draw it (a screenshot of the right size, not blank, with the charts'
// colours in it) and build every SVG element of it into its DOM. Skips when
// chromium is not installed (scripts/install-deps.sh installs it). With
// DISKSWEEP_TEST_KEEP=DIR the page and its screenshot are copied to DIR, to
// look at.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "common/process.h"
#include "daemon/report/html_report.h"
#include "daemon/report/report_view.h"
#include "png_image.h"
#include "support/report_fixture.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "support/xml_check.h"

namespace ds {
namespace {

using test::TempDir;

constexpr int kWidth = 1280;
constexpr int kHeight = 4000;

bool on_path(const std::string& program) {
    const char* path = std::getenv("PATH");
    std::istringstream directories(path ? path : "");
    for (std::string directory; std::getline(directories, directory, ':');)
        if (::access((directory + "/" + program).c_str(), X_OK) == 0) return true;
    return false;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream content;
    content << in.rdbuf();
    return content.str();
}

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t found = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        ++found;
    return found;
}

// The report of the fixture sweep, written to `path`.
std::string write_fixture_report(const TempDir& dir, const std::string& path) {
    auto store = Store::open(dir.file("results.db"));
    REQUIRE(store.ok());
    const std::int64_t id = test::store_report_fixture(*store.value());
    auto page = report::render_sweep_report(*store.value(), id);
    REQUIRE(page.ok());
    std::ofstream(path, std::ios::binary) << page.value();
    return page.value();
}

ProcessOutput run_screenshot_script(const std::vector<std::string>& arguments) {
    std::vector<std::string> argv = {DISKSWEEP_SOURCE_DIR "/scripts/report-screenshot.sh"};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    RealProcessRunner runner;
    auto output = runner.run(argv, std::chrono::minutes(3));
    REQUIRE(output.ok());
    INFO(output->stderr_text);
    REQUIRE(output->exit_code == 0);
    return output.value();
}

void keep_for_a_look(const TempDir& dir, const std::vector<std::string>& names) {
    const char* keep = std::getenv("DISKSWEEP_TEST_KEEP");
    if (keep == nullptr || *keep == '\0') return;
    for (const std::string& name : names)
        std::filesystem::copy_file(dir.path() / name, std::filesystem::path(keep) / name,
                                   std::filesystem::copy_options::overwrite_existing);
}

std::uint32_t rgb(const std::string& hex) {
    return static_cast<std::uint32_t>(std::stoul(hex.substr(1), nullptr, 16));
}

TEST_CASE("headless Chromium draws the report of a realistic sweep", "[report][chromium]") {
    if (!on_path("chromium"))
        test::skip_test("chromium is not installed (scripts/install-deps.sh installs it)");
    TempDir dir("disksweep-report");
    const std::string html = write_fixture_report(dir, dir.file("report.html"));
    const auto charts = test::svg_fragments(html);
    CHECK(charts.size() >= 7);  // mean, ratio, 2 latency, 2 throughput, heat map
    for (const std::string& chart : charts) CHECK(test::xml_problem(chart) == "");

    run_screenshot_script({dir.file("report.html"), dir.file("report.png"),
                           std::to_string(kWidth) + "," + std::to_string(kHeight)});
    keep_for_a_look(dir, {"report.html", "report.png"});
    auto image = test::decode_png(read_file(dir.file("report.png")));
    INFO((image.ok() ? "" : image.error().message));
    REQUIRE(image.ok());
    CHECK(image->width == kWidth);
    CHECK(image->height == kHeight);
    const std::set<std::uint32_t> colours(image->pixels.begin(), image->pixels.end());
    CHECK(colours.size() > 200);  // text, bars, lines, the heat map's ramp
    const auto inked = std::count_if(image->pixels.begin(), image->pixels.end(),
                                     [](std::uint32_t pixel) { return pixel != 0xFFFFFF; });
    CHECK(inked > static_cast<long>(image->pixels.size() / 50));
    // The bars' fills, exactly: the baseline's and a faster configuration's.
    for (const char* verdict : {"baseline", "faster"}) {
        INFO(verdict);
        CHECK(colours.count(rgb(report::verdict_style(verdict).colour)) == 1);
    }
}

TEST_CASE("headless Chromium builds every SVG element of the report into its DOM",
          "[report][chromium]") {
    if (!on_path("chromium"))
        test::skip_test("chromium is not installed (scripts/install-deps.sh installs it)");
    TempDir dir("disksweep-report");
    const std::string html = write_fixture_report(dir, dir.file("report.html"));
    const std::string dom =
        run_screenshot_script({"--dump-dom", dir.file("report.html")}).stdout_text;
    // Parsed as SVG, not as text: the elements are there, each as often as
    // the page has it (the serialised DOM writes empty elements with an end tag).
    for (const char* element : {"<svg ", "<rect ", "<polyline ", "<line ", "<text "}) {
        INFO(element);
        CHECK(count(dom, element) == count(html, element));
        CHECK(count(dom, element) > 0);
    }
    CHECK(count(dom, "class=\"bar\"") == count(html, "class=\"bar\""));
    CHECK(dom.find("<section id=\"environment\">") != std::string::npos);
}

}  // namespace
}  // namespace ds
