// The top-level `durability` table (issue 19, docs/durability.md): it marks
// the spec's ledger workloads (or the one it names) with their crash-state
// options, adds a ledger when the spec has none, and is refused where a
// run's writes cannot be logged; the stored workload carries the options.
#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>

#include "daemon/plan/expand.h"
#include "daemon/spec/spec.h"
#include "support/test_data.h"

namespace ds {
namespace {

Result<SweepSpec> parse(const std::string& head, const std::string& workloads) {
    return parse_sweep_spec("name = \"t\"\n" + head + workloads, "t.toml");
}

const Workload* named(const SweepSpec& spec, const std::string& name) {
    for (const Workload& workload : spec.workloads)
        if (workload.name == name) return &workload;
    return nullptr;
}

}  // namespace

TEST_CASE("durability: marks every ledger workload with its options", "[spec][durability]") {
    auto spec = parse("durability = { crash_points = 12, volatile_cache = false }\n",
                      "[[workload]]\nname = \"a\"\nkind = \"ledger\"\n"
                      "[[workload]]\nname = \"b\"\nkind = \"fio\"\n"
                      "[[workload]]\nname = \"c\"\nkind = \"ledger\"\nvariant = \"database\"\n");
    INFO((spec.ok() ? "" : spec.error().message));
    REQUIRE(spec.ok());
    REQUIRE(spec->workloads.size() == 3);
    const DurabilityOptions expected{12, false};
    CHECK(named(*spec, "a")->durability == expected);
    CHECK_FALSE(named(*spec, "b")->durability.has_value());
    CHECK(named(*spec, "c")->durability == expected);
}

TEST_CASE("durability: `workload` names the one ledger it applies to", "[spec][durability]") {
    auto spec = parse("durability = { workload = \"c\" }\n",
                      "[[workload]]\nname = \"a\"\nkind = \"ledger\"\n"
                      "[[workload]]\nname = \"c\"\nkind = \"ledger\"\n");
    REQUIRE(spec.ok());
    CHECK_FALSE(named(*spec, "a")->durability.has_value());
    REQUIRE(named(*spec, "c")->durability.has_value());
    CHECK(named(*spec, "c")->durability->crash_points == 50);
    CHECK(named(*spec, "c")->durability->volatile_cache);

    auto not_ledger = parse("durability = { workload = \"b\" }\n",
                            "[[workload]]\nname = \"b\"\nkind = \"fio\"\n");
    REQUIRE_FALSE(not_ledger.ok());
    CHECK(not_ledger.error().message ==
          "t.toml:2:27: durability.workload 'b' must name a [[workload]] of kind \"ledger\"");
}

TEST_CASE("durability: a spec without a ledger gets one, as its workloads run",
          "[spec][durability]") {
    auto fio_only = parse("durability = {}\n", "[[workload]]\nkind = \"fio\"\n");
    REQUIRE(fio_only.ok());
    const Workload* added = named(*fio_only, "durability-ledger");
    REQUIRE(added != nullptr);
    CHECK(added->kind == "ledger");
    CHECK(added->params.at("variant") == "file");
    CHECK(added->durability == DurabilityOptions{});

    // The study's ATIS sweep: the ledger runs in MariaDB with its server
    // variables, and the tuning axis varies it like the ATIS workload.
    auto atis = parse(
        "durability = { crash_points = 5 }\n"
        "[matrix]\ntuning = [\"defaults\", \"nosync\"]\n"
        "[tunings.nosync]\nserver = { innodb_flush_method = \"nosync\" }\n",
        "[[workload]]\nname = \"atis\"\nkind = \"mariadb-atis\"\n"
        "server = { innodb_buffer_pool_size = \"256M\" }\n");
    INFO((atis.ok() ? "" : atis.error().message));
    REQUIRE(atis.ok());
    const Workload* ledger = named(*atis, "durability-ledger");
    REQUIRE(ledger != nullptr);
    CHECK(ledger->params.at("variant") == "database");
    CHECK(ledger->params.at("server").at("innodb_buffer_pool_size") == "256M");
    auto tuned = tuned_workloads(*atis);
    REQUIRE(tuned.ok());
    int ledger_variants = 0;
    for (const Workload& workload : tuned.value()) {
        if (workload.kind != "ledger") continue;
        ++ledger_variants;
        CHECK(workload.durability->crash_points == 5);
    }
    CHECK(ledger_variants == 2);

    // A pgbench sweep's ledger commits into PostgreSQL, under its settings.
    auto pgbench = parse(
        "durability = {}\n"
        "[matrix]\ntuning = [\"defaults\", \"async\"]\n"
        "[tunings.async]\nserver = { synchronous_commit = \"off\" }\n",
        "[[workload]]\nname = \"tpcb\"\nkind = \"pgbench\"\n"
        "server = { shared_buffers = \"64MB\" }\n");
    INFO((pgbench.ok() ? "" : pgbench.error().message));
    REQUIRE(pgbench.ok());
    const Workload* pg_ledger = named(*pgbench, "durability-ledger");
    REQUIRE(pg_ledger != nullptr);
    CHECK(pg_ledger->params.at("variant") == "postgresql");
    CHECK(pg_ledger->params.at("server").at("shared_buffers") == "64MB");
    REQUIRE(tuned_workloads(*pgbench).ok());
}

TEST_CASE("tunings: a tuning axis over workloads of two servers is refused, naming both",
          "[spec][tuning]") {
    auto mixed = parse(
        "[matrix]\ntuning = [\"defaults\", \"lazy\"]\n"
        "[tunings.lazy]\nserver = { synchronous_commit = \"off\" }\n",
        "[[workload]]\nname = \"atis\"\nkind = \"mariadb-atis\"\n"
        "[[workload]]\nname = \"tpcb\"\nkind = \"pgbench\"\n");
    REQUIRE(mixed.ok());
    auto tuned = tuned_workloads(*mixed);
    REQUIRE_FALSE(tuned.ok());
    CHECK(tuned.error().message ==
          "the tuning axis would set the same server settings on MariaDB workload 'atis' and "
          "PostgreSQL workload 'tpcb'; a tuning's settings are one server's: sweep each "
          "server's workloads separately");
    // Without a tuning axis both servers may run in one sweep.
    auto untuned = parse("",
                         "[[workload]]\nname = \"atis\"\nkind = \"mariadb-atis\"\n"
                         "[[workload]]\nname = \"tpcb\"\nkind = \"pgbench\"\n");
    REQUIRE(untuned.ok());
    CHECK(tuned_workloads(*untuned).ok());
}

TEST_CASE("durability: bad options are refused with their position", "[spec][durability]") {
    const std::string ledger = "[[workload]]\nkind = \"ledger\"\n";
    CHECK(parse("durability = { crash_points = 0 }\n", ledger).error().message ==
          "t.toml:2:31: 'crash_points' must be 1 to 1000");
    CHECK_THAT(parse("durability = { points = 3 }\n", ledger).error().message,
               Catch::Contains("unknown key 'points' in durability; valid keys: crash_points, "
                               "volatile_cache, keep_files, workload"));
    CHECK_THAT(parse("durability = { volatile_cache = 1 }\n", ledger).error().message,
               Catch::Contains("'volatile_cache' must be true or false"));
    CHECK_THAT(parse("durability = 5\n", ledger).error().message,
               Catch::Contains("'durability' must be a table"));
}

TEST_CASE("durability: refused where a run's writes cannot be logged", "[spec][durability]") {
    const std::string ledger = "[[workload]]\nkind = \"ledger\"\n";
    auto proxmox = parse(
        "durability = {}\n[hypervisor]\nbackend = \"proxmox\"\n"
        "[matrix]\nstorage = [\"pve:local-lvm\"]\n",
        ledger);
    REQUIRE_FALSE(proxmox.ok());
    CHECK_THAT(proxmox.error().message,
               Catch::Contains("durability: Proxmox VE cannot put a VM's disk on QEMU's "
                               "blklogwrites filter"));
    auto rbd = parse("durability = {}\n[matrix]\nstorage = [\"file\", \"rbd:pool\"]\n", ledger);
    REQUIRE_FALSE(rbd.ok());
    CHECK_THAT(rbd.error().message,
               Catch::Contains("durability: storage 'rbd:pool' cannot keep a copy of the volume "
                               "as it was before the run, which every crash image starts from "
                               "(storages that can: file)"));
}

TEST_CASE("durability: the stored workload reads back with its options", "[spec][durability]") {
    Workload workload{"w", "ledger", Json::object()};
    workload.durability = DurabilityOptions{7, false};
    const Json stored = to_json(workload);
    CHECK(stored.at("durability") == Json{{"crash_points", 7}, {"volatile_cache", false}});
    auto back = workload_from_json(stored);
    REQUIRE(back.ok());
    CHECK(back->durability == workload.durability);
    CHECK_FALSE(to_json(Workload{"w", "ledger", Json::object()}).contains("durability"));
    for (const Json& bad : {Json{{"crash_points", 0}, {"volatile_cache", true}},
                            Json{{"crash_points", 5}}, Json("yes")}) {
        Json broken = stored;
        broken["durability"] = bad;
        CHECK_THAT(workload_from_json(broken).error().message,
                   Catch::Contains("workload 'durability' must be"));
    }
}

}  // namespace ds

namespace ds {

TEST_CASE("durability: the shipped durability sweep marks its ledger under both tunings",
          "[spec][durability]") {
    std::ifstream in(test::repository_root() / "config/sweeps/durability.toml");
    REQUIRE(in);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto spec = parse_sweep_spec(text, "durability.toml");
    INFO((spec.ok() ? "" : spec.error().message));
    REQUIRE(spec.ok());
    auto plan = expand_sweep(*spec);
    REQUIRE(plan.ok());
    CHECK(plan->configs.size() == 4);
    REQUIRE(plan->workloads.size() == 2);
    for (const Workload& workload : plan->workloads)
        CHECK(workload.durability == DurabilityOptions{20, true});
    CHECK(plan->runs.size() == 16);
}

}  // namespace ds

namespace ds {

// "so the seed-atis sweep gets this column": its commented line, once
// uncommented, adds a MariaDB ledger under each of the study's tunings.
TEST_CASE("durability: seed-atis with its durability line gets a ledger under every tuning",
          "[spec][durability]") {
    std::ifstream in(test::repository_root() / "config/sweeps/seed-atis.toml");
    REQUIRE(in);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string line = "# durability = { crash_points = 50 }";
    const auto at = text.find(line);
    REQUIRE(at != std::string::npos);
    text.erase(at, 2);
    auto spec = parse_sweep_spec(text, "seed-atis.toml");
    INFO((spec.ok() ? "" : spec.error().message));
    REQUIRE(spec.ok());
    auto plan = expand_sweep(*spec);
    REQUIRE(plan.ok());
    std::vector<std::string> ledgers;
    for (const Workload& workload : plan->workloads) {
        if (workload.kind != "ledger") continue;
        ledgers.push_back(workload.name);
        CHECK(workload.params.at("variant") == "database");
        CHECK(workload.durability->crash_points == 50);
    }
    CHECK(ledgers == std::vector<std::string>{"durability-ledger", "durability-ledger.dw0-odsync",
                                              "durability-ledger.dw0-nosync"});
    // The study's 9 pairs a round, and as many ledger pairs.
    CHECK(plan->runs.size() == 18u * static_cast<std::size_t>(spec->repetitions));
}

TEST_CASE("durability: ledger_seconds sets how long the marked ledgers run", "[spec][durability]") {
    auto added = parse("durability = { ledger_seconds = 90 }\n",
                       "[[workload]]\nname = \"f\"\nkind = \"fio\"\n");
    INFO((added.ok() ? "" : added.error().message));
    REQUIRE(added.ok());
    const Workload* ledger = named(*added, "durability-ledger");
    REQUIRE(ledger != nullptr);
    CHECK(ledger->params.at("time") == 90);
    auto own = parse("durability = { ledger_seconds = 60 }\n",
                     "[[workload]]\nname = \"l\"\nkind = \"ledger\"\n");
    REQUIRE(own.ok());
    CHECK(named(*own, "l")->params.at("time") == 60);
    CHECK(named(*own, "l")->params.at("records") == 100000);  // the time ends it, not a count
    auto clash = parse("durability = { ledger_seconds = 60 }\n",
                       "[[workload]]\nname = \"l\"\nkind = \"ledger\"\ntime = 30\n");
    REQUIRE_FALSE(clash.ok());
    CHECK_THAT(clash.error().message,
               Catch::Contains("durability.ledger_seconds = 60 and workload 'l''s time = 30 "
                               "disagree: set one of them"));
    auto zero = parse("durability = { ledger_seconds = 0 }\n",
                      "[[workload]]\nname = \"l\"\nkind = \"ledger\"\n");
    REQUIRE_FALSE(zero.ok());
    CHECK_THAT(zero.error().message, Catch::Contains("'ledger_seconds' must be 1 to 3600"));
}

}  // namespace ds
