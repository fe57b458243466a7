// The servers' settings rules (common/server_settings.h) and the kinds that
// point at them (common/workload_kind.h). MariaDB's readback and risks are
// checked in workload_output_test.cpp, its mycnf lines in
// tests/unit/daemon/apply/apply_snippets_test.cpp.
#include "common/server_settings.h"

#include <catch2/catch.hpp>
#include <set>

#include "common/workload_kind.h"

namespace ds {
namespace {

const ServerSettingsRules& postgresql = postgresql_server_settings();

std::vector<std::string> pg_mismatches(const Json& requested, const Json& shown) {
    return postgresql.mismatches(requested, shown, "15.10 (Debian 15.10-0+deb12u1)");
}

}  // namespace

TEST_CASE("server settings: each kind with a server has rules, each format once") {
    std::set<std::string_view> formats;
    for (const WorkloadKind& kind : workload_kinds()) {
        if (kind.server_settings == nullptr) continue;
        const ServerSettingsRules& rules = *kind.server_settings;
        INFO(kind.name);
        CHECK_FALSE(rules.server.empty());
        CHECK_FALSE(rules.format_help.empty());
        CHECK(rules.mismatches != nullptr);
        CHECK(rules.risks != nullptr);
        CHECK(rules.render != nullptr);
        CHECK(find_server_settings_format(rules.format) == &rules);
        CHECK(kind_applies_server_settings(kind.name, Json::object(), rules.format));
    }
    for (const ServerSettingsRules* rules : server_settings_rule_sets())
        CHECK(formats.insert(rules->format).second);
    CHECK(formats.count("mycnf") == 1);
    CHECK(formats.count("pgconf") == 1);
    CHECK(formats.count("qm") == 0);
    CHECK(mariadb_server_settings().format != postgresql.format);
    CHECK(kind_server_settings("fio", Json::object()) == nullptr);
    CHECK(kind_server_settings("mariadb-atis", Json::object()) == &mariadb_server_settings());
    CHECK(kind_server_settings("pgbench", Json::object()) == &postgresql);
    // The ledger's server is its variant's; the file variant has none.
    CHECK(kind_server_settings("ledger", Json::object()) == nullptr);
    CHECK(kind_server_settings("ledger", {{"variant", "database"}}) == &mariadb_server_settings());
    CHECK(kind_server_settings("ledger", {{"variant", "postgresql"}}) == &postgresql);
    // Each server's ledger variant is one the ledger kind has.
    for (const ServerSettingsRules* rules : server_settings_rule_sets()) {
        INFO(rules->server);
        CHECK(kind_server_settings("ledger", {{"variant", std::string(rules->ledger_variant)}}) ==
              rules);
    }
}

TEST_CASE("server settings: a kind's risks by its rules, and which labels are a server's") {
    const Json trx2 = {{"server", {{"innodb_flush_log_at_trx_commit", 2}}}};
    CHECK(server_settings_risks("sysbench-oltp", trx2) ==
          std::vector<std::string>{"innodb_flush_log_at_trx_commit=2"});
    CHECK(server_settings_risks("fio", trx2).empty());
    CHECK(server_settings_risks("no-such-kind", trx2).empty());
    CHECK(server_settings_risks("pgbench", {{"server", {{"synchronous_commit", "off"}}}}) ==
          std::vector<std::string>{"synchronous_commit=off"});
    CHECK(kinds_with_server_settings(mariadb_server_settings()) ==
          std::vector<std::string_view>{"mariadb-atis", "sysbench-oltp", "ledger"});
    CHECK(kinds_with_server_settings(postgresql) ==
          std::vector<std::string_view>{"ledger", "pgbench"});

    for (const char* risk :
         {"innodb_flush_method=nosync", "innodb_flush_method=O_DIRECT_NO_FSYNC",
          "innodb_flush_log_at_trx_commit=0", "innodb_doublewrite=fast", "innodb_doublewrite=0"})
        CHECK(rules_of_server_settings_risk(risk) == &mariadb_server_settings());
    for (const char* risk : {"cache=unsafe", "barrier=0", "no journal (ext4 ^has_journal)",
                             "innodb_doublewrite=1", "innodb_flush_method", ""})
        CHECK(rules_of_server_settings_risk(risk) == nullptr);
}

TEST_CASE("PostgreSQL: booleans in any spelling against SHOW's on/off") {
    const Json shown = {{"fsync", "on"}, {"full_page_writes", "off"}, {"jit", "ON"}};
    CHECK(pg_mismatches({{"fsync", true}, {"full_page_writes", false}}, shown).empty());
    CHECK(pg_mismatches({{"fsync", "yes"}, {"full_page_writes", "0"}, {"jit", "TRUE"}}, shown)
              .empty());
    CHECK(pg_mismatches({{"fsync", false}}, shown) ==
          std::vector<std::string>{"server variable fsync: requested off, server has on"});
    CHECK(
        pg_mismatches({{"full_page_writes", "on"}}, shown) ==
        std::vector<std::string>{"server variable full_page_writes: requested on, server has off"});
}

TEST_CASE("PostgreSQL: strings and integers as SHOW's text, in any case, missing ones") {
    const Json shown = {{"synchronous_commit", "off"},
                        {"wal_sync_method", "fdatasync"},
                        {"shared_buffers", "128MB"},
                        {"max_wal_senders", "10"}};
    CHECK(pg_mismatches({{"synchronous_commit", "OFF"},
                         {"wal_sync_method", " FDataSync "},
                         {"shared_buffers", "128mb"},
                         {"max_wal_senders", 10}},
                        shown)
              .empty());
    CHECK(pg_mismatches({{"synchronous_commit", "local"}}, shown) ==
          std::vector<std::string>{
              "server variable synchronous_commit: requested local, server has off"});
    CHECK(pg_mismatches({{"max_wal_senders", 5}}, shown) ==
          std::vector<std::string>{"server variable max_wal_senders: requested 5, server has 10"});
    // SHOW's text, not its meaning: PostgreSQL shows sizes in its own unit.
    CHECK(pg_mismatches({{"shared_buffers", 16384}}, shown) ==
          std::vector<std::string>{
              "server variable shared_buffers: requested 16384, server has 128MB"});
    CHECK(pg_mismatches({{"commit_delay", 10}}, shown) ==
          std::vector<std::string>{
              "server variable commit_delay: requested 10, SHOW did not list it"});
    CHECK(pg_mismatches({{"fsync", true}}, Json()) ==
          std::vector<std::string>{"server variable fsync: requested on, SHOW did not list it"});
    // The server's version changes nothing; a non-table requests nothing.
    CHECK(postgresql.mismatches({{"fsync", true}}, {{"fsync", "on"}}, "").empty());
    CHECK(pg_mismatches(Json::array(), shown).empty());
}

TEST_CASE("PostgreSQL: the settings that trade durability for speed") {
    CHECK(postgresql.risks({{"synchronous_commit", "off"},
                            {"fsync", false},
                            {"full_page_writes", "No"},
                            {"wal_sync_method", "open_datasync"}}) ==
          std::vector<std::string>{"fsync=off", "full_page_writes=No", "synchronous_commit=off"});
    for (const char* value : {"on", "local", "remote_write", "remote_apply"})
        CHECK(postgresql.risks({{"synchronous_commit", value}}).empty());
    CHECK(postgresql.risks({{"fsync", true}, {"full_page_writes", "on"}}).empty());
    CHECK(postgresql.risks(Json::array()).empty());
    CHECK(rules_of_server_settings_risk("synchronous_commit=off") == &postgresql);
    CHECK(rules_of_server_settings_risk("innodb_flush_method=nosync") ==
          &mariadb_server_settings());
    CHECK(rules_of_server_settings_risk("synchronous_commit=on") == nullptr);
}

TEST_CASE("PostgreSQL: pgconf lines, strings quoted as postgresql.conf reads them") {
    CHECK(postgresql.format == "pgconf");
    CHECK(postgresql.render({{"synchronous_commit", "off"},
                             {"fsync", false},
                             {"shared_buffers", "128MB"},
                             {"max_wal_senders", 10},
                             {"checkpoint_completion_target", 0.9},
                             {"application_name", "it's"}}) ==
          "application_name = 'it''s'\n"
          "checkpoint_completion_target = 0.9\n"
          "fsync = off\n"
          "max_wal_senders = 10\n"
          "shared_buffers = '128MB'\n"
          "synchronous_commit = 'off'\n");
    CHECK(postgresql.render(Json::object()).empty());
    CHECK(postgresql.render(Json()).empty());
}

TEST_CASE("MariaDB: mycnf's [mysqld] lines") {
    const ServerSettingsRules& mariadb = mariadb_server_settings();
    CHECK(mariadb.server == "MariaDB");
    CHECK(mariadb.format == "mycnf");
    CHECK(mariadb.render({{"innodb_doublewrite", true}, {"innodb_buffer_pool_size", "256M"}}) ==
          "[mysqld]\ninnodb_buffer_pool_size=256M\ninnodb_doublewrite=ON\n");
    CHECK(mariadb.render(Json()) == "[mysqld]\n");
}

}  // namespace ds
