// The daemon's real replies against the API's typed messages (common/api/):
// each decodes, and encodes back to exactly the JSON the daemon sent, so
// hostctl reads what disksweepd writes and the two cannot drift apart.
#include <catch2/catch.hpp>

#include "common/api/compare.h"
#include "common/api/configurations.h"
#include "common/api/hosts.h"
#include "common/api/plan.h"
#include "common/api/runs.h"
#include "common/api/status.h"
#include "common/api/sweeps.h"
#include "common/api/version.h"
#include "common/http.h"
#include "daemon/api/api.h"
#include "daemon/schedule/scheduler.h"
#include "support/fakes/daemon_fakes.h"
#include "support/temp_dir.h"

namespace ds {
namespace {

using ds::test::TempDir;

constexpr const char* kSpecText = R"(name = "replies"
[matrix]
cache = ["unsafe", "none"]
[[workload]]
kind = "fio"
name = "randread"
rw = "randread"
)";

// A daemon's API over a store, with a scheduler that never starts a run.
struct ApiUnderTest {
    TempDir dir;
    std::unique_ptr<Store> store = testing::open_store(dir.file("results.db"));
    EventBus events;
    Scheduler scheduler{
        *store, events,
        [](const RunRecord& run, const SweepTimeouts&, const std::atomic<bool>&) { return run; },
        1};
    http::Handler api = make_api_handler(context());

    ApiContext context() {
        ApiContext context;
        context.store = store.get();
        context.scheduler = &scheduler;
        context.events = &events;
        context.status = [] {
            api::StatusReply status;
            status.accel = "tcg";
            status.accel_reason = "configured: tcg";
            status.hypervisor = {.backend = "libvirt", .uri = "test:///default"};
            status.versions = Json{{"libvirt", "9.0.0"}};
            status.hosts.push_back(api::HostStatus::from_json(
                                       {{"name", "local"}, {"kind", "libvirt"}, {"parallel", 2}})
                                       .value());
            status.guest_image = {.ready = true, .problem = ""};
            status.guest_images.push_back(api::GuestImageStatus::from_json({{"suite", "bookworm"},
                                                                            {"variant", ""},
                                                                            {"ready", false},
                                                                            {"problem", "missing"}})
                                              .value());
            status.config = Json{{"max_parallel_runs", 1}};
            return status;
        };
        context.check_host = [](const std::string& host) -> Result<Json> {
            if (host != "local") return make_error(errc::kNotFound, "no host '" + host + "'");
            return Json{{"state", "connected"}};
        };
        return context;
    }

    // The reply's body; fails the test unless its status is `status`.
    Json call(const std::string& method, const std::string& path, int status = 200,
              const std::string& body = "", const QueryValues& query = {}) {
        http::Request request;
        request.method = method;
        request.path = path;
        request.target = path;
        request.query = query;
        request.body = body;
        const http::Response response = api(request);
        INFO(response.body);
        REQUIRE(response.status == status);
        return Json::parse(response.body);
    }
};

// `body` decodes as T and encodes back to itself.
template <api::DecodableMessage T>
T reads_back(const Json& body) {
    auto decoded = api::decode<T>(body);
    INFO((decoded.ok() ? std::string() : decoded.error().message));
    REQUIRE(decoded.ok());
    CHECK(to_json(decoded.value()) == body);
    return std::move(decoded).value();
}

}  // namespace

TEST_CASE("the daemon's version, host check and cancel replies are their typed messages",
          "[api][replies]") {
    ApiUnderTest daemon;
    const auto version = reads_back<api::VersionReply>(daemon.call("GET", "/v1/version"));
    CHECK(version.api == kApiVersion);

    const auto check = reads_back<api::HostCheckReply>(
        daemon.call("GET", "/v1/hosts/check", 200, "", {{"name", "local"}}));
    CHECK(check.check.state == "connected");

    daemon.call("POST", "/v1/sweeps", 201, kSpecText);
    const auto cancelled = reads_back<api::CancelReply>(daemon.call("POST", "/v1/sweeps/1/cancel"));
    CHECK(cancelled.sweep.status == "cancelled");
    CHECK(cancelled.sweep.counts->cancelled == 2);
}

TEST_CASE("the daemon's status reply is its typed message", "[api][replies]") {
    ApiUnderTest daemon;
    const auto status = reads_back<api::StatusReply>(daemon.call("GET", "/v1/status"));
    CHECK(status.api == kApiVersion);
    CHECK(status.hosts.at(0).parallel == 2);
    CHECK(status.guest_images.at(0).problem == "missing");
}

TEST_CASE("the daemon's plan reply is its typed message", "[api][replies]") {
    ApiUnderTest daemon;
    const auto plan =
        reads_back<api::SweepPlanReply>(daemon.call("POST", "/v1/sweeps/plan", 200, kSpecText));
    CHECK(plan.total_runs == 2);
    CHECK(plan.configurations.size() == 2);
    CHECK(plan.estimate->runs_unknown == 2);
    CHECK_FALSE(plan.refused);
}

TEST_CASE("the daemon's configuration replies are their typed messages", "[api][replies]") {
    ApiUnderTest daemon;
    daemon.call("POST", "/v1/sweeps", 201, kSpecText);
    const auto page = reads_back<api::RunsPage>(daemon.call("GET", "/v1/sweeps/1/runs"));
    const std::string config_id = page.runs.at(0).config_id.value();

    for (const char* pooled : {"false", "true"}) {
        const auto results = reads_back<api::ConfigResultsReply>(
            daemon.call("GET", "/v1/configurations/" + config_id + "/results", 200, "",
                        {{"pool_sweeps", pooled}}));
        CHECK(results.config_id == config_id);
        REQUIRE(results.rows.size() == 1);
        CHECK(results.rows[0].sweep_ids == std::vector<std::int64_t>{1});
        CHECK_FALSE(results.rows[0].partition);
    }

    const auto applied = reads_back<api::ApplyReply>(
        daemon.call("GET", "/v1/configurations/" + config_id.substr(0, 8) + "/apply", 200, "",
                    {{"format", "libvirt"}}));
    CHECK(applied.config_id == config_id);
    CHECK(applied.format == "libvirt");
    CHECK(applied.snippet);
}

TEST_CASE("the daemon's comparison is its typed message", "[api][replies]") {
    ApiUnderTest daemon;
    daemon.call("POST", "/v1/sweeps", 201, kSpecText);
    for (const QueryValues& query : {QueryValues{}, QueryValues{{"all", "1"}}}) {
        const auto compare = reads_back<api::CompareReply>(
            daemon.call("GET", "/v1/sweeps/1/compare", 200, "", query));
        CHECK(compare.sweep_id == 1);
        CHECK(compare.varying_axes == std::vector<std::string>{"cache"});
        CHECK(compare.rows.size() == 2);
    }
    daemon.call("POST", "/v1/sweeps/1/cancel");
    const auto cancelled =
        reads_back<api::CompareReply>(daemon.call("GET", "/v1/sweeps/1/compare"));
    CHECK(cancelled.rows.at(0).runs.value("cancelled", 0) == 1);
}

TEST_CASE("the daemon's sweep and run replies are their typed messages", "[api][replies]") {
    ApiUnderTest daemon;
    CHECK(reads_back<api::SweepListReply>(daemon.call("GET", "/v1/sweeps")).sweeps.empty());

    const auto submitted =
        reads_back<api::SweepSubmitReply>(daemon.call("POST", "/v1/sweeps", 201, kSpecText));
    CHECK(submitted.sweep.id == 1);
    CHECK(submitted.varying_axes == std::vector<std::string>{"cache"});

    const auto list = reads_back<api::SweepListReply>(daemon.call("GET", "/v1/sweeps"));
    REQUIRE(list.sweeps.size() == 1);
    CHECK(list.sweeps[0].counts->pending == 2);

    const auto shown = reads_back<api::SweepShowReply>(
        daemon.call("GET", "/v1/sweeps/1", 200, "", {{"limit", "1"}}));
    CHECK(shown.sweep.round_decisions);
    REQUIRE(shown.page.runs.size() == 1);
    CHECK(shown.page.next_after);

    const auto page = reads_back<api::RunsPage>(daemon.call(
        "GET", "/v1/sweeps/1/runs", 200, "", {{"after", std::to_string(*shown.page.next_after)}}));
    REQUIRE(page.runs.size() == 1);
    CHECK_FALSE(page.next_after);
    CHECK_FALSE(page.runs[0].raw_output);

    const auto run = reads_back<api::RunShowReply>(
        daemon.call("GET", "/v1/runs/" + std::to_string(*page.runs[0].id)));
    CHECK(run.run->status == "pending");
    CHECK(run.run->raw_output);
}

}  // namespace ds
