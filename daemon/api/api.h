// The daemon's HTTP/JSON API (docs/api.md). Handlers return Result<Json>;
// the router is the one place where errors become responses.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/api/status.h"
#include "common/guest_suite.h"
#include "common/http.h"
#include "daemon/api/route_match.h"
#include "daemon/api/route_query.h"
#include "daemon/backends/registry.h"
#include "daemon/plan/submission.h"
#include "daemon/plan/sweep_specs.h"
#include "daemon/run/events.h"
#include "daemon/schedule/scheduler.h"
#include "daemon/store/store.h"

namespace ds {

inline constexpr int kApiVersion = 1;

struct ApiContext {
    Store* store = nullptr;
    Scheduler* scheduler = nullptr;
    EventBus* events = nullptr;
    // The sweeps' parsed specs, shared with the scheduler: a submission's
    // spec is parsed here once and kept under the sweep's id.
    std::shared_ptr<SweepSpecs> specs = std::make_shared<SweepSpecs>();
    SweepTimeouts default_timeouts;
    // Non-empty when runs cannot work (e.g. no guest image): submissions are
    // refused with this message instead of failing every run.
    std::string image_problem;
    // Why a guest image other than the default suite's base image (a
    // variant, ds::image_variant_for_kind, or another [guest] suite) cannot
    // be used, or "": a sweep needing a missing image is refused at
    // submission, not failed run by run. Unset: every image is taken to be
    // there.
    std::function<std::string(const ImageChoice& image)> variant_image_problem;
    // The hypervisors and storages this daemon has configured: a sweep naming
    // anything else is refused at submission. Unset: nothing is checked (tests).
    const BackendCatalog* backends = nullptr;
    // Whether the connecting peer may use the API (uid, gid from
    // SO_PEERCRED); unset: everyone who can open the socket may (tests).
    std::function<bool(uid_t, gid_t)> peer_allowed;
    // Where refusals are logged.
    std::function<void(const std::string&)> log;
    // Facts about this daemon for GET /v1/status (accel, URIs, versions);
    // the handler adds the API's version and the daemon's. Unset: those alone.
    std::function<api::StatusReply()> status;
    // GET /v1/hosts/check?name=NAME: the host's Hypervisor::check_host(), asked
    // now; errc::kNotFound for a host this daemon does not have. Unset: 404.
    std::function<Result<Json>(const std::string& host)> check_host;
    // Tests: where routing adds the bytes of request paths it read
    // (route_match.h), to bound that work by a path's length instead of
    // timing it. Unset: not counted.
    MatchWork* routing_work = nullptr;
};

// Error code -> HTTP status, and the JSON error body. Used by every handler.
int http_status_for(const Error& error);
http::Response error_response(const Error& error);

// Builds the request handler for http::UnixServer.
http::Handler make_api_handler(ApiContext context);

// One route of the API as docs/api.md's Endpoints table lists it.
struct RouteDoc {
    std::string_view method;                     // "GET", "POST"
    std::string_view pattern;                    // daemon/api/route_match.h: '*' is one segment
    std::span<const QueryParameter> query = {};  // all its handler reads (route_query.h)
};

// Every route, in the order the dispatcher tries them: the same table the
// dispatcher is built from, for the doc test.
std::vector<RouteDoc> api_routes();

// Where GET /v1/version's capabilities come from.
enum class CapabilitySource {
    kFixed,          // the name itself
    kWorkloadKinds,  // PREFIX:KIND for each workload kind (common/workload_kind.h)
    kHypervisors,    // PREFIX:NAME for each configured hypervisor (ApiContext::backends)
    kStorages,       // PREFIX:NAME for each configured storage (ApiContext::backends)
};

struct Capability {
    std::string_view name;  // "sweeps", or the pattern of generated ones: "workload:NAME"
    CapabilitySource source = CapabilitySource::kFixed;
};

// The capabilities in the order GET /v1/version lists them (docs/api.md
// "Capabilities"); a generated one's pattern stands for all it yields.
std::span<const Capability> api_capabilities();

}  // namespace ds
