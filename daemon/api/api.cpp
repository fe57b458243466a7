#include "daemon/api/api.h"

#include <charconv>
#include <set>
#include <thread>

#include "common/clock.h"
#include "common/version.h"
#include "common/workload_kind.h"
#include "common/workload_output.h"
#include "daemon/api/access.h"
#include "daemon/api/route_match.h"
#include "daemon/apply/configuration_apply.h"
#include "daemon/compare/compare.h"
#include "daemon/plan/rounds.h"
#include "daemon/plan/sweep_plan.h"
#include "daemon/report/html_report.h"

namespace ds {

int http_status_for(const Error& error) {
    const std::string& code = error.code;
    if (code == errc::kInvalidSpec || code == errc::kInvalidArgument ||
        code == errc::kNotConfigured)
        return 400;
    if (code == errc::kForbidden) return 403;
    if (code == errc::kNotFound) return 404;
    if (code == errc::kConflict) return 409;
    if (code == errc::kUnavailable) return 503;
    if (code == errc::kTimeout) return 504;
    return 500;
}

namespace {
// One line of JSON. Messages can carry guest bytes (a console tail in a
// failure reason): invalid UTF-8 is replaced, never thrown on.
std::string json_line(const Json& value) {
    return value.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}
}  // namespace

http::Response error_response(const Error& error) {
    http::Response response;
    response.status = http_status_for(error);
    response.body = json_line(http::error_envelope(error.code, error.message));
    return response;
}

namespace {

// A sweep spec as POSTed: the TOML text, and the name errors point at.
struct SpecBody {
    std::string text;
    std::string source = "request body";
};

// The body of POST /v1/sweeps and /v1/sweeps/plan: the TOML itself, or
// {"spec": "<toml>", "source": "name"} for clients that only speak JSON.
Result<SpecBody> spec_body(const http::Request& request) {
    SpecBody spec{request.body};
    auto header = request.headers.find("x-spec-name");
    if (header != request.headers.end() && !header->second.empty()) spec.source = header->second;
    auto type = request.headers.find("content-type");
    if (type != request.headers.end() && type->second.rfind("application/json", 0) == 0) {
        Json body = Json::parse(request.body, nullptr, /*allow_exceptions=*/false);
        if (!body.is_object() || !body.contains("spec") || !body["spec"].is_string()) {
            return make_error(errc::kInvalidArgument,
                              "a JSON submission must be {\"spec\": \"<TOML text>\"}");
        }
        spec.text = body["spec"].get<std::string>();
        if (body.contains("source") && body["source"].is_string()) {
            spec.source = body["source"].get<std::string>();
        }
    }
    if (spec.text.empty()) {
        return make_error(errc::kInvalidSpec,
                          "empty sweep spec: POST the TOML text as the "
                          "body (Content-Type: application/toml)");
    }
    return spec;
}

}  // namespace

namespace {

using Params = RouteParams;  // the path segments the route's '*'s matched
using RouteHandler = std::function<Result<http::Response>(const http::Request&, const Params&)>;

struct Route {
    std::string method;
    RoutePattern pattern;  // daemon/api/route_match.h
    RouteHandler handler;
};

http::Response json_response(const Json& body, int status = 200) {
    http::Response response;
    response.status = status;
    // Guest output is untrusted: invalid UTF-8 is replaced, never thrown on.
    response.body = body.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
    return response;
}

Result<std::int64_t> parse_id(const std::string& text, const char* what) {
    std::int64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value <= 0) {
        return make_error(errc::kInvalidArgument,
                          std::string("invalid ") + what + " id '" + text + "'");
    }
    return value;
}

Result<Json> sweep_summary(Store& store, const SweepRecord& sweep, Scheduler* scheduler) {
    Json json = to_json(sweep);
    auto counts = store.run_counts(sweep.id);
    if (!counts.ok()) return counts.error();
    json["counts"] = counts.value();
    if (scheduler) {
        double eta = scheduler->eta_seconds(sweep.id);
        if (eta >= 0) json["eta_s"] = eta;
    }
    return json;
}

class Api {
  public:
    explicit Api(ApiContext context) : ctx_(std::move(context)) {
        add("GET", "/v1/version", [this](auto& r, auto& p) { return version(r, p); });
        add("GET", "/v1/status", [this](auto& r, auto& p) { return status(r, p); });
        add("GET", "/v1/hosts/check", [this](auto& r, auto& p) { return check_host(r, p); });
        add("GET", "/v1/sweeps", [this](auto& r, auto& p) { return list_sweeps(r, p); });
        add("POST", "/v1/sweeps", [this](auto& r, auto& p) { return submit_sweep(r, p); });
        add("POST", "/v1/sweeps/plan", [this](auto& r, auto& p) { return plan_sweep(r, p); });
        add("GET", "/v1/sweeps/*", [this](auto& r, auto& p) { return show_sweep(r, p); });
        add("POST", "/v1/sweeps/*/cancel", [this](auto& r, auto& p) { return cancel_sweep(r, p); });
        add("GET", "/v1/sweeps/*/runs", [this](auto& r, auto& p) { return list_runs(r, p); });
        add("GET", "/v1/sweeps/*/events", [this](auto& r, auto& p) { return sweep_events(r, p); });
        add("GET", "/v1/sweeps/*/compare", [this](auto& r, auto& p) { return compare(r, p); });
        add("GET", "/v1/sweeps/*/report", [this](auto& r, auto& p) { return sweep_report(r, p); });
        add("GET", "/v1/runs/*", [this](auto& r, auto& p) { return show_run(r, p); });
        add("GET", "/v1/configurations/*/results",
            [this](auto& r, auto& p) { return config_results(r, p); });
        add("GET", "/v1/configurations/*/apply",
            [this](auto& r, auto& p) { return apply_config(r, p); });
    }

    // The single dispatcher: routing, and every Error becomes a response here.
    http::Response handle(const http::Request& request) {
        if (ctx_.peer_allowed && !ctx_.peer_allowed(request.peer_uid, request.peer_gid)) {
            const std::string who = "uid " + std::to_string(request.peer_uid) + " gid " +
                                    std::to_string(request.peer_gid) + " pid " +
                                    std::to_string(request.peer_pid);
            if (ctx_.log)
                ctx_.log("refused API request " + request.method + " " + request.path + " from " +
                         who);
            return error_response(
                make_error(errc::kForbidden,
                           "permission denied: the disksweepd API is for root and members "
                           "of the '" +
                               std::string(kApiGroup) + "' group (you are " + who + ")"));
        }
        bool path_matched = false;
        std::string allowed;
        for (const auto& route : routes_) {
            auto params = route.pattern.match(request.path);
            if (!params) continue;
            path_matched = true;
            if (route.method != request.method) {
                allowed += (allowed.empty() ? "" : ", ") + route.method;
                continue;
            }
            try {
                auto response = route.handler(request, *params);
                if (!response.ok()) return error_response(response.error());
                return std::move(response).value();
            } catch (const std::exception& e) {
                return error_response(make_error(errc::kInternal, e.what()));
            }
        }
        if (path_matched) {
            auto response = error_response(make_error(
                errc::kInvalidArgument,
                request.method + " not allowed on " + request.path + "; allowed: " + allowed));
            response.status = 405;
            response.headers["Allow"] = allowed;
            return response;
        }
        return error_response(make_error(
            errc::kNotFound,
            "no such endpoint: " + request.method + " " + request.path + " (see docs/api.md)"));
    }

  private:
    void add(std::string method, std::string_view pattern, RouteHandler handler) {
        routes_.push_back(Route{std::move(method), RoutePattern(pattern), std::move(handler)});
    }

    Result<http::Response> version(const http::Request&, const Params&) {
        Json capabilities = {"sweeps", "events", "compare", "report", "cancel", "backends"};
        // "workload:NAME" for each workload kind (common/workload_kind.h).
        for (std::string_view kind : workload_kind_names())
            capabilities.push_back("workload:" + std::string(kind));
        capabilities.push_back("status:timed_out");
        // What this daemon can run on: "hypervisor:libvirt", "storage:rbd:pool".
        if (ctx_.backends) {
            const Json backends = ctx_.backends->to_json();
            for (const auto& h : backends["hypervisors"])
                capabilities.push_back("hypervisor:" + h["name"].get<std::string>());
            for (const auto& s : backends["storages"])
                capabilities.push_back("storage:" + s["name"].get<std::string>());
        }
        return json_response({{"api", kApiVersion},
                              {"version", std::string(disksweep_version())},
                              {"capabilities", capabilities}});
    }

    Result<http::Response> status(const http::Request&, const Params&) {
        Json body = ctx_.status ? ctx_.status() : Json::object();
        body["api"] = kApiVersion;
        body["version"] = std::string(disksweep_version());
        return json_response(body);
    }

    // The host by a query parameter: a cluster's hosts are named
    // "LINE/NODE", which a path segment could not hold.
    Result<http::Response> check_host(const http::Request& request, const Params&) {
        const auto given = request.query.find("name");
        if (given == request.query.end() || given->second.empty()) {
            return make_error(errc::kInvalidArgument,
                              "query parameter 'name' (the host, as hostctl status lists it) is "
                              "required");
        }
        const std::string& host = given->second;
        if (!ctx_.check_host) return make_error(errc::kNotFound, "no host '" + host + "'");
        DS_ASSIGN_OR_RETURN(auto answer, ctx_.check_host(host));
        return json_response({{"host", host}, {"check", answer}});
    }

    Result<http::Response> list_sweeps(const http::Request&, const Params&) {
        auto sweeps = ctx_.store->list_sweeps();
        if (!sweeps.ok()) return sweeps.error();
        Json list = Json::array();
        for (const auto& sweep : sweeps.value()) {
            auto summary = sweep_summary(*ctx_.store, sweep, ctx_.scheduler);
            if (!summary.ok()) return summary.error();
            list.push_back(summary.value());
        }
        return json_response({{"sweeps", list}});
    }

    // Whether this daemon can run the submission: its backends are configured
    // and the guest images its workloads need are there.
    Status check_runnable(const SweepSubmission& submission) const {
        if (ctx_.backends) DS_TRY(check_backends(submission, *ctx_.backends));
        if (!ctx_.image_problem.empty() && boots_project_image(submission)) {
            return make_error(errc::kUnavailable, "cannot run sweeps: " + ctx_.image_problem);
        }
        if (ctx_.variant_image_problem) {
            for (const ImageChoice& image : submission.images) {
                if (image == ImageChoice{}) continue;  // the default image: image_problem above
                std::string problem = ctx_.variant_image_problem(image);
                if (!problem.empty()) {
                    return make_error(errc::kUnavailable, "cannot run sweep '" +
                                                              submission.sweep.name +
                                                              "': its workloads need " + problem);
                }
            }
        }
        return ok_status();
    }

    // What the submitter should know before the runs go (placement_warnings).
    Json warnings(const SweepSubmission& submission) const {
        return ctx_.backends ? Json(placement_warnings(submission, *ctx_.backends)) : Json::array();
    }

    Result<http::Response> submit_sweep(const http::Request& request, const Params&) {
        auto spec = spec_body(request);
        if (!spec.ok()) return spec.error();
        auto submission = plan_submission(spec->text, spec->source, ctx_.default_timeouts);
        if (!submission.ok()) return submission.error();
        DS_TRY(check_runnable(submission.value()));
        auto id = ctx_.store->create_sweep(submission->sweep, submission->runs);
        if (!id.ok()) return id.error();
        auto queued = ctx_.scheduler->submit(id.value(), submission->timeouts);
        if (!queued.ok()) return queued.error();
        auto sweep = ctx_.store->get_sweep(id.value());
        if (!sweep.ok()) return sweep.error();
        auto summary = sweep_summary(*ctx_.store, sweep.value(), ctx_.scheduler);
        if (!summary.ok()) return summary.error();
        return json_response({{"sweep", summary.value()},
                              {"dropped", sweep->dropped},
                              {"varying_axes", sweep->varying_axes},
                              {"skipped_by_filesystems", submission->skipped_pairs},
                              {"warnings", warnings(submission.value())}},
                             201);
    }

    Result<http::Response> show_sweep(const http::Request& request, const Params& params) {
        auto id = parse_id(params[0], "sweep");
        if (!id.ok()) return id.error();
        auto sweep = ctx_.store->get_sweep(id.value());
        if (!sweep.ok()) return sweep.error();
        auto summary = sweep_summary(*ctx_.store, sweep.value(), ctx_.scheduler);
        if (!summary.ok()) return summary.error();
        summary.value()["round_decisions"] = sweep->round_decisions;
        auto page = runs_page(request, id.value());
        if (!page.ok()) return page.error();
        page.value()["sweep"] = std::move(summary).value();
        return json_response(page.value());
    }

    // A yes/no query parameter: true or 1, false or 0; absent is false.
    static Result<bool> query_flag(const http::Request& request, const char* name) {
        auto given = request.query.find(name);
        if (given == request.query.end()) return false;
        const std::string& value = given->second;
        if (value == "true" || value == "1") return true;
        if (value == "false" || value == "0") return false;
        return make_error(errc::kInvalidArgument, std::string("query parameter '") + name +
                                                      "' must be true or false (1 or 0), not '" +
                                                      value + "'");
    }

    // {"runs":[..],"next_after":SEQ|null}: the runs after ?after=SEQ (their
    // sequence; default: from the first), at most ?limit=N (default and
    // maximum kMaxRunsPerPage), so no answer grows with the sweep.
    static constexpr int kMaxRunsPerPage = 1000;
    Result<Json> runs_page(const http::Request& request, std::int64_t sweep_id) {
        int limit = kMaxRunsPerPage;
        int after = -1;
        for (auto [name, target] : {std::pair{"limit", &limit}, std::pair{"after", &after}}) {
            auto given = request.query.find(name);
            if (given == request.query.end()) continue;
            const std::string& text = given->second;
            int number = 0;
            auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
            if (text.empty() || ec != std::errc() || end != text.data() + text.size() || number < 0)
                return make_error(errc::kInvalidArgument,
                                  std::string("query parameter '") + name +
                                      "' must be a non-negative integer, not '" + text + "'");
            *target = number;
        }
        if (limit == 0 || limit > kMaxRunsPerPage) limit = kMaxRunsPerPage;
        auto page = ctx_.store->list_runs_page(sweep_id, after, limit, RawOutput::kOmit);
        if (!page.ok()) return page.error();
        Json list = Json::array();
        for (const auto& run : page->runs) list.push_back(to_json(run, false));
        return Json{{"runs", std::move(list)},
                    {"next_after", page->next_after < 0 ? Json() : Json(page->next_after)}};
    }

    Result<http::Response> list_runs(const http::Request& request, const Params& params) {
        auto id = parse_id(params[0], "sweep");
        if (!id.ok()) return id.error();
        auto page = runs_page(request, id.value());
        if (!page.ok()) return page.error();
        return json_response(page.value());
    }

    Result<http::Response> cancel_sweep(const http::Request&, const Params& params) {
        auto id = parse_id(params[0], "sweep");
        if (!id.ok()) return id.error();
        DS_TRY(ctx_.scheduler->cancel(id.value()));
        auto sweep = ctx_.store->get_sweep(id.value());
        if (!sweep.ok()) return sweep.error();
        auto summary = sweep_summary(*ctx_.store, sweep.value(), ctx_.scheduler);
        if (!summary.ok()) return summary.error();
        return json_response({{"sweep", summary.value()}});
    }

    Result<http::Response> show_run(const http::Request&, const Params& params) {
        auto id = parse_id(params[0], "run");
        if (!id.ok()) return id.error();
        auto run = ctx_.store->get_run(id.value());
        if (!run.ok()) return run.error();
        return json_response({{"run", to_json(run.value(), true)}});
    }

    Result<http::Response> compare(const http::Request& request, const Params& params) {
        auto id = parse_id(params[0], "sweep");
        if (!id.ok()) return id.error();
        CompareOptions options;
        if (auto metric = request.query.find("metric"); metric != request.query.end())
            options.metric = metric->second;
        auto all = query_flag(request, "all");
        if (!all.ok()) return all.error();
        options.all_metrics = all.value();
        auto result = compare_sweep(*ctx_.store, id.value(), options);
        if (!result.ok()) return result.error();
        return json_response(result.value());
    }

    // The sweep's report: one self-contained HTML page (daemon/report/html_report.h).
    Result<http::Response> sweep_report(const http::Request&, const Params& params) {
        auto id = parse_id(params[0], "sweep");
        if (!id.ok()) return id.error();
        auto page = report::render_sweep_report(*ctx_.store, id.value());
        if (!page.ok()) return page.error();
        http::Response response;
        response.content_type = "text/html; charset=utf-8";
        response.body = std::move(page).value();
        return response;
    }

    // ?pool_sweeps=true pools the configuration's sweeps; partitions
    // (acceleration, host, versions) stay apart either way.
    Result<http::Response> config_results(const http::Request& request, const Params& params) {
        auto pool = query_flag(request, "pool_sweeps");
        if (!pool.ok()) return pool.error();
        auto result = results_for_config(
            *ctx_.store, params[0], pool.value() ? SweepPooling::kPooled : SweepPooling::kBySweep);
        if (!result.ok()) return result.error();
        return json_response(result.value());
    }

    // The snippet that applies a configuration outside disksweep
    // (daemon/apply/configuration_apply.h); the id may be a unique prefix.
    Result<http::Response> apply_config(const http::Request& request, const Params& params) {
        auto apply_request = apply_request_from_query(request.query);
        if (!apply_request.ok()) return apply_request.error();
        auto answer = apply_configuration(*ctx_.store, params[0], apply_request.value());
        if (!answer.ok()) return answer.error();
        return json_response(answer.value());
    }

    // What POST /v1/sweeps would run, and for how long, without storing or
    // running anything (daemon/plan/sweep_plan.h). "refused" says why a
    // submission would be refused by this daemon (null when it would not).
    Result<http::Response> plan_sweep(const http::Request& request, const Params&) {
        auto spec_text = spec_body(request);
        if (!spec_text.ok()) return spec_text.error();
        auto submission =
            plan_submission(spec_text->text, spec_text->source, ctx_.default_timeouts);
        if (!submission.ok()) return submission.error();
        auto spec = parse_sweep_spec(spec_text->text, spec_text->source);
        if (!spec.ok()) return spec.error();
        auto plan = expand_sweep(spec.value());
        if (!plan.ok()) return plan.error();
        auto history = ctx_.store->runs_with_status(RunStatus::kSucceeded, RawOutput::kOmit);
        if (!history.ok()) return history.error();
        Json answer = sweep_plan_json(spec.value(), plan.value(), RunDurations(history.value()),
                                      max_parallel_runs());
        const Status runnable = check_runnable(submission.value());
        answer["refused"] = runnable.ok() ? Json() : Json(runnable.error().message);
        answer["warnings"] = warnings(submission.value());
        return json_response(answer);
    }

    // How many runs the daemon runs at once: the sum of its hosts' parallel
    // slots as GET /v1/status shows them, else the effective configuration's
    // max_parallel_runs; 1 when it says neither.
    int max_parallel_runs() const {
        if (!ctx_.status) return 1;
        const Json status = ctx_.status();
        if (const Json hosts = status.value("hosts", Json()); hosts.is_array() && !hosts.empty()) {
            int slots = 0;
            for (const Json& host : hosts) {
                const Json parallel = host.is_object() ? host.value("parallel", Json()) : Json();
                if (parallel.is_number_integer()) slots += std::max(0, parallel.get<int>());
            }
            if (slots > 0) return slots;
        }
        const Json config = status.value("config", Json::object());
        const Json parallel =
            config.is_object() ? config.value("max_parallel_runs", Json()) : Json();
        return parallel.is_number_integer() ? std::max(1, parallel.get<int>()) : 1;
    }

    // NDJSON event stream: a snapshot first, then live events until the sweep
    // finishes or the client goes away.
    Result<http::Response> sweep_events(const http::Request&, const Params& params) {
        auto id = parse_id(params[0], "sweep");
        if (!id.ok()) return id.error();
        auto sweep = ctx_.store->get_sweep(id.value());
        if (!sweep.ok()) return sweep.error();
        http::Response response;
        response.content_type = "application/x-ndjson";
        Store* store = ctx_.store;
        EventBus* events = ctx_.events;
        Scheduler* scheduler = ctx_.scheduler;
        std::int64_t sweep_id = id.value();
        response.stream = [store, events, scheduler, sweep_id](http::ChunkSink& sink) {
            std::uint64_t cursor = events->latest();
            auto current = store->get_sweep(sweep_id);
            if (!current.ok()) return;
            auto summary = sweep_summary(*store, current.value(), scheduler);
            Json snapshot = {{"type", "snapshot"},
                             {"sweep_id", sweep_id},
                             {"status", current->status},
                             {"total_runs", current->total_runs},
                             {"time", utc_now_iso8601()}};
            if (summary.ok()) {
                snapshot["counts"] = (*summary)["counts"];
                if (summary->contains("eta_s")) snapshot["eta_s"] = (*summary)["eta_s"];
            }
            if (!sink.write(json_line(snapshot))) return;
            const SweepStatus status = current->status;
            if (is_final(status)) {
                Json end = {{"type", "sweep_finished"},
                            {"sweep_id", sweep_id},
                            {"status", status},
                            {"time", utc_now_iso8601()}};
                if (summary.ok()) end["counts"] = (*summary)["counts"];
                sink.write(json_line(end));
                return;
            }
            while (true) {
                auto batch = events->wait(sweep_id, &cursor, std::chrono::seconds(15));
                if (events->is_shut_down()) return;
                if (batch.empty()) {
                    // Keep-alive, and notice clients that went away.
                    if (!sink.write("{\"type\":\"keepalive\"}\n")) return;
                    continue;
                }
                for (auto& event : batch) {
                    event["total_runs"] = current->total_runs;
                    if (!sink.write(json_line(event))) return;
                    if (event.value("type", "") == "sweep_finished") return;
                }
            }
        };
        return response;
    }

    ApiContext ctx_;
    std::vector<Route> routes_;
};

}  // namespace

http::Handler make_api_handler(ApiContext context) {
    auto api = std::make_shared<Api>(std::move(context));
    return [api](const http::Request& request) { return api->handle(request); };
}

}  // namespace ds
