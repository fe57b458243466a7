// The ledger runner's params and its file variant on a temporary directory
// (real writes and fsyncs; the integration tier runs both variants on ext4).
#include "guestagent/ledger_workload.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "common/ledger_output.h"
#include "common/process.h"
#include "support/temp_dir.h"

namespace ds::agent {
namespace {

using namespace std::chrono_literals;

std::string plan_error(const Json& params) {
    auto plan = parse_ledger_plan(params);
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.error().code == errc::kInvalidArgument);
    return plan.error().message;
}

TEST_CASE("ledger params: defaults, sizes and durations as the spec writes them") {
    auto plan = parse_ledger_plan(Json::object());
    REQUIRE(plan.ok());
    CHECK(plan->variant == "file");
    CHECK(plan->records == 1000);
    CHECK_FALSE(plan->time.has_value());
    CHECK(plan->record_size == 4096);

    plan = parse_ledger_plan(Json{{"records", 50}, {"time", "1m"}, {"record_size", "1k"}});
    REQUIRE(plan.ok());
    CHECK(plan->records == 50);
    CHECK(plan->time == std::chrono::seconds(60));
    CHECK(plan->record_size == 1024);
}

TEST_CASE("ledger params: each wrong param is named") {
    CHECK(plan_error(Json{{"variant", "tape"}}) ==
          "ledger param 'variant' is \"tape\", expected \"file\", \"database\" or "
          "\"postgresql\"");
    CHECK(plan_error(Json{{"records", 0}}) ==
          "ledger param 'records' is 0, expected an integer >= 1");
    CHECK(plan_error(Json{{"record_size", "8"}}) ==
          "ledger param 'record_size' is \"8\", expected a size from 32 bytes to 1m");
    CHECK(plan_error(Json{{"time", "soon"}}) ==
          "ledger param 'time' is \"soon\", expected whole seconds >= 1 (\"30s\", 30)");
    CHECK(plan_error(Json{{"server", {{"innodb_flush_log_at_trx_commit", 2}}}}) ==
          "ledger param 'server' is for the database or postgresql variant only");
    CHECK(plan_error(Json{{"variant", "database"}, {"record_size", 512}}) ==
          "ledger param 'record_size' is for the file variant only");
    CHECK(plan_error(Json{{"rw", "write"}}).find("is not an option of ledger") !=
          std::string::npos);
}

TEST_CASE("ledger record: id first, padded to its size, newline last") {
    const std::string record = ledger_record(42, 32);
    CHECK(record.size() == 32);
    CHECK(record.rfind("ledger 42\n", 0) == 0);
    CHECK(record.back() == '\n');
}

TEST_CASE("ledger, file variant: records written, fsynced, acknowledged 1..N") {
    test::TempDir dir;
    RealProcessRunner runner;
    std::vector<long long> acks;
    WorkloadContext ctx{runner, dir.path().string(), dir.path().string(), 60s, {}};
    ctx.acknowledge = [&](long long id) { acks.push_back(id); };
    auto result =
        run_ledger(Workload{"l", "ledger", Json{{"records", 20}, {"record_size", 64}}, {}, 0}, ctx);
    REQUIRE(result.ok());
    REQUIRE(acks.size() == 20);
    CHECK(acks.front() == 1);
    CHECK(acks.back() == 20);
    CHECK(std::filesystem::file_size(dir.path() / "ledger.dat") == 20 * 64);
    CHECK(result->output["acknowledged"] == 20);
    CHECK(result->output["variant"] == "file");
    auto metrics = ledger_output_metrics("ledger", result->output);
    REQUIRE(metrics.ok());
    CHECK(metrics->at("acknowledged") == 20);
}

TEST_CASE("ledger, file variant: the measured window begins before the first record") {
    test::TempDir dir;
    RealProcessRunner runner;
    std::vector<std::string> events;
    WorkloadContext ctx{runner, dir.path().string(), dir.path().string(), 60s, {}};
    ctx.acknowledge = [&](long long id) { events.push_back("ack " + std::to_string(id)); };
    ctx.begin_measurement = [&] {
        // The ledger's file exists and nothing of it is written yet.
        CHECK(std::filesystem::file_size(dir.path() / "ledger.dat") == 0);
        events.push_back("mark");
        return ok_status();
    };
    auto result =
        run_ledger(Workload{"l", "ledger", Json{{"records", 2}, {"record_size", 64}}, {}, 0}, ctx);
    REQUIRE(result.ok());
    CHECK(events == std::vector<std::string>{"mark", "ack 1", "ack 2"});

    // A host that never answers the mark ends the run before any record.
    events.clear();
    ctx.begin_measurement = [] { return Status(make_error(errc::kProtocol, "no mark")); };
    auto refused = run_ledger(Workload{"l", "ledger", Json{{"records", 2}}, {}, 0}, ctx);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message == "no mark");
    CHECK(events.empty());
}

TEST_CASE("ledger, file variant: a directory it cannot write fails with the reason") {
    test::TempDir dir;
    RealProcessRunner runner;
    WorkloadContext ctx{runner, (dir.path() / "missing").string(), dir.path().string(), 60s, {}};
    auto result = run_ledger(Workload{"l", "ledger", Json{{"records", 2}}, {}, 0}, ctx);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().message.find("ledger: cannot create") != std::string::npos);
    CHECK(result.error().message.find("No such file or directory") != std::string::npos);
}

}  // namespace
}  // namespace ds::agent
