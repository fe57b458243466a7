#include "hostctl/format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>
#include <map>
#include <set>

#include "common/compare_text.h"
#include "common/settings.h"
#include "common/status.h"
#include "common/text.h"
#include "common/verification_text.h"
#include "common/workload_kind.h"

namespace ds::hostctl {
namespace {

// Field access that never throws: the daemon may be older or newer than us.
using json_read::field;
using json_read::integer_field;
using json_read::number_field;
using json_read::string_list;
using json_read::text_field;
using json_read::text_of;

// Failure reasons and messages can span lines; a table cell cannot.
std::string single_line(std::string text) {
    std::replace(text.begin(), text.end(), '\n', ' ');
    std::replace(text.begin(), text.end(), '\r', ' ');
    return text;
}

std::string pad_left(const std::string& text, std::size_t width) {
    std::size_t shown = display_width(text);
    return shown >= width ? text : std::string(width - shown, ' ') + text;
}

std::string pad_right(const std::string& text, std::size_t width) {
    std::size_t shown = display_width(text);
    return shown >= width ? text : text + std::string(width - shown, ' ');
}

// "k=v k=v" for the given keys of a settings object.
std::string settings_summary(const Json& settings, const std::vector<std::string>& keys) {
    std::string summary;
    for (const auto& key : keys) {
        const Json& value = field(settings, key);
        if (value.is_null()) continue;
        if (!summary.empty()) summary += ' ';
        summary += key + "=" + format_setting_value(value);
    }
    return summary;
}

// A run's full settings: the API calls them "config" (older drafts "settings").
const Json& run_settings(const Json& run) {
    const Json& config = field(run, "config");
    return config.is_object() ? config : field(run, "settings");
}

// A run's workload name: "workload_name", or "workload" when that is a name.
std::string run_workload(const Json& run) {
    const Json& name = field(run, "workload_name");
    if (name.is_string()) return text_of(name);
    const Json& workload = field(run, "workload");
    if (workload.is_object()) return text_field(workload, "name");
    return text_of(workload);
}

std::string plural(long count, std::string_view singular, std::string_view many) {
    return std::to_string(count) + " " + std::string(count == 1 ? singular : many);
}

std::string counts_phrase(const RunCounts& counts) {
    std::string text = std::to_string(counts.succeeded) + " succeeded, " +
                       std::to_string(counts.failed) + " failed, ";
    if (counts.timed_out > 0) text += std::to_string(counts.timed_out) + " timed out, ";
    return text + std::to_string(counts.cancelled) + " cancelled";
}

// "warning: TEXT" per line of the daemon's warnings of a submission; ""
// when none (or an older daemon's answer without them).
std::string warnings_text(const Json& warnings) {
    std::string text;
    for (const std::string& warning : string_list(warnings)) text += "warning: " + warning + "\n";
    return text;
}

// "dropped N combinations that cannot exist:" and one line each, naming it by
// the varying `axes` and giving the reason; "" when none was dropped.
std::string dropped_text(const Json& dropped, const std::vector<std::string>& axes) {
    if (!dropped.is_array() || dropped.empty()) return "";
    std::string text = "dropped " +
                       plural(static_cast<long>(dropped.size()), "combination", "combinations") +
                       " that cannot exist:\n";
    for (const auto& combination : dropped) {
        const Json& settings = field(combination, "settings");
        // The varying settings say which combination it was; the rest
        // is the same for every combination.
        std::string which = settings_summary(settings, axes);
        if (which.empty() && settings.is_object()) {
            std::vector<std::string> keys;
            for (const auto& item : settings.items()) keys.push_back(item.key());
            which = settings_summary(settings, keys);
        }
        text += "  " + (which.empty() ? std::string("(unnamed)") : which) + ": " +
                single_line(text_field(combination, "reason")) + "\n";
    }
    return text;
}

}  // namespace

std::size_t display_width(std::string_view utf8) {
    // Count every byte that does not continue a multi-byte sequence.
    return static_cast<std::size_t>(std::count_if(utf8.begin(), utf8.end(), [](char c) {
        return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    }));
}

Table::Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

void Table::add_row(std::vector<std::string> cells) {
    cells.resize(columns_.size());
    rows_.push_back(std::move(cells));
}

std::string Table::render() const {
    std::vector<std::size_t> widths(columns_.size());
    for (std::size_t c = 0; c < columns_.size(); ++c) {
        widths[c] = display_width(columns_[c].header);
        for (const auto& row : rows_) widths[c] = std::max(widths[c], display_width(row[c]));
    }
    auto render_line = [&](auto cell_at) {
        std::string line;
        for (std::size_t c = 0; c < columns_.size(); ++c) {
            const std::string& cell = cell_at(c);
            if (c > 0) line += "  ";
            line += columns_[c].align == Align::kRight ? pad_left(cell, widths[c])
                                                       : pad_right(cell, widths[c]);
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        return line + "\n";
    };
    std::string text =
        render_line([&](std::size_t c) -> const std::string& { return columns_[c].header; });
    for (const auto& row : rows_) {
        text += render_line([&](std::size_t c) -> const std::string& { return row[c]; });
    }
    return text;
}

std::string csv_field(std::string_view text) {
    if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
    std::string quoted = "\"";
    for (char c : text) {
        if (c == '"') quoted += '"';
        quoted += c;
    }
    return quoted + "\"";
}

std::string format_duration(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) return "-";
    long total = std::lround(seconds);
    char buffer[32];
    if (total < 60) {
        std::snprintf(buffer, sizeof buffer, "%lds", total);
    } else if (total < 3600) {
        std::snprintf(buffer, sizeof buffer, "%ldm%02lds", total / 60, total % 60);
    } else {
        std::snprintf(buffer, sizeof buffer, "%ldh%02ldm", total / 3600, (total % 3600) / 60);
    }
    return buffer;
}

std::string format_submitted(const Json& reply) {
    const Json& sweep = field(reply, "sweep");
    std::string text =
        "sweep " + text_field(sweep, "id") + " \"" + text_field(sweep, "name", "") +
        "\" submitted: " + plural(integer_field(sweep, "total_runs"), "run", "runs") + ", " +
        text_field(sweep, "status", to_string(SweepStatus::kQueued)) + "\n";
    std::vector<std::string> axes = string_list(field(reply, "varying_axes"));
    if (axes.empty()) axes = string_list(field(sweep, "varying_axes"));
    if (!axes.empty()) text += "varying: " + join(axes, ", ") + "\n";
    if (long skipped = integer_field(reply, "skipped_by_filesystems"); skipped > 0) {
        text +=
            plural(skipped, "(configuration, workload) pair", "(configuration, workload) pairs") +
            " not run: left out by their workload's `filesystems`\n";
    }

    return text + warnings_text(field(reply, "warnings")) +
           dropped_text(field(reply, "dropped"), axes);
}

RunCounts parse_counts(const Json& counts) {
    RunCounts parsed;
    parsed.pending = integer_field(counts, "pending");
    parsed.running = integer_field(counts, "running");
    parsed.succeeded = integer_field(counts, "succeeded");
    parsed.failed = integer_field(counts, "failed");
    parsed.timed_out = integer_field(counts, "timed_out");
    parsed.cancelled = integer_field(counts, "cancelled");
    return parsed;
}

std::string format_sweep_list(const Json& reply) {
    const Json& sweeps = field(reply, "sweeps");
    if (!sweeps.is_array() || sweeps.empty()) return "no sweeps\n";
    Table table({{"id", Align::kRight},
                 {"name"},
                 {"status"},
                 {"done", Align::kRight},
                 {"failed", Align::kRight},
                 {"created"}});
    for (const auto& sweep : sweeps) {
        RunCounts counts = parse_counts(field(sweep, "counts"));
        table.add_row({text_field(sweep, "id"), text_field(sweep, "name"),
                       text_field(sweep, "status"),
                       std::to_string(counts.done()) + "/" +
                           std::to_string(integer_field(sweep, "total_runs")),
                       std::to_string(counts.failed), text_field(sweep, "created_at")});
    }
    return table.render();
}

namespace {
// "after round 3: added a round (REASON)" or "... stopped (REASON)".
std::string round_decision_text(const Json& decision) {
    return "after round " + text_field(decision, "after_round") + ": " +
           (text_field(decision, "decision") == "add_round" ? "added a round" : "stopped") + " (" +
           single_line(text_field(decision, "reason")) + ")";
}
}  // namespace

std::string format_sweep_show(const Json& reply) {
    const Json& sweep = field(reply, "sweep");
    const Json& runs = field(reply, "runs");
    RunCounts counts = parse_counts(field(sweep, "counts"));
    std::string text = "sweep " + text_field(sweep, "id") + " \"" + text_field(sweep, "name", "") +
                       "\": " + text_field(sweep, "status") + ", " + std::to_string(counts.done()) +
                       "/" + std::to_string(integer_field(sweep, "total_runs")) + " runs done (" +
                       counts_phrase(counts) + ")";
    if (auto eta = number_field(sweep, "eta_s")) text += ", ETA " + format_duration(*eta);
    text += "\ncreated " + text_field(sweep, "created_at") + "\n";
    // Adaptive repetitions: each decision after a round, with its reason.
    if (const Json& decisions = field(sweep, "round_decisions"); decisions.is_array()) {
        for (const auto& decision : decisions) text += round_decision_text(decision) + "\n";
    }
    if (!runs.is_array() || runs.empty()) return text + "no runs\n";

    // The settings that tell this sweep's configurations apart.
    std::vector<std::string> differing;
    std::map<std::string, std::set<std::string>> values_by_key;
    for (const auto& run : runs) {
        const Json& settings = run_settings(run);
        if (!settings.is_object()) continue;
        for (const auto& item : settings.items())
            values_by_key[item.key()].insert(item.value().dump());
    }
    std::vector<std::string> axes = string_list(field(sweep, "varying_axes"));
    for (const auto& [key, values] : values_by_key) {
        if (values.size() > 1 && std::find(axes.begin(), axes.end(), key) == axes.end()) {
            axes.push_back(key);
        }
    }
    for (const auto& axis : axes) {
        auto it = values_by_key.find(axis);
        if (it != values_by_key.end()) differing.push_back(axis);
    }

    Table table({{"id", Align::kRight},
                 {"config"},
                 {"workload"},
                 {"rep", Align::kRight},
                 {"status"},
                 {"reason"}});
    for (const auto& run : runs) {
        std::string config = settings_summary(run_settings(run), differing);
        if (config.empty()) config = text_field(run, "config_id").substr(0, 12);
        // A repeated attempt (the daemon stopped during an earlier one) says so.
        std::string repetition = text_field(run, "repetition");
        if (const Json& attempt = field(run, "attempt"); attempt.is_number() && attempt > 1)
            repetition += " (attempt " + text_field(run, "attempt") + ")";
        table.add_row({text_field(run, "id"), config, run_workload(run), repetition,
                       text_field(run, "status"),
                       single_line(text_field(run, "failure_reason", ""))});
    }
    text += table.render();
    if (const Json& next = field(reply, "next_after"); next.is_number()) {
        text += "more runs follow: hostctl sweep show " + text_field(sweep, "id") + " --after " +
                text_of(next) + "\n";
    }
    return text;
}

std::string format_cancelled(const Json& reply) {
    const Json& sweep = field(reply, "sweep");
    RunCounts counts = parse_counts(field(sweep, "counts"));
    std::string text = "sweep " + text_field(sweep, "id") + " " + text_field(sweep, "status");
    if (field(sweep, "counts").is_object()) text += " (" + counts_phrase(counts) + ")";
    return text + "\n";
}

namespace {

struct CompareColumns {
    std::vector<std::string> axes;
    std::vector<std::string> metrics;
};

// A comparison's levels and settings not checked, under its table; "" when
// its runs checked everything.
std::string not_checked_legend(const Json& compare) {
    std::string text;
    for (const std::string& line : compare_not_checked_lines(compare))
        text += "  " + single_line(line) + "\n";
    return text.empty() ? "" : "not checked in these runs' settings:\n" + text;
}

CompareColumns compare_columns(const Json& compare) {
    CompareColumns columns;
    columns.axes = string_list(field(compare, "varying_axes"));
    columns.metrics = string_list(field(compare, "metrics"));
    if (columns.metrics.empty()) {
        // Derive from the rows when the daemon does not list them.
        std::set<std::string> seen;
        for (const auto& row : field(compare, "rows")) {
            const Json& metrics = field(row, "metrics");
            if (!metrics.is_object()) continue;
            for (const auto& item : metrics.items()) {
                if (seen.insert(item.key()).second) columns.metrics.push_back(item.key());
            }
        }
    }
    return columns;
}

std::string risks_of(const Json& row) {
    std::vector<std::string> risks = string_list(field(row, "durability_risks"));
    return risks.empty() ? "" : "unsafe: " + join(risks, ", ");
}

// The ranked view of the kind every row is of (WorkloadKind::ranked_view);
// nullptr when the rows are of several kinds or their kind has none.
const RankedView* ranked_view_of(const Json& compare) {
    const std::vector<std::string> kinds = string_list(field(compare, "workload_kinds"));
    if (kinds.size() != 1) return nullptr;
    const WorkloadKind* kind = find_workload_kind(kinds.front());
    if (kind == nullptr || kind->ranked_view.columns.empty()) return nullptr;
    return &kind->ranked_view;
}

// A summary cell "mean ± sd" aligned on "±" within its column: the cells of
// one column are formatted first, then padded.
std::vector<std::string> aligned_cells(const std::vector<MeanSpread>& cells) {
    std::size_t mean_width = 0, spread_width = 0;
    for (const auto& cell : cells) {
        mean_width = std::max(mean_width, display_width(cell.mean));
        spread_width = std::max(spread_width, display_width(cell.spread));
    }
    std::vector<std::string> texts;
    for (const auto& cell : cells) {
        std::string text = pad_left(cell.mean, mean_width);
        if (spread_width > 0) {
            text += cell.spread.empty() ? std::string(3 + spread_width, ' ')
                                        : " ± " + pad_right(cell.spread, spread_width);
        }
        texts.push_back(std::move(text));
    }
    return texts;
}

MeanSpread summary_cell(const Json& summary) {
    auto mean = number_field(summary, "mean");
    if (!mean || integer_field(summary, "n", 1) <= 0) return {"-", ""};
    return format_mean_spread(*mean, number_field(summary, "stddev"));
}

// Whether any row, of any partition, has a host baseline to compare with.
bool any_host_overhead(const Json& compare) {
    for (const auto& row : field(compare, "rows"))
        if (field(row, "vs_host").is_object()) return true;
    return false;
}

// The line under a table with a "vs host" column that says what it is.
std::string vs_host_legend(const std::string& metric) {
    return "vs host = the configuration's mean " + metric +
           " as a share of the host baseline's (fio from the host on the same storage's "
           "raw volume, no guest)\n";
}

// The metric the "vs host" column compares: the primary one when shown,
// else the first; "" when no row has a host baseline to compare with.
std::string host_overhead_metric(const Json& compare, const CompareColumns& columns) {
    if (!any_host_overhead(compare) || columns.metrics.empty()) return "";
    const std::string primary = text_field(field(compare, "primary_metric"), "name", "");
    const bool shown =
        std::find(columns.metrics.begin(), columns.metrics.end(), primary) != columns.metrics.end();
    return shown ? primary : columns.metrics.front();
}

// "41%" of the host baseline's mean, "-" without one.
std::string host_share_text(const Json& row, const std::string& metric) {
    auto ratio = number_field(field(field(row, "vs_host"), "ratios"), metric);
    return ratio ? format_fixed(*ratio * 100, *ratio < 0.1 ? 1 : 0) + "%" : "-";
}

// A kind's ranked table (the seed study's for mariadb-atis, its sysbench
// counterpart), rows in the reply's ranking order. Rows without the ranked
// metric (no succeeded run) follow, so failures stay visible.
std::string format_ranked_table(const Json& compare, const RankedView& view) {
    const Json& rows = field(compare, "rows");
    const std::string sweep_id = text_field(compare, "sweep_id");
    const std::vector<std::size_t> order = ranked_rows(compare);
    bool any_risk = false;
    for (const auto& row : rows) any_risk = any_risk || !risks_of(row).empty();

    std::vector<std::vector<std::string>> metric_cells;
    for (const RankedColumn& column : view.columns) {
        std::vector<MeanSpread> cells;
        for (std::size_t r : order)
            cells.push_back(summary_cell(field(field(rows[r], "metrics"), column.metric)));
        metric_cells.push_back(aligned_cells(cells));
    }

    std::vector<Table::Column> header = {{"Filesystem"}, {"Options"}};
    for (const RankedColumn& column : view.columns)
        header.push_back({std::string(column.header), Align::kLeft});
    const bool durability = any_durability_measured(compare);
    if (durability) header.push_back({"durability"});
    header.push_back({"n"});
    if (any_risk) header.push_back({"!"});
    Table table(std::move(header));
    // Several workloads with the same server variables (or none) would read
    // alike: then the workload's name goes next to its options.
    std::set<std::string> option_texts, workload_names;
    for (const auto& row : rows) {
        option_texts.insert(text_field(row, "options", "defaults"));
        workload_names.insert(text_field(row, "workload"));
    }
    const bool name_workloads = option_texts.size() < workload_names.size();
    for (std::size_t i = 0; i < order.size(); ++i) {
        const Json& row = rows[order[i]];
        std::string options = text_field(row, "options", "defaults");
        if (name_workloads) options += " [" + text_field(row, "workload") + "]";
        std::vector<std::string> line = {text_field(row, "filesystem"), options};
        for (const auto& cells : metric_cells) line.push_back(cells[i]);
        if (durability) line.push_back(durability_cell_text(field(row, "durability")));
        const Json& runs = field(row, "runs");
        line.push_back(std::to_string(integer_field(runs, "succeeded")) + unsuccessful_note(runs));
        if (any_risk) line.push_back(risks_of(row));
        table.add_row(std::move(line));
    }
    std::string text = "sweep " + sweep_id + ": ";
    text += view.title;
    text += "; mean ± sd (sample standard deviation) over n succeeded runs\n";
    text += table.render();
    if (durability) text += std::string(kDurabilityLegend) + "\n";
    if (any_risk) text += "! = settings that can lose data on a power failure or crash\n";
    return text + not_checked_legend(compare);
}

// Each row's metric cells, "mean ± sd", built before the table so that
// each column can be aligned on "±".
std::vector<std::vector<std::string>> aligned_metric_cells(
    const Json& rows, const std::vector<std::string>& metrics) {
    std::vector<std::vector<MeanSpread>> cells(rows.size());
    std::vector<std::size_t> mean_width(metrics.size(), 0);
    std::vector<std::size_t> spread_width(metrics.size(), 0);
    for (std::size_t r = 0; r < rows.size(); ++r) {
        for (std::size_t m = 0; m < metrics.size(); ++m) {
            const Json& summary = field(field(rows[r], "metrics"), metrics[m]);
            auto mean = number_field(summary, "mean");
            MeanSpread cell = mean && integer_field(summary, "n", 1) > 0
                                  ? format_mean_spread(*mean, number_field(summary, "stddev"))
                                  : MeanSpread{"-", ""};
            mean_width[m] = std::max(mean_width[m], display_width(cell.mean));
            spread_width[m] = std::max(spread_width[m], display_width(cell.spread));
            cells[r].push_back(std::move(cell));
        }
    }
    std::vector<std::vector<std::string>> aligned(rows.size());
    for (std::size_t r = 0; r < rows.size(); ++r) {
        for (std::size_t m = 0; m < metrics.size(); ++m) {
            const MeanSpread& cell = cells[r][m];
            std::string text = pad_left(cell.mean, mean_width[m]);
            if (spread_width[m] > 0) {
                text += cell.spread.empty() ? std::string(3 + spread_width[m], ' ')
                                            : " ± " + pad_right(cell.spread, spread_width[m]);
            }
            aligned[r].push_back(std::move(text));
        }
    }
    return aligned;
}

}  // namespace

std::string format_golden_datasets(const Json& compare) {
    const Json& golden = field(compare, "golden_datasets");
    if (!golden.is_object()) return "";
    const auto seconds = [&golden](const char* key) {
        const Json& value = field(golden, key);
        return (value.is_number() ? format_fixed(value.get<double>(), 1) : std::string("?")) + " s";
    };
    return "golden datasets: " + text_field(golden, "runs") + " runs cloned from " +
           text_field(golden, "golden_volumes") + " golden volume(s); preparation avoided " +
           seconds("avoided_s") + ", golden preparation " + seconds("preparation_s") +
           " (its guest's boot included), clones " + seconds("clone_s") + ": saved " +
           seconds("saved_s") + "\n";
}

std::string format_compare_wide(const Json& compare) {
    const Json& rows = field(compare, "rows");
    std::string sweep_id = text_field(compare, "sweep_id");
    if (!rows.is_array() || rows.empty()) return "sweep " + sweep_id + " has no results yet\n";
    if (const RankedView* view = ranked_view_of(compare))
        return format_ranked_table(compare, *view);
    CompareColumns columns = compare_columns(compare);

    bool any_risk = false;
    for (const auto& row : rows) any_risk = any_risk || !risks_of(row).empty();

    const std::vector<std::vector<std::string>> metric_cells =
        aligned_metric_cells(rows, columns.metrics);

    const std::string overhead_metric = host_overhead_metric(compare, columns);

    std::vector<Table::Column> header;
    const bool show_config_id = columns.axes.empty();
    if (show_config_id) header.push_back({"config"});
    for (const auto& axis : columns.axes) header.push_back({axis});
    header.push_back({"workload"});
    for (const auto& metric : columns.metrics) header.push_back({metric, Align::kRight});
    if (!overhead_metric.empty()) header.push_back({"vs host", Align::kRight});
    const bool durability = any_durability_measured(compare);
    if (durability) header.push_back({"durability"});
    header.push_back({"n", Align::kRight});
    if (any_risk) header.push_back({"!"});
    Table table(std::move(header));

    for (std::size_t r = 0; r < rows.size(); ++r) {
        const Json& row = rows[r];
        const bool baseline = field(row, "host_baseline") == true;
        std::vector<std::string> line;
        if (show_config_id) line.push_back(text_field(row, "config_id").substr(0, 12));
        for (const auto& axis : columns.axes) {
            // A baseline has no guest settings: only its storage is one.
            const bool applies = !baseline || field(row, "settings").contains(axis);
            line.push_back(applies ? setting_text(field(row, "settings"), axis) : "-");
        }
        line.push_back(text_field(row, "workload") + (baseline ? " (host, raw volume)" : ""));
        for (const std::string& cell : metric_cells[r]) line.push_back(cell);
        if (!overhead_metric.empty()) line.push_back(host_share_text(row, overhead_metric));
        if (durability) line.push_back(durability_cell_text(field(row, "durability")));
        const Json& runs = field(row, "runs");
        std::string n = std::to_string(integer_field(runs, "succeeded")) + unsuccessful_note(runs);
        line.push_back(n);
        if (any_risk) line.push_back(risks_of(row));
        table.add_row(std::move(line));
    }

    std::string text = "sweep " + sweep_id +
                       ": mean ± stddev over n succeeded runs per configuration and workload\n" +
                       table.render();
    if (!overhead_metric.empty()) text += vs_host_legend(overhead_metric);
    if (durability) text += std::string(kDurabilityLegend) + "\n";
    if (any_risk) text += "! = settings that can lose data on a power failure or crash\n";
    return text + not_checked_legend(compare);
}

namespace {

// The heading: what the numbers are, and against what.
std::string narrow_heading(const Json& compare, const std::string& metric, bool lower_better) {
    const std::string baseline = baseline_settings_text(compare);
    const double threshold = number_field(compare, "practical_difference").value_or(0.02);
    std::string text = "sweep " + text_field(compare, "sweep_id") + ": " +
                       (metric.empty() ? std::string("each workload's primary metric") : metric) +
                       (metric.empty() ? ""
                        : lower_better ? " (lower is better)"
                                       : " (higher is better)") +
                       ", mean ± 95% CI half-width over n succeeded runs, best first\n";
    const std::string chosen_by = text_field(field(compare, "baseline"), "chosen_by", "");
    text += "ratio = mean / the baseline's (" + baseline +
            (chosen_by == "spec" ? ", chosen in the spec" : ", the first configuration") +
            ") with its 95% CI\nverdict: Holm-adjusted p < 0.05; differences under " +
            format_fixed(threshold * 100, threshold * 100 < 1 ? 1 : 0) + "% are never called\n";
    return text;
}

}  // namespace

namespace {

// "workload NAME: OPTIONS" for each workload with server variables, in the
// order the rows first name them.
std::string workload_options_legend(const Json& rows) {
    std::string legend;
    std::set<std::string> named;
    for (const auto& row : rows) {
        const std::string workload = text_field(row, "workload");
        const std::string options = text_field(row, "options", "defaults");
        if (options == "defaults" || !named.insert(workload).second) continue;
        legend += "workload " + workload + ": " + options + "\n";
    }
    return legend;
}

// What the narrow compare table shows beyond the configuration's axes.
struct NarrowLayout {
    NarrowColumns columns;
    bool options_column = false;  // the workloads' server variables, in the table
    std::string metric;           // the analysed metric; "" when rows differ
    bool vs_host_column = false;
    bool durability_column = false;
};

// The narrow compare table's columns: the configuration (its axes, or its
// id when nothing varies), then the primary metric and what is said of it.
Table narrow_compare_table(const NarrowLayout& layout) {
    std::vector<Table::Column> header;
    if (layout.columns.axes.empty()) header.push_back({"config"});
    for (const auto& axis : layout.columns.axes) header.push_back({axis});
    if (layout.columns.workload) header.push_back({"workload"});
    if (layout.options_column) header.push_back({"options"});
    header.push_back({layout.metric.empty() ? "primary metric" : layout.metric, Align::kRight});
    if (layout.vs_host_column) header.push_back({"vs host", Align::kRight});
    header.push_back({"ratio [95% CI]", Align::kRight});
    header.push_back({"verdict"});
    if (layout.durability_column) header.push_back({"durability"});
    header.push_back({"n", Align::kRight});
    header.push_back({"!"});
    return Table(std::move(header));
}

// One row of the narrow compare table; its durability risks, when new, go
// to `risk_notes` (printed once each under the tables).
std::vector<std::string> narrow_compare_line(const Json& row, const NarrowLayout& layout,
                                             std::vector<std::string>& risk_notes) {
    const bool host = field(row, "host_baseline") == true;
    std::vector<std::string> line;
    if (layout.columns.axes.empty()) line.push_back(text_field(row, "config_id").substr(0, 12));
    for (const auto& axis : layout.columns.axes) {
        const bool applies = !host || field(row, "settings").contains(axis);
        line.push_back(applies ? setting_text(field(row, "settings"), axis) : "-");
    }
    if (layout.columns.workload)
        line.push_back(text_field(row, "workload") + (host ? " (host, raw volume)" : ""));
    if (layout.options_column) line.push_back(text_field(row, "options", "defaults"));
    const std::string row_metric = text_field(field(row, "primary_metric"), "name", layout.metric);
    std::string value = mean_ci_text(field(field(row, "metrics"), row_metric));
    if (layout.metric.empty() && value != "-") value += " " + row_metric;
    line.push_back(value);
    if (layout.vs_host_column) line.push_back(host_share_text(row, row_metric));
    line.push_back(field(row, "is_baseline") == true ? "1" : ratio_text(field(row, "vs_baseline")));
    line.push_back(verdict_text(row));
    if (layout.durability_column) line.push_back(durability_cell_text(field(row, "durability")));
    const Json& runs = field(row, "runs");
    line.push_back(std::to_string(integer_field(runs, "succeeded")) + unsuccessful_note(runs));
    const std::string risks = join(string_list(field(row, "durability_risks")), ", ");
    line.push_back(risks.empty() ? "" : "!");
    if (!risks.empty() &&
        std::find(risk_notes.begin(), risk_notes.end(), risks) == risk_notes.end())
        risk_notes.push_back(risks);
    return line;
}

}  // namespace

std::string format_compare_table(const Json& compare) {
    const Json& rows = field(compare, "rows");
    const std::string sweep_id = text_field(compare, "sweep_id");
    if (!rows.is_array() || rows.empty()) return "sweep " + sweep_id + " has no results yet\n";
    const Json& primary = field(compare, "primary_metric");
    NarrowLayout layout;
    layout.metric = text_field(primary, "name", "");
    layout.columns = narrow_columns(compare);
    const Json& partitions = field(compare, "partitions");
    const std::size_t partition_count = partitions.is_array() ? partitions.size() : 0;

    std::map<long, std::vector<std::size_t>> by_partition;
    for (std::size_t r : ranked_rows(compare))
        by_partition[integer_field(rows[r], "partition", 0)].push_back(r);

    // With a workload column, the workloads' server variables (often longer
    // than the rest of a row) are a legend under the table, once each.
    layout.options_column = layout.columns.options && !layout.columns.workload;
    // The host baselines sit in a partition of their own (acceleration
    // "none"): whether to show the column is asked of every row.
    layout.vs_host_column = any_host_overhead(compare);
    layout.durability_column = any_durability_measured(compare);
    std::string text =
        narrow_heading(compare, layout.metric, field(primary, "lower_is_better") == true);
    if (partition_count > 1) {
        text +=
            "runs of different acceleration, host or versions are shown apart: they are "
            "not pooled, and each is compared with the baseline of its own partition\n";
    }
    std::vector<std::string> risk_notes;
    for (const auto& [partition, members] : by_partition) {
        if (partition_count > 1 && partition >= 0 &&
            static_cast<std::size_t>(partition) < partition_count) {
            text += "\npartition " + std::to_string(partition + 1) + " of " +
                    std::to_string(partition_count) + ": " + partition_text(partitions[partition]) +
                    "\n";
        }
        Table table = narrow_compare_table(layout);
        for (std::size_t r : members)
            table.add_row(narrow_compare_line(rows[r], layout, risk_notes));
        text += table.render();
    }
    if (layout.vs_host_column)
        text += vs_host_legend(layout.metric.empty() ? "primary metric" : layout.metric);
    if (layout.durability_column) text += std::string(kDurabilityLegend) + "\n";
    if (layout.columns.options && !layout.options_column) text += workload_options_legend(rows);
    for (const auto& risks : risk_notes)
        text += "! " + risks + ": can lose data on a power failure or crash\n";
    text += not_checked_legend(compare);
    text +=
        "(--all: every metric; --metric NAME: rank and compare by another; --json, --csv: "
        "all numbers)\n";
    return text;
}

namespace {

constexpr const char* kCsvSummaryFields[] = {"n",  "mean",     "median",    "stddev",
                                             "cv", "ci95_low", "ci95_high", "geomean"};
constexpr const char* kCsvComparisonFields[] = {"ratio",   "ci95_low",   "ci95_high",
                                                "p_value", "p_adjusted", "verdict"};
// A row's "durability", last (so existing columns keep their places).
constexpr const char* kCsvDurabilityFields[] = {
    "verdict",   "safe",           "crash_states",  "states_with_losses", "max_lost",
    "mean_lost", "mount_failures", "fsck_failures", "recovery_failures"};

std::string csv_line(const std::vector<std::string>& fields) {
    std::string line;
    for (std::size_t i = 0; i < fields.size(); ++i) {
        if (i > 0) line += ',';
        line += csv_field(fields[i]);
    }
    return line + "\n";
}

// Numbers at full precision (JSON's shortest round-trip form); absent or
// null values (the spread of a single run) as empty fields.
std::string csv_number_text(const Json& value) {
    return value.is_number() ? value.dump() : std::string();
}

std::vector<std::string> csv_header(const CompareColumns& columns) {
    std::vector<std::string> header = {"sweep_id", "config_id", "workload"};
    for (const auto& axis : columns.axes) header.push_back(axis);
    header.push_back("runs_succeeded");
    header.push_back("runs_failed");
    for (const auto& metric : columns.metrics) {
        for (const char* part : kCsvSummaryFields) header.push_back(metric + "_" + part);
    }
    header.push_back("partition");
    header.push_back("compared_metric");
    for (const char* part : kCsvComparisonFields)
        header.push_back(std::string("vs_baseline_") + part);
    header.push_back("vs_host");
    header.push_back("durability_risks");
    for (const char* part : kCsvDurabilityFields)
        header.push_back(std::string("durability_") + part);
    return header;
}

// The fields of one compare row, in csv_header's order.
std::vector<std::string> csv_row(const Json& compare, const Json& row,
                                 const CompareColumns& columns) {
    std::vector<std::string> line = {csv_number_text(field(compare, "sweep_id")),
                                     text_field(row, "config_id", ""),
                                     text_field(row, "workload", "")};
    for (const auto& axis : columns.axes) {
        line.push_back(format_setting_value(field(field(row, "settings"), axis)));
    }
    const Json& runs = field(row, "runs");
    line.push_back(std::to_string(integer_field(runs, "succeeded")));
    line.push_back(std::to_string(integer_field(runs, "failed")));
    for (const auto& metric : columns.metrics) {
        const Json& summary = field(field(row, "metrics"), metric);
        for (const char* part : kCsvSummaryFields) {
            const Json& value = field(summary, part);
            // A metric no run reported has n = 0, not an empty field.
            line.push_back(
                std::string_view(part) == "n" && !value.is_number() ? "0" : csv_number_text(value));
        }
    }
    const Json& partitions = field(compare, "partitions");
    const long partition = integer_field(row, "partition", -1);
    const bool known = partitions.is_array() && partition >= 0 &&
                       static_cast<std::size_t>(partition) < partitions.size();
    line.push_back(known ? partition_text(partitions[static_cast<std::size_t>(partition)]) : "");
    const Json& versus = field(row, "vs_baseline");
    const std::string compared = text_field(field(row, "primary_metric"), "name", "");
    line.push_back(compared);
    for (const char* part : kCsvComparisonFields) {
        const Json& value = field(versus, part);
        line.push_back(value.is_string() ? value.get<std::string>() : csv_number_text(value));
    }
    // The compared metric's mean as a share of the host baseline's (any partition).
    line.push_back(csv_number_text(field(field(field(row, "vs_host"), "ratios"), compared)));
    line.push_back(join(string_list(field(row, "durability_risks")), ";"));
    const Json& durability = field(row, "durability");
    for (const char* part : kCsvDurabilityFields) {
        const Json& value = field(durability, part);
        line.push_back(value.is_string()    ? value.get<std::string>()
                       : value.is_boolean() ? (value.get<bool>() ? "true" : "false")
                                            : csv_number_text(value));
    }
    return line;
}

}  // namespace

std::string format_compare_csv(const Json& compare) {
    CompareColumns columns = compare_columns(compare);
    std::string text = csv_line(csv_header(columns));
    const Json& rows = field(compare, "rows");
    if (!rows.is_array()) return text;
    for (const auto& row : rows) text += csv_line(csv_row(compare, row, columns));
    return text;
}

namespace {

using KeyValues = std::vector<std::pair<std::string, std::string>>;

// `value` into `out`, nested objects flattened to dotted keys below `prefix`.
void flatten_into(const std::string& prefix, const Json& value, KeyValues& out) {
    if (value.is_object() && !value.empty()) {
        for (const auto& item : value.items()) {
            flatten_into(prefix.empty() ? item.key() : prefix + "." + item.key(), item.value(),
                         out);
        }
    } else {
        out.emplace_back(prefix, single_line(format_setting_value(value)));
    }
}

// A run's object or array field as a section: its title, then its entries
// (an array's elements as "-" lines), keys aligned.
std::string run_section(const std::string& title, const Json& value) {
    KeyValues entries;
    if (value.is_object()) {
        flatten_into("", value, entries);
    } else {
        for (const auto& element : value) {
            entries.emplace_back("-", single_line(format_setting_value(element)));
        }
    }
    std::string text = title + ":\n";
    if (entries.empty()) text += "  (none)\n";
    std::size_t width = 0;
    for (const auto& [key, entry] : entries) width = std::max(width, display_width(key));
    for (const auto& [key, entry] : entries) {
        text += "  " + pad_right(key, width) + "  " + entry + "\n";
    }
    return text;
}

// A run's applied_settings.verification (docs/verification.md): each level
// or setting not checked as a "not checked: REASON" line, under the policy
// that judged them; "" for a run without the record (not verified, or an
// older daemon).
std::string not_checked_section(const Json& verification) {
    if (!verification.is_object()) return "";
    const std::string policy = text_field(verification, "policy");
    const std::vector<std::string> lines = not_checked_lines(field(verification, "not_checked"));
    std::string text = "verification (unchecked_levels = " + policy + "):";
    if (lines.empty()) return text + " nothing left unchecked\n";
    text += "\n";
    for (const std::string& line : lines) text += "  " + single_line(line) + "\n";
    return text;
}

}  // namespace

std::string format_run(const Json& reply) {
    const Json& run = field(reply, "run");
    if (!run.is_object()) return "no run in the daemon's answer\n";

    std::string text = "run " + text_field(run, "id") + " of sweep " + text_field(run, "sweep_id") +
                       ": " + text_field(run, "status") + "\n";
    // Scalars first, the important ones in a fixed order, then the rest.
    static const std::vector<std::string> kFirst = {
        "status",   "failure_reason", "config_id",  "workload_name", "repetition", "attempt",
        "sequence", "accel",          "started_at", "finished_at",   "vm_name",    "volume_name"};
    std::vector<std::pair<std::string, std::string>> scalars;
    std::set<std::string> shown = {"id", "sweep_id", "raw_output", "console_log"};
    auto add_scalar = [&](const std::string& key, const Json& value) {
        if (shown.count(key) || value.is_object() || value.is_array() || value.is_null()) return;
        shown.insert(key);
        scalars.emplace_back(key, single_line(format_setting_value(value)));
    };
    for (const auto& key : kFirst) add_scalar(key, field(run, key));
    for (const auto& item : run.items()) add_scalar(item.key(), item.value());
    std::size_t key_width = 0;
    for (const auto& [key, value] : scalars) key_width = std::max(key_width, key.size() + 1);
    for (const auto& [key, value] : scalars) {
        text += "  " + pad_right(key + ":", key_width) + " " + value + "\n";
    }

    text += not_checked_section(field(field(run, "applied_settings"), "verification"));
    // Objects as sections, nested objects flattened to dotted keys (the
    // verification record is the section above).
    for (const auto& item : run.items()) {
        if (shown.count(item.key())) continue;
        if (!item.value().is_object() && !item.value().is_array()) continue;
        Json value = item.value();
        if (item.key() == "applied_settings" && value.is_object()) value.erase("verification");
        text += run_section(item.key(), value);
    }
    for (const char* bulky : {"console_log", "raw_output"}) {
        const Json& value = field(run, bulky);
        if (value.is_string()) {
            text += std::string(bulky) + ": " +
                    std::to_string(value.get_ref<const std::string&>().size()) +
                    " bytes (hostctl --json results show " + text_field(run, "id") +
                    " prints it)\n";
        }
    }
    return text;
}

std::string format_apply(const Json& reply) {
    std::string snippet = text_field(reply, "snippet", "");
    if (!snippet.empty() && snippet.back() != '\n') snippet += '\n';
    return snippet;
}

namespace {

// The plan's configurations: the varying settings as columns (the id when
// nothing varies), "!" naming durability risks when any has one.
std::string plan_configurations_table(const Json& configurations,
                                      const std::vector<std::string>& axes) {
    bool any_risk = false;
    for (const auto& configuration : configurations)
        any_risk = any_risk || !string_list(field(configuration, "durability_risks")).empty();
    std::vector<Table::Column> header = {{"config"}};
    for (const auto& axis : axes) header.push_back({axis});
    if (any_risk) header.push_back({"!"});
    Table table(std::move(header));
    for (const auto& configuration : configurations) {
        const Json& settings = field(configuration, "settings");
        std::vector<std::string> line = {text_field(configuration, "config_id").substr(0, 12)};
        for (const auto& axis : axes) {
            // The disk_size axis is stored as disk_size_bytes.
            const std::string key = settings.contains(axis) ? axis : axis + "_bytes";
            line.push_back(setting_text(settings, key));
        }
        if (any_risk)
            line.push_back(join(string_list(field(configuration, "durability_risks")), " "));
        table.add_row(std::move(line));
    }
    return table.render();
}

// How many planned runs each basis of the estimate covers.
std::map<std::string, long> runs_by_basis(const Json& pairs) {
    std::map<std::string, long> runs;
    if (!pairs.is_array()) return runs;
    for (const auto& pair : pairs) runs[text_field(pair, "basis")] += integer_field(pair, "runs");
    return runs;
}

std::string plan_estimate_text(const Json& reply) {
    const Json& estimate = field(reply, "estimate");
    const long total = integer_field(reply, "total_runs");
    const long unknown = integer_field(estimate, "runs_unknown");
    if (total > 0 && unknown >= total) {
        return "estimated duration: unknown (no run of its workloads has succeeded on this "
               "daemon yet)\n";
    }
    const auto wall = number_field(estimate, "wall_seconds");
    std::map<std::string, long> runs = runs_by_basis(field(reply, "pairs"));
    std::string text = "estimated duration: " + std::string(unknown > 0 ? "at least " : "") +
                       (wall ? format_duration(*wall) : "-");
    const auto max_wall = number_field(estimate, "max_wall_seconds");
    if (max_wall && wall && *max_wall > *wall) {
        text += ", up to " + format_duration(*max_wall) + " with every adaptive round";
    }
    text += " (" + plural(integer_field(estimate, "max_parallel_runs", 1), "run", "runs") +
            " at a time)\n";
    text += "  from the median durations of " +
            plural(integer_field(estimate, "based_on_runs"), "past run", "past runs") + ": " +
            std::to_string(runs["configuration"]) +
            " planned runs by the same configuration and workload, " +
            std::to_string(runs["workload"]) + " by the same workload on other configurations";
    if (unknown > 0) text += ", " + std::to_string(unknown) + " unknown (workload never run here)";
    return text + "\n";
}

}  // namespace

std::string format_sweep_plan(const Json& reply) {
    const Json& configurations = field(reply, "configurations");
    const long config_count =
        configurations.is_array() ? static_cast<long>(configurations.size()) : 0;
    const Json& workloads = field(reply, "workloads");
    const long workload_count = workloads.is_array() ? static_cast<long>(workloads.size()) : 0;
    std::string text = "sweep \"" + text_field(reply, "name", "") + "\" would run " +
                       plural(integer_field(reply, "total_runs"), "run", "runs") + ": " +
                       plural(config_count, "configuration", "configurations") + " × " +
                       plural(workload_count, "workload", "workloads") + " × " +
                       plural(integer_field(reply, "repetitions", 1), "repetition", "repetitions") +
                       "\n";
    if (auto target = number_field(reply, "ci_target")) {
        text += "adaptive: up to " + plural(integer_field(reply, "max_total_runs"), "run", "runs") +
                " (" + std::to_string(integer_field(reply, "max_repetitions")) +
                " rounds) while a configuration's 95% CI is wider than ±" +
                format_fixed(*target * 100, *target * 100 < 1 ? 1 : 0) + "% of its mean\n";
    }
    if (long skipped = integer_field(reply, "skipped_by_filesystems"); skipped > 0) {
        text +=
            plural(skipped, "(configuration, workload) pair", "(configuration, workload) pairs") +
            " left out by their workload's `filesystems`\n";
    }
    const std::vector<std::string> axes = string_list(field(reply, "varying_axes"));
    if (!axes.empty()) text += "varying: " + join(axes, ", ") + "\n";
    if (config_count > 0) text += "\n" + plan_configurations_table(configurations, axes) + "\n";
    text += dropped_text(field(reply, "dropped"), axes);
    text += warnings_text(field(reply, "warnings"));
    text += plan_estimate_text(reply);
    if (const Json& refused = field(reply, "refused"); refused.is_string())
        text += "this daemon would refuse it: " + single_line(refused.get<std::string>()) + "\n";
    return text;
}

std::string format_version(const Json& reply, std::string_view client_version) {
    std::string text = "hostctl " + std::string(client_version) + "\n";
    text +=
        "disksweepd " + text_field(reply, "version") + " (API " + text_field(reply, "api") + ")\n";
    std::vector<std::string> capabilities = string_list(field(reply, "capabilities"));
    if (!capabilities.empty()) text += "capabilities: " + join(capabilities, ", ") + "\n";
    return text;
}

void SweepProgress::apply(const Json& event, double seconds_since_start) {
    const std::string type = text_field(event, "type", "");
    if (auto total = number_field(event, "total_runs")) total_runs_ = std::lround(*total);

    const Json& counts = field(event, "counts");
    if (counts.is_object()) {
        counts_ = parse_counts(counts);
    } else if (type == "run_started") {
        // Between authoritative counts, keep the bar moving on our own.
        if (counts_.pending > 0) --counts_.pending;
        ++counts_.running;
    } else if (type == "run_finished") {
        if (counts_.running > 0) --counts_.running;
        const auto status = parse_run_status(text_field(event, "status", ""));
        if (status == RunStatus::kSucceeded)
            ++counts_.succeeded;
        else if (status == RunStatus::kFailed)
            ++counts_.failed;
        else if (status == RunStatus::kTimedOut)
            ++counts_.timed_out;
        else if (status == RunStatus::kCancelled)
            ++counts_.cancelled;
    }

    if (type == "sweep_finished") {
        finished_ = true;
        final_status_ = text_field(event, "status", "");
        eta_seconds_.reset();
        return;
    }
    if (type == "keepalive" || type == "run_progress") return;  // counts unchanged

    if (!first_seen_at_) {
        first_seen_at_ = seconds_since_start;
        done_when_first_seen_ = counts_.done();
    }
    // The daemon's estimate wins whenever it has given one; ours is the rate
    // of runs finished while watching, once there is a second to go by.
    const long remaining = std::max(0L, total_runs_ - counts_.done());
    const double watched = seconds_since_start - *first_seen_at_;
    if (auto eta = number_field(event, "eta_s")) {
        eta_seconds_ = std::max(0.0, *eta);
        daemon_estimates_ = true;
    } else if (long done_since = counts_.done() - done_when_first_seen_;
               !daemon_estimates_ && done_since > 0 && watched >= 1.0) {
        eta_seconds_ = watched / static_cast<double>(done_since) * static_cast<double>(remaining);
    }
    if (remaining == 0) eta_seconds_.reset();
}

bool SweepProgress::all_succeeded() const {
    if (!finished_) return false;
    if (!final_status_.empty()) return parse_sweep_status(final_status_) == SweepStatus::kSucceeded;
    return counts_.failed == 0 && counts_.timed_out == 0 && counts_.cancelled == 0 &&
           counts_.succeeded == total_runs();
}

std::string format_progress_bar(const SweepProgress& progress, int bar_width) {
    const RunCounts& counts = progress.counts();
    long total = progress.total_runs();
    int filled = total > 0 ? static_cast<int>(bar_width * counts.done() / total) : 0;
    std::string bar = "[" + std::string(static_cast<std::size_t>(filled), '#') +
                      std::string(static_cast<std::size_t>(bar_width - filled), '-') + "]";
    std::string text = bar + "  " + std::to_string(counts.done()) + "/" + std::to_string(total) +
                       " runs  " + std::to_string(counts.succeeded) + " ok  " +
                       std::to_string(counts.failed) + " failed";
    if (counts.timed_out > 0) text += "  " + std::to_string(counts.timed_out) + " timed out";
    if (counts.cancelled > 0) text += "  " + std::to_string(counts.cancelled) + " cancelled";
    text += "  " + std::to_string(counts.running) + " running";
    if (!progress.finished() && counts.done() < total) {
        auto eta = progress.eta_seconds();
        text += "  ETA " + (eta ? format_duration(*eta) : std::string("?"));
    }
    return text;
}

std::string format_tally(const SweepProgress& progress) {
    const RunCounts& counts = progress.counts();
    std::string text = "(" + std::to_string(counts.done()) + "/" +
                       std::to_string(progress.total_runs()) + " done, " +
                       std::to_string(counts.failed) + " failed";
    if (auto eta = progress.eta_seconds()) text += ", ETA " + format_duration(*eta);
    return text + ")";
}

std::string format_event_line(const Json& event, const SweepProgress& progress) {
    const std::string type = text_field(event, "type", "");
    const std::string run = "run " + text_field(event, "run_id");
    const std::string message = single_line(text_field(event, "message", ""));
    const RunCounts& counts = progress.counts();
    auto tally = [&] { return format_tally(progress); };
    if (type == "snapshot") {
        return "sweep " + text_field(event, "sweep_id") + " " + text_field(event, "status") + ": " +
               std::to_string(counts.done()) + "/" + std::to_string(progress.total_runs()) +
               " runs done (" + counts_phrase(counts) + "), " + std::to_string(counts.running) +
               " running";
    }
    if (type == "run_started") {
        std::string text = run + " started";
        std::string workload = text_field(event, "workload", "");
        if (!workload.empty()) text += ": " + workload;
        if (field(event, "repetition").is_number()) {
            text += " repetition " + text_field(event, "repetition");
        }
        return text;
    }
    if (type == "run_progress") {
        if (message.empty()) return "";
        std::string phase = text_field(event, "phase", "");
        return run + ": " + (phase.empty() ? "" : phase + ": ") + message;
    }
    if (type == "run_finished") {
        std::string text = run + " " + text_field(event, "status");
        if (!message.empty()) text += ": " + message;
        return text + " " + tally();
    }
    if (type == "round_decision") return round_decision_text(field(event, "decision"));
    if (type == "sweep_finished")
        return format_watch_summary(integer_field(event, "sweep_id"), progress);
    return "";  // progress, keepalive and types newer than this client
}

std::string format_judged_metric(const Json& run_reply) {
    const Json& run = field(run_reply, "run");
    const Json& workload = field(run, "workload");
    const WorkloadKind* kind = find_workload_kind(text_field(workload, "kind", ""));
    if (kind == nullptr) return "";
    const std::string name(judged_metric(*kind, field(workload, "params")).name);
    const auto value = number_field(field(run, "metrics"), name);
    if (!value || !std::isfinite(*value)) return "";
    char digits[32];
    std::snprintf(digits, sizeof digits, std::fabs(*value) >= 100 ? "%.0f" : "%.3g", *value);
    return name + " " + digits;
}

std::optional<long long> parse_utc_seconds(std::string_view text) {
    std::tm utc{};
    const std::string copy(text);
    const char* end = ::strptime(copy.c_str(), "%Y-%m-%dT%H:%M:%SZ", &utc);
    if (end == nullptr || *end != '\0') return std::nullopt;
    return static_cast<long long>(::timegm(&utc));
}

RunIdentity run_identity(const Json& run_reply) {
    const Json& run = field(run_reply, "run");
    RunIdentity identity;
    if (!run.is_object()) return identity;
    identity.config_label = run_config_label(field(run, "config"));
    identity.workload = text_field(run, "workload_name", "");
    identity.started_at = parse_utc_seconds(text_field(run, "started_at", ""));
    return identity;
}

std::string format_watch_summary(long sweep_id, const SweepProgress& progress) {
    std::string status = progress.final_status().empty() ? "finished" : progress.final_status();
    return "sweep " + std::to_string(sweep_id) + " " + status + ": " +
           counts_phrase(progress.counts()) + " of " + std::to_string(progress.total_runs()) +
           " runs";
}

namespace {
// "file (file disks), rbd:rbd (rbd disks)": what sweeps may name as storage.
std::string format_storages(const Json& backends) {
    if (!backends.is_object() || !backends.contains("storages") ||
        !backends["storages"].is_array()) {
        return "?";
    }
    std::vector<std::string> storages;
    for (const Json& storage : backends["storages"]) {
        if (!storage.is_object()) continue;
        storages.push_back(format_setting_value(storage.value("name", Json("?"))) + " (" +
                           format_setting_value(storage.value("produces", Json("?"))) + " disks)");
    }
    return storages.empty() ? "none" : join(storages, ", ");
}
// "local (libvirt, 1 at once, tcg), pve1 (proxmox, 2 at once, kvm)": where
// runs are placed.
std::string format_hosts(const Json& hosts) {
    if (!hosts.is_array()) return "?";
    std::vector<std::string> described;
    for (const Json& host : hosts) {
        if (!host.is_object()) continue;
        // A Proxmox host's release and the rules that apply to it.
        const Json& versions = field(host, "versions");
        const std::string release =
            versions.contains("proxmox")
                ? " " + text_field(versions, "proxmox", "?") +
                      (versions.contains("proxmox_rules")
                           ? " (rules " + text_field(versions, "proxmox_rules", "?") + ")"
                           : "")
                : "";
        described.push_back(format_setting_value(host.value("name", Json("?"))) + " (" +
                            format_setting_value(host.value("kind", Json("?"))) + release + ", " +
                            format_setting_value(host.value("parallel", Json("?"))) + " at once, " +
                            format_setting_value(host.value("accel", Json("?"))) + ")");
    }
    return described.empty() ? "none" : join(described, ", ");
}
// "              node2: backed off until T (2 failures in a row): REASON"
// per host whose last runs failed by its fault (its "placement").
std::string host_failure_lines(const Json& hosts) {
    if (!hosts.is_array()) return "";
    std::string text;
    for (const Json& host : hosts) {
        const Json& connection = field(host, "connection");
        if (text_field(connection, "state", "") == "unreachable") {
            text += "              " + format_setting_value(host.value("name", Json("?"))) +
                    ": unreachable: " + single_line(text_field(connection, "error", "?")) + "\n";
        }
        const Json& placement = field(host, "placement");
        const long failures = integer_field(placement, "consecutive_failures");
        if (failures <= 0) continue;
        const Json& until = field(placement, "backed_off_until");
        text += "              " + format_setting_value(host.value("name", Json("?"))) + ": " +
                (until.is_string() ? "backed off until " + until.get<std::string>() + " (" : "(") +
                plural(failures, "failure", "failures") +
                " in a row): " + single_line(text_field(placement, "last_failure", "?")) + "\n";
    }
    return text;
}
}  // namespace

namespace {
// One line per suite: its images ready (with the kernel), or what builds
// them. A daemon from before suites sends none: no lines.
std::string format_guest_images(const Json& images) {
    if (!images.is_array()) return "";
    std::map<std::string, std::vector<const Json*>> by_suite;
    std::vector<std::string> order;
    for (const Json& image : images) {
        if (!image.is_object()) continue;
        const std::string suite = image.value("suite", std::string("?"));
        if (!by_suite.contains(suite)) order.push_back(suite);
        by_suite[suite].push_back(&image);
    }
    std::string out;
    for (const std::string& suite : order) {
        std::vector<std::string> ready, missing;
        std::string kernel, problem;
        for (const Json* image : by_suite[suite]) {
            const std::string variant = image->value("variant", std::string());
            const std::string name = variant.empty() ? "base" : variant;
            if (image->value("ready", false)) {
                ready.push_back(name);
                if (kernel.empty()) kernel = image->value("kernel", std::string());
            } else {
                missing.push_back(name);
                if (problem.empty()) problem = image->value("problem", std::string());
            }
        }
        out += "  " + suite + ": ";
        if (!ready.empty()) {
            out += join(ready, ", ") + (kernel.empty() ? "" : " (kernel " + kernel + ")");
        }
        if (!missing.empty()) {
            const auto build = problem.find("build it with: ");
            out += std::string(ready.empty() ? "" : "; ") + "not built: " + join(missing, ", ") +
                   (build == std::string::npos ? "" : " (" + problem.substr(build) + ")");
        }
        out += "\n";
    }
    return out.empty() ? "" : "guest suites:\n" + out;
}
}  // namespace

std::string format_status(const Json& reply) {
    auto text = [](const Json& object, const char* key) {
        return object.is_object() && object.contains(key) ? format_setting_value(object[key])
                                                          : std::string("?");
    };
    const Json& hypervisor = reply.value("hypervisor", Json::object());
    const Json& versions = reply.value("versions", Json::object());
    const Json& image = reply.value("guest_image", Json::object());
    const Json& config = reply.value("config", Json::object());
    std::string out;
    out += "disksweepd " + text(reply, "version") + " (API " + text(reply, "api") + ")\n";
    // A daemon from before instances sends none: no line rather than "?".
    if (const Json& instance = reply.value("instance", Json()); instance.is_object()) {
        out += "instance:     " + text(instance, "name") + " (" + text(instance, "source") +
               "), guests and volumes named " + text(instance, "resource_prefix") + "*\n";
    }
    out += "acceleration: " + text(reply, "accel") + " (" + text(reply, "accel_reason") + ")\n";
    out += "hypervisor:   " + text(hypervisor, "backend") + " " + text(hypervisor, "uri") +
           " (libvirt " + text(versions, "libvirt") + ", qemu " + text(versions, "qemu") + ")\n";
    out += "hosts:        " + format_hosts(reply.value("hosts", Json::array())) + "\n";
    out += host_failure_lines(reply.value("hosts", Json::array()));
    out += "storages:     " + format_storages(reply.value("backends", Json::object())) + "\n";
    bool ready = image.is_object() && image.value("ready", false);
    out += "guest image:  " +
           (ready ? text(config, "image_dir") : "NOT READY: " + text(image, "problem")) + "\n";
    out += format_guest_images(reply.value("guest_images", Json()));
    out += "database:     " + text(config, "database") + "\n";
    out += "parallel:     " + text(config, "max_parallel_runs") + " run(s) at once\n";
    return out;
}

std::string format_host_check(const Json& reply) {
    const Json& check = field(reply, "check");
    const std::string name = text_field(reply, "host", "?");
    if (!check.is_object() || !check.contains("ready")) {
        // A host with nothing to check but its connection (libvirt).
        const std::string state = text_field(check, "state", "?");
        std::string out = name + ": " + state;
        if (const std::string error = text_field(check, "error", ""); !error.empty())
            out += ": " + single_line(error);
        return out + "\n";
    }
    std::string out = name + ": Proxmox VE " + text_field(check, "proxmox", "?") + " (rules of " +
                      text_field(check, "rules", "?") +
                      "): " + (check.value("ready", false) ? "ready to sweep" : "CANNOT SWEEP") +
                      "\n";
    out += "QEMU monitor: " + text_field(check, "monitor", "?") + "\n";
    const std::string report = text_field(check, "report", "");
    if (!report.empty()) out += report;
    return out;
}

}  // namespace ds::hostctl
