#include "daemon/report/html_report.h"

#include <algorithm>
#include <set>

#include "common/text.h"
#include "common/verification_text.h"
#include "common/workload_kind.h"
#include "daemon/report/report_view.h"
#include "daemon/spec/spec.h"

namespace ds::report {

using svg::Element;
using namespace json_read;

namespace {

// ---------------------------------------------------------------------------
// The page

constexpr std::string_view kStyle = R"css(
body { font-family: sans-serif; color: #1a1a1a; line-height: 1.45; max-width: 1000px;
       margin: 24px auto; padding: 0 16px; }
h1 { font-size: 1.6em; margin: 0 0 4px; }
h2 { font-size: 1.25em; border-bottom: 1px solid #cccccc; padding-bottom: 4px; margin-top: 2em; }
h3 { font-size: 1.05em; margin-bottom: 4px; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 0.88em; }
th, td { border-bottom: 1px solid #e2e2e2; padding: 3px 10px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.facts th { background: none; font-weight: normal; color: #555555; white-space: nowrap; }
.note { color: #555555; font-size: 0.9em; }
.wide { overflow-x: auto; }
.chart { overflow-x: auto; margin: 8px 0 20px; }
.chart svg { max-width: 100%; height: auto; display: block; }
.verdict { font-weight: bold; white-space: nowrap; }
.better { color: #2e7d32; } .worse { color: #c62828; } .same { color: #5f6f7a; }
.unknown { color: #8a8a8a; } .baseline { color: #37474f; }
.risk { color: #b00020; font-weight: bold; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; font-size: 0.85em; }
dt { font-weight: bold; } dd { margin: 0 0 8px 16px; }
.model-switch > label { margin-right: 16px; font-size: 0.9em; }
.model-switch > .show-writeback:checked ~ .model-worst,
.model-switch > .show-worst:checked ~ .model-writeback { display: none; }
@media print {
  body { max-width: none; margin: 0; }
  .chart, .wide { overflow: visible; }
  .chart svg, table { break-inside: avoid; }
  h2, h3 { break-after: avoid; }
}
)css";

Element page_head(const ReportData& data) {
    const std::string title =
        "disksweep report: sweep " + std::to_string(data.sweep.id) + " \"" + data.sweep.name + "\"";
    Element head = html_element("head");
    head.add(Element("meta").set("charset", "utf-8"));
    head.add(Element("meta").set("name", "viewport").set("content", "width=device-width"));
    head.add(Element("meta").set("name", "generator").set("content", data.generator));
    head.add(html_text("title", title));
    head.add(html_text("style", kStyle));
    return head;
}

// ---------------------------------------------------------------------------
// Header: the sweep, its spec, its runs

std::string runs_summary(const std::map<std::string, int>& counts) {
    int total = 0;
    std::vector<std::string> parts;
    for (std::string_view status : all_run_statuses()) {
        auto found = counts.find(std::string(status));
        const int count = found == counts.end() ? 0 : found->second;
        total += count;
        if (count > 0) parts.push_back(std::to_string(count) + " " + std::string(status));
    }
    return std::to_string(total) + (parts.empty() ? "" : ": " + join(parts, ", "));
}

// "rw=randrw bs=4k server.innodb_flush_method=nosync": a workload's parameters.
std::string parameters_text(const Json& params, const std::string& prefix = "") {
    std::vector<std::string> parts;
    if (!params.is_object()) return "";
    for (const auto& [key, value] : params.items()) {
        if (value.is_object()) {
            parts.push_back(parameters_text(value, prefix + key + "."));
        } else {
            parts.push_back(prefix + key + "=" + format_setting_value(value));
        }
    }
    return join(parts, " ");
}

std::string repetitions_text(const ReportData& data) {
    const SweepSpec* spec = data.spec.get();
    if (spec == nullptr) return "- (the stored spec no longer parses: " + data.spec_error + ")";
    if (spec->ci_target <= 0) return std::to_string(spec->repetitions);
    return std::to_string(spec->repetitions) + " to " + std::to_string(spec->max_repetitions) +
           ", adding rounds while a 95% CI is wider than ±" +
           format_fixed(spec->ci_target * 100, 1) + "% of its mean";
}

std::string compared_by_text(const ReportView& view) {
    const Json& primary = field(view.compare, "primary_metric");
    const std::string metric = text_field(primary, "name", "");
    const double threshold = number_field(view.compare, "practical_difference").value_or(0.02);
    std::string text = metric.empty() ? "each workload's primary metric"
                                      : metric + (field(primary, "lower_is_better") == true
                                                      ? " (lower is better)"
                                                      : " (higher is better)");
    return text + "; a verdict needs a Holm-adjusted p < 0.05 and a difference of at least " +
           format_fixed(threshold * 100, threshold * 100 < 1 ? 1 : 0) + "%";
}

std::vector<std::vector<std::string>> sweep_facts(const ReportView& view) {
    const ReportData& data = view.data;
    std::set<std::string> configurations;
    for (const auto& row : view.rows) configurations.insert(text_field(row, "config_id"));
    std::vector<std::string> axes = view.columns.axes;
    std::vector<std::vector<std::string>> facts = {
        {"status", to_string(data.sweep.status)},
        {"created, started, finished",
         (data.sweep.created_at.empty() ? "-" : data.sweep.created_at) + ", " +
             (data.sweep.started_at.empty() ? "-" : data.sweep.started_at) + ", " +
             (data.sweep.finished_at.empty() ? "-" : data.sweep.finished_at)},
        {"configurations", std::to_string(configurations.size()) +
                               (axes.empty() ? "" : " (varying: " + join(axes, ", ") + ")")},
    };
    for (const auto& [name, workload] : data.workloads)
        facts.push_back({"workload " + name, text_field(workload, "kind") + " " +
                                                 parameters_text(field(workload, "params"))});
    facts.push_back({"repetitions", repetitions_text(data)});
    facts.push_back({"runs", runs_summary(data.run_counts)});
    const std::string chosen_by = text_field(field(view.compare, "baseline"), "chosen_by", "");
    facts.push_back({"baseline", baseline_settings_text(view.compare) +
                                     (chosen_by == "spec" ? " (chosen in the spec)"
                                                          : " (the first configuration)")});
    facts.push_back({"compared by", compared_by_text(view)});
    return facts;
}

Element facts_table(const std::vector<std::vector<std::string>>& facts) {
    Element table = html_element("table");
    table.set("class", "facts");
    for (const auto& fact : facts)
        table.add(html_element("tr").add(html_text("th", fact[0])).add(html_text("td", fact[1])));
    return table;
}

// The first line of a failure reason, cut to a readable length.
std::string reason_line(const std::string& reason) {
    constexpr std::size_t kMaxReason = 240;
    std::string line = reason.substr(0, reason.find('\n'));
    return line.size() > kMaxReason ? line.substr(0, kMaxReason) + " …" : line;
}

Element failures_part(const ReportView& view) {
    const ReportData& data = view.data;
    Element part = html_element("div");
    part.add(html_text("h3", "Runs without a result: " + std::to_string(data.failures_total)));
    std::vector<std::vector<std::string>> cells;
    for (const FailedRun& run : data.failures) {
        std::string configuration = run.config_id.substr(0, 12);
        for (std::size_t r = 0; r < view.rows.size(); ++r)
            if (text_field(view.rows[r], "config_id") == run.config_id)
                configuration = view.labels[r];
        cells.push_back({std::to_string(run.run_id), configuration, run.workload,
                         to_string(run.status), reason_line(run.reason)});
    }
    part.add(html_element("div")
                 .set("class", "wide")
                 .add(html_table({"run", "configuration", "workload", "status", "reason"}, cells,
                                 {true})));
    if (data.failures_total > static_cast<int>(data.failures.size()))
        part.add(html_paragraph(
            "… and " +
                std::to_string(data.failures_total - static_cast<int>(data.failures.size())) +
                " more (hostctl sweep show " + std::to_string(data.sweep.id) + " lists every run)",
            "note"));
    return part;
}

Element header_section(const ReportView& view) {
    const ReportData& data = view.data;
    Element header = html_element("header");
    header.add(html_text("h1", "Sweep " + std::to_string(data.sweep.id) + ": " + data.sweep.name));
    header.add(
        html_paragraph("disksweep report — which storage configuration is faster, by how "
                       "much, and what the speed costs in safety",
                       "note"));
    header.add(facts_table(sweep_facts(view)));
    if (data.failures_total > 0) header.add(failures_part(view));
    Element spec = html_element("details");
    spec.add(html_text("summary", "The sweep spec as submitted (" + data.sweep.spec_source + ")"));
    spec.add(html_text("pre", data.sweep.spec_toml));
    header.add(std::move(spec));
    return header;
}

// ---------------------------------------------------------------------------
// Verdicts

std::vector<std::string> verdict_header(const ReportView& view, const std::string& metric) {
    std::vector<std::string> header;
    if (view.columns.axes.empty()) header.push_back("config");
    for (const auto& axis : view.columns.axes) header.push_back(axis);
    if (view.columns.workload) header.push_back("workload");
    if (view.columns.options) header.push_back("options");
    header.push_back(metric.empty() ? "mean ± 95% CI" : metric + " (mean ± 95% CI)");
    for (const char* column : {"ratio [95% CI]", "verdict"}) header.push_back(column);
    if (any_durability_measured(view.compare)) header.push_back("durability");
    for (const char* column : {"n", "!"}) header.push_back(column);
    return header;
}

// The row's durability (common/compare_text.h's cell), its verdict in full
// on hover; in the risk colour when measured and not safe.
Element durability_cell(const Json& row) {
    const Json& durability = field(row, "durability");
    const std::string text = durability_cell_text(durability);
    Element td = html_text("td", text);
    if (text != "not measured" && !durability_safe(durability)) td.set("class", "risk");
    td.set("title", text_field(durability, "verdict", "not measured"));
    return td;
}

Element cell(std::string_view text, std::string_view css_class = "") {
    Element td = html_text("td", text);
    if (!css_class.empty()) td.set("class", css_class);
    return td;
}

Element verdict_row(const ReportView& view, std::size_t r, const std::string& metric) {
    const Json& row = view.rows[r];
    const bool host = field(row, "host_baseline") == true;
    Element tr = html_element("tr");
    if (view.columns.axes.empty()) tr.add(cell(text_field(row, "config_id").substr(0, 12)));
    for (const auto& axis : view.columns.axes) {
        const bool applies = !host || field(row, "settings").contains(axis);
        tr.add(cell(applies ? setting_text(field(row, "settings"), axis) : "-"));
    }
    if (view.columns.workload)
        tr.add(cell(text_field(row, "workload") + (host ? " (host, raw volume)" : "")));
    if (view.columns.options) tr.add(cell(text_field(row, "options", "defaults")));
    const std::string row_metric = view.analysed_metric(r);
    std::string value = mean_ci_text(field(field(row, "metrics"), row_metric));
    if (metric.empty() && value != "-") value += " " + row_metric;
    tr.add(cell(value, "num"));
    tr.add(cell(field(row, "is_baseline") == true ? "1" : ratio_text(field(row, "vs_baseline")),
                "num"));
    const std::string verdict = verdict_text(row);
    tr.add(cell(verdict, "verdict " + verdict_style(verdict).css_class));
    if (any_durability_measured(view.compare)) tr.add(durability_cell(row));
    const Json& runs = field(row, "runs");
    tr.add(cell(std::to_string(integer_field(runs, "succeeded")) + unsuccessful_note(runs), "num"));
    const std::vector<std::string> risks = string_list(field(row, "durability_risks"));
    Element flag = cell(risks.empty() ? "" : "!", "risk");
    if (!risks.empty()) flag.set("title", join(risks, ", "));
    tr.add(std::move(flag));
    return tr;
}

Element verdict_section(const ReportView& view) {
    Element section = html_section("verdicts", "Verdicts");
    if (view.rows.empty()) {
        section.add(html_paragraph("No results yet: no run of this sweep has finished."));
        return section;
    }
    const std::string metric = text_field(field(view.compare, "primary_metric"), "name", "");
    section.add(html_paragraph(
        "Best first. mean ± 95% CI: the mean over the succeeded runs (n) with the half-width of "
        "its 95% confidence interval. ratio: the mean over the baseline's, with its 95% CI. ! = "
        "settings that can lose data on a power failure or crash (see Durability risks)." +
            (any_durability_measured(view.compare)
                 ? " " + std::string(kDurabilityLegend) + "; see Speed and safety."
                 : std::string()),
        "note"));
    for (long partition : view.partitions()) {
        if (view.partition_count() > 1)
            section.add(html_text("h3", "Runs" + view.partition_suffix(partition)));
        Element head = html_element("tr");
        for (const auto& title : verdict_header(view, metric)) head.add(html_text("th", title));
        Element body = html_element("tbody");
        for (std::size_t r : view.rows_of(partition)) body.add(verdict_row(view, r, metric));
        Element table = html_element("table");
        table.add(html_element("thead").add(std::move(head))).add(std::move(body));
        section.add(html_element("div").set("class", "wide").add(std::move(table)));
    }
    return section;
}

// ---------------------------------------------------------------------------
// Verified settings

// Read-back entries left out: where each value was read, and what changes
// from run to run (volume names, pool fill before and after).
bool skipped_readback(const std::string& key) {
    static const std::set<std::string> kSkipped = {
        "hypervisor.qemu.sources", "storage.source", "storage.before",
        "storage.after",           "verified",       "verification"};
    return kSkipped.count(key) > 0;
}

void flatten(const std::string& key, const Json& value, std::map<std::string, std::string>& out) {
    if (skipped_readback(key)) return;
    if (value.is_object() && !value.empty()) {
        for (const auto& [name, inner] : value.items())
            flatten(key.empty() ? name : key + "." + name, inner, out);
        return;
    }
    out[key] = value.is_null() ? "null" : format_setting_value(value);
}

struct ReadbackTable {
    std::vector<std::size_t> rows;  // with a readback, ranked
    std::vector<std::map<std::string, std::string>> values;
    std::map<std::string, std::string> common;  // the same in every row
    std::vector<std::string> differing;         // keys that differ or are missing somewhere
};

ReadbackTable readback_table(const ReportView& view) {
    ReadbackTable table;
    for (std::size_t r : view.order) {
        if (view.data.readback.size() <= r || view.data.readback[r].run_id == 0) continue;
        table.rows.push_back(r);
        table.values.emplace_back();
        flatten("", view.data.readback[r].applied, table.values.back());
    }
    std::set<std::string> keys;
    for (const auto& values : table.values)
        for (const auto& [key, value] : values) keys.insert(key);
    for (const std::string& key : keys) {
        const auto first = table.values.front().find(key);
        const bool same =
            std::all_of(table.values.begin(), table.values.end(), [&](const auto& values) {
                const auto found = values.find(key);
                return found != values.end() && first != table.values.front().end() &&
                       found->second == first->second;
            });
        if (same) {
            table.common[key] = first->second;
        } else {
            table.differing.push_back(key);
        }
    }
    return table;
}

std::string verified_text(const RowReadback& readback) {
    return std::to_string(readback.verified_runs) + " of " +
           std::to_string(readback.succeeded_runs) + " (run " + std::to_string(readback.run_id) +
           ")";
}

// The levels and settings the runs of each configuration could not check
// (compare rows' "not_checked", docs/verification.md), one "not checked:
// REASON" line each, added to `section`; nothing when every run checked
// everything.
void add_not_checked(const ReportView& view, Element& section) {
    std::vector<std::vector<std::string>> cells;
    for (std::size_t r : view.order) {
        for (const std::string& line : not_checked_lines(field(view.rows[r], "not_checked")))
            cells.push_back({view.labels[r], line});
    }
    if (cells.empty()) return;
    section.add(html_text("h3", "Not checked"));
    section.add(html_paragraph(
        "Levels of the stack, or settings at one level, that these runs could not read back, "
        "with the reason. Whether a level not checked fails a run is the spec's "
        "unchecked_levels (docs/verification.md, \"Levels not checked\").",
        "note"));
    section.add(html_element("div")
                    .set("class", "wide")
                    .add(html_table({"configuration", "not checked"}, cells)));
}

Element settings_section(const ReportView& view) {
    Element section = html_section("settings", "Verified settings");
    const ReadbackTable table = readback_table(view);
    add_not_checked(view, section);
    if (table.rows.empty()) {
        section.add(html_paragraph("Nothing read back yet: no run of this sweep has succeeded."));
        return section;
    }
    section.add(html_paragraph(
        "What each configuration really ran with, as read back during its runs: hypervisor.* from "
        "the live domain (and QEMU itself), guest.* from inside the guest (/proc/mounts, sysfs, "
        "btrfs, SHOW VARIABLES). A run whose settings did not match what was asked for is not "
        "recorded as that configuration; verified counts the succeeded runs that matched, and "
        "names "
        "the run whose readback is shown.",
        "note"));
    std::vector<std::string> header = {"configuration", "verified"};
    header.insert(header.end(), table.differing.begin(), table.differing.end());
    std::vector<std::vector<std::string>> cells;
    for (std::size_t i = 0; i < table.rows.size(); ++i) {
        const std::size_t r = table.rows[i];
        std::vector<std::string> line = {view.labels[r], verified_text(view.data.readback[r])};
        for (const auto& key : table.differing) {
            const auto found = table.values[i].find(key);
            line.push_back(found == table.values[i].end() ? "–" : found->second);
        }
        cells.push_back(std::move(line));
    }
    section.add(html_text("h3", "Where the configurations differ"));
    section.add(
        html_element("div").set("class", "wide").add(html_table(header, cells, {false, true})));
    std::vector<std::vector<std::string>> common;
    for (const auto& [key, value] : table.common) common.push_back({key, value});
    section.add(html_text("h3", "The same in every configuration"));
    section.add(
        html_element("div").set("class", "wide").add(html_table({"setting", "value"}, common)));
    return section;
}

// ---------------------------------------------------------------------------
// Durability risks

// What each risk of the disk (as ds::durability_risks names it) puts at
// stake; a risk is explained by the first entry it starts with. A server
// setting's risk is explained by its rules (ServerSettingsRules::
// risk_explanations).
const std::vector<std::pair<std::string_view, std::string_view>>& disk_risk_explanations() {
    static const std::vector<std::pair<std::string_view, std::string_view>> kExplanations = {
        {"cache=unsafe",
         "the host acknowledges the guest's flushes without writing them: a host crash or power "
         "cut loses data the guest believes is on disk, and can corrupt its filesystem"},
        {"barrier=0",
         "the journal's commit can reach the disk before the blocks it commits: a power cut can "
         "corrupt the filesystem"},
        {"nobarrier",
         "the journal's commit can reach the disk before the blocks it commits: a power cut can "
         "corrupt the filesystem"},
        {"data=writeback",
         "ext4 no longer writes data before the metadata that points to it: after a crash, files "
         "can hold stale blocks"},
        {"no journal",
         "a filesystem without a journal: a crash leaves it inconsistent until fsck repairs it, "
         "and loses recent writes"},
    };
    return kExplanations;
}

std::string risk_explanation(const std::string& risk) {
    for (const auto& [prefix, explanation] : disk_risk_explanations())
        if (risk.starts_with(prefix)) return std::string(explanation);
    for (const ServerSettingsRules* rules : server_settings_rule_sets()) {
        for (const auto& [prefix, explanation] : rules->risk_explanations)
            if (risk.starts_with(prefix)) return std::string(explanation);
    }
    return "can lose data on a power failure or crash";
}

Element risks_section(const ReportView& view) {
    Element section = html_section("risks", "Durability risks");
    std::vector<std::vector<std::string>> cells;
    std::vector<std::string> distinct;
    for (std::size_t r : view.order) {
        const Json& row = view.rows[r];
        if (const Json& error = field(row, "settings_error"); error.is_string())
            cells.push_back({view.labels[r], "unknown: " + error.get<std::string>(), "", ""});
        const std::vector<std::string> risks = string_list(field(row, "durability_risks"));
        if (risks.empty()) continue;
        for (const auto& risk : risks)
            if (std::find(distinct.begin(), distinct.end(), risk) == distinct.end())
                distinct.push_back(risk);
        cells.push_back(
            {view.labels[r], join(risks, ", "),
             field(row, "is_baseline") == true ? "1" : ratio_text(field(row, "vs_baseline")),
             verdict_text(row)});
    }
    if (cells.empty()) {
        section.add(html_paragraph(
            "No configuration of this sweep trades durability for speed: every one keeps the data "
            "a guest has flushed safe across a power failure or crash."));
        return section;
    }
    section.add(html_paragraph(
        "These configurations ran with settings that can lose data on a power failure or crash: "
        "what they gain in speed is paid for in safety.",
        "risk"));
    section.add(html_element("div")
                    .set("class", "wide")
                    .add(html_table({"configuration", "risks", "ratio [95% CI]", "verdict"}, cells,
                                    {false, false, true})));
    Element list = html_element("dl");
    for (const auto& risk : distinct) {
        list.add(html_text("dt", risk));
        list.add(html_text("dd", risk_explanation(risk)));
    }
    section.add(std::move(list));
    return section;
}

// ---------------------------------------------------------------------------
// Environment

Element environment_section(const ReportView& view) {
    Element section = html_section("environment", "Environment");
    const Json& partitions = field(view.compare, "partitions");
    std::vector<std::vector<std::string>> cells;
    for (std::size_t p = 0; p < (partitions.is_array() ? partitions.size() : 0); ++p) {
        std::vector<std::string> line = {std::to_string(p + 1)};
        for (const char* key : {"accel", "host", "qemu", "libvirt", "kernel", "proxmox"})
            line.push_back(text_field(partitions[p], key));
        line.push_back(std::to_string(view.rows_of(static_cast<long>(p)).size()));
        cells.push_back(std::move(line));
    }
    section.add(html_paragraph(
        "Runs are only pooled and compared within a partition: the same acceleration, host and "
        "QEMU, libvirt, kernel and Proxmox VE versions.",
        "note"));
    section.add(html_table(
        {"partition", "acceleration", "host", "QEMU", "libvirt", "kernel", "Proxmox VE", "rows"},
        cells, {true, false, false, false, false, false, false, true}));
    std::vector<std::vector<std::string>> versions;
    for (const auto& [key, values] : view.data.versions) {
        std::vector<std::string> seen;
        for (const auto& [value, runs] : values)
            seen.push_back(value + " (" + std::to_string(runs) + (runs == 1 ? " run)" : " runs)"));
        versions.push_back({key, join(seen, ", ")});
    }
    section.add(html_text("h3", "Recorded with the runs"));
    if (versions.empty()) {
        section.add(html_paragraph("Nothing recorded yet: no run of this sweep has finished."));
    } else {
        section.add(
            html_element("div").set("class", "wide").add(html_table({"what", "values"}, versions)));
    }
    return section;
}

Element page_body(const ReportView& view) {
    Element body = html_element("body");
    body.add(header_section(view));
    body.add(verdict_section(view));
    body.add(primary_metric_section(view));
    if (any_durability_measured(view.compare)) body.add(durability_section(view));
    body.add(latency_section(view));
    body.add(throughput_section(view));
    body.add(cpu_section(view));
    body.add(heat_map_section(view));
    body.add(settings_section(view));
    body.add(risks_section(view));
    body.add(environment_section(view));
    body.add(
        html_paragraph("Made by " + view.data.generator + " from its result database.", "note"));
    return body;
}

}  // namespace

std::string render_report_html(const ReportData& data) {
    const ReportView view(data);
    Element html = html_element("html");
    html.set("lang", "en");
    html.add(page_head(data)).add(page_body(view));
    std::string page = "<!DOCTYPE html>\n";
    html.write(page);
    return page + "\n";
}

Result<std::string> render_sweep_report(Store& store, std::int64_t sweep_id, SweepSpecs* specs) {
    DS_ASSIGN_OR_RETURN(ReportData data, gather_report_data(store, sweep_id, specs));
    return render_report_html(data);
}

}  // namespace ds::report
