// SweepSpecs: a sweep's spec is parsed once, however many callers ask and
// from however many threads; a spec that does not parse is never kept. The
// parser is a counting stand-in around parse_sweep_spec.
#include "daemon/plan/sweep_specs.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "common/http.h"
#include "daemon/api/api.h"
#include "daemon/compare/compare.h"
#include "daemon/report/html_report.h"
#include "daemon/schedule/adaptive_rounds.h"
#include "daemon/schedule/scheduler.h"
#include "support/fakes/daemon_fakes.h"
#include "support/temp_dir.h"

namespace ds {
namespace {

using ds::test::TempDir;

constexpr const char* kSpecText = R"(name = "adaptive"
repetitions = { min = 2, max = 4, ci = "5%" }
[matrix]
cache = ["unsafe", "none"]
[[workload]]
kind = "fio"
name = "randread"
rw = "randread"
)";

// parse_sweep_spec, counting its calls.
struct CountingParse {
    std::shared_ptr<std::atomic<int>> calls = std::make_shared<std::atomic<int>>(0);
    SweepSpecs::Parse parse() const {
        return [calls = calls](std::string_view text, std::string_view source) {
            ++*calls;
            return parse_sweep_spec(text, source);
        };
    }
};

SweepRecord stored_sweep(std::int64_t id, const std::string& text) {
    SweepRecord sweep;
    sweep.id = id;
    sweep.spec_toml = text;
    sweep.spec_source = "stored.toml";
    return sweep;
}

http::Response call(const http::Handler& api, const std::string& method, const std::string& path,
                    const std::string& body = "") {
    http::Request request;
    request.method = method;
    request.path = path;
    request.target = path;
    request.body = body;
    return api(request);
}

}  // namespace

TEST_CASE("SweepSpecs parses a sweep's spec once however many callers ask", "[sweep_specs]") {
    CountingParse counting;
    SweepSpecs specs(counting.parse());
    const SweepRecord sweep = stored_sweep(7, kSpecText);

    auto first = specs.spec_of(sweep);
    REQUIRE(first.ok());
    CHECK(first.value()->name == "adaptive");
    for (int i = 0; i < 5; ++i) {
        auto again = specs.spec_of(sweep);
        REQUIRE(again.ok());
        CHECK(again.value() == first.value());
    }
    CHECK(*counting.calls == 1);

    // Another sweep is another spec.
    auto other = specs.spec_of(stored_sweep(8, kSpecText));
    REQUIRE(other.ok());
    CHECK(other.value() != first.value());
    CHECK(*counting.calls == 2);
}

TEST_CASE("SweepSpecs gives concurrent callers the same object, parsed once", "[sweep_specs]") {
    CountingParse counting;
    SweepSpecs specs(counting.parse());
    const SweepRecord sweep = stored_sweep(3, kSpecText);
    constexpr int kThreads = 8;
    std::vector<const SweepSpec*> seen(kThreads, nullptr);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&specs, &sweep, &seen, t] {
            auto spec = specs.spec_of(sweep);
            if (spec.ok()) seen[static_cast<std::size_t>(t)] = spec.value().get();
        });
    }
    for (std::thread& thread : threads) thread.join();
    REQUIRE(seen.front() != nullptr);
    for (const SweepSpec* spec : seen) CHECK(spec == seen.front());
    CHECK(*counting.calls == 1);
}

TEST_CASE("SweepSpecs gives every caller the error of a spec that does not parse",
          "[sweep_specs]") {
    CountingParse counting;
    SweepSpecs specs(counting.parse());
    const SweepRecord broken = stored_sweep(4, "name = \"t\"\n[[workload]]\nkind = \"nope\"\n");
    auto direct = parse_sweep_spec(broken.spec_toml, broken.spec_source);
    REQUIRE_FALSE(direct.ok());
    for (int i = 1; i <= 3; ++i) {
        auto spec = specs.spec_of(broken);
        REQUIRE_FALSE(spec.ok());
        CHECK(spec.error().message == direct.error().message);
        CHECK(*counting.calls == i);  // never kept: asked again, parsed again
    }
}

TEST_CASE("SweepSpecs keeps a submitted spec under its id, not parsed again", "[sweep_specs]") {
    CountingParse counting;
    SweepSpecs specs(counting.parse());
    auto submitted = specs.parse(kSpecText, "submitted.toml");
    REQUIRE(submitted.ok());
    specs.keep(9, submitted.value());
    auto kept = specs.spec_of(stored_sweep(9, kSpecText));
    REQUIRE(kept.ok());
    CHECK(kept.value() == submitted.value());
    CHECK(*counting.calls == 1);
}

TEST_CASE("settle_round, compare and the report read a stored sweep's spec from its owner",
          "[sweep_specs][rounds][compare][report]") {
    TempDir dir;
    auto store = testing::open_store(dir.file("results.db"));
    auto submission = plan_submission(kSpecText, "adaptive.toml", SweepTimeouts{});
    REQUIRE(submission.ok());
    auto id = store->create_sweep(submission->sweep, submission->runs);
    REQUIRE(id.ok());
    CountingParse counting;
    SweepSpecs specs(counting.parse());

    REQUIRE(settle_round(*store, id.value(), &specs).ok());
    CompareOptions options;
    options.specs = &specs;
    REQUIRE(compare_sweep(*store, id.value(), options).ok());
    REQUIRE(report::render_sweep_report(*store, id.value(), &specs).ok());
    REQUIRE(settle_round(*store, id.value(), &specs).ok());
    CHECK(*counting.calls == 1);
}

TEST_CASE("the API parses a submitted spec once, and its plan once", "[sweep_specs][api]") {
    TempDir dir;
    auto store = testing::open_store(dir.file("results.db"));
    EventBus events;
    Scheduler scheduler(
        *store, events,
        [](const RunRecord& run, const SweepTimeouts&, const std::atomic<bool>&) { return run; },
        1);  // never started: the submitted runs stay pending
    CountingParse counting;
    ApiContext context;
    context.store = store.get();
    context.scheduler = &scheduler;
    context.events = &events;
    context.specs = std::make_shared<SweepSpecs>(counting.parse());
    const http::Handler api = make_api_handler(context);

    const http::Response submitted = call(api, "POST", "/v1/sweeps", kSpecText);
    REQUIRE(submitted.status == 201);
    CHECK(*counting.calls == 1);
    const std::string sweep =
        "/v1/sweeps/" +
        std::to_string(Json::parse(submitted.body).at("sweep").at("id").get<std::int64_t>());
    CHECK(call(api, "GET", sweep + "/compare").status == 200);
    CHECK(call(api, "GET", sweep + "/report").status == 200);
    CHECK(*counting.calls == 1);

    CHECK(call(api, "POST", "/v1/sweeps/plan", kSpecText).status == 200);
    CHECK(*counting.calls == 2);
}

}  // namespace ds
