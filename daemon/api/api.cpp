#include "daemon/api/api.h"

#include <charconv>
#include <set>
#include <thread>

#include "common/api/compare.h"
#include "common/api/configurations.h"
#include "common/api/events.h"
#include "common/api/hosts.h"
#include "common/api/plan.h"
#include "common/api/sweeps.h"
#include "common/api/version.h"
#include "common/clock.h"
#include "common/version.h"
#include "common/workload_kind.h"
#include "common/workload_output.h"
#include "daemon/api/access.h"
#include "daemon/api/record_messages.h"
#include "daemon/api/route_match.h"
#include "daemon/apply/configuration_apply.h"
#include "daemon/compare/compare.h"
#include "daemon/plan/expand.h"
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

// What a handler reads of its request: the body and headers, the path
// segments its route's '*'s matched, and the query only through the
// accessor that answers for the parameters the route declares.
struct RouteCall {
    const std::string& body;
    const std::map<std::string, std::string>& headers;  // names lower-cased
    const RouteParams& params;
    const RouteQuery& query;
};

// A sweep spec as POSTed: the TOML text, and the name errors point at.
struct SpecBody {
    std::string text;
    std::string source = "request body";
};

// The body of POST /v1/sweeps and /v1/sweeps/plan: the TOML itself, or
// {"spec": "<toml>", "source": "name"} for clients that only speak JSON.
Result<SpecBody> spec_body(const RouteCall& call) {
    SpecBody spec{call.body};
    auto header = call.headers.find("x-spec-name");
    if (header != call.headers.end() && !header->second.empty()) spec.source = header->second;
    auto type = call.headers.find("content-type");
    if (type != call.headers.end() && type->second.rfind("application/json", 0) == 0) {
        Json body = Json::parse(call.body, nullptr, /*allow_exceptions=*/false);
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

// An event of the stream that the stream writes itself (its first and,
// for a finished sweep, its last): the sweep's status now.
api::SweepEvent sweep_state_event(const char* type, std::int64_t sweep_id, SweepStatus status) {
    api::SweepEvent event;
    event.type = type;
    event.sweep_id = sweep_id;
    event.time = utc_now_iso8601();
    event.status = to_string(status);
    return event;
}

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

class Api;

// One row of the route table: what the doc lists, and the handler.
struct ApiRoute {
    RouteDoc doc;
    Result<http::Response> (Api::*handler)(const RouteCall&);
};

std::span<const ApiRoute> routes();

class Api {
  public:
    explicit Api(ApiContext context) : ctx_(std::move(context)) {
        for (const ApiRoute& route : routes()) patterns_.emplace_back(route.doc.pattern);
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
        for (std::size_t i = 0; i < routes().size(); ++i) {
            const ApiRoute& route = routes()[i];
            auto params = patterns_[i].match(request.path, ctx_.routing_work);
            if (!params) continue;
            path_matched = true;
            if (route.doc.method != request.method) {
                allowed += (allowed.empty() ? "" : ", ") + std::string(route.doc.method);
                continue;
            }
            try {
                const RouteQuery query(request.query, route.doc.query);
                auto response = (this->*route.handler)(
                    RouteCall{request.body, request.headers, *params, query});
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
    // The handlers, each named by its row of the route table.
    friend std::span<const ApiRoute> routes();

    Result<http::Response> version(const RouteCall&) {
        return json_response(to_json(api::VersionReply{.api = kApiVersion,
                                                       .version = std::string(disksweep_version()),
                                                       .capabilities = capabilities()}));
    }

    Result<http::Response> status(const RouteCall&) {
        api::StatusReply reply = ctx_.status ? ctx_.status() : api::StatusReply{};
        reply.api = kApiVersion;
        reply.version = std::string(disksweep_version());
        return json_response(to_json(reply));
    }

    // The host by a query parameter: a cluster's hosts are named
    // "LINE/NODE", which a path segment could not hold.
    Result<http::Response> check_host(const RouteCall& call) {
        DS_ASSIGN_OR_RETURN(const std::string host,
                            call.query.required("name", "the host, as hostctl status lists it"));
        if (!ctx_.check_host) return make_error(errc::kNotFound, "no host '" + host + "'");
        DS_ASSIGN_OR_RETURN(const Json answer, ctx_.check_host(host));
        DS_ASSIGN_OR_RETURN(api::HostCheck check, api::HostCheck::from_json(answer));
        return json_response(to_json(api::HostCheckReply{.host = host, .check = std::move(check)}));
    }

    Result<http::Response> list_sweeps(const RouteCall&) {
        DS_ASSIGN_OR_RETURN(const auto sweeps, ctx_.store->list_sweeps());
        api::SweepListReply reply;
        for (const auto& sweep : sweeps) {
            DS_ASSIGN_OR_RETURN(api::SweepSummary summary,
                                sweep_summary(*ctx_.store, sweep, ctx_.scheduler));
            reply.sweeps.push_back(std::move(summary));
        }
        return json_response(to_json(reply));
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
    std::vector<std::string> warnings(const SweepSubmission& submission) const {
        return ctx_.backends ? placement_warnings(submission, *ctx_.backends)
                             : std::vector<std::string>();
    }

    Result<http::Response> submit_sweep(const RouteCall& call) {
        auto body = spec_body(call);
        if (!body.ok()) return body.error();
        DS_ASSIGN_OR_RETURN(auto spec, ctx_.specs->parse(body->text, body->source));
        auto submission = plan_submission(*spec, body->text, body->source, ctx_.default_timeouts);
        if (!submission.ok()) return submission.error();
        DS_TRY(check_runnable(submission.value()));
        auto id = ctx_.store->create_sweep(submission->sweep, submission->runs);
        if (!id.ok()) return id.error();
        ctx_.specs->keep(id.value(), std::move(spec));
        auto queued = ctx_.scheduler->submit(id.value(), submission->timeouts);
        if (!queued.ok()) return queued.error();
        DS_ASSIGN_OR_RETURN(const SweepRecord sweep, ctx_.store->get_sweep(id.value()));
        api::SweepSubmitReply reply;
        DS_ASSIGN_OR_RETURN(reply.sweep, sweep_summary(*ctx_.store, sweep, ctx_.scheduler));
        reply.dropped = sweep.dropped;
        reply.varying_axes = reply.sweep.varying_axes;
        reply.skipped_by_filesystems = submission->skipped_pairs;
        reply.warnings = warnings(submission.value());
        return json_response(to_json(reply), 201);
    }

    Result<http::Response> show_sweep(const RouteCall& call) {
        auto id = parse_id(call.params[0], "sweep");
        if (!id.ok()) return id.error();
        DS_ASSIGN_OR_RETURN(const SweepRecord sweep, ctx_.store->get_sweep(id.value()));
        api::SweepShowReply reply;
        DS_ASSIGN_OR_RETURN(reply.sweep, sweep_summary(*ctx_.store, sweep, ctx_.scheduler));
        reply.sweep.round_decisions = sweep.round_decisions;
        DS_ASSIGN_OR_RETURN(reply.page, runs_page(call.query, id.value()));
        return json_response(to_json(reply));
    }

    // The runs after ?after=SEQ (their sequence; default: from the first),
    // at most ?limit=N (default and maximum kMaxRunsPerPage), so no answer
    // grows with the sweep.
    static constexpr int kMaxRunsPerPage = 1000;
    Result<api::RunsPage> runs_page(const RouteQuery& query, std::int64_t sweep_id) {
        DS_ASSIGN_OR_RETURN(const auto request,
                            api::RunsPageRequest::from_query(
                                [&query](const char* name) { return query.find(name); }));
        const int after = request.after ? static_cast<int>(*request.after) : -1;
        int limit = request.limit ? static_cast<int>(*request.limit) : kMaxRunsPerPage;
        if (limit == 0 || limit > kMaxRunsPerPage) limit = kMaxRunsPerPage;
        DS_ASSIGN_OR_RETURN(const auto found,
                            ctx_.store->list_runs_page(sweep_id, after, limit, RawOutput::kOmit));
        api::RunsPage page;
        for (const auto& run : found.runs) page.runs.push_back(run_entry(run, RawOutput::kOmit));
        if (found.next_after >= 0) page.next_after = found.next_after;
        return page;
    }

    Result<http::Response> list_runs(const RouteCall& call) {
        auto id = parse_id(call.params[0], "sweep");
        if (!id.ok()) return id.error();
        DS_ASSIGN_OR_RETURN(const api::RunsPage page, runs_page(call.query, id.value()));
        return json_response(to_json(page));
    }

    Result<http::Response> cancel_sweep(const RouteCall& call) {
        auto id = parse_id(call.params[0], "sweep");
        if (!id.ok()) return id.error();
        DS_TRY(ctx_.scheduler->cancel(id.value()));
        DS_ASSIGN_OR_RETURN(const SweepRecord sweep, ctx_.store->get_sweep(id.value()));
        DS_ASSIGN_OR_RETURN(api::SweepSummary summary,
                            sweep_summary(*ctx_.store, sweep, ctx_.scheduler));
        return json_response(to_json(api::CancelReply{std::move(summary)}));
    }

    Result<http::Response> show_run(const RouteCall& call) {
        auto id = parse_id(call.params[0], "run");
        if (!id.ok()) return id.error();
        DS_ASSIGN_OR_RETURN(const RunRecord run, ctx_.store->get_run(id.value()));
        return json_response(to_json(api::RunShowReply{run_entry(run, RawOutput::kInclude)}));
    }

    // The sweep's comparison (daemon/compare/compare.h compare_sweep's
    // answer, read as its message).
    Result<http::Response> compare(const RouteCall& call) {
        auto id = parse_id(call.params[0], "sweep");
        if (!id.ok()) return id.error();
        CompareOptions options;
        DS_ASSIGN_OR_RETURN(const std::string* metric, call.query.find("metric"));
        if (metric) options.metric = *metric;
        DS_ASSIGN_OR_RETURN(options.all_metrics, call.query.flag("all"));
        options.specs = ctx_.specs.get();
        DS_ASSIGN_OR_RETURN(const Json comparison, compare_sweep(*ctx_.store, id.value(), options));
        DS_ASSIGN_OR_RETURN(const auto reply, api::CompareReply::from_json(comparison));
        return json_response(to_json(reply));
    }

    // The sweep's report: one self-contained HTML page (daemon/report/html_report.h).
    Result<http::Response> sweep_report(const RouteCall& call) {
        auto id = parse_id(call.params[0], "sweep");
        if (!id.ok()) return id.error();
        auto page = report::render_sweep_report(*ctx_.store, id.value(), ctx_.specs.get());
        if (!page.ok()) return page.error();
        http::Response response;
        response.content_type = "text/html; charset=utf-8";
        response.body = std::move(page).value();
        return response;
    }

    // ?pool_sweeps=true pools the configuration's sweeps; partitions
    // (acceleration, host, versions) stay apart either way. The answer of
    // compare's results_for_config, read as its message.
    Result<http::Response> config_results(const RouteCall& call) {
        auto pool = call.query.flag("pool_sweeps");
        if (!pool.ok()) return pool.error();
        DS_ASSIGN_OR_RETURN(
            const Json results,
            results_for_config(*ctx_.store, call.params[0],
                               pool.value() ? SweepPooling::kPooled : SweepPooling::kBySweep));
        DS_ASSIGN_OR_RETURN(const auto reply, api::ConfigResultsReply::from_json(results));
        return json_response(to_json(reply));
    }

    // The snippet that applies a configuration outside disksweep
    // (daemon/apply/configuration_apply.h, read as its message); the id may
    // be a unique prefix.
    Result<http::Response> apply_config(const RouteCall& call) {
        DS_ASSIGN_OR_RETURN(auto query, call.query.all(apply_query_parameters()));
        auto apply_request = apply_request_from_query(query);
        if (!apply_request.ok()) return apply_request.error();
        DS_ASSIGN_OR_RETURN(const Json answer, apply_configuration(*ctx_.store, call.params[0],
                                                                   apply_request.value()));
        DS_ASSIGN_OR_RETURN(const auto reply, api::ApplyReply::from_json(answer));
        return json_response(to_json(reply));
    }

    // What POST /v1/sweeps would run, and for how long, without storing or
    // running anything (daemon/plan/sweep_plan.h's answer, read as its
    // message). "refused" says why a submission would be refused by this
    // daemon (null when it would not).
    Result<http::Response> plan_sweep(const RouteCall& call) {
        auto body = spec_body(call);
        if (!body.ok()) return body.error();
        DS_ASSIGN_OR_RETURN(auto spec, ctx_.specs->parse(body->text, body->source));
        auto submission = plan_submission(*spec, body->text, body->source, ctx_.default_timeouts);
        if (!submission.ok()) return submission.error();
        auto plan = expand_sweep(*spec);
        if (!plan.ok()) return plan.error();
        auto history = ctx_.store->runs_with_status(RunStatus::kSucceeded, RawOutput::kOmit);
        if (!history.ok()) return history.error();
        DS_ASSIGN_OR_RETURN(
            api::SweepPlanReply reply,
            api::SweepPlanReply::from_json(sweep_plan_json(
                *spec, plan.value(), RunDurations(history.value()), max_parallel_runs())));
        if (const Status runnable = check_runnable(submission.value()); !runnable.ok())
            reply.refused = runnable.error().message;
        reply.warnings = warnings(submission.value());
        return json_response(to_json(reply));
    }

    // How many runs the daemon runs at once: the sum of its hosts' parallel
    // slots as GET /v1/status shows them, else the effective configuration's
    // max_parallel_runs; 1 when it says neither.
    int max_parallel_runs() const {
        if (!ctx_.status) return 1;
        const api::StatusReply status = ctx_.status();
        if (!status.hosts.empty()) {
            std::int64_t slots = 0;
            for (const api::HostStatus& host : status.hosts)
                slots += std::max<std::int64_t>(0, host.parallel.value_or(0));
            if (slots > 0) return static_cast<int>(slots);
        }
        const Json parallel = json_read::field(status.config, "max_parallel_runs");
        return parallel.is_number_integer() ? std::max(1, parallel.get<int>()) : 1;
    }

    // NDJSON event stream: a snapshot first, then live events until the sweep
    // finishes or the client goes away.
    Result<http::Response> sweep_events(const RouteCall& call) {
        auto id = parse_id(call.params[0], "sweep");
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
            api::SweepEvent snapshot = sweep_state_event("snapshot", sweep_id, current->status);
            snapshot.total_runs = current->total_runs;
            if (summary.ok()) {
                snapshot.counts = summary->counts;
                snapshot.eta_s = summary->eta_s;
            }
            if (!sink.write(json_line(to_json(snapshot)))) return;
            if (is_final(current->status)) {
                api::SweepEvent end =
                    sweep_state_event("sweep_finished", sweep_id, current->status);
                end.counts = snapshot.counts;
                sink.write(json_line(to_json(end)));
                return;
            }
            while (true) {
                auto batch = events->wait(sweep_id, &cursor, std::chrono::seconds(15));
                if (events->is_shut_down()) return;
                if (batch.empty()) {
                    // Keep-alive, and notice clients that went away.
                    api::SweepEvent keepalive;
                    keepalive.type = "keepalive";
                    if (!sink.write(json_line(to_json(keepalive)))) return;
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

    // GET /v1/version's capabilities: api_capabilities() with each
    // generated one's pattern expanded, in the table's order.
    std::vector<std::string> capabilities() const {
        std::vector<std::string> list;
        for (const Capability& capability : api_capabilities()) {
            if (capability.source == CapabilitySource::kFixed) {
                list.emplace_back(capability.name);
                continue;
            }
            const std::string_view prefix =
                capability.name.substr(0, capability.name.find(':') + 1);
            for (const std::string& name : generated_names(capability.source))
                list.push_back(std::string(prefix) + name);
        }
        return list;
    }

    // The names a generated capability has one entry for.
    std::vector<std::string> generated_names(CapabilitySource source) const {
        switch (source) {
            case CapabilitySource::kFixed:
                break;
            case CapabilitySource::kWorkloadKinds: {
                const std::vector<std::string_view> kinds = workload_kind_names();
                return {kinds.begin(), kinds.end()};
            }
            case CapabilitySource::kHypervisors:
                return backend_names("hypervisors");
            case CapabilitySource::kStorages:
                return backend_names("storages");
        }
        return {};
    }

    // The names in one list of the configured backends ("hypervisors",
    // "storages" of BackendCatalog::to_json()); none when unset (tests).
    std::vector<std::string> backend_names(const char* list) const {
        std::vector<std::string> names;
        if (!ctx_.backends) return names;
        // Held here: a range-for over to_json()[list] would iterate a member
        // of a temporary destroyed before the loop's first step.
        const Json backends = ctx_.backends->to_json();
        for (const auto& backend : backends[list])
            names.push_back(backend["name"].get<std::string>());
        return names;
    }

    ApiContext ctx_;
    std::vector<RoutePattern> patterns_;  // routes()'s, in its order
};

// The query parameters each route reads (route_query.h).
constexpr QueryParameter kHostQuery[] = {{"name", QueryPresence::kRequired}};
constexpr QueryParameter kRunsPageQuery[] = {{"limit"}, {"after"}};
constexpr QueryParameter kCompareQuery[] = {{"metric"}, {"all"}};
constexpr QueryParameter kResultsQuery[] = {{"pool_sweeps"}};
// apply_request_from_query's own (RouteQuery::all checks they agree).
constexpr QueryParameter kApplyQuery[] = {
    {"format", QueryPresence::kRequired}, {"vmid"}, {"storage"}, {"workload"}};

// The API's routes, declared once: the dispatcher tries them in this
// order, api_routes() hands them to the doc test (docs/api.md "Endpoints").
std::span<const ApiRoute> routes() {
    static constexpr ApiRoute kRoutes[] = {
        {{"GET", "/v1/version"}, &Api::version},
        {{"GET", "/v1/status"}, &Api::status},
        {{"GET", "/v1/hosts/check", kHostQuery}, &Api::check_host},
        {{"GET", "/v1/sweeps"}, &Api::list_sweeps},
        {{"POST", "/v1/sweeps"}, &Api::submit_sweep},
        {{"POST", "/v1/sweeps/plan"}, &Api::plan_sweep},
        {{"GET", "/v1/sweeps/*", kRunsPageQuery}, &Api::show_sweep},
        {{"POST", "/v1/sweeps/*/cancel"}, &Api::cancel_sweep},
        {{"GET", "/v1/sweeps/*/runs", kRunsPageQuery}, &Api::list_runs},
        {{"GET", "/v1/sweeps/*/events"}, &Api::sweep_events},
        {{"GET", "/v1/sweeps/*/compare", kCompareQuery}, &Api::compare},
        {{"GET", "/v1/sweeps/*/report"}, &Api::sweep_report},
        {{"GET", "/v1/runs/*"}, &Api::show_run},
        {{"GET", "/v1/configurations/*/results", kResultsQuery}, &Api::config_results},
        {{"GET", "/v1/configurations/*/apply", kApplyQuery}, &Api::apply_config},
    };
    return kRoutes;
}

}  // namespace

std::vector<RouteDoc> api_routes() {
    std::vector<RouteDoc> docs;
    for (const ApiRoute& route : routes()) docs.push_back(route.doc);
    return docs;
}

std::span<const Capability> api_capabilities() {
    static constexpr Capability kCapabilities[] = {
        {"sweeps"},
        {"events"},
        {"compare"},
        {"report"},
        {"cancel"},
        {"backends"},
        {"workload:NAME", CapabilitySource::kWorkloadKinds},
        {"status:timed_out"},
        {"hypervisor:NAME", CapabilitySource::kHypervisors},
        {"storage:NAME", CapabilitySource::kStorages},
    };
    return kCapabilities;
}

http::Handler make_api_handler(ApiContext context) {
    auto api = std::make_shared<Api>(std::move(context));
    return [api](const http::Request& request) { return api->handle(request); };
}

}  // namespace ds
