#include "hostctl/commands.h"

#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "common/result.h"
#include "common/status.h"
#include "common/version.h"
#include "hostctl/compare_format.h"
#include "hostctl/daemon_client.h"
#include "hostctl/results_format.h"
#include "hostctl/status_format.h"
#include "hostctl/submission_format.h"
#include "hostctl/sweep_format.h"
#include "hostctl/watch_renderer.h"

namespace ds::hostctl {
namespace po = boost::program_options;
namespace {

// Everything a handler needs: the client, the parsed command line, streams.
struct Invocation {
    std::string command;  // e.g. "sweep show", for messages
    std::string usage;
    DaemonClient client;
    bool json_output = false;
    std::map<std::string, std::string> arguments;  // positional, by name
    std::set<std::string> flags;                   // sub-command switches given
    std::map<std::string, std::string> values;     // sub-command options given (--name VALUE)
    std::ostream& out;
    std::ostream& err;
    const Environment& environment;

    const std::string& argument(const std::string& name) const { return arguments.at(name); }
    bool flag(const std::string& name) const { return flags.count(name) > 0; }
    // The value of option --name, "" when not given.
    std::string value(const std::string& name) const {
        auto found = values.find(name);
        return found == values.end() ? std::string() : found->second;
    }

    ExitCode usage_error(const std::string& message) const {
        err << "hostctl: " << command << ": " << message << "\nusage: " << usage << "\n";
        return ExitCode::kUsage;
    }
    // Prints why an API call failed; the exit code says what kind of failure.
    ExitCode fail(const ApiReply& reply) const { return fail(*reply.failure); }
    ExitCode fail(const ApiFailure& failure) const {
        err << "hostctl: " << failure.message << "\n";
        return failure.kind == ApiFailure::Kind::kUnreachable ? ExitCode::kUnreachable
                                                              : ExitCode::kFailed;
    }
    // --json prints the API's answer as one line of JSON (so that a
    // `sweep submit --wait --json` is NDJSON as a whole).
    void print_json(const Json& body) const { out << body.dump() << "\n" << std::flush; }

    std::chrono::steady_clock::time_point now() const {
        return environment.now ? environment.now() : std::chrono::steady_clock::now();
    }
};

using CommandHandler = ExitCode (*)(Invocation&);

// A sub-command switch (--name), or with a value_name an option taking a
// value (--name VALUE).
struct FlagSpec {
    std::string_view name;
    std::string_view help;
    std::string_view value_name = {};
    char short_name = 0;  // e.g. 'o': -o is the same as --output
};

// "--output FILE", "-o|--output FILE" (usage) or "-o, --output FILE" (help).
std::string flag_text(const FlagSpec& flag, std::string_view short_separator) {
    std::string text = flag.short_name
                           ? std::string("-") + flag.short_name + std::string(short_separator)
                           : std::string();
    text += "--" + std::string(flag.name);
    return flag.value_name.empty() ? text : text + " " + std::string(flag.value_name);
}

// One sub-command: its words, positional arguments (all required, in order),
// switches, help text and handler. Usage lines and parsing come from this.
struct CommandSpec {
    std::string_view name;
    std::vector<std::string_view> arguments;
    std::vector<FlagSpec> flags;
    std::string_view help;
    CommandHandler handler;
};

constexpr std::string_view kGlobalUsage = "hostctl [--socket PATH] [--json]";

std::string command_usage(const CommandSpec& command) {
    std::string usage = std::string(command.name);
    for (auto argument : command.arguments) usage += " " + std::string(argument);
    for (const auto& flag : command.flags) usage += " [" + flag_text(flag, "|") + "]";
    return usage;
}

// A positive integer id argument, or a usage error.
std::optional<long> id_argument(Invocation& invocation, const std::string& name) {
    const std::string& text = invocation.argument(name);
    long id = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || id <= 0) {
        invocation.usage_error(name + " must be a positive integer, not '" + text + "'");
        return std::nullopt;
    }
    return id;
}

// Prints an answer: its JSON with --json, else `format` of it.
ExitCode print_reply(Invocation& invocation, const ApiReply& reply,
                     std::string (*format)(const Json&)) {
    if (!reply.ok()) return invocation.fail(reply);
    if (invocation.json_output) {
        invocation.print_json(reply.body);
    } else {
        invocation.out << format(reply.body);
    }
    return ExitCode::kOk;
}

ExitCode print_get(Invocation& invocation, const std::string& target,
                   std::string (*format)(const Json&)) {
    return print_reply(invocation, invocation.client.get(target), format);
}

// The options of a watch, the same for `sweep watch` and `sweep submit
// --wait` (the global --json is the third way of showing one).
const std::vector<FlagSpec>& watch_flags() {
    static const std::vector<FlagSpec> kFlags = {
        {"quiet", "show only the runs that did not succeed, the sweep's summary and errors"}};
    return kFlags;
}

// A usage error when the watch's options contradict each other.
std::optional<ExitCode> refuse_watch_flags(const Invocation& invocation) {
    if (invocation.flag("quiet") && invocation.json_output)
        return invocation.usage_error("--quiet and --json exclude each other");
    return std::nullopt;
}

// How much a watch shows: --json, --quiet, else everything.
WatchDetail watch_detail(const Invocation& invocation) {
    if (invocation.json_output) return WatchDetail::kJson;
    return invocation.flag("quiet") ? WatchDetail::kQuiet : WatchDetail::kNormal;
}

// Redraws a terminal's live lines once a second while it lives, so that
// elapsed times keep moving when no event comes (a booting run sends none).
// The renderer is shared with the event callback: `mutex` guards it.
class WatchTicker {
  public:
    WatchTicker(WatchRenderer& renderer, std::mutex& mutex, std::function<double()> seconds)
        : mutex_(mutex), thread_([this, &renderer, seconds = std::move(seconds)] {
              std::unique_lock lock(mutex_);
              while (!wake_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; })) {
                  try {
                      renderer.tick(seconds());
                  } catch (...) {
                      return;  // no exception leaves the thread; the stream's own writes fail too
                  }
              }
          }) {}
    WatchTicker(const WatchTicker&) = delete;
    WatchTicker& operator=(const WatchTicker&) = delete;
    // Stops and joins the thread; the caller must not hold the mutex.
    ~WatchTicker() {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        thread_.join();
    }

  private:
    std::mutex& mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;  // guarded by mutex_
    std::thread thread_;     // last: starts once the members above exist
};

// Follows a sweep's events until it finishes. kOk when every run succeeded,
// kFailed when some did not (or the stream broke), kUnreachable as usual.
ExitCode watch_sweep(Invocation& invocation, long sweep_id) {
    const auto started = invocation.now();
    const auto seconds = [&invocation, started] {
        return std::chrono::duration<double>(invocation.now() - started).count();
    };
    const WatchDetail detail = watch_detail(invocation);
    // What events do not carry (a run's metrics; the configuration of a run
    // that started before the watch): one GET per such run, on a second
    // connection (the daemon serves each on a thread of its own).
    const RunLookup run_lookup = [&client = invocation.client](long run_id) {
        ApiReply reply = client.get("/v1/runs/" + std::to_string(run_id));
        return reply.ok() ? reply.body : Json();
    };
    WatchRenderer renderer(
        invocation.out, detail,
        {invocation.environment.stdout_is_tty, invocation.environment.terminal_columns},
        run_lookup);
    std::mutex mutex;
    std::optional<WatchTicker> ticker;
    if (detail == WatchDetail::kNormal && invocation.environment.stdout_is_tty &&
        invocation.environment.redraw_each_second)
        ticker.emplace(renderer, mutex, seconds);
    ApiReply reply = invocation.client.follow("/v1/sweeps/" + std::to_string(sweep_id) + "/events",
                                              [&](const Json& event) {
                                                  std::lock_guard lock(mutex);
                                                  renderer.on_event(event, seconds());
                                                  return !renderer.progress().finished();
                                              });
    ticker.reset();
    renderer.end(sweep_id);
    if (!reply.ok()) return invocation.fail(reply);
    if (!renderer.progress().finished()) {
        invocation.err << "hostctl: the event stream of sweep " << sweep_id
                       << " ended before the sweep finished\n";
        return ExitCode::kFailed;
    }
    return renderer.progress().all_succeeded() ? ExitCode::kOk : ExitCode::kFailed;
}

// How `results compare` prints: the narrow table, every metric (--all), CSV.
enum class CompareView { kNarrow, kAll, kCsv };

// Metric names as the daemon writes them ([a-z0-9_], a few more to be
// lenient); anything else would need escaping in the query string.
bool is_metric_name(const std::string& name) {
    return !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '_' || c == '.' || c == '-';
    });
}

ExitCode print_compare(Invocation& invocation, long sweep_id, CompareView view,
                       const std::string& metric = "") {
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
    } else if (view == CompareView::kCsv) {
        invocation.out << format_compare_csv(reply.body);
    } else {
        invocation.out << (view == CompareView::kAll ? format_compare_wide(reply.body)
                                                     : format_compare_table(reply.body));
        invocation.out << format_golden_datasets(reply.body);
    }
    return ExitCode::kOk;
}

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
    if (!invocation.flag("quiet")) print_reply(invocation, reply, format_submitted);
    if (!invocation.flag("wait")) return ExitCode::kOk;

    Json id;
    if (reply.body.is_object() && reply.body.contains("sweep") && reply.body["sweep"].is_object()) {
        id = reply.body["sweep"].value("id", Json());
    }
    if (!id.is_number_integer()) {
        invocation.err << "hostctl: disksweepd's answer names no sweep id to wait for\n";
        return ExitCode::kFailed;
    }
    const long sweep_id = id.get<long>();
    ExitCode outcome = watch_sweep(invocation, sweep_id);
    if (outcome != ExitCode::kOk && outcome != ExitCode::kFailed) return outcome;
    if (!invocation.json_output) invocation.out << "\n";
    ExitCode compared = print_compare(invocation, sweep_id, CompareView::kNarrow);
    return compared == ExitCode::kOk ? outcome : compared;
}

ExitCode sweep_list(Invocation& invocation) {
    return print_get(invocation, "/v1/sweeps", format_sweep_list);
}

// "?limit=N&after=SEQ" from --limit and --after (each a non-negative
// integer), "" when neither is given; nullopt after a usage error.
std::optional<std::string> page_query(Invocation& invocation) {
    std::string query;
    for (const char* name : {"limit", "after"}) {
        const std::string text = invocation.value(name);
        if (text.empty()) continue;
        long number = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
        if (ec != std::errc() || end != text.data() + text.size() || number < 0) {
            invocation.usage_error("--" + std::string(name) +
                                   " must be a non-negative integer, not '" + text + "'");
            return std::nullopt;
        }
        query += (query.empty() ? "?" : "&") + std::string(name) + "=" + std::to_string(number);
    }
    return query;
}

ExitCode sweep_show(Invocation& invocation) {
    auto id = id_argument(invocation, "ID");
    if (!id) return ExitCode::kUsage;
    auto query = page_query(invocation);
    if (!query) return ExitCode::kUsage;
    return print_get(invocation, "/v1/sweeps/" + std::to_string(*id) + *query, format_sweep_show);
}

ExitCode sweep_cancel(Invocation& invocation) {
    auto id = id_argument(invocation, "ID");
    if (!id) return ExitCode::kUsage;
    ApiReply reply =
        invocation.client.post("/v1/sweeps/" + std::to_string(*id) + "/cancel", "", "");
    if (!reply.ok()) return invocation.fail(reply);
    if (invocation.json_output) {
        invocation.print_json(reply.body);
    } else {
        invocation.out << format_cancelled(reply.body);
    }
    return ExitCode::kOk;
}

ExitCode sweep_watch(Invocation& invocation) {
    if (auto refused = refuse_watch_flags(invocation)) return *refused;
    auto id = id_argument(invocation, "ID");
    if (!id) return ExitCode::kUsage;
    return watch_sweep(invocation, *id);
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

// `text` as one URI query component: RFC 3986 unreserved characters as
// they are, every other byte as %XX.
std::string query_component(std::string_view text) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string encoded;
    for (unsigned char c : text) {
        if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
            encoded += static_cast<char>(c);
        } else {
            encoded += {'%', kHex[c >> 4], kHex[c & 0xF]};
        }
    }
    return encoded;
}

ExitCode results_apply(Invocation& invocation) {
    if (invocation.value("format").empty())
        return invocation.usage_error("--format is required: qm, libvirt, fstab or mycnf");
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

ExitCode sweep_plan(Invocation& invocation) {
    auto posted = post_spec_file(invocation, "/v1/sweeps/plan");
    if (!posted) return ExitCode::kFailed;
    return print_reply(invocation, *posted, format_sweep_plan);
}

ExitCode status(Invocation& invocation) {
    return print_get(invocation, "/v1/status", format_status);
}

// Exit 1 when the host cannot run sweeps (a Proxmox token lacking a
// required privilege), so a script can gate on it.
ExitCode hosts_check(Invocation& invocation) {
    ApiReply reply = invocation.client.get("/v1/hosts/check?name=" +
                                           query_component(invocation.argument("NAME")));
    if (!reply.ok()) return invocation.fail(reply);
    if (invocation.json_output) {
        invocation.print_json(reply.body);
    } else {
        invocation.out << format_host_check(reply.body);
    }
    const Json& check = reply.body.value("check", Json::object());
    const bool ready = check.contains("ready") ? check.value("ready", false)
                                               : check.value("state", "") == "connected";
    return ready ? ExitCode::kOk : ExitCode::kFailed;
}

ExitCode version(Invocation& invocation) {
    ApiReply reply = invocation.client.get("/v1/version");
    if (!reply.ok()) return invocation.fail(reply);
    if (invocation.json_output) {
        invocation.print_json(reply.body);
    } else {
        invocation.out << format_version(reply.body, disksweep_version());
    }
    return ExitCode::kOk;
}

std::vector<FlagSpec> with_flags(std::vector<FlagSpec> flags, const std::vector<FlagSpec>& more) {
    flags.insert(flags.end(), more.begin(), more.end());
    return flags;
}

const std::vector<CommandSpec>& command_table() {
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
         {{"format",
           "qm (a `qm set` line for Proxmox VE), libvirt (the <disk> element), fstab (the "
           "guest's mount line and mkfs command) or mycnf (the [mysqld] lines); required",
           "FORMAT"},
          {"vmid", "qm: the Proxmox VE VM id (default: the placeholder VMID)", "N"},
          {"storage", "qm: the Proxmox VE storage for the disk (default: STORAGE)", "PVESTORAGE"},
          {"workload", "mycnf: which MariaDB workload's server variables, when they differ",
           "NAME"}},
         "print configuration CONFIG (its id, or a unique prefix of it) as you would apply it; "
         "durability risks come first, as comment lines of the format",
         results_apply},
        {"status",
         {},
         {},
         "show the daemon: its instance, acceleration and why, hypervisor, guest image, config",
         status},
        {"hosts check",
         {"NAME"},
         {},
         "ask host NAME (as 'status' lists it) now whether it can run sweeps: a Proxmox host's "
         "release and the token's privileges on every path a sweep touches, what is missing "
         "and the pveum lines that grant it; exit 1 when it cannot",
         hosts_check},
        {"version", {}, {}, "print the versions of hostctl and disksweepd", version},
    };
    return kCommands;
}

std::string general_usage() {
    std::string text = "usage: " + std::string(kGlobalUsage) + " COMMAND [ARGS]\n\n";
    text += "global options:\n";
    text += "  --socket PATH  the daemon's socket (default: $" +
            std::string(kSocketEnvironmentVariable) + ", else " + std::string(kDefaultSocketPath) +
            ")\n";
    text += "  --json         print the API's JSON (one document per line) instead of tables\n";
    text += "  --help         this text; 'hostctl help COMMAND' for one command\n\n";
    // Each command's usage, then its help indented below it: the usages
    // differ too much in length for one column to fit a terminal.
    text += "commands:\n";
    for (const auto& command : command_table()) {
        text += "  " + command_usage(command) + "\n      " + std::string(command.help) + "\n";
    }
    text += "\nexit status: 0 ok, 1 operation failed, 2 usage error, 3 daemon unreachable\n";
    return text;
}

std::string command_help(const CommandSpec& command) {
    std::string text = "usage: " + std::string(kGlobalUsage) + " " + command_usage(command) +
                       "\n\n" + std::string(command.help) + "\n";
    for (const auto& flag : command.flags)
        text += "  " + flag_text(flag, ", ") + "  " + std::string(flag.help) + "\n";
    return text;
}

std::vector<std::string> split_words(std::string_view name) {
    std::vector<std::string> words;
    std::istringstream stream{std::string(name)};
    for (std::string word; stream >> word;) words.push_back(word);
    return words;
}

// The command whose words start `tokens` (longest match), or null.
const CommandSpec* find_command(const std::vector<std::string>& tokens) {
    const CommandSpec* best = nullptr;
    std::size_t best_length = 0;
    for (const auto& command : command_table()) {
        auto words = split_words(command.name);
        if (words.size() <= tokens.size() && words.size() > best_length &&
            std::equal(words.begin(), words.end(), tokens.begin())) {
            best = &command;
            best_length = words.size();
        }
    }
    return best;
}

// Explains a command line that names no known command.
ExitCode unknown_command(const std::vector<std::string>& tokens, std::ostream& err) {
    std::vector<std::string> group_members;
    for (const auto& command : command_table()) {
        auto words = split_words(command.name);
        if (words.size() > 1 && words.front() == tokens.front()) group_members.push_back(words[1]);
    }
    if (!group_members.empty()) {
        std::string members;
        for (const auto& member : group_members) members += (members.empty() ? "" : ", ") + member;
        if (tokens.size() == 1) {
            err << "hostctl: '" << tokens.front() << "' needs a sub-command: " << members << "\n";
        } else {
            err << "hostctl: unknown command '" << tokens[0] << " " << tokens[1] << "'; '"
                << tokens[0] << "' takes: " << members << "\n";
        }
    } else {
        err << "hostctl: unknown command '" << tokens.front() << "'\n";
    }
    err << "Run 'hostctl --help' for the list of commands.\n";
    return ExitCode::kUsage;
}

// The global options (which may appear anywhere: `hostctl sweep list
// --json`) into `options`; what they do not claim (command words,
// arguments, sub-command switches) into `tokens`. kUsage when they do not parse.
std::optional<ExitCode> parse_global_options(const std::vector<std::string>& args,
                                             po::variables_map& options,
                                             std::vector<std::string>& tokens, std::ostream& err) {
    po::options_description global;
    global.add_options()("socket", po::value<std::string>())("json", po::bool_switch())(
        "help,h", po::bool_switch());
    try {
        auto parsed = po::command_line_parser(args).options(global).allow_unregistered().run();
        po::store(parsed, options);
        po::notify(options);
        tokens = po::collect_unrecognized(parsed.options, po::include_positional);
    } catch (const po::error& e) {
        err << "hostctl: " << e.what() << "\nRun 'hostctl --help' for usage.\n";
        return ExitCode::kUsage;
    }
    return std::nullopt;
}

// `hostctl help [COMMAND]`, and a command line without a command (usage on
// standard output with --help, else on standard error): the exit code when
// it was one of those.
std::optional<ExitCode> answer_help_or_no_command(std::vector<std::string>& tokens, bool help,
                                                  std::ostream& out, std::ostream& err) {
    if (!tokens.empty() && tokens.front() == "help") {
        tokens.erase(tokens.begin());
        if (tokens.empty()) {
            out << general_usage();
            return ExitCode::kOk;
        }
        const CommandSpec* command = find_command(tokens);
        if (!command) return unknown_command(tokens, err);
        out << command_help(*command);
        return ExitCode::kOk;
    }
    if (tokens.empty()) {
        if (help) {
            out << general_usage();
            return ExitCode::kOk;
        }
        err << general_usage();
        return ExitCode::kUsage;
    }
    return std::nullopt;
}

// --socket, else the environment's variable when set and not empty, else the default.
std::string socket_path_for(const po::variables_map& options, const Environment& environment) {
    if (options.count("socket")) return options["socket"].as<std::string>();
    if (auto from_environment =
            environment.variable ? environment.variable(kSocketEnvironmentVariable) : std::nullopt;
        from_environment && !from_environment->empty()) {
        return *from_environment;
    }
    return std::string(kDefaultSocketPath);
}

// The command's own arguments and switches, declared by its table entry.
void declare_command_options(const CommandSpec& command, po::options_description& options,
                             po::positional_options_description& positional) {
    for (const auto& flag : command.flags) {
        // Boost's "long,s" names the option and its one-letter alias.
        const std::string names =
            std::string(flag.name) + (flag.short_name ? std::string(",") + flag.short_name : "");
        if (flag.value_name.empty()) {
            options.add_options()(names.c_str(), po::bool_switch(), std::string(flag.help).c_str());
        } else {
            options.add_options()(names.c_str(), po::value<std::string>(),
                                  std::string(flag.help).c_str());
        }
    }
    for (auto argument : command.arguments) {
        options.add_options()(std::string(argument).c_str(), po::value<std::string>());
        positional.add(std::string(argument).c_str(), 1);
    }
}

// Parses `command_tokens` as `command`'s arguments and switches into
// `invocation`: the usage error's exit code when they do not fit.
std::optional<ExitCode> read_command_line(const CommandSpec& command,
                                          const std::vector<std::string>& command_tokens,
                                          Invocation& invocation) {
    po::options_description command_options;
    po::positional_options_description positional;
    declare_command_options(command, command_options, positional);
    po::variables_map command_values;
    try {
        po::store(po::command_line_parser(command_tokens)
                      .options(command_options)
                      .positional(positional)
                      .run(),
                  command_values);
        po::notify(command_values);
    } catch (const po::error& e) {
        return invocation.usage_error(e.what());
    }
    for (auto argument : command.arguments) {
        std::string name(argument);
        if (!command_values.count(name)) return invocation.usage_error("missing " + name);
        invocation.arguments[name] = command_values[name].as<std::string>();
    }
    for (const auto& flag : command.flags) {
        std::string name(flag.name);
        if (!flag.value_name.empty()) {
            if (command_values.count(name))
                invocation.values[name] = command_values[name].as<std::string>();
        } else if (command_values[name].as<bool>()) {
            invocation.flags.insert(name);
        }
    }
    return std::nullopt;
}

ExitCode run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
             const Environment& environment) {
    po::variables_map options;
    std::vector<std::string> tokens;
    if (auto refused = parse_global_options(args, options, tokens, err)) return *refused;
    const bool help = options["help"].as<bool>();
    if (auto answered = answer_help_or_no_command(tokens, help, out, err)) return *answered;
    const CommandSpec* command = find_command(tokens);
    if (!command) return unknown_command(tokens, err);
    if (help) {
        out << command_help(*command);
        return ExitCode::kOk;
    }

    Invocation invocation{std::string(command->name),
                          std::string(kGlobalUsage) + " " + command_usage(*command),
                          DaemonClient(socket_path_for(options, environment)),
                          options["json"].as<bool>(),
                          {},
                          {},
                          {},
                          out,
                          err,
                          environment};
    const std::vector<std::string> command_tokens(
        tokens.begin() + split_words(command->name).size(), tokens.end());
    if (auto refused = read_command_line(*command, command_tokens, invocation)) return *refused;
    return command->handler(invocation);
}

}  // namespace

namespace {
// The columns of the terminal on standard output: its window size, else
// $COLUMNS (a shell's, exported), else 0 (unknown).
std::size_t standard_output_columns() {
    winsize size{};
    if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
    const char* columns = std::getenv("COLUMNS");
    if (columns == nullptr) return 0;
    std::size_t parsed = 0;
    auto [end, ec] = std::from_chars(columns, columns + std::strlen(columns), parsed);
    return ec == std::errc() && *end == '\0' ? parsed : 0;
}
}  // namespace

Environment process_environment() {
    Environment environment;
    environment.variable = [](std::string_view name) -> std::optional<std::string> {
        const char* value = std::getenv(std::string(name).c_str());
        if (!value) return std::nullopt;
        return std::string(value);
    };
    environment.stdout_is_tty = ::isatty(STDOUT_FILENO) == 1;
    environment.terminal_columns = [] { return standard_output_columns(); };
    environment.redraw_each_second = true;
    environment.now = [] { return std::chrono::steady_clock::now(); };
    return environment;
}

ExitCode run_hostctl(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                     const Environment& environment) {
    // The seam where library exceptions (Boost, JSON, allocation) stop.
    try {
        return run(args, out, err, environment);
    } catch (const std::exception& e) {
        err << "hostctl: internal error: " << e.what() << "\n";
        return ExitCode::kFailed;
    }
}

}  // namespace ds::hostctl
