// The HTML report of a sweep stored through the Store API: every section,
// every configuration, the risks and the environment are there; every chart
// is well-formed XML; nothing is fetched or run; odd sweeps (nothing
// finished, one run, a failed round) still render.
#include <catch2/catch.hpp>
#include <string>

#include "daemon/api/api.h"
#include "daemon/report/html_report.h"
#include "support/report_fixture.h"
#include "support/temp_dir.h"
#include "support/xml_check.h"

namespace ds::report {
namespace {

using test::ReportFixtureOptions;
using test::TempDir;

struct Rendered {
    std::string html;
    ReportData data;
};

Rendered render_fixture(const ReportFixtureOptions& options = {}) {
    TempDir dir;
    auto store = Store::open(dir.file("results.db"));
    REQUIRE(store.ok());
    const std::int64_t id = test::store_report_fixture(*store.value(), options);
    auto data = gather_report_data(*store.value(), id);
    REQUIRE(data.ok());
    auto page = render_sweep_report(*store.value(), id);
    REQUIRE(page.ok());
    CHECK(page.value() == render_report_html(data.value()));
    return {page.value(), data.value()};
}

// The text of the <section id="ID"> ... </section>.
std::string section(const std::string& html, const std::string& id) {
    const std::size_t start = html.find("<section id=\"" + id + "\"");
    if (start == std::string::npos) return "";
    return html.substr(start, html.find("</section>", start) - start);
}

void check_well_formed_charts(const std::string& html) {
    for (const std::string& svg : test::svg_fragments(html)) {
        INFO(svg.substr(0, 200));
        CHECK(test::xml_problem(svg) == "");
    }
}

// No script, and no address anything could be fetched from: the only URL
// is the SVG namespace name, which nothing fetches.
void check_self_contained(const std::string& html) {
    CHECK(html.find("<script") == std::string::npos);
    CHECK(html.find("@import") == std::string::npos);
    CHECK(html.find("@font-face") == std::string::npos);
    CHECK(html.find("url(") == std::string::npos);
    std::string rest = html;
    const std::string svg_namespace = "xmlns=\"http://www.w3.org/2000/svg\"";
    for (std::size_t at; (at = rest.find(svg_namespace)) != std::string::npos;)
        rest.erase(at, svg_namespace.size());
    CHECK(rest.find("http://") == std::string::npos);
    CHECK(rest.find("https://") == std::string::npos);
    CHECK(rest.find("href") == std::string::npos);
    CHECK(rest.find("src=") == std::string::npos);
}

TEST_CASE("the report of a sweep holds every section, in order", "[report][html]") {
    const Rendered report = render_fixture();
    const std::string& html = report.html;
    CHECK(html.rfind("<!DOCTYPE html>\n<html lang=\"en\">", 0) == 0);
    std::size_t previous = html.find("<header>");
    REQUIRE(previous != std::string::npos);
    for (const char* id : {"verdicts", "primary", "latency", "throughput", "cpu", "heatmap",
                           "settings", "risks", "environment"}) {
        INFO(id);
        const std::size_t at = html.find(std::string("<section id=\"") + id + "\"");
        CHECK(at != std::string::npos);
        CHECK(at > previous);
        previous = at;
    }
    check_well_formed_charts(html);
    check_self_contained(html);
}

TEST_CASE("the report shows each configuration's CPU per I/O by thread role", "[report][html]") {
    // Without CPU figures the section says why.
    CHECK(section(render_fixture().html, "cpu").find("No CPU figures") != std::string::npos);

    ReportFixtureOptions options;
    // Faster configurations cost less per I/O; cache=unsafe skips the IO thread.
    options.extra_metrics = [](const RunRecord& run, double speed) {
        const bool unsafe = run.config.cache == CacheMode::kUnsafe;
        std::map<std::string, double> metrics = {{"host_vcpu_cpu_us_per_io", 400 / speed},
                                                 {"host_iothread_cpu_us_per_io", unsafe ? 0 : 30},
                                                 {"host_main_loop_cpu_us_per_io", unsafe ? 25 : 5},
                                                 {"host_other_cpu_us_per_io", 1},
                                                 {"guest_cpu_us_per_io", 120}};
        metrics["host_cpu_us_per_io"] = 400 / speed + 36;
        if (run.sequence == 1) metrics.erase("guest_cpu_us_per_io");  // an older agent's run
        return metrics;
    };
    const std::string cpu = section(render_fixture(options).html, "cpu");
    CHECK(cpu.find("No CPU figures") == std::string::npos);
    for (const char* heading :
         {"vCPU threads", "IO threads", "main loop", "other threads", "QEMU total", "guest"}) {
        INFO(heading);
        CHECK(cpu.find(std::string(">") + heading + "<") != std::string::npos);
    }
    // The baseline (none · ext4, speed ~1): its medians, IO thread 30 µs.
    CHECK(cpu.find(">none · ext4</td><td class=\"num\">") != std::string::npos);
    CHECK(cpu.find(">30.0<") != std::string::npos);
    CHECK(cpu.find(">25.0<") != std::string::npos);
    CHECK(cpu.find("<svg") != std::string::npos);
    check_well_formed_charts(cpu);
}

TEST_CASE("the report names the sweep and shows every configuration", "[report][html]") {
    const Rendered report = render_fixture();
    const std::string& html = report.html;
    CHECK(html.find("<h1>Sweep " + std::to_string(report.data.sweep.id) +
                    ": report-fixture</h1>") != std::string::npos);
    // The spec is shown as text, its markup escaped.
    CHECK(html.find("Markup in the spec is text: &lt;script&gt;alert(\"x\")&lt;/script&gt; "
                    "&amp; co") != std::string::npos);
    CHECK(html.find("18: 18 succeeded") != std::string::npos);
    CHECK(html.find("cache=none filesystem=ext4 (the first configuration)") != std::string::npos);
    const std::string verdicts = section(html, "verdicts");
    const std::string primary = section(html, "primary");
    const std::string heat = section(html, "heatmap");
    for (const char* label : {"none · ext4", "none · btrfs", "none · btrfs:nodatacow",
                              "unsafe · ext4", "unsafe · btrfs", "unsafe · btrfs:nodatacow"}) {
        INFO(label);
        CHECK(primary.find(std::string(">") + label + "<") != std::string::npos);
        CHECK(heat.find(std::string(">") + label + "<") != std::string::npos);
    }
    // A header and six rows in the verdict table: the baseline and five verdicts.
    std::size_t rows = 0;
    for (std::size_t at = verdicts.find("<tr>"); at != std::string::npos;
         at = verdicts.find("<tr>", at + 1))
        ++rows;
    CHECK(rows == 7);
    CHECK(verdicts.find(">baseline<") != std::string::npos);
    CHECK(verdicts.find(">faster<") != std::string::npos);
    // Two bar charts (mean, ratio) with a bar per configuration.
    const auto charts = test::svg_fragments(primary);
    REQUIRE(charts.size() == 2);
    CHECK(test::xml_elements(charts[0], "rect", "bar").size() == 6);
    CHECK(test::xml_elements(charts[1], "line", "reference").size() == 1);
}

TEST_CASE("the report's charts show percentiles, throughput and the heat map", "[report][html]") {
    const Rendered report = render_fixture();
    const std::string latency = section(report.html, "latency");
    CHECK(latency.find("read completion latency percentiles") != std::string::npos);
    CHECK(latency.find("write completion latency percentiles") != std::string::npos);
    CHECK(latency.find(">p50<") != std::string::npos);
    CHECK(latency.find(">p99.9<") != std::string::npos);
    const std::string throughput = section(report.html, "throughput");
    const auto lines =
        test::xml_elements(test::svg_fragments(throughput).at(0), "polyline", "series");
    CHECK(lines.size() == 6);  // one per configuration
    const std::string heat = section(report.html, "heatmap");
    const auto cells = test::xml_elements(test::svg_fragments(heat).at(0), "rect", "cell");
    CHECK(cells.size() % 6 == 0);
    CHECK(cells.size() >= 6 * 4);  // every configuration × at least iops, bw, latency
}

TEST_CASE("the report lists the risks, the settings read back and the environment",
          "[report][html]") {
    const Rendered report = render_fixture();
    const std::string risks = section(report.html, "risks");
    CHECK(risks.find("<dt>cache=unsafe</dt>") != std::string::npos);
    CHECK(risks.find("power cut") != std::string::npos);
    CHECK(risks.find("unsafe · btrfs") != std::string::npos);
    CHECK(risks.find("none · ext4") == std::string::npos);  // a safe configuration
    const std::string settings = section(report.html, "settings");
    CHECK(settings.find("hypervisor.cache") != std::string::npos);  // differs
    CHECK(settings.find("guest.fs_type") != std::string::npos);     // differs
    CHECK(settings.find("guest.driver") != std::string::npos);      // the same everywhere
    CHECK(settings.find(">3 of 3 (run ") != std::string::npos);     // verified runs
    CHECK(settings.find("sources") == std::string::npos);           // where it was read: left out
    const std::string environment = section(report.html, "environment");
    for (const char* fact : {">kvm<", ">local<", ">7.2.0<", ">9.0.0<", ">6.1.0-28-amd64<",
                             "fio-3.33 (18 runs)", "agent_version"}) {
        INFO(fact);
        CHECK(environment.find(fact) != std::string::npos);
    }
}

TEST_CASE("the report lists what its runs did not check, as not-checked lines",
          "[report][html][not_checked]") {
    const std::string plain = section(render_fixture().html, "settings");
    CHECK(plain.find("Not checked") == std::string::npos);
    ReportFixtureOptions options;
    options.verification = [](const RunRecord& run) {
        if (run.config.cache != CacheMode::kUnsafe) return Json();
        return Json{{"policy", "fail-unless-forbidden"},
                    {"not_checked",
                     {{{"level", "QEMU process"},
                       {"reason", "QEMU runs on the remote host: its process is out of reach"},
                       {"forbidden", true},
                       {"fails_run", false}}}}};
    };
    const std::string settings = section(render_fixture(options).html, "settings");
    INFO(settings);
    CHECK(settings.find("<h3>Not checked</h3>") != std::string::npos);
    CHECK(settings.find("QEMU process: not checked: QEMU runs on the remote host: its process "
                        "is out of reach (not allowed by the host) (3 runs)") != std::string::npos);
    CHECK(settings.find("unsafe · btrfs") != std::string::npos);
    // The record is not a column of the readback table (its keys would
    // head one: "verification.policy", "verification.not_checked").
    CHECK(settings.find("verification.policy") == std::string::npos);
    CHECK(settings.find("fails_run") == std::string::npos);
}

TEST_CASE("the report renders a sweep in which nothing has finished", "[report][html]") {
    ReportFixtureOptions options;
    options.finished_runs = 0;
    const Rendered report = render_fixture(options);
    CHECK(report.html.find("18: 18 pending") != std::string::npos);
    CHECK(section(report.html, "throughput").find("No per-second samples") != std::string::npos);
    CHECK(section(report.html, "settings").find("Nothing read back yet") != std::string::npos);
    CHECK(section(report.html, "environment").find("Nothing recorded yet") != std::string::npos);
    // Every configuration is still listed, without a value.
    CHECK(test::xml_elements(test::svg_fragments(section(report.html, "primary")).at(0), "rect",
                             "bar")
              .empty());
    CHECK(section(report.html, "primary").find("no succeeded run") != std::string::npos);
    check_well_formed_charts(report.html);
    check_self_contained(report.html);
}

TEST_CASE("the report renders a sweep of a single run", "[report][html]") {
    ReportFixtureOptions options;
    options.spec = R"(name = "one"
[[workload]]
kind = "fio"
name = "randread"
rw = "randread"
)";
    const Rendered report = render_fixture(options);
    CHECK(report.html.find("1: 1 succeeded") != std::string::npos);
    CHECK(report.html.find("No configuration of this sweep trades durability") !=
          std::string::npos);
    const auto charts = test::svg_fragments(section(report.html, "primary"));
    REQUIRE(charts.size() == 2);
    CHECK(test::xml_elements(charts[0], "line", "whisker").empty());  // one run: no interval
    check_well_formed_charts(report.html);
}

TEST_CASE("the report renders a sweep whose round failed, naming the failures", "[report][html]") {
    ReportFixtureOptions options;
    // The whole second round failed, and one configuration never recorded samples.
    options.fails = [](const RunRecord& run) { return run.repetition == 1; };
    options.has_samples = [](const RunRecord& run) {
        return run.config.cache != CacheMode::kUnsafe ||
               filesystem_shorthand(run.config.filesystem) != "ext4";
    };
    const Rendered report = render_fixture(options);
    CHECK(report.data.failures_total == 6);
    CHECK(report.html.find("Runs without a result: 6") != std::string::npos);
    CHECK(report.html.find("agent did not connect within 60 s &lt;guest&gt; &amp; co") !=
          std::string::npos);
    CHECK(report.html.find("boot log") == std::string::npos);  // only the first line
    CHECK(report.html.find("unsafe · ext4 (no per-second samples)") != std::string::npos);
    check_well_formed_charts(report.html);
    check_self_contained(report.html);
}

TEST_CASE("the report of a test-ATIS sweep compares elapsed times", "[report][html]") {
    ReportFixtureOptions options;
    options.spec = R"(name = "atis"
repetitions = 2
[matrix]
cache = "unsafe"
filesystem = ["ext4", "btrfs"]
[[workload]]
name = "defaults"
kind = "mariadb-atis"
[[workload]]
name = "dw0-nosync"
kind = "mariadb-atis"
server = { innodb_doublewrite = 0, innodb_flush_method = "nosync" }
)";
    options.output = [](const RunRecord&, double speed) {
        return test::fixture_atis_output(speed);
    };
    const Rendered report = render_fixture(options);
    const std::string& html = report.html;
    CHECK(html.find("total_s (lower is better)") != std::string::npos);
    CHECK(section(html, "latency").find("No run of this sweep reported latency percentiles") !=
          std::string::npos);
    CHECK(section(html, "throughput").find("No per-second samples") != std::string::npos);
    // The workloads name the rows; their server variables are in the table
    // and the header, and the unsafe ones are risks.
    CHECK(section(html, "primary").find(">btrfs · dw0-nosync<") != std::string::npos);
    CHECK(section(html, "verdicts").find(">innodb_doublewrite=0 innodb_flush_method=nosync<") !=
          std::string::npos);
    const std::string risks = section(html, "risks");
    CHECK(risks.find("<dt>innodb_flush_method=nosync</dt>") != std::string::npos);
    CHECK(risks.find("<dt>innodb_doublewrite=0</dt>") != std::string::npos);
    const auto heat = test::svg_fragments(section(html, "heatmap"));
    REQUIRE(heat.size() == 1);
    CHECK(heat[0].find(">total_s<") != std::string::npos);
    check_well_formed_charts(html);
    check_self_contained(html);
}

TEST_CASE("the report is the same bytes for the same data", "[report][html]") {
    const Rendered report = render_fixture();
    CHECK(render_report_html(report.data) == report.html);
}

http::Response get(const http::Handler& handler, const std::string& path) {
    http::Request request;
    request.method = "GET";
    request.path = path;
    request.target = path;
    return handler(request);
}

TEST_CASE("GET /v1/sweeps/ID/report answers the page as HTML, errors as JSON",
          "[report][html][api]") {
    TempDir dir;
    auto store = Store::open(dir.file("results.db"));
    REQUIRE(store.ok());
    const std::int64_t id = test::store_report_fixture(*store.value());
    ApiContext context;
    context.store = store->get();
    const http::Handler handler = make_api_handler(context);

    const http::Response page = get(handler, "/v1/sweeps/" + std::to_string(id) + "/report");
    CHECK(page.status == 200);
    CHECK(page.content_type == "text/html; charset=utf-8");
    CHECK(page.body == render_sweep_report(*store.value(), id).value());

    const http::Response unknown = get(handler, "/v1/sweeps/999/report");
    CHECK(unknown.status == 404);
    CHECK(unknown.content_type == "application/json");
    CHECK(Json::parse(unknown.body).at("error").at("code") == "not_found");
    CHECK(get(handler, "/v1/sweeps/x/report").status == 400);
}

}  // namespace
}  // namespace ds::report
