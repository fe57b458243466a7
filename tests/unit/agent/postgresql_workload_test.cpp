// The PostgreSQL kinds' agent side without a server: pgbench's params, the
// server's settings as the runner passes and reads them, the ledger's
// variants against the kind's descriptor. The durability tier runs both on a
// real PostgreSQL in a guest.
#include <catch2/catch.hpp>

#include "common/workload_kind.h"
#include "guestagent/ledger_server.h"
#include "guestagent/ledger_workload.h"
#include "guestagent/postgresql_session.h"
#include "guestagent/workload.h"

namespace ds::agent {
namespace {

std::string pgbench_error(const Json& params) {
    const Status checked = check_pgbench_params(params);
    REQUIRE_FALSE(checked.ok());
    CHECK(checked.error().code == errc::kInvalidArgument);
    return checked.error().message;
}

}  // namespace

TEST_CASE("pgbench params: each wrong param is named") {
    CHECK(check_pgbench_params(Json{{"scale", 2},
                                    {"clients", 4},
                                    {"jobs", 2},
                                    {"time", "30s"},
                                    {"builtin", "select-only"}})
              .ok());
    CHECK(pgbench_error(Json{{"builtin", "tpcc"}}) ==
          "pgbench param 'builtin' is \"tpcc\", expected tpcb-like, simple-update or select-only");
    CHECK(pgbench_error(Json{{"jobs", 3}, {"clients", 2}}).find("more than clients (2)") !=
          std::string::npos);
    CHECK(pgbench_error(Json{{"scale", 0}}) ==
          "pgbench param 'scale' is 0, expected an integer >= 1");
    CHECK(pgbench_error(Json{{"time", "soon"}}).find("pgbench param 'time'") == 0);
    CHECK(pgbench_error(Json{{"rows", 3}}).find("is not an option of pgbench") !=
          std::string::npos);
    CHECK(pgbench_error(Json{{"server", {{"unix_socket_directories", "/tmp"}}}}) ==
          "pgbench param 'server' setting 'unix_socket_directories' is set by the agent and "
          "cannot be overridden");
    CHECK(pgbench_error(Json{{"server", {{"port", 5433}}}}).find("'port' is set by the agent") !=
          std::string::npos);
    CHECK(pgbench_error(Json{{"server", {{"Shared_Buffers", "1GB"}}}}).find("not a setting name") !=
          std::string::npos);
    CHECK(pgbench_error(Json{{"server", {{"work_mem", 1.5}}}}).find("is a number") !=
          std::string::npos);
}

TEST_CASE("postgresql: settings go to the command line as SHOW spells them") {
    const Json server = {{"synchronous_commit", "off"},
                         {"full_page_writes", false},
                         {"fsync", true},
                         {"commit_delay", 10}};
    CHECK(postgresql::setting_arguments(server) ==
          std::vector<std::string>{"-c", "commit_delay=10", "-c", "fsync=on", "-c",
                                   "full_page_writes=off", "-c", "synchronous_commit=off"});
    const auto shown = postgresql::parse_settings(
        "fsync\ton\nshared_buffers\t128MB\nserver_version\t15.18 "
        "(Debian 15.18-0+deb12u1)\nbroken line\n");
    CHECK(shown.at("shared_buffers") == "128MB");
    CHECK(shown.at("server_version") == "15.18 (Debian 15.18-0+deb12u1)");
    CHECK(shown.count("broken line") == 0);
    CHECK(postgresql::log_error_lines("LOG:  starting\nFATAL:  data directory has wrong "
                                      "ownership\nLOG:  done\n") ==
          std::vector<std::string>{"FATAL:  data directory has wrong ownership"});
}

TEST_CASE("ledger: the agent's variants are the kind's, each with a runner and a scan") {
    const WorkloadKind* ledger = find_workload_kind("ledger");
    REQUIRE(ledger != nullptr);
    const auto variant_option =
        std::find_if(ledger->options.begin(), ledger->options.end(),
                     [](const auto& option) { return option.name == "variant"; });
    REQUIRE(variant_option != ledger->options.end());
    for (const std::string_view name : variant_option->values) {
        INFO(name);
        const LedgerVariant* variant = find_ledger_variant(name);
        REQUIRE(variant != nullptr);
        CHECK(variant->run != nullptr);
        CHECK(variant->scan != nullptr);
    }
    CHECK(find_ledger_variant("tape") == nullptr);
}

TEST_CASE("ledger, server variants: the script and the ids read back") {
    CHECK(acknowledged_id("42") == 42);
    CHECK_FALSE(acknowledged_id("42 ").has_value());
    const auto ids = ledger_ids("1\n2\n3\n7\n");
    REQUIRE(ids.ok());
    CHECK(*ids == IdRanges{{1, 3}, {7, 7}});
    CHECK_FALSE(ledger_ids("1\nx\n").ok());
    LedgerPlan plan;
    plan.variant = "postgresql";
    plan.records = kMaxServerLedgerRecords + 1;
    CHECK(check_server_ledger_records(plan).error().message ==
          "ledger param 'records' is above 1000000 for the postgresql variant");
}

}  // namespace ds::agent
