#include "hostctl/sweep_commands.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "hostctl/results_commands.h"
#include "hostctl/submission_format.h"
#include "hostctl/sweep_format.h"
#include "hostctl/sweep_watch.h"

namespace ds::hostctl {
namespace {

// The text of the sweep spec named by the FILE argument; nullopt (said on
// err) when it cannot be read.
std::optional<std::string> read_spec_file(Invocation& invocation) {
    const std::string& path = invocation.argument("FILE");
    std::ifstream file(path, std::ios::binary);
    if (!file) {
        invocation.err << "hostctl: cannot read sweep spec " << path << ": " << std::strerror(errno)
                       << "\n";
        return std::nullopt;
    }
    std::ostringstream text;
    text << file.rdbuf();
    if (file.bad()) {
        invocation.err << "hostctl: cannot read sweep spec " << path << "\n";
        return std::nullopt;
    }
    return text.str();
}

// POSTs the FILE argument's spec to `target`. X-Spec-Name lets the daemon's
// errors point at the file ("FILE:7:1: ...").
std::optional<ApiReply> post_spec_file(Invocation& invocation, const std::string& target) {
    auto text = read_spec_file(invocation);
    if (!text) return std::nullopt;
    return invocation.client.post(target, std::move(*text), "application/toml",
                                  {{"X-Spec-Name", invocation.argument("FILE")}});
}

ExitCode sweep_submit(Invocation& invocation) {
    if (auto refused = refuse_watch_flags(invocation)) return *refused;
    if (invocation.flag("quiet") && !invocation.flag("wait"))
        return invocation.usage_error("--quiet is about the watch: it needs --wait");
    auto posted = post_spec_file(invocation, "/v1/sweeps");
    if (!posted) return ExitCode::kFailed;
    const ApiReply& reply = *posted;
    if (!reply.ok()) return invocation.fail(reply);
    // --quiet: the summary line names the sweep; what was scheduled is not news.
    if (!invocation.flag("quiet")) {
        if (ExitCode printed = print_reply(invocation, reply, format_submitted);
            printed != ExitCode::kOk)
            return printed;
    }
    if (!invocation.flag("wait")) return ExitCode::kOk;

    const auto submitted = api::decode<api::SweepSubmitReply>(reply.body);
    if (!submitted.ok()) return invocation.fail_to_read(submitted.error());
    if (!submitted->sweep.id) {
        invocation.err << "hostctl: disksweepd's answer names no sweep id to wait for\n";
        return ExitCode::kFailed;
    }
    const long sweep_id = *submitted->sweep.id;
    ExitCode outcome = watch_sweep(invocation, sweep_id);
    if (outcome != ExitCode::kOk && outcome != ExitCode::kFailed) return outcome;
    if (!invocation.json_output) invocation.out << "\n";
    ExitCode compared = print_compare(invocation, sweep_id, CompareView::kNarrow);
    return compared == ExitCode::kOk ? outcome : compared;
}

ExitCode sweep_plan(Invocation& invocation) {
    auto posted = post_spec_file(invocation, "/v1/sweeps/plan");
    if (!posted) return ExitCode::kFailed;
    return print_reply(invocation, *posted, format_sweep_plan);
}

ExitCode sweep_list(Invocation& invocation) {
    return print_get(invocation, "/v1/sweeps", format_sweep_list);
}

// The page --limit and --after ask for (each a non-negative integer);
// nullopt after a usage error.
std::optional<api::RunsPageRequest> page_request(Invocation& invocation) {
    api::RunsPageRequest request;
    for (auto [name, target] :
         {std::pair{"limit", &request.limit}, std::pair{"after", &request.after}}) {
        const std::string text = invocation.value(name);
        if (text.empty()) continue;
        long number = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
        if (ec != std::errc() || end != text.data() + text.size() || number < 0) {
            invocation.usage_error("--" + std::string(name) +
                                   " must be a non-negative integer, not '" + text + "'");
            return std::nullopt;
        }
        *target = number;
    }
    return request;
}

ExitCode sweep_show(Invocation& invocation) {
    auto id = id_argument(invocation, "ID");
    if (!id) return ExitCode::kUsage;
    auto page = page_request(invocation);
    if (!page) return ExitCode::kUsage;
    return print_get(invocation, "/v1/sweeps/" + std::to_string(*id) + page->query(),
                     format_sweep_show);
}

ExitCode sweep_cancel(Invocation& invocation) {
    auto id = id_argument(invocation, "ID");
    if (!id) return ExitCode::kUsage;
    return print_reply(
        invocation, invocation.client.post("/v1/sweeps/" + std::to_string(*id) + "/cancel", "", ""),
        format_cancelled);
}

ExitCode sweep_watch(Invocation& invocation) {
    if (auto refused = refuse_watch_flags(invocation)) return *refused;
    auto id = id_argument(invocation, "ID");
    if (!id) return ExitCode::kUsage;
    return watch_sweep(invocation, *id);
}

std::vector<FlagSpec> with_flags(std::vector<FlagSpec> flags, const std::vector<FlagSpec>& more) {
    flags.insert(flags.end(), more.begin(), more.end());
    return flags;
}

}  // namespace

const std::vector<CommandSpec>& sweep_commands() {
    static const std::vector<CommandSpec> kCommands = {
        {"sweep submit",
         {"FILE"},
         with_flags({{"wait", "then follow it like 'sweep watch' and print 'results compare'"}},
                    watch_flags()),
         "submit the sweep spec (TOML) in FILE; prints the sweep id, its number of runs and "
         "the combinations dropped as impossible",
         sweep_submit},
        {"sweep plan",
         {"FILE"},
         {},
         "show what the sweep spec in FILE would run, without running it: its configurations, "
         "the combinations dropped, the run count and a duration estimated from this daemon's "
         "past runs",
         sweep_plan},
        {"sweep list", {}, {}, "list all sweeps with their progress", sweep_list},
        {"sweep show",
         {"ID"},
         {{"limit", "runs per page (the daemon's default page when not given)", "N"},
          {"after", "start after the run with this sequence number (the page's 'next')", "SEQ"}},
         "show a sweep, its repetition rounds and a page of its runs",
         sweep_show},
        {"sweep cancel",
         {"ID"},
         {},
         "cancel a sweep: pending runs are dropped, running ones stopped",
         sweep_cancel},
        {"sweep watch",
         {"ID"},
         watch_flags(),
         "follow a sweep until it finishes: on a terminal a line per running run (phase, "
         "elapsed, fraction) redrawn in place above a bar with the ETA, else a line per run "
         "start, phase change and end; exit 0 only if every run succeeded",
         sweep_watch},
    };
    return kCommands;
}

}  // namespace ds::hostctl
