// hostctl end to end over a real unix socket, against a test double of
// disksweepd: a UnixServer that answers canned API responses and records
// what it was asked.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "common/http.h"
#include "hostctl/commands.h"
#include "hostctl/compare_format.h"
#include "hostctl/results_format.h"
#include "hostctl/submission_format.h"
#include "hostctl/sweep_format.h"
#include "support/temp_dir.h"
#include "unit/api_messages.h"

namespace fs = std::filesystem;
using ds::hostctl::ExitCode;
using ds::hostctl::Json;

namespace {

using ds::test::TempDir;

ds::http::Response json_response(int status, const Json& body) {
    ds::http::Response response;
    response.status = status;
    response.body = body.dump();
    return response;
}

ds::http::Response event_stream(std::vector<Json> events) {
    ds::http::Response response;
    response.content_type = "application/x-ndjson";
    response.stream = [events = std::move(events)](ds::http::ChunkSink& sink) {
        for (const auto& event : events) {
            if (!sink.write(event.dump() + "\n")) return;
        }
    };
    return response;
}

// The daemon's stand-in: canned answers by "METHOD /path"; 404 otherwise.
class FakeDaemon {
  public:
    explicit FakeDaemon(const TempDir& dir)
        : socket_path_((dir.path() / "disksweepd.sock").string()),
          server_(socket_path_,
                  [this](const ds::http::Request& request) { return answer(request); }) {
        REQUIRE(server_.start().ok());
    }

    void on(const std::string& method_and_path, ds::http::Response response) {
        std::lock_guard lock(mutex_);
        routes_[method_and_path] = std::move(response);
    }
    std::vector<ds::http::Request> requests() {
        std::lock_guard lock(mutex_);
        return requests_;
    }
    const std::string& socket_path() const { return socket_path_; }

  private:
    ds::http::Response answer(const ds::http::Request& request) {
        std::lock_guard lock(mutex_);
        requests_.push_back(request);
        auto route = routes_.find(request.method + " " + request.path);
        if (route == routes_.end()) {
            return json_response(
                404,
                {{"error", {{"code", "not_found"}, {"message", "no endpoint " + request.path}}}});
        }
        return route->second;
    }

    std::string socket_path_;
    std::mutex mutex_;
    std::map<std::string, ds::http::Response> routes_;
    std::vector<ds::http::Request> requests_;
    ds::http::UnixServer server_;  // last: stops before the routes go away
};

struct Outcome {
    ExitCode code;
    std::string out;
    std::string err;
};

Outcome run_hostctl(std::vector<std::string> args, bool tty = false,
                    std::map<std::string, std::string> variables = {}) {
    ds::hostctl::Environment environment;
    environment.variable = [variables](std::string_view name) -> std::optional<std::string> {
        auto it = variables.find(std::string(name));
        if (it == variables.end()) return std::nullopt;
        return it->second;
    };
    environment.stdout_is_tty = tty;
    environment.terminal_columns = [] { return std::size_t{120}; };
    std::ostringstream out, err;
    ExitCode code = ds::hostctl::run_hostctl(args, out, err, environment);
    return {code, out.str(), err.str()};
}

const Json kSubmitted = Json::parse(R"({
  "sweep": {"id": 4, "name": "seed-fio-rbd", "status": "queued", "total_runs": 2},
  "dropped": [{"settings": {"filesystem": "ext4", "bus": "virtio-blk"},
               "reason": "ssd emulation needs a SCSI or SATA disk"}],
  "varying_axes": ["filesystem", "bus"]})");

const Json kCompare = Json::parse(R"({
  "sweep_id": 4, "varying_axes": ["filesystem"], "metrics": ["read_iops"],
  "rows": [
    {"config_id": "aa", "workload": "randrw", "settings": {"filesystem": "ext4"},
     "durability_risks": [], "runs": {"succeeded": 1, "failed": 0},
     "metrics": {"read_iops": {"n": 1, "mean": 256.0, "stddev": null}}},
    {"config_id": "bb", "workload": "randrw", "settings": {"filesystem": "btrfs"},
     "durability_risks": ["cache=unsafe"], "runs": {"succeeded": 0, "failed": 1},
     "metrics": {}}]})");

std::vector<Json> finished_events(const std::string& second_run_status) {
    bool failed = second_run_status == "failed";
    return {
        Json::parse(R"({"type":"snapshot","sweep_id":4,"status":"running","total_runs":2,
                        "counts":{"pending":2,"running":0,"succeeded":0,"failed":0,
                                  "cancelled":0}})"),
        Json::parse(R"({"type":"run_started","sweep_id":4,"run_id":10,"workload":"randrw",
                        "config_label":"ext4 cache=none bus=scsi-single",
                        "repetition":0,"total_runs":2})"),
        Json::parse(R"({"type":"keepalive"})"),
        // A phase, then the bench's ticks: one line per phase, not per tick.
        Json::parse(R"({"type":"run_progress","run_id":10,"phase":"booted",
                        "message":"agent connected"})"),
        Json::parse(R"({"type":"run_progress","run_id":10,"phase":"bench",
                        "message":"fio running","elapsed_s":1,"fraction":0.5})"),
        Json::parse(R"({"type":"run_progress","run_id":10,"phase":"bench",
                        "message":"fio running","elapsed_s":2,"fraction":0.6})"),
        Json::parse(R"({"type":"run_finished","sweep_id":4,"run_id":10,"status":"succeeded",
                        "message":null,"total_runs":2})"),
        Json::parse(R"({"type":"progress","sweep_id":4,"total_runs":2,"eta_s":30,
                        "counts":{"pending":1,"running":0,"succeeded":1,"failed":0,
                                  "cancelled":0}})"),
        Json{{"type", "run_finished"},
             {"sweep_id", 4},
             {"run_id", 11},
             {"status", second_run_status},
             {"message", failed ? "fio exited 1: cannot open /mnt/data/fio" : ""},
             {"total_runs", 2}},
        Json{{"type", "sweep_finished"},
             {"sweep_id", 4},
             {"status", failed ? "failed" : "succeeded"},
             {"total_runs", 2},
             {"counts",
              {{"pending", 0},
               {"running", 0},
               {"succeeded", failed ? 1 : 2},
               {"failed", failed ? 1 : 0},
               {"cancelled", 0}}}},
    };
}

}  // namespace

TEST_CASE("sweep submit posts the spec and prints what was scheduled", "[hostctl][cli]") {
    TempDir dir;
    FakeDaemon daemon(dir);
    daemon.on("POST /v1/sweeps", json_response(201, kSubmitted));
    fs::path spec = dir.path() / "seed.toml";
    const std::string spec_text = "name = \"seed-fio-rbd\"\n[matrix]\nfilesystem = [\"ext4\"]\n";
    std::ofstream(spec) << spec_text;

    auto outcome =
        run_hostctl({"--socket", daemon.socket_path(), "sweep", "submit", spec.string()});
    INFO(outcome.err);
    CHECK(outcome.code == ExitCode::kOk);
    CHECK(outcome.out ==
          "sweep 4 \"seed-fio-rbd\" submitted: 2 runs, queued\n"
          "varying: filesystem, bus\n"
          "dropped 1 combination that cannot exist:\n"
          "  filesystem=ext4 bus=virtio-blk: ssd emulation needs a SCSI or SATA "
          "disk\n");
    auto requests = daemon.requests();
    REQUIRE(requests.size() == 1);
    CHECK(requests[0].body == spec_text);
    CHECK(requests[0].headers.at("content-type") == "application/toml");
    CHECK(requests[0].headers.at("x-spec-name") == spec.string());
}

TEST_CASE("sweep submit --wait follows the sweep and prints the comparison", "[hostctl][cli]") {
    TempDir dir;
    FakeDaemon daemon(dir);
    daemon.on("POST /v1/sweeps", json_response(201, kSubmitted));
    daemon.on("GET /v1/sweeps/4/compare", json_response(200, kCompare));
    fs::path spec = dir.path() / "seed.toml";
    std::ofstream(spec) << "name = \"seed\"\n";

    SECTION("all runs succeed: exit 0") {
        daemon.on("GET /v1/sweeps/4/events", event_stream(finished_events("succeeded")));
        auto outcome = run_hostctl(
            {"sweep", "submit", spec.string(), "--wait", "--socket", daemon.socket_path()});
        INFO(outcome.err);
        CHECK(outcome.code == ExitCode::kOk);
        CHECK(outcome.out == ds::hostctl::format_submitted(
                                 ds::api::test::decoded<ds::api::SweepSubmitReply>(kSubmitted)) +
                                 "sweep 4 running: 0/2 runs done (0 succeeded, 0 failed, 0 "
                                 "cancelled), 0 running\n"
                                 "run 10 (ext4 cache=none bus=scsi-single, randrw) started\n"
                                 "run 10 (ext4 cache=none bus=scsi-single, randrw): booted: "
                                 "agent connected\n"
                                 "run 10 (ext4 cache=none bus=scsi-single, randrw): bench: fio "
                                 "running\n"
                                 "run 10 (ext4 cache=none bus=scsi-single, randrw) succeeded "
                                 "after 0s (1/2 done, 0 failed)\n"
                                 "run 11 succeeded (2/2 done, 0 failed)\n"
                                 "sweep 4 succeeded: 2 succeeded, 0 failed, 0 cancelled of 2 runs\n"
                                 "\n" +
                                 ds::hostctl::format_compare_table(
                                     ds::api::test::decoded<ds::api::CompareReply>(kCompare)));
    }
    SECTION("a run fails: exit 1, the comparison still printed") {
        daemon.on("GET /v1/sweeps/4/events", event_stream(finished_events("failed")));
        auto outcome = run_hostctl(
            {"--socket", daemon.socket_path(), "sweep", "submit", "--wait", spec.string()});
        CHECK(outcome.code == ExitCode::kFailed);
        CHECK_THAT(outcome.out,
                   Catch::Contains("run 11 failed: fio exited 1: cannot open /mnt/data/fio"));
        CHECK_THAT(outcome.out, Catch::EndsWith(ds::hostctl::format_compare_table(
                                    ds::api::test::decoded<ds::api::CompareReply>(kCompare))));
    }
    SECTION("--json prints one JSON document per line") {
        daemon.on("GET /v1/sweeps/4/events", event_stream(finished_events("succeeded")));
        auto outcome = run_hostctl({"--socket", daemon.socket_path(), "--json", "sweep", "submit",
                                    "--wait", spec.string()});
        CHECK(outcome.code == ExitCode::kOk);
        std::istringstream lines(outcome.out);
        std::vector<Json> documents;
        for (std::string line; std::getline(lines, line);) documents.push_back(Json::parse(line));
        REQUIRE(documents.size() == 11);  // submitted, 9 events (no keepalive), compare
        CHECK(documents.front() == kSubmitted);
        CHECK(documents[1]["type"] == "snapshot");
        CHECK(documents.back() == kCompare);
    }
}

TEST_CASE("sweep watch draws a line per running run and a bar on a terminal", "[hostctl][cli]") {
    TempDir dir;
    FakeDaemon daemon(dir);
    daemon.on("GET /v1/sweeps/4/events", event_stream(finished_events("failed")));
    auto outcome = run_hostctl({"--socket", daemon.socket_path(), "sweep", "watch", "4"},
                               /*tty=*/true);
    CHECK(outcome.code == ExitCode::kFailed);
    CHECK_THAT(outcome.out,
               Catch::StartsWith("\r\033[J[------------------------]  0/2 runs  0 ok  0 failed  "
                                 "0 running  ETA ?"));
    // The running run's line above the bar, redrawn in place (up one line,
    // clear) as its phase and fraction change.
    CHECK_THAT(
        outcome.out,
        Catch::Contains("\r\033[1A\033[Jrun 10  ext4 cache=none bus=scsi-single  randrw  "
                        "bench 0s  60%  0s in all  fio running\n[------------------------]"));
    // A finished run leaves one line above the live area.
    CHECK_THAT(outcome.out, Catch::Contains("\033[Jrun 11 failed: fio exited 1: cannot open "
                                            "/mnt/data/fio\n[########################]"));
    CHECK_THAT(outcome.out,
               Catch::EndsWith("\r\033[J[########################]  2/2 runs  1 ok  1 failed  "
                               "0 running\nsweep 4 failed: 1 succeeded, 1 failed, 0 cancelled of "
                               "2 runs\n"));
}

TEST_CASE("sweep watch --quiet prints only the runs that did not succeed", "[hostctl][cli]") {
    TempDir dir;
    FakeDaemon daemon(dir);
    daemon.on("GET /v1/sweeps/4/events", event_stream(finished_events("failed")));
    auto outcome =
        run_hostctl({"--socket", daemon.socket_path(), "sweep", "watch", "4", "--quiet"});
    CHECK(outcome.code == ExitCode::kFailed);
    CHECK(outcome.out ==
          "run 11 failed: fio exited 1: cannot open /mnt/data/fio\n"
          "sweep 4 failed: 1 succeeded, 1 failed, 0 cancelled of 2 runs\n");
}

TEST_CASE("sweep submit --wait --quiet prints the runs that failed and the comparison",
          "[hostctl][cli]") {
    TempDir dir;
    FakeDaemon daemon(dir);
    daemon.on("POST /v1/sweeps", json_response(201, kSubmitted));
    daemon.on("GET /v1/sweeps/4/compare", json_response(200, kCompare));
    daemon.on("GET /v1/sweeps/4/events", event_stream(finished_events("failed")));
    fs::path spec = dir.path() / "seed.toml";
    std::ofstream(spec) << "name = \"seed\"\n";
    // Quiet on a terminal too: the same as through a pipe.
    for (bool tty : {false, true}) {
        auto outcome = run_hostctl({"--socket", daemon.socket_path(), "sweep", "submit",
                                    spec.string(), "--wait", "--quiet"},
                                   tty);
        CHECK(outcome.code == ExitCode::kFailed);
        CHECK(outcome.out ==
              "run 11 failed: fio exited 1: cannot open /mnt/data/fio\n"
              "sweep 4 failed: 1 succeeded, 1 failed, 0 cancelled of 2 runs\n\n" +
                  ds::hostctl::format_compare_table(
                      ds::api::test::decoded<ds::api::CompareReply>(kCompare)));
    }
    // One declaration of the watch's options: the same help in both commands.
    const std::string quiet_help =
        "--quiet  show only the runs that did not succeed, the sweep's summary and errors\n";
    CHECK_THAT(run_hostctl({"help", "sweep", "submit"}).out, Catch::Contains(quiet_help));
    CHECK_THAT(run_hostctl({"help", "sweep", "watch"}).out, Catch::Contains(quiet_help));
}

TEST_CASE("sweep watch of a finished sweep returns at once", "[hostctl][cli]") {
    TempDir dir;
    FakeDaemon daemon(dir);
    auto events = finished_events("succeeded");
    daemon.on("GET /v1/sweeps/4/events", event_stream({events.front(), events.back()}));
    auto outcome = run_hostctl({"--socket", daemon.socket_path(), "sweep", "watch", "4"});
    CHECK(outcome.code == ExitCode::kOk);
    CHECK_THAT(outcome.out, Catch::EndsWith("sweep 4 succeeded: 2 succeeded, 0 failed, 0 "
                                            "cancelled of 2 runs\n"));
}

TEST_CASE("sweep watch fails when the stream breaks off or is garbled", "[hostctl][cli]") {
    TempDir dir;
    FakeDaemon daemon(dir);
    auto events = finished_events("succeeded");
    daemon.on("GET /v1/sweeps/4/events", event_stream({events[0], events[1]}));
    auto cut = run_hostctl({"--socket", daemon.socket_path(), "sweep", "watch", "4"});
    CHECK(cut.code == ExitCode::kFailed);
    CHECK(cut.err == "hostctl: the event stream of sweep 4 ended before the sweep finished\n");

    ds::http::Response garbled;
    garbled.stream = [](ds::http::ChunkSink& sink) { sink.write("<html>\n"); };
    daemon.on("GET /v1/sweeps/5/events", garbled);
    auto bad = run_hostctl({"--socket", daemon.socket_path(), "sweep", "watch", "5"});
    CHECK(bad.code == ExitCode::kFailed);
    CHECK(bad.err ==
          "hostctl: disksweepd sent an event that is not a JSON object on GET "
          "/v1/sweeps/5/events: <html>\n");
}

TEST_CASE("list, show, cancel and results print the daemon's answers", "[hostctl][cli]") {
    TempDir dir;
    FakeDaemon daemon(dir);
    const Json sweeps = Json::parse(R"({"sweeps": [{"id": 4, "name": "seed", "status": "running",
        "total_runs": 2, "counts": {"pending": 1, "running": 1, "succeeded": 0, "failed": 0,
        "cancelled": 0}, "created_at": "2026-11-29T20:00:00Z"}]})");
    const Json sweep = Json::parse(R"({"sweep": {"id": 4, "name": "seed", "status": "running",
        "total_runs": 1, "counts": {"pending": 0, "running": 1}},
        "runs": [{"id": 10, "config_id": "aa", "workload_name": "randrw", "repetition": 0,
                  "status": "running", "config": {"filesystem": "ext4"}}]})");
    const Json cancelled = Json::parse(R"({"sweep": {"id": 4, "status": "cancelled",
        "counts": {"pending": 0, "running": 0, "succeeded": 0, "failed": 0, "cancelled": 2}}})");
    const Json run = Json::parse(R"({"run": {"id": 10, "sweep_id": 4, "status": "succeeded",
        "metrics": {"read_iops": 256.0}, "raw_output": "{}"}})");
    daemon.on("GET /v1/sweeps", json_response(200, sweeps));
    daemon.on("GET /v1/sweeps/4", json_response(200, sweep));
    daemon.on("POST /v1/sweeps/4/cancel", json_response(200, cancelled));
    daemon.on("GET /v1/runs/10", json_response(200, run));
    daemon.on("GET /v1/sweeps/4/compare", json_response(200, kCompare));
    daemon.on("GET /v1/version",
              json_response(200, {{"api", 1}, {"version", "0.1.0"}, {"capabilities", {"events"}}}));
    const std::vector<std::string> socket = {"--socket", daemon.socket_path()};
    auto with_socket = [&](std::vector<std::string> args) {
        args.insert(args.begin(), socket.begin(), socket.end());
        return run_hostctl(args);
    };

    auto list = with_socket({"sweep", "list"});
    CHECK(list.code == ExitCode::kOk);
    CHECK(list.out ==
          ds::hostctl::format_sweep_list(ds::api::test::decoded<ds::api::SweepListReply>(sweeps)));

    auto show = with_socket({"sweep", "show", "4"});
    CHECK(show.code == ExitCode::kOk);
    CHECK(show.out ==
          ds::hostctl::format_sweep_show(ds::api::test::decoded<ds::api::SweepShowReply>(sweep)));

    auto cancel = with_socket({"sweep", "cancel", "4"});
    CHECK(cancel.code == ExitCode::kOk);
    CHECK(cancel.out == "sweep 4 cancelled (0 succeeded, 0 failed, 2 cancelled)\n");

    auto run_details = with_socket({"results", "show", "10"});
    CHECK(run_details.code == ExitCode::kOk);
    CHECK(run_details.out ==
          ds::hostctl::format_run(ds::api::test::decoded<ds::api::RunShowReply>(run)));

    auto table = with_socket({"results", "compare", "4"});
    CHECK(table.code == ExitCode::kOk);
    CHECK(table.out == ds::hostctl::format_compare_table(
                           ds::api::test::decoded<ds::api::CompareReply>(kCompare)));
    CHECK_THAT(table.out, Catch::Contains("0 (1 failed)  !"));

    auto csv = with_socket({"results", "compare", "4", "--csv"});
    CHECK(csv.code == ExitCode::kOk);
    CHECK(csv.out ==
          ds::hostctl::format_compare_csv(ds::api::test::decoded<ds::api::CompareReply>(kCompare)));

    auto json = with_socket({"results", "compare", "--json", "4"});
    CHECK(json.code == ExitCode::kOk);
    CHECK(Json::parse(json.out) == kCompare);

    auto version = with_socket({"version"});
    CHECK(version.code == ExitCode::kOk);
    CHECK_THAT(version.out, Catch::Contains("disksweepd 0.1.0 (API 1)\ncapabilities: events\n"));

    std::vector<std::string> asked;
    for (const auto& request : daemon.requests())
        asked.push_back(request.method + " " + request.target);
    CHECK(asked == std::vector<std::string>{"GET /v1/sweeps", "GET /v1/sweeps/4",
                                            "POST /v1/sweeps/4/cancel", "GET /v1/runs/10",
                                            "GET /v1/sweeps/4/compare",
                                            "GET /v1/sweeps/4/compare?all=1",
                                            "GET /v1/sweeps/4/compare?all=1", "GET /v1/version"});
}

TEST_CASE("API errors print the daemon's message and exit 1", "[hostctl][cli]") {
    TempDir dir;
    FakeDaemon daemon(dir);
    daemon.on(
        "POST /v1/sweeps",
        json_response(400, {{"error",
                             {{"code", "invalid_spec"},
                              {"message", "bad.toml:7:1: unknown axis 'cach' in [matrix]"}}}}));
    ds::http::Response not_json;
    not_json.status = 500;
    not_json.content_type = "text/plain";
    not_json.body = "oops";
    daemon.on("GET /v1/sweeps", not_json);
    fs::path spec = dir.path() / "bad.toml";
    std::ofstream(spec) << "[matrix]\ncach = [\"none\"]\n";

    auto invalid =
        run_hostctl({"--socket", daemon.socket_path(), "sweep", "submit", spec.string()});
    CHECK(invalid.code == ExitCode::kFailed);
    CHECK(invalid.out.empty());
    CHECK(invalid.err == "hostctl: bad.toml:7:1: unknown axis 'cach' in [matrix]\n");

    auto missing = run_hostctl({"--socket", daemon.socket_path(), "sweep", "show", "99"});
    CHECK(missing.code == ExitCode::kFailed);
    CHECK(missing.err == "hostctl: no endpoint /v1/sweeps/99\n");

    auto missing_stream = run_hostctl({"--socket", daemon.socket_path(), "sweep", "watch", "99"});
    CHECK(missing_stream.code == ExitCode::kFailed);
    CHECK(missing_stream.err == "hostctl: no endpoint /v1/sweeps/99/events\n");

    auto broken = run_hostctl({"--socket", daemon.socket_path(), "sweep", "list"});
    CHECK(broken.code == ExitCode::kFailed);
    CHECK(broken.err ==
          "hostctl: disksweepd answered GET /v1/sweeps with HTTP 500 Internal Server Error\n");
}

TEST_CASE("an unreachable daemon exits 3 and says how to start it", "[hostctl][cli]") {
    TempDir dir;
    const std::string socket = (dir.path() / "disksweepd.sock").string();
    const std::string expected = "hostctl: cannot reach disksweepd at " + socket +
                                 " (No such file or directory). Start it with: disksweepd --config "
                                 "config/disksweepd.conf  (or: systemctl start disksweepd)\n";

    auto flag = run_hostctl({"--socket", socket, "sweep", "list"});
    CHECK(flag.code == ExitCode::kUnreachable);
    CHECK(flag.err == expected);
    CHECK(flag.out.empty());

    // The socket comes from DISKSWEEP_SOCKET when --socket is not given.
    auto from_environment =
        run_hostctl({"sweep", "watch", "1"}, false, {{"DISKSWEEP_SOCKET", socket}});
    CHECK(from_environment.code == ExitCode::kUnreachable);
    CHECK(from_environment.err == expected);
}

// Without --socket and DISKSWEEP_SOCKET hostctl connects to the default
// socket. That socket is the host's (a disksweepd started by
// scripts/quickstart.sh listens there), so no test connects to it; the help
// states the rule users rely on.
TEST_CASE("the help names the default socket and the variable", "[hostctl][cli]") {
    auto help = run_hostctl({"--help"});
    CHECK(help.code == ExitCode::kOk);
    CHECK_THAT(help.out, Catch::Contains("  --socket PATH  the daemon's socket (default: "
                                         "$DISKSWEEP_SOCKET, else "
                                         "/run/disksweep/disksweepd.sock)\n"));
}

TEST_CASE("the --socket option wins over DISKSWEEP_SOCKET", "[hostctl][cli]") {
    TempDir dir;
    FakeDaemon daemon(dir);
    daemon.on("GET /v1/sweeps", json_response(200, {{"sweeps", Json::array()}}));
    auto outcome = run_hostctl({"sweep", "list", "--socket", daemon.socket_path()}, false,
                               {{"DISKSWEEP_SOCKET", (dir.path() / "elsewhere.sock").string()}});
    CHECK(outcome.code == ExitCode::kOk);
    CHECK(outcome.out == "no sweeps\n");
    auto from_environment =
        run_hostctl({"sweep", "list"}, false, {{"DISKSWEEP_SOCKET", daemon.socket_path()}});
    CHECK(from_environment.code == ExitCode::kOk);
}

TEST_CASE("usage errors exit 2 without asking the daemon", "[hostctl][cli]") {
    TempDir dir;
    FakeDaemon daemon(dir);
    const std::string socket = "--socket=" + daemon.socket_path();
    struct Case {
        std::vector<std::string> args;
        std::string err_start;
    };
    const Case cases[] = {
        {{socket}, "usage: hostctl [--socket PATH] [--json] COMMAND [ARGS]"},
        {{socket, "frobnicate"}, "hostctl: unknown command 'frobnicate'\n"},
        {{socket, "sweep"},
         "hostctl: 'sweep' needs a sub-command: submit, plan, list, show, cancel, "
         "watch\n"},
        {{socket, "sweep", "show"},
         "hostctl: sweep show: missing ID\nusage: hostctl [--socket "
         "PATH] [--json] sweep show ID [--limit N] [--after SEQ]\n"},
        {{socket, "sweep", "show", "abc"},
         "hostctl: sweep show: ID must be a positive integer, not 'abc'\n"},
        {{socket, "sweep", "show", "0"}, "hostctl: sweep show: ID must be a positive integer"},
        {{socket, "sweep", "show", "1", "2"}, "hostctl: sweep show: too many positional"},
        {{socket, "sweep", "list", "--wait"}, "hostctl: sweep list: unrecognised option '--wait'"},
        {{socket, "results", "compare", "1", "--csv", "--json"},
         "hostctl: results compare: --csv and --json exclude each other\n"},
        {{socket, "sweep", "submit", "seed.toml", "--quiet"},
         "hostctl: sweep submit: --quiet is about the watch: it needs --wait\n"},
        {{socket, "--json", "sweep", "submit", "seed.toml", "--wait", "--quiet"},
         "hostctl: sweep submit: --quiet and --json exclude each other\n"},
        {{socket, "--json", "sweep", "watch", "4", "--quiet"},
         "hostctl: sweep watch: --quiet and --json exclude each other\n"},
        {{"--socket"}, "hostctl: the required argument for option '--socket' is missing"},
    };
    for (const auto& c : cases) {
        INFO(c.args.back());
        auto outcome = run_hostctl(c.args);
        CHECK(outcome.code == ExitCode::kUsage);
        CHECK_THAT(outcome.err, Catch::StartsWith(c.err_start));
    }
    CHECK(daemon.requests().empty());

    auto help = run_hostctl({"--help"});
    CHECK(help.code == ExitCode::kOk);
    CHECK_THAT(help.out,
               Catch::Contains("\n  results compare SWEEP [--metric NAME] [--all] [--csv]\n      "
                               "compare a sweep's configurations"));
    auto command_help = run_hostctl({"help", "sweep", "submit"});
    CHECK(command_help.code == ExitCode::kOk);
    CHECK_THAT(command_help.out,
               Catch::StartsWith("usage: hostctl [--socket PATH] [--json] sweep submit FILE "
                                 "[--wait] [--quiet]\n"));
}

TEST_CASE("an unreadable spec file is reported with its path", "[hostctl][cli]") {
    TempDir dir;
    FakeDaemon daemon(dir);
    auto outcome = run_hostctl({"--socket", daemon.socket_path(), "sweep", "submit",
                                (dir.path() / "absent.toml").string()});
    CHECK(outcome.code == ExitCode::kFailed);
    CHECK(outcome.err == "hostctl: cannot read sweep spec " +
                             (dir.path() / "absent.toml").string() +
                             ": No such file or directory\n");
    CHECK(daemon.requests().empty());
}

TEST_CASE("results apply asks for the configuration in a format and prints the snippet",
          "[hostctl][cli][apply]") {
    TempDir dir;
    FakeDaemon daemon(dir);
    const std::string snippet =
        "# WARNING: trades durability for speed: cache=unsafe\nqm set 101 --scsi1 "
        "local-lvm:1,cache=unsafe\n";
    daemon.on("GET /v1/configurations/3f2a9c/apply",
              json_response(200, {{"config_id", "3f2a9c81d0e4aa00"},
                                  {"format", "qm"},
                                  {"body", "qm set 101 --scsi1 local-lvm:1,cache=unsafe\n"},
                                  {"snippet", snippet}}));
    const std::string socket = "--socket=" + daemon.socket_path();

    auto printed = run_hostctl({socket, "results", "apply", "3f2a9c", "--format", "qm", "--vmid",
                                "101", "--storage", "local-lvm", "--workload", "atis nosync"});
    CHECK(printed.code == ExitCode::kOk);
    CHECK(printed.out == snippet);
    const auto requests = daemon.requests();
    REQUIRE(requests.size() == 1);
    const auto& query = requests.front().query;
    CHECK(query == std::map<std::string, std::string>{{"format", "qm"},
                                                      {"vmid", "101"},
                                                      {"storage", "local-lvm"},
                                                      {"workload", "atis nosync"}});

    auto as_json = run_hostctl({socket, "--json", "results", "apply", "3f2a9c", "--format", "qm"});
    CHECK(as_json.code == ExitCode::kOk);
    CHECK(Json::parse(as_json.out)["config_id"] == "3f2a9c81d0e4aa00");

    auto no_format = run_hostctl({socket, "results", "apply", "3f2a9c"});
    CHECK(no_format.code == ExitCode::kUsage);
    CHECK_THAT(no_format.err, Catch::StartsWith("hostctl: results apply: --format is required"));
    CHECK(daemon.requests().size() == 2);

    auto help = run_hostctl({"help", "results", "apply"});
    CHECK(help.out.find("results apply CONFIG [--format FORMAT] [--vmid N] [--storage "
                        "PVESTORAGE] [--workload NAME]") != std::string::npos);
}

TEST_CASE("sweep plan posts the spec and prints the plan", "[hostctl][cli][plan]") {
    TempDir dir;
    FakeDaemon daemon(dir);
    const Json plan = Json::parse(R"({
      "name": "p", "repetitions": 1, "varying_axes": ["cache"],
      "configurations": [{"config_id": "0123456789abcdef", "settings": {"cache": "none"},
                          "durability_risks": []}],
      "workloads": [{"name": "w", "kind": "fio"}], "dropped": [], "total_runs": 1,
      "pairs": [{"config_id": "0123456789abcdef", "workload": "w", "runs": 1,
                 "estimate_s": null, "basis": "unknown", "based_on_runs": 0}],
      "estimate": {"run_seconds": 0, "wall_seconds": 0, "max_parallel_runs": 1,
                   "runs_estimated": 0, "runs_unknown": 1, "based_on_runs": 0,
                   "complete": false},
      "refused": null})");
    daemon.on("POST /v1/sweeps/plan", json_response(200, plan));
    const std::string spec = (dir.path() / "p.toml").string();
    std::ofstream(spec) << "name = \"p\"\n";

    auto printed = run_hostctl({"--socket=" + daemon.socket_path(), "sweep", "plan", spec});
    CHECK(printed.code == ExitCode::kOk);
    CHECK(printed.out ==
          ds::hostctl::format_sweep_plan(ds::api::test::decoded<ds::api::SweepPlanReply>(plan)));
    const auto requests = daemon.requests();
    REQUIRE(requests.size() == 1);
    CHECK(requests.front().body == "name = \"p\"\n");
    CHECK(requests.front().headers.at("x-spec-name") == spec);
}

TEST_CASE("results report prints the page, or writes it to a file atomically",
          "[hostctl][cli][report]") {
    TempDir dir;
    FakeDaemon daemon(dir);
    ds::http::Response page;
    page.content_type = "text/html; charset=utf-8";
    page.body =
        "<!DOCTYPE html>\n<html lang=\"en\"><body>" + std::string(3000, 'x') + "</body></html>\n";
    daemon.on("GET /v1/sweeps/4/report", page);
    const std::string socket = "--socket=" + daemon.socket_path();

    auto printed = run_hostctl({socket, "results", "report", "4"});
    CHECK(printed.code == ExitCode::kOk);
    CHECK(printed.out == page.body);

    const fs::path report = dir.path() / "out" / "report.html";
    fs::create_directories(report.parent_path());
    std::ofstream(report) << "an older report";
    auto written = run_hostctl({socket, "results", "report", "4", "-o", report.string()});
    CHECK(written.code == ExitCode::kOk);
    CHECK(written.out == "wrote " + report.string() + " (3 KiB)\n");
    std::ifstream in(report);
    CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == page.body);
    // Nothing left beside it: the temporary file was renamed over the old one.
    CHECK(std::distance(fs::directory_iterator(report.parent_path()), fs::directory_iterator()) ==
          1);
    CHECK(run_hostctl({socket, "results", "report", "4", "--output", report.string()}).code ==
          ExitCode::kOk);

    auto unwritable = run_hostctl(
        {socket, "results", "report", "4", "-o", (dir.path() / "missing" / "r.html").string()});
    CHECK(unwritable.code == ExitCode::kFailed);
    CHECK_THAT(unwritable.err, Catch::StartsWith("hostctl: cannot create a file beside"));

    auto unknown = run_hostctl({socket, "results", "report", "5"});
    CHECK(unknown.code == ExitCode::kFailed);
    CHECK(unknown.err == "hostctl: no endpoint /v1/sweeps/5/report\n");

    auto as_json = run_hostctl({socket, "--json", "results", "report", "4"});
    CHECK(as_json.code == ExitCode::kUsage);

    auto help = run_hostctl({"help", "results", "report"});
    CHECK_THAT(help.out, Catch::Contains("results report SWEEP [-o|--output FILE]"));
    CHECK_THAT(help.out, Catch::Contains("  -o, --output FILE  write the page to FILE"));
}
