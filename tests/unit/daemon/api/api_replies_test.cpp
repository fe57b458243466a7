// The daemon's real replies against the API's typed messages (common/api/):
// each decodes, and encodes back to exactly the JSON the daemon sent, so
// hostctl reads what disksweepd writes and the two cannot drift apart.
#include <catch2/catch.hpp>

#include "common/api/hosts.h"
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

}  // namespace ds
