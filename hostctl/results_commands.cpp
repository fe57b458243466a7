#include "hostctl/results_commands.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/text.h"
#include "common/workload_kind.h"
#include "hostctl/compare_format.h"
#include "hostctl/results_format.h"

namespace ds::hostctl {

ExitCode print_compare(Invocation& invocation, long sweep_id, CompareView view,
                       const std::string& metric) {
    // Everything but the narrow table shows every metric in full (medians
    // included), which the daemon computes on request.
    std::string target = "/v1/sweeps/" + std::to_string(sweep_id) + "/compare";
    std::vector<std::string> query;
    if (!metric.empty()) query.push_back("metric=" + metric);
    if (view != CompareView::kNarrow || invocation.json_output) query.push_back("all=1");
    for (std::size_t i = 0; i < query.size(); ++i) target += (i == 0 ? "?" : "&") + query[i];
    ApiReply reply = invocation.client.get(target);
    if (!reply.ok()) return invocation.fail(reply);
    if (invocation.json_output) {
        invocation.print_json(reply.body);
        return ExitCode::kOk;
    }
    auto decoded = api::decode<api::CompareReply>(reply.body);
    if (!decoded.ok()) return invocation.fail_to_read(decoded.error());
    const api::CompareReply& compare = decoded.value();
    if (view == CompareView::kCsv) {
        invocation.out << format_compare_csv(compare);
    } else {
        invocation.out << (view == CompareView::kAll ? format_compare_wide(compare)
                                                     : format_compare_table(compare));
        invocation.out << format_golden_datasets(compare);
    }
    return ExitCode::kOk;
}

namespace {

// Metric names as the daemon writes them ([a-z0-9_], a few more to be
// lenient); anything else would need escaping in the query string.
bool is_metric_name(const std::string& name) {
    return !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '_' || c == '.' || c == '-';
    });
}

ExitCode results_compare(Invocation& invocation) {
    auto id = id_argument(invocation, "SWEEP");
    if (!id) return ExitCode::kUsage;
    if (invocation.flag("csv") && invocation.json_output) {
        return invocation.usage_error("--csv and --json exclude each other");
    }
    if (invocation.flag("csv") && invocation.flag("all")) {
        return invocation.usage_error("--csv already holds every metric; leave out --all");
    }
    const std::string metric = invocation.value("metric");
    if (!invocation.value("metric").empty() && !is_metric_name(metric))
        return invocation.usage_error("--metric takes a metric name like read_iops, not '" +
                                      metric + "'");
    const CompareView view = invocation.flag("csv")   ? CompareView::kCsv
                             : invocation.flag("all") ? CompareView::kAll
                                                      : CompareView::kNarrow;
    return print_compare(invocation, *id, view, metric);
}

ExitCode results_show(Invocation& invocation) {
    auto id = id_argument(invocation, "RUN");
    if (!id) return ExitCode::kUsage;
    return print_get(invocation, "/v1/runs/" + std::to_string(*id), format_run);
}

// Writes `text` to `path` so that a reader finds the old file or the whole
// new one, never part of it: a temporary file beside it, renamed over it.
// The file gets mode 0666 less the umask, as a plain `> path` would.
Status write_file_atomically(const std::string& path, std::string_view text) {
    std::string temporary = path + ".XXXXXX";
    const int fd = ::mkstemp(temporary.data());
    if (fd < 0)
        return make_error(errc::kIo,
                          "cannot create a file beside " + path + ": " + std::strerror(errno));
    const mode_t mask = ::umask(0);
    ::umask(mask);
    bool written = ::fchmod(fd, 0666 & ~mask) == 0;
    for (std::size_t done = 0; written && done < text.size();) {
        const ssize_t count = ::write(fd, text.data() + done, text.size() - done);
        if (count < 0 && errno == EINTR) continue;
        written = count > 0;
        if (written) done += static_cast<std::size_t>(count);
    }
    const int write_error = errno;
    const bool closed = ::close(fd) == 0;
    if (written && closed && ::rename(temporary.c_str(), path.c_str()) == 0) return ok_status();
    const int error = written && closed ? errno : write_error;
    ::unlink(temporary.c_str());
    return make_error(errc::kIo, "cannot write " + path + ": " + std::strerror(error));
}

// The sweep's HTML report on stdout, or in the --output file.
ExitCode results_report(Invocation& invocation) {
    auto id = id_argument(invocation, "SWEEP");
    if (!id) return ExitCode::kUsage;
    if (invocation.json_output)
        return invocation.usage_error("the report is an HTML page; --json does not apply");
    DocumentReply reply =
        invocation.client.get_document("/v1/sweeps/" + std::to_string(*id) + "/report");
    if (!reply.ok()) return invocation.fail(*reply.failure);
    const std::string path = invocation.value("output");
    if (path.empty() || path == "-") {
        invocation.out << reply.body << std::flush;
        return ExitCode::kOk;
    }
    if (Status written = write_file_atomically(path, reply.body); !written.ok()) {
        invocation.err << "hostctl: " << written.error().message << "\n";
        return ExitCode::kFailed;
    }
    invocation.out << "wrote " << path << " (" << (reply.body.size() + 1023) / 1024 << " KiB)\n";
    return ExitCode::kOk;
}

// "a, b or c".
std::string listed_with_or(const std::vector<std::string>& items) {
    if (items.size() < 2) return join(items, "");
    const std::vector<std::string> head(items.begin(), items.end() - 1);
    return join(head, ", ") + " or " + items.back();
}

// The apply formats (daemon/apply/apply_snippets.h), each with what it
// prints: the disk's, then the server settings formats of the workload
// kinds' rules.
std::vector<std::pair<std::string, std::string>> apply_formats_described() {
    std::vector<std::pair<std::string, std::string>> formats = {
        {"qm", "a `qm set` line for Proxmox VE"},
        {"libvirt", "the <disk> element"},
        {"fstab", "the guest's mount line and mkfs command"}};
    for (const ServerSettingsRules* rules : server_settings_rule_sets())
        formats.emplace_back(rules->format, rules->format_help);
    return formats;
}

// --format's help: "qm (...), libvirt (...), fstab (...) or mycnf (the
// [mysqld] lines); required".
std::string_view format_flag_help() {
    static const std::string help = [] {
        std::vector<std::string> items;
        for (const auto& [name, prints] : apply_formats_described())
            items.push_back(name + " (" + prints + ")");
        return listed_with_or(items) + "; required";
    }();
    return help;
}

// --workload's help: "mycnf: which MariaDB workload's server variables, when
// they differ".
std::string_view workload_flag_help() {
    static const std::string help = [] {
        std::vector<std::string> formats, servers;
        for (const ServerSettingsRules* rules : server_settings_rule_sets()) {
            formats.emplace_back(rules->format);
            servers.emplace_back(rules->server);
        }
        return join(formats, ", ") + ": which " + listed_with_or(servers) +
               " workload's server variables, when they differ";
    }();
    return help;
}

ExitCode results_apply(Invocation& invocation) {
    if (invocation.value("format").empty()) {
        std::vector<std::string> names;
        for (const auto& [name, prints] : apply_formats_described()) names.push_back(name);
        return invocation.usage_error("--format is required: " + listed_with_or(names));
    }
    std::string target =
        "/v1/configurations/" + query_component(invocation.argument("CONFIG")) + "/apply";
    char separator = '?';
    for (const char* option : {"format", "vmid", "storage", "workload"}) {
        const std::string value = invocation.value(option);
        if (value.empty()) continue;
        target += separator + std::string(option) + "=" + query_component(value);
        separator = '&';
    }
    return print_get(invocation, target, format_apply);
}

}  // namespace

const std::vector<CommandSpec>& results_commands() {
    static const std::vector<CommandSpec> kCommands = {
        {"results compare",
         {"SWEEP"},
         {{"metric", "rank, compare and show this metric instead of each workload's primary one",
           "NAME"},
          {"all", "the wide table: every metric as mean ± stddev, and vs host"},
          {"csv", "print CSV: every metric's n, mean, median, stddev, cv, ci95, and the ratios"}},
         "compare a sweep's configurations with its baseline: the primary metric with its "
         "95% CI, the ratio to the baseline, the verdict, best first",
         results_compare},
        {"results show", {"RUN"}, {}, "show one run: settings, timings, metrics", results_show},
        {"results report",
         {"SWEEP"},
         {{"output", "write the page to FILE (atomically) instead of standard output", "FILE",
           'o'}},
         "the sweep's report as one self-contained HTML page: verdicts, charts with 95% CIs, "
         "latency, throughput over time, verified settings, durability risks, environment",
         results_report},
        {"results apply",
         {"CONFIG"},
         {{"format", format_flag_help(), "FORMAT"},
          {"vmid", "qm: the Proxmox VE VM id (default: the placeholder VMID)", "N"},
          {"storage", "qm: the Proxmox VE storage for the disk (default: STORAGE)", "PVESTORAGE"},
          {"workload", workload_flag_help(), "NAME"}},
         "print configuration CONFIG (its id, or a unique prefix of it) as you would apply it; "
         "durability risks come first, as comment lines of the format",
         results_apply},
    };
    return kCommands;
}

}  // namespace ds::hostctl
