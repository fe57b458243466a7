#include "daemon/store/store.h"

#include <SQLiteCpp/SQLiteCpp.h>
#include <sys/resource.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <thread>

#include "common/settings.h"
#include "daemon/api/record_messages.h"
#include "support/temp_dir.h"

namespace ds {
namespace {

using ds::test::TempDir;

std::unique_ptr<Store> open_store(const std::string& path) {
    auto store = Store::open(path);
    INFO((store.ok() ? "" : store.error().message));
    REQUIRE(store.ok());
    return std::move(store.value());
}

StorageConfig make_config(CacheMode cache, const std::string& filesystem) {
    StorageConfig config;
    config.cache = cache;
    config.filesystem.label = filesystem;
    config.filesystem.type = filesystem;
    return config;
}

Workload fio_workload() {
    return Workload{"randrw", "fio", Json{{"rw", "randrw"}, {"bs", "4k"}, {"iodepth", 64}}, {}, 0};
}

RunRecord planned_run(const StorageConfig& config, int sequence, int repetition) {
    RunRecord run;
    run.sequence = sequence;
    run.repetition = repetition;
    run.config_id = config_id(config);
    run.config = config;
    run.workload_name = "randrw";
    run.workload = fio_workload();
    return run;
}

SweepRecord make_sweep(const std::string& name) {
    SweepRecord sweep;
    sweep.name = name;
    sweep.spec_toml = "name = \"" + name + "\"\n";
    sweep.spec_source = name + ".toml";
    sweep.created_at = "2024-05-01T10:00:00Z";
    sweep.dropped = Json::array({Json{{"settings", {{"bus", "virtio-blk"}, {"ssd", true}}},
                                      {"reason", "virtio-blk has no rotation rate"}}});
    sweep.varying_axes = Json::array({"cache", "filesystem"});
    return sweep;
}

// Two configurations × two repetitions, planned out of sequence order.
std::vector<RunRecord> four_runs() {
    const StorageConfig safe = make_config(CacheMode::kNone, "ext4");
    const StorageConfig fast = make_config(CacheMode::kUnsafe, "btrfs");
    return {planned_run(fast, 2, 1), planned_run(safe, 0, 0), planned_run(fast, 1, 0),
            planned_run(safe, 3, 1)};
}

std::int64_t create(Store& store, const SweepRecord& sweep, const std::vector<RunRecord>& runs) {
    auto id = store.create_sweep(sweep, runs);
    INFO((id.ok() ? "" : id.error().message));
    REQUIRE(id.ok());
    return id.value();
}

void require_ok(const Status& status) {
    INFO((status.ok() ? "" : status.error().code + ": " + status.error().message));
    REQUIRE(status.ok());
}

// Reads the file with a separate, plain connection.
int table_count(const std::string& path, const std::string& table) {
    SQLite::Database db(path, SQLite::OPEN_READONLY);
    return db.execAndGet("SELECT COUNT(*) FROM " + table).getInt();
}

TEST_CASE("store: migrates an empty file to the current schema", "[store]") {
    TempDir dir;
    const std::string path = dir.file("results.db");
    auto store = open_store(path);
    REQUIRE(store->schema_version().value() == static_cast<int>(schema_migrations().size()));

    SQLite::Database db(path, SQLite::OPEN_READONLY);
    for (const char* table : {"sweeps", "configurations", "runs", "metrics"}) {
        INFO(table);
        CHECK(db.tableExists(table));
    }
    CHECK(db.execAndGet("PRAGMA journal_mode").getString() == "wal");
    CHECK(db.execAndGet("PRAGMA user_version").getInt() ==
          static_cast<int>(schema_migrations().size()));
}

TEST_CASE("store: reopening is idempotent and keeps the data", "[store]") {
    TempDir dir;
    const std::string path = dir.file("results.db");
    std::int64_t sweep_id = 0;
    {
        auto store = open_store(path);
        sweep_id = create(*store, make_sweep("first"), four_runs());
    }
    for (int reopen = 0; reopen < 2; ++reopen) {
        auto store = open_store(path);
        CHECK(store->schema_version().value() == static_cast<int>(schema_migrations().size()));
        auto sweep = store->get_sweep(sweep_id);
        REQUIRE(sweep.ok());
        CHECK(sweep->name == "first");
        CHECK(store->list_runs(sweep_id)->size() == 4);
    }
}

TEST_CASE("store: a database from a newer disksweep is refused", "[store]") {
    TempDir dir;
    const std::string path = dir.file("future.db");
    {
        SQLite::Database db(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
        db.exec("CREATE TABLE from_the_future (x INTEGER)");
        db.exec("PRAGMA user_version = 99");
    }
    auto store = Store::open(path);
    REQUIRE_FALSE(store.ok());
    CHECK(store.error().code == errc::kConflict);
    const std::string& message = store.error().message;
    CHECK_THAT(message, Catch::Contains(path));
    CHECK_THAT(message, Catch::Contains("schema version 99"));
    CHECK_THAT(message, Catch::Contains("newer"));
    CHECK_THAT(message, Catch::Contains("(" + std::to_string(schema_migrations().size()) + ")"));

    // Refused without being touched: still version 99, not switched to WAL.
    SQLite::Database db(path, SQLite::OPEN_READONLY);
    CHECK(db.execAndGet("PRAGMA user_version").getInt() == 99);
    CHECK(db.execAndGet("PRAGMA journal_mode").getString() == "delete");
}

TEST_CASE("store: migrations apply in order, each in its own transaction", "[store]") {
    TempDir dir;
    const std::string path = dir.file("results.db");
    std::vector<Migration> migrations(schema_migrations().begin(), schema_migrations().end());
    const int current = static_cast<int>(migrations.size());
    const int next = current + 1;

    SECTION("a later migration is applied to an existing database") {
        { open_store(path); }
        migrations.push_back(
            {next, "add notes", "CREATE TABLE notes (run_id INTEGER, text TEXT);"});
        auto store = Store::open(path, migrations);
        REQUIRE(store.ok());
        CHECK(store.value()->schema_version().value() == next);
        SQLite::Database db(path, SQLite::OPEN_READONLY);
        CHECK(db.tableExists("notes"));
        store.value().reset();

        // The older code refuses what the newer code wrote.
        auto older = Store::open(path);
        REQUIRE_FALSE(older.ok());
        CHECK(older.error().code == errc::kConflict);
        CHECK_THAT(older.error().message, Catch::Contains("newer"));
    }

    SECTION("a failing migration leaves the previous version intact") {
        migrations.push_back({next, "broken step",
                              "CREATE TABLE half_done (x INTEGER);"
                              "INSERT INTO no_such_table VALUES (1);"});
        auto store = Store::open(path, migrations);
        REQUIRE_FALSE(store.ok());
        CHECK_THAT(store.error().message,
                   Catch::Contains("migration " + std::to_string(next) + " (broken step)"));
        CHECK_THAT(store.error().message, Catch::Contains("no_such_table"));

        SQLite::Database db(path, SQLite::OPEN_READONLY);
        CHECK(db.execAndGet("PRAGMA user_version").getInt() == current);
        CHECK(db.tableExists("runs"));
        CHECK_FALSE(db.tableExists("half_done"));
        // The current code still opens it.
        open_store(path);
    }

    SECTION("a list with a gap is rejected") {
        migrations.push_back({next + 1, "skips a number", "SELECT 1;"});
        auto store = Store::open(path, migrations);
        REQUIRE_FALSE(store.ok());
        CHECK(store.error().code == errc::kInternal);
    }
}

TEST_CASE("store: create, get and list sweeps and runs", "[store]") {
    TempDir dir;
    const std::string path = dir.file("results.db");
    auto store = open_store(path);
    const std::int64_t sweep_id = create(*store, make_sweep("seed-fio"), four_runs());

    auto sweep = store->get_sweep(sweep_id);
    REQUIRE(sweep.ok());
    CHECK(sweep->id == sweep_id);
    CHECK(sweep->name == "seed-fio");
    CHECK(sweep->spec_toml == "name = \"seed-fio\"\n");
    CHECK(sweep->spec_source == "seed-fio.toml");
    CHECK(sweep->status == SweepStatus::kQueued);
    CHECK(sweep->created_at == "2024-05-01T10:00:00Z");
    CHECK(sweep->started_at.empty());
    CHECK(sweep->finished_at.empty());
    CHECK(sweep->total_runs == 4);
    CHECK(sweep->dropped == make_sweep("x").dropped);
    CHECK(sweep->varying_axes == Json::array({"cache", "filesystem"}));

    auto runs = store->list_runs(sweep_id);
    REQUIRE(runs.ok());
    REQUIRE(runs->size() == 4);
    for (int index = 0; index < 4; ++index) {
        const RunRecord& run = runs.value()[index];
        CHECK(run.sequence == index);
        CHECK(run.sweep_id == sweep_id);
        CHECK(run.status == RunStatus::kPending);
        CHECK(run.workload_name == "randrw");
        CHECK(to_json(run.workload) == to_json(fio_workload()));
        CHECK(run.metrics.empty());
        CHECK(run.started_at.empty());
    }
    const StorageConfig fast = make_config(CacheMode::kUnsafe, "btrfs");
    CHECK(runs.value()[1].config_id == config_id(fast));
    CHECK(to_json(runs.value()[1].config) == to_json(fast));
    CHECK(runs.value()[2].repetition == 1);

    // One configurations row per distinct config.
    CHECK(table_count(path, "configurations") == 2);
    auto stored_config = store->get_configuration(config_id(fast));
    REQUIRE(stored_config.ok());
    CHECK(stored_config.value() == to_json(fast));

    auto run = store->get_run(runs.value()[3].id);
    REQUIRE(run.ok());
    CHECK(run->sequence == 3);

    // A second sweep of the same configurations reuses their rows.
    const std::int64_t second_id = create(*store, make_sweep("again"), four_runs());
    CHECK(second_id != sweep_id);
    CHECK(table_count(path, "configurations") == 2);
    auto sweeps = store->list_sweeps();
    REQUIRE(sweeps.ok());
    REQUIRE(sweeps->size() == 2);
    CHECK(sweeps.value()[0].name == "seed-fio");
    CHECK(sweeps.value()[1].name == "again");
    CHECK(store->runs_for_config(config_id(fast))->size() == 4);
}

TEST_CASE("store: not found errors name what is missing", "[store]") {
    TempDir dir;
    auto store = open_store(dir.file("results.db"));

    auto sweep = store->get_sweep(12);
    REQUIRE_FALSE(sweep.ok());
    CHECK(sweep.error().code == errc::kNotFound);
    CHECK(sweep.error().message == "sweep 12 not found");

    auto run = store->get_run(7);
    REQUIRE_FALSE(run.ok());
    CHECK(run.error().code == errc::kNotFound);
    CHECK(run.error().message == "run 7 not found");

    CHECK(store->list_runs(12).error().code == errc::kNotFound);
    CHECK(store->run_counts(12).error().code == errc::kNotFound);
    CHECK(store->cancel_pending_runs(12).error().code == errc::kNotFound);
    CHECK(store->set_sweep_status(12, SweepStatus::kRunning, "t").error().code == errc::kNotFound);
    CHECK(store->mark_run_running(7, "vm", "vol", "log", "tcg", "t").error().code ==
          errc::kNotFound);
    RunRecord missing;
    missing.id = 7;
    missing.status = RunStatus::kFailed;
    CHECK(store->finish_run(missing).error().message == "run 7 not found");
    CHECK(store->get_configuration("0123456789abcdef").error().code == errc::kNotFound);
}

TEST_CASE("store: a config_id must not change its meaning", "[store]") {
    TempDir dir;
    const std::string path = dir.file("results.db");
    auto store = open_store(path);
    create(*store, make_sweep("first"), four_runs());

    std::vector<RunRecord> runs = four_runs();
    runs[3].config.cache = CacheMode::kWriteback;  // same id, other settings
    auto second = store->create_sweep(make_sweep("second"), runs);
    REQUIRE_FALSE(second.ok());
    CHECK(second.error().code == errc::kConflict);
    CHECK_THAT(second.error().message, Catch::Contains(runs[3].config_id));

    // Nothing of the failed sweep remains.
    CHECK(store->list_sweeps()->size() == 1);
    CHECK(table_count(path, "runs") == 4);

    // Duplicate sequence numbers violate the schema: also a conflict, also
    // rolled back.
    std::vector<RunRecord> duplicate = four_runs();
    duplicate[1].sequence = duplicate[0].sequence;
    auto third = store->create_sweep(make_sweep("third"), duplicate);
    REQUIRE_FALSE(third.ok());
    CHECK(third.error().code == errc::kConflict);
    CHECK(store->list_sweeps()->size() == 1);
}

TEST_CASE("store: sweep status transitions set their timestamps", "[store]") {
    TempDir dir;
    auto store = open_store(dir.file("results.db"));
    const std::int64_t sweep_id = create(*store, make_sweep("s"), four_runs());

    require_ok(store->set_sweep_status(sweep_id, SweepStatus::kRunning, "2024-05-01T10:01:00Z"));
    CHECK(store->get_sweep(sweep_id)->started_at == "2024-05-01T10:01:00Z");
    // A restarted daemon resuming the sweep keeps the original start.
    require_ok(store->set_sweep_status(sweep_id, SweepStatus::kRunning, "2024-05-01T11:00:00Z"));
    CHECK(store->get_sweep(sweep_id)->started_at == "2024-05-01T10:01:00Z");
    CHECK(store->get_sweep(sweep_id)->finished_at.empty());

    require_ok(store->set_sweep_status(sweep_id, SweepStatus::kSucceeded, "2024-05-01T12:00:00Z"));
    auto sweep = store->get_sweep(sweep_id);
    CHECK(sweep->status == SweepStatus::kSucceeded);
    CHECK(sweep->started_at == "2024-05-01T10:01:00Z");
    CHECK(sweep->finished_at == "2024-05-01T12:00:00Z");

    // A status that does not exist cannot be passed any more: its spelling
    // is refused where text becomes a status.
    CHECK_FALSE(parse_sweep_status("exploded").has_value());
}

TEST_CASE("store: an unknown status text in the database is an error, not a value", "[store]") {
    TempDir dir;
    const std::string path = dir.file("results.db");
    std::int64_t sweep_id = 0;
    {
        auto store = open_store(path);
        auto id = store->create_sweep(make_sweep("s"), four_runs());
        REQUIRE(id.ok());
        sweep_id = id.value();
    }
    {
        // Past the CHECK constraints, as a foreign writer could.
        SQLite::Database writer(path, SQLite::OPEN_READWRITE);
        writer.exec("PRAGMA ignore_check_constraints = ON");
        writer.exec("UPDATE sweeps SET status = 'exploded'");
        writer.exec("UPDATE runs SET status = 'bogus'");
    }
    auto store = open_store(path);
    auto sweep = store->get_sweep(sweep_id);
    REQUIRE_FALSE(sweep.ok());
    CHECK(sweep.error().code == errc::kInternal);
    CHECK_THAT(sweep.error().message, Catch::Contains("unknown sweep status 'exploded'"));
    auto runs = store->list_runs(sweep_id);
    REQUIRE_FALSE(runs.ok());
    CHECK_THAT(runs.error().message, Catch::Contains("unknown run status 'bogus'"));
}

TEST_CASE("store: a stored configuration or workload that no longer decodes is an error",
          "[store]") {
    TempDir dir;
    const std::string path = dir.file("results.db");
    auto store = open_store(path);
    const std::int64_t sweep_id = create(*store, make_sweep("s"), four_runs());
    const RunRecord run = store->list_runs(sweep_id)->at(0);
    SQLite::Database writer(path, SQLite::OPEN_READWRITE);
    SECTION("the configuration") {
        writer.exec("UPDATE configurations SET canonical_json = '{\"bus\":7}' WHERE config_id = '" +
                    run.config_id + "'");
        auto read = store->get_run(run.id);
        REQUIRE_FALSE(read.ok());
        CHECK(read.error().code == errc::kInternal);
        CHECK_THAT(read.error().message,
                   Catch::Contains("run " + std::to_string(run.id) + ": stored config"));
    }
    SECTION("the workload") {
        writer.exec("UPDATE runs SET workload_json = '{\"name\":\"w\"}' WHERE id = " +
                    std::to_string(run.id));
        auto read = store->list_runs(sweep_id);
        REQUIRE_FALSE(read.ok());
        CHECK(read.error().code == errc::kInternal);
        CHECK_THAT(read.error().message,
                   Catch::Contains("run " + std::to_string(run.id) + ": stored workload"));
    }
}

TEST_CASE("store: a run's API JSON holds its configuration and workload as stored, byte for byte",
          "[store]") {
    TempDir dir;
    const std::string path = dir.file("results.db");
    auto store = open_store(path);
    StorageConfig config = make_config(CacheMode::kWriteback, "xfs");
    config.iops_limit = 5000;
    config.scheduler = IoScheduler::kBfq;
    config.filesystem.mount_options = "noatime";
    Workload workload = fio_workload();
    workload.filesystems = {"xfs"};
    workload.timeout_s = 30;
    workload.tuning = "fast";
    workload.variant_of = "base";
    workload.durability = DurabilityOptions{7, false, true};
    RunRecord planned = planned_run(config, 0, 0);
    planned.workload = workload;
    const std::int64_t sweep_id = create(*store, make_sweep("s"), {planned});

    const Json api = to_json(run_entry(store->list_runs(sweep_id)->at(0), RawOutput::kOmit));
    SQLite::Database db(path, SQLite::OPEN_READONLY);
    CHECK(api["config"].dump() ==
          db.execAndGet("SELECT canonical_json FROM configurations").getString());
    CHECK(api["workload"].dump() == db.execAndGet("SELECT workload_json FROM runs").getString());
    CHECK(api["config"].dump() == canonical_json(config));
}

RunRecord finished(const RunRecord& planned) {
    RunRecord run = planned;
    run.status = RunStatus::kSucceeded;
    run.finished_at = "2024-05-01T10:05:00Z";
    run.timings = Json{{"provision_s", 0.5}, {"boot_s", 4.25},     {"format_s", 1.0},
                       {"bench_s", 10.5},    {"teardown_s", 0.75}, {"total_s", 17.0}};
    run.versions = Json{{"qemu", "7.2.0"}, {"kernel", "6.1.0-21-amd64"}, {"fio", "fio-3.33"}};
    run.applied_settings =
        Json{{"hypervisor", {{"cache", "unsafe"}, {"discard", "unmap"}}},
             {"guest", {{"scheduler", "none"}, {"mount_options", "rw,relatime"}}}};
    run.raw_output = R"({"fio version":"fio-3.33","jobs":[]})";
    run.metrics = {{"read_iops", 251.5}, {"write_iops", 249.25}, {"read_clat_p99_us", 1.5e6}};
    return run;
}

TEST_CASE("store: a run's lifecycle round-trips every column", "[store]") {
    TempDir dir;
    const std::string path = dir.file("results.db");
    auto store = open_store(path);
    const std::int64_t sweep_id = create(*store, make_sweep("s"), four_runs());
    const RunRecord planned = store->list_runs(sweep_id)->front();

    require_ok(store->mark_run_running(planned.id, "ds-vm-1", "ds-vol-1", "/var/log/ds/1.log",
                                       "tcg", "2024-05-01T10:02:00Z"));
    auto running = store->get_run(planned.id);
    REQUIRE(running.ok());
    CHECK(running->status == RunStatus::kRunning);
    CHECK(running->vm_name == "ds-vm-1");
    CHECK(running->volume_name == "ds-vol-1");
    CHECK(running->console_log == "/var/log/ds/1.log");
    CHECK(running->accel == "tcg");
    CHECK(running->started_at == "2024-05-01T10:02:00Z");
    // Starting twice is a conflict.
    auto again = store->mark_run_running(planned.id, "x", "y", "z", "kvm", "t");
    REQUIRE_FALSE(again.ok());
    CHECK(again.error().code == errc::kConflict);
    CHECK_THAT(again.error().message, Catch::Contains("is running"));

    const RunRecord outcome = finished(running.value());
    require_ok(store->finish_run(outcome));

    auto stored = store->get_run(planned.id);
    REQUIRE(stored.ok());
    CHECK(stored->status == RunStatus::kSucceeded);
    CHECK(stored->failure_reason.empty());
    CHECK(stored->finished_at == "2024-05-01T10:05:00Z");
    CHECK(stored->started_at == "2024-05-01T10:02:00Z");
    CHECK(stored->vm_name == "ds-vm-1");
    CHECK(stored->timings == outcome.timings);
    CHECK(stored->versions == outcome.versions);
    CHECK(stored->applied_settings == outcome.applied_settings);
    CHECK(stored->raw_output == outcome.raw_output);
    CHECK(stored->metrics == outcome.metrics);
    CHECK(to_json(stored->config) == to_json(planned.config));
    CHECK(table_count(path, "metrics") == 3);

    // Listings can leave the raw output out; metrics are still there.
    auto listed = store->list_runs(sweep_id, RawOutput::kOmit);
    CHECK(listed->front().raw_output.empty());
    CHECK(listed->front().metrics == outcome.metrics);
    CHECK(store->list_runs(sweep_id)->front().raw_output == outcome.raw_output);

    // A finished run stays finished.
    RunRecord rewrite = outcome;
    rewrite.status = RunStatus::kFailed;
    auto refused = store->finish_run(rewrite);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == errc::kConflict);
    CHECK_THAT(refused.error().message, Catch::Contains("is succeeded"));
    CHECK(store->get_run(planned.id)->status == RunStatus::kSucceeded);
}

TEST_CASE("store: finish_run validates before writing", "[store]") {
    TempDir dir;
    auto store = open_store(dir.file("results.db"));
    const std::int64_t sweep_id = create(*store, make_sweep("s"), four_runs());
    RunRecord run = finished(store->list_runs(sweep_id)->front());

    run.metrics["read_iops"] = std::numeric_limits<double>::quiet_NaN();
    auto nan = store->finish_run(run);
    REQUIRE_FALSE(nan.ok());
    CHECK(nan.error().code == errc::kInvalidArgument);
    CHECK_THAT(nan.error().message, Catch::Contains("read_iops"));

    run.metrics["read_iops"] = 1;
    run.status = RunStatus::kRunning;
    CHECK(store->finish_run(run).error().code == errc::kInvalidArgument);
    CHECK(store->get_run(run.id)->status == RunStatus::kPending);

    // A failure recorded straight from pending (e.g. provisioning failed).
    run.status = RunStatus::kFailed;
    run.failure_reason = "storage: cannot create volume";
    run.metrics.clear();
    require_ok(store->finish_run(run));
    auto stored = store->get_run(run.id);
    CHECK(stored->status == RunStatus::kFailed);
    CHECK(stored->failure_reason == "storage: cannot create volume");
    CHECK(stored->metrics.empty());
}

TEST_CASE("store: counts by status and cancelling pending runs", "[store]") {
    TempDir dir;
    auto store = open_store(dir.file("results.db"));
    const std::int64_t sweep_id = create(*store, make_sweep("s"), four_runs());
    const std::int64_t other_id = create(*store, make_sweep("other"), four_runs());
    auto runs = store->list_runs(sweep_id).value();

    auto counts = store->run_counts(sweep_id);
    REQUIRE(counts.ok());
    CHECK(counts.value() == std::map<std::string, int>{{"pending", 4},
                                                       {"running", 0},
                                                       {"succeeded", 0},
                                                       {"failed", 0},
                                                       {"timed_out", 0},
                                                       {"cancelled", 0}});

    require_ok(store->mark_run_running(runs[0].id, "vm0", "vol0", "log0", "tcg", "t0"));
    require_ok(store->mark_run_running(runs[1].id, "vm1", "vol1", "log1", "tcg", "t1"));
    require_ok(store->finish_run(finished(runs[1])));
    require_ok(store->cancel_pending_runs(sweep_id));

    counts = store->run_counts(sweep_id);
    CHECK(counts.value() == std::map<std::string, int>{{"pending", 0},
                                                       {"running", 1},
                                                       {"succeeded", 1},
                                                       {"failed", 0},
                                                       {"timed_out", 0},
                                                       {"cancelled", 2}});
    auto cancelled = store->get_run(runs[3].id);
    CHECK(cancelled->status == RunStatus::kCancelled);
    CHECK_FALSE(cancelled->failure_reason.empty());
    // The scheduler cannot start a cancelled run.
    auto start = store->mark_run_running(runs[3].id, "vm", "vol", "log", "tcg", "t");
    REQUIRE_FALSE(start.ok());
    CHECK(start.error().code == errc::kConflict);
    CHECK_THAT(start.error().message, Catch::Contains("is cancelled"));
    // Another sweep is untouched.
    CHECK(store->run_counts(other_id)->at("pending") == 4);
}

TEST_CASE("store: runs left running by a crashed daemon are found on restart", "[store]") {
    TempDir dir;
    const std::string path = dir.file("results.db");
    std::int64_t first_id = 0;
    std::int64_t second_id = 0;
    {
        auto store = open_store(path);
        first_id = create(*store, make_sweep("a"), four_runs());
        second_id = create(*store, make_sweep("b"), four_runs());
        auto first_runs = store->list_runs(first_id).value();
        auto second_runs = store->list_runs(second_id).value();
        require_ok(
            store->mark_run_running(second_runs[2].id, "ds-b-2", "vol-b-2", "log", "tcg", "t"));
        require_ok(
            store->mark_run_running(first_runs[1].id, "ds-a-1", "vol-a-1", "log", "kvm", "t"));
        require_ok(
            store->mark_run_running(first_runs[0].id, "ds-a-0", "vol-a-0", "log", "kvm", "t"));
        require_ok(store->finish_run(finished(first_runs[0])));
        // The daemon dies here: the store goes away without anything else.
    }
    auto store = open_store(path);
    auto running = store->runs_with_status(RunStatus::kRunning);
    REQUIRE(running.ok());
    REQUIRE(running->size() == 2);
    CHECK(running.value()[0].sweep_id == first_id);
    CHECK(running.value()[0].vm_name == "ds-a-1");
    CHECK(running.value()[0].volume_name == "vol-a-1");
    CHECK(running.value()[1].sweep_id == second_id);
    CHECK(running.value()[1].vm_name == "ds-b-2");

    // Recovery records them as failed; then nothing is left running.
    for (RunRecord run : running.value()) {
        run.status = RunStatus::kFailed;
        run.failure_reason = "daemon restarted while the run was in progress";
        require_ok(store->finish_run(run));
    }
    CHECK(store->runs_with_status(RunStatus::kRunning)->empty());
    CHECK(store->runs_with_status(RunStatus::kFailed)->size() == 2);
    CHECK_FALSE(parse_run_status("bogus").has_value());
}

TEST_CASE("store: four threads share one store, a second connection reads along", "[store]") {
    TempDir dir;
    const std::string path = dir.file("results.db");
    auto store = open_store(path);
    constexpr int kThreads = 4;
    constexpr int kRunsPerSweep = 20;

    std::atomic<int> failures{0};
    std::vector<std::int64_t> sweep_ids(kThreads);
    auto worker = [&](int thread_index) {
        const StorageConfig config =
            make_config(CacheMode::kNone, thread_index % 2 ? "ext4" : "btrfs");
        std::vector<RunRecord> runs;
        for (int sequence = 0; sequence < kRunsPerSweep; ++sequence) {
            runs.push_back(planned_run(config, sequence, sequence));
        }
        auto sweep_id = store->create_sweep(make_sweep("t" + std::to_string(thread_index)), runs);
        if (!sweep_id.ok()) {
            ++failures;
            return;
        }
        sweep_ids[thread_index] = sweep_id.value();
        auto planned = store->list_runs(sweep_id.value());
        if (!planned.ok()) {
            ++failures;
            return;
        }
        for (const RunRecord& run : planned.value()) {
            if (!store->mark_run_running(run.id, "vm", "vol", "log", "tcg", "t").ok()) ++failures;
            RunRecord outcome = finished(run);
            outcome.metrics = {{"read_iops", static_cast<double>(run.sequence)}};
            if (!store->finish_run(outcome).ok()) ++failures;
            if (!store->run_counts(sweep_id.value()).ok()) ++failures;
        }
    };
    std::atomic<bool> done{false};
    auto reader = [&] {
        // Its own connection to the same file: WAL lets it read while the
        // writers write; the busy timeout covers the short write locks.
        auto second = Store::open(path);
        if (!second.ok()) {
            ++failures;
            return;
        }
        while (!done) {
            auto sweeps = second.value()->list_sweeps();
            if (!sweeps.ok()) {
                ++failures;
                continue;
            }
            for (const SweepRecord& sweep : sweeps.value()) {
                if (!second.value()->list_runs(sweep.id, RawOutput::kOmit).ok()) ++failures;
            }
        }
    };

    std::thread reader_thread(reader);
    std::vector<std::thread> threads;
    for (int index = 0; index < kThreads; ++index) threads.emplace_back(worker, index);
    for (std::thread& thread : threads) thread.join();
    done = true;
    reader_thread.join();

    CHECK(failures == 0);
    CHECK(store->list_sweeps()->size() == kThreads);
    for (std::int64_t sweep_id : sweep_ids) {
        CHECK(store->run_counts(sweep_id)->at("succeeded") == kRunsPerSweep);
        auto runs = store->list_runs(sweep_id);
        REQUIRE(runs->size() == kRunsPerSweep);
        CHECK(runs->back().metrics.at("read_iops") == kRunsPerSweep - 1);
    }
    CHECK(table_count(path, "metrics") == kThreads * kRunsPerSweep);
}

TEST_CASE("store: file system failures are io errors with SQLite's message", "[store]") {
    TempDir dir;

    SECTION("a directory that does not exist") {
        auto store = Store::open(dir.file("missing/results.db"));
        REQUIRE_FALSE(store.ok());
        CHECK(store.error().code == errc::kIo);
        CHECK_THAT(store.error().message, Catch::Contains("missing/results.db"));
        CHECK_THAT(store.error().message, Catch::Contains("unable to open database file"));
    }

    SECTION("a file that is not a database") {
        const std::string path = dir.file("notes.txt");
        std::ofstream(path) << std::string(8192, 'x');
        auto store = Store::open(path);
        REQUIRE_FALSE(store.ok());
        CHECK(store.error().code == errc::kIo);
        CHECK_THAT(store.error().message, Catch::Contains("not a database"));
    }

    SECTION("a full disk while recording a result") {
        const std::string path = dir.file("results.db");
        auto store = open_store(path);
        const std::int64_t sweep_id = create(*store, make_sweep("s"), four_runs());
        RunRecord run = finished(store->list_runs(sweep_id)->front());
        run.raw_output = std::string(4 << 20, 'r');  // needs 4 MiB of WAL

        // Files may not grow past 1 MiB: writes beyond fail with EFBIG, as
        // they would with ENOSPC on a full disk (SIGXFSZ ignored so the write
        // returns the error instead of killing the process).
        const auto previous_handler = std::signal(SIGXFSZ, SIG_IGN);
        rlimit previous_limit{};
        REQUIRE(getrlimit(RLIMIT_FSIZE, &previous_limit) == 0);
        rlimit small_limit = previous_limit;
        small_limit.rlim_cur = 1 << 20;
        REQUIRE(setrlimit(RLIMIT_FSIZE, &small_limit) == 0);
        Status status = store->finish_run(run);
        REQUIRE(setrlimit(RLIMIT_FSIZE, &previous_limit) == 0);
        std::signal(SIGXFSZ, previous_handler);

        REQUIRE_FALSE(status.ok());
        CHECK(status.error().code == errc::kIo);
        CHECK_THAT(status.error().message,
                   Catch::Contains("recording the outcome of run " + std::to_string(run.id)));
        // Nothing half-written; with room again, the same write succeeds.
        CHECK(store->get_run(run.id)->status == RunStatus::kPending);
        CHECK(store->get_run(run.id)->metrics.empty());
        require_ok(store->finish_run(run));
        CHECK(store->get_run(run.id)->raw_output.size() == run.raw_output.size());
    }
}

// The store's records as the API shows them (daemon/api/record_messages.h).
TEST_CASE("store: JSON shapes for the API", "[store]") {
    TempDir dir;
    auto store = open_store(dir.file("results.db"));
    const std::int64_t sweep_id = create(*store, make_sweep("s"), four_runs());

    const Json sweep =
        to_json(sweep_summary(*store, store->get_sweep(sweep_id).value(), nullptr).value());
    CHECK(sweep["id"] == sweep_id);
    CHECK(sweep["name"] == "s");
    CHECK(sweep["status"] == "queued");
    CHECK(sweep["created_at"] == "2024-05-01T10:00:00Z");
    CHECK(sweep["started_at"].is_null());
    CHECK(sweep["finished_at"].is_null());
    CHECK(sweep["total_runs"] == 4);
    CHECK(sweep["varying_axes"] == Json::array({"cache", "filesystem"}));
    CHECK(sweep["dropped"][0]["reason"] == "virtio-blk has no rotation rate");
    CHECK(sweep["spec_source"] == "s.toml");
    CHECK(sweep.contains("spec_toml"));

    const RunRecord planned = store->list_runs(sweep_id)->front();
    const Json pending = to_json(run_entry(planned, RawOutput::kOmit));
    CHECK(pending["status"] == "pending");
    CHECK(pending["failure_reason"].is_null());
    CHECK(pending["vm_name"].is_null());
    CHECK(pending["metrics"] == Json::object());
    CHECK_FALSE(pending.contains("raw_output"));

    require_ok(store->finish_run(finished(planned)));
    const Json done = to_json(run_entry(store->get_run(planned.id).value(), RawOutput::kInclude));
    CHECK(done["id"] == planned.id);
    CHECK(done["sweep_id"] == sweep_id);
    CHECK(done["sequence"] == 0);
    CHECK(done["config_id"] == planned.config_id);
    CHECK(done["config"] == to_json(planned.config));
    CHECK(done["workload_name"] == "randrw");
    CHECK(done["timings"]["boot_s"] == 4.25);
    CHECK(done["versions"]["qemu"] == "7.2.0");
    CHECK(done["applied_settings"]["hypervisor"]["cache"] == "unsafe");
    CHECK(done["metrics"]["read_iops"] == 251.5);
    CHECK(done["raw_output"] == finished(planned).raw_output);
}

}  // namespace
}  // namespace ds

namespace ds {

TEST_CASE("store: migration 2 keeps runs and metrics and admits timed_out", "[store][migration]") {
    TempDir dir;
    const std::string path = dir.file("results.db");
    std::int64_t sweep_id = 0;
    {
        // A database as the previous release left it: schema version 1.
        auto old = Store::open(path, schema_migrations().subspan(0, 1));
        REQUIRE(old.ok());
        Store& store = *old.value();
        auto id = store.create_sweep(make_sweep("old"), four_runs());
        REQUIRE(id.ok());
        sweep_id = id.value();
        // By sequence, read without the store (list_runs reads columns of
        // later migrations).
        std::vector<RunRecord> runs(4);
        SQLite::Database plain(path, SQLite::OPEN_READONLY);
        SQLite::Statement ids(plain, "SELECT id FROM runs ORDER BY sequence");
        for (RunRecord& run : runs) {
            REQUIRE(ids.executeStep());
            run.id = ids.getColumn(0).getInt64();
        }
        // The outcome as that release's store wrote it (today's finish_run
        // also writes columns and tables of later migrations).
        SQLite::Database writer(path, SQLite::OPEN_READWRITE);
        SQLite::Statement record(
            writer,
            "UPDATE runs SET status = 'succeeded', vm_name = 'vm', volume_name = 'vol', "
            "console_log = 'log', accel = 'tcg', started_at = 't1', finished_at = 't2', "
            "raw_output = '{\"jobs\":[]}', applied_settings_json = '{\"verified\":true}' "
            "WHERE id = ?");
        record.bind(1, runs.at(0).id);
        REQUIRE(record.exec() == 1);
        writer.exec("INSERT INTO metrics (run_id, name, value) VALUES (" +
                    std::to_string(runs.at(0).id) + ", 'read_iops', 1234.5), (" +
                    std::to_string(runs.at(0).id) + ", 'write_iops', 99.0)");
        // The old CHECK refuses the new status.
        CHECK_THROWS(writer.exec("UPDATE runs SET status = 'timed_out' WHERE id = " +
                                 std::to_string(runs.at(1).id)));
    }

    auto migrated = Store::open(path);
    REQUIRE(migrated.ok());
    Store& store = *migrated.value();
    CHECK(store.schema_version().value() == static_cast<int>(schema_migrations().size()));
    auto after = store.list_runs(sweep_id);
    REQUIRE(after.ok());
    REQUIRE(after->size() == 4);
    CHECK(after->at(0).status == RunStatus::kSucceeded);
    CHECK(after->at(0).vm_name == "vm");
    CHECK(after->at(0).finished_at == "t2");
    CHECK(after->at(0).raw_output == "{\"jobs\":[]}");
    CHECK(after->at(0).applied_settings == Json{{"verified", true}});
    CHECK(after->at(0).metrics ==
          std::map<std::string, double>{{"read_iops", 1234.5}, {"write_iops", 99.0}});
    for (std::size_t i = 1; i < after->size(); ++i)
        CHECK(after->at(i).status == RunStatus::kPending);
    // Migration 4 folded the old run into the aggregates, in its partition.
    auto aggregates = store.metric_aggregates(sweep_id);
    REQUIRE(aggregates.ok());
    REQUIRE(aggregates->size() == 2);
    CHECK(aggregates->at(0).metric == "read_iops");
    CHECK(aggregates->at(0).partition_key == "[\"tcg\",\"\",\"\",\"\",\"\"]");
    CHECK(aggregates->at(0).moments.n == 1);
    CHECK(aggregates->at(0).moments.mean == 1234.5);
    CHECK(aggregates->at(0).moments.log_n == 1);
    CHECK(aggregates->at(0).moments.log_sum == Approx(std::log(1234.5)));

    // timed_out is now a terminal status like failed.
    RunRecord run = after->at(1);
    REQUIRE(store.mark_run_running(run.id, "vm", "vol", "log", "tcg", "t3").ok());
    run.status = RunStatus::kTimedOut;
    run.failure_reason = "workload stopped at its time limit";
    run.finished_at = "t4";
    REQUIRE(store.finish_run(run).ok());
    CHECK(store.get_run(run.id)->status == RunStatus::kTimedOut);
    CHECK(store.run_counts(sweep_id).value().at("timed_out") == 1);
    CHECK_FALSE(store.finish_run(run).ok());  // once finished, finished

    // Deleting a sweep still cascades to runs and metrics (foreign keys intact).
    SQLite::Database db(path, SQLite::OPEN_READWRITE);
    db.exec("PRAGMA foreign_keys = ON");
    db.exec("DELETE FROM sweeps WHERE id = " + std::to_string(sweep_id));
    CHECK(db.execAndGet("SELECT COUNT(*) FROM runs").getInt() == 0);
    CHECK(db.execAndGet("SELECT COUNT(*) FROM metrics").getInt() == 0);
    CHECK(db.execAndGet("SELECT COUNT(*) FROM sqlite_master WHERE name = 'metrics_before_v2'")
              .getInt() == 0);
}

// --- attempts (migration 3, recover_interrupted_runs) ---

// A sweep of four_runs() marked running, as the scheduler leaves it.
std::int64_t running_sweep(Store& store, const std::string& name = "s") {
    const std::int64_t id = create(store, make_sweep(name), four_runs());
    require_ok(store.set_sweep_status(id, SweepStatus::kRunning, "t0"));
    return id;
}

RunRecord failed_with(const RunRecord& run, const std::string& reason) {
    RunRecord failed = run;
    failed.status = RunStatus::kFailed;
    failed.failure_reason = reason;
    failed.finished_at = "t9";
    return failed;
}

Store::InterruptedRuns recover(Store& store, int max_attempts = 3) {
    auto recovered = store.recover_interrupted_runs(max_attempts, "t-restart");
    INFO((recovered.ok() ? "" : recovered.error().message));
    REQUIRE(recovered.ok());
    return std::move(recovered).value();
}

TEST_CASE("store: migration 3 gives every existing run attempt 1", "[store][migration]") {
    TempDir dir;
    const std::string path = dir.file("results.db");
    std::int64_t sweep_id = 0;
    {
        auto old = Store::open(path, schema_migrations().subspan(0, 2));
        REQUIRE(old.ok());
        sweep_id = create(*old.value(), make_sweep("old"), four_runs());
    }
    auto store = open_store(path);
    CHECK(store->schema_version().value() == static_cast<int>(schema_migrations().size()));
    auto runs = store->list_runs(sweep_id).value();
    REQUIRE(runs.size() == 4);
    for (const RunRecord& run : runs) {
        CHECK(run.attempt == 1);
        CHECK(run.superseded_by == 0);
    }
    const Json shown = to_json(run_entry(runs[0], RawOutput::kOmit));
    CHECK(shown.at("attempt") == 1);
    CHECK(shown.at("superseded_by").is_null());
}

// --- the instance id (migration 6, Store::instance_id) ---

std::string instance_id_of(Store& store) {
    auto id = store.instance_id();
    INFO((id.ok() ? "" : id.error().message));
    REQUIRE(id.ok());
    return id.value();
}

TEST_CASE("store: the instance id is generated once per database and kept", "[store][instance]") {
    TempDir dir;
    const std::string path = dir.file("results.db");
    std::string first;
    {
        auto store = open_store(path);
        first = instance_id_of(*store);
        CHECK_THAT(first, Catch::Matches("[0-9a-f]{8}"));
        CHECK(instance_id_of(*store) == first);
    }
    // Reopened (the daemon restarted): the same id.
    auto reopened = open_store(path);
    CHECK(instance_id_of(*reopened) == first);
    // Another database (another daemon): another id.
    auto other = open_store(dir.file("other.db"));
    const std::string second = instance_id_of(*other);
    CHECK_THAT(second, Catch::Matches("[0-9a-f]{8}"));
    CHECK(second != first);
    SQLite::Database db(path, SQLite::OPEN_READONLY);
    CHECK(db.execAndGet("SELECT COUNT(*) FROM daemon_instance").getInt() == 1);
}

TEST_CASE("store: migration 6 gives a version 5 database an instance id and keeps its data",
          "[store][migration][instance]") {
    TempDir dir;
    const std::string path = dir.file("results.db");
    std::int64_t sweep_id = 0;
    {
        auto old = Store::open(path, schema_migrations().subspan(0, 5));
        REQUIRE(old.ok());
        sweep_id = create(*old.value(), make_sweep("before instances"), four_runs());
        SQLite::Database db(path, SQLite::OPEN_READONLY);
        CHECK_FALSE(db.tableExists("daemon_instance"));
    }
    auto store = open_store(path);
    CHECK(store->schema_version().value() == static_cast<int>(schema_migrations().size()));
    const std::string id = instance_id_of(*store);
    CHECK_THAT(id, Catch::Matches("[0-9a-f]{8}"));
    CHECK(store->get_sweep(sweep_id)->name == "before instances");
    CHECK(store->list_runs(sweep_id)->size() == 4);
    // The table holds one row at most.
    SQLite::Database db(path, SQLite::OPEN_READWRITE);
    CHECK_THROWS(db.exec("INSERT INTO daemon_instance (singleton, instance_id) VALUES (2, 'x')"));
    store.reset();
    CHECK(instance_id_of(*open_store(path)) == id);
}

TEST_CASE("store: an interrupted run gets a new attempt of the same planned run",
          "[store][attempts]") {
    TempDir dir;
    auto store = open_store(dir.file("results.db"));
    const std::int64_t sweep_id = running_sweep(*store);
    const std::int64_t other_id = running_sweep(*store, "other");
    auto runs = store->list_runs(sweep_id).value();
    // runs[0] succeeded, runs[1] was running when the daemon died, runs[2]
    // was stopped by an orderly shutdown (the executor's reason), runs[3]
    // never started.
    require_ok(store->mark_run_running(runs[0].id, "vm0", "vol0", "log", "tcg", "t1"));
    require_ok(store->finish_run(finished(runs[0])));
    require_ok(store->mark_run_running(runs[1].id, "vm1", "vol1", "log", "tcg", "t2"));
    require_ok(store->mark_run_running(runs[2].id, "vm2", "vol2", "log", "tcg", "t3"));
    require_ok(store->finish_run(
        failed_with(runs[2], std::string(kInterruptedReason) + "; teardown: slow")));

    const Store::InterruptedRuns recovered = recover(*store);
    REQUIRE(recovered.marked_failed.size() == 1);
    CHECK(recovered.marked_failed[0].id == runs[1].id);
    CHECK(recovered.marked_failed[0].status == RunStatus::kFailed);
    CHECK_THAT(recovered.marked_failed[0].failure_reason,
               Catch::StartsWith(std::string(kInterruptedReason)));
    CHECK(recovered.marked_failed[0].finished_at == "t-restart");
    CHECK(recovered.given_up.empty());

    REQUIRE(recovered.new_attempts.size() == 2);
    const int last_planned_sequence = 3;
    for (std::size_t i = 0; i < 2; ++i) {
        const RunRecord& interrupted = runs[i + 1];
        const RunRecord& next = recovered.new_attempts[i];
        INFO("interrupted run " << interrupted.id);
        CHECK(next.sweep_id == sweep_id);
        CHECK(next.status == RunStatus::kPending);
        CHECK(next.attempt == 2);
        CHECK(next.superseded_by == 0);
        CHECK(next.config_id == interrupted.config_id);
        CHECK(next.workload_name == interrupted.workload_name);
        CHECK(next.workload == interrupted.workload);
        CHECK(next.repetition == interrupted.repetition);
        CHECK(next.sequence > last_planned_sequence);
        CHECK(next.vm_name.empty());
        // The interrupted attempt stays, as it was, pointing at its successor.
        const RunRecord kept = store->get_run(interrupted.id).value();
        CHECK(kept.status == RunStatus::kFailed);
        CHECK(kept.attempt == 1);
        CHECK(kept.superseded_by == next.id);
    }
    CHECK(recovered.new_attempts[0].sequence != recovered.new_attempts[1].sequence);
    CHECK(store->list_runs(sweep_id)->size() == 6);

    // Counts cover current attempts only: they still add up to total_runs.
    CHECK(store->run_counts(sweep_id).value() == std::map<std::string, int>{{"pending", 3},
                                                                            {"running", 0},
                                                                            {"succeeded", 1},
                                                                            {"failed", 0},
                                                                            {"timed_out", 0},
                                                                            {"cancelled", 0}});
    CHECK(store->run_counts(other_id)->at("pending") == 4);

    // A second start finds nothing more to do.
    const Store::InterruptedRuns again = recover(*store);
    CHECK(again.marked_failed.empty());
    CHECK(again.new_attempts.empty());
    CHECK(again.given_up.empty());
    CHECK(store->list_runs(sweep_id)->size() == 6);
}

// A succeeded outcome of `run` with the given metrics.
RunRecord succeeded_with(const RunRecord& run, std::map<std::string, double> metrics) {
    RunRecord done = finished(run);
    done.metrics = std::move(metrics);
    return done;
}

TEST_CASE("store: a metric's series per group, in round order, of this sweep's current attempts",
          "[store][attempts][compare]") {
    TempDir dir;
    auto store = open_store(dir.file("results.db"));
    const std::int64_t sweep_id = running_sweep(*store);
    const std::int64_t other_id = running_sweep(*store, "other");
    // By sequence: safe round 0, fast round 0, fast round 1, safe round 1.
    auto runs = store->list_runs(sweep_id).value();
    auto start = [&](const RunRecord& run) {
        require_ok(store->mark_run_running(run.id, "vm", "vol", "log", "tcg", "t1"));
    };
    // The other sweep's run lies between this sweep's first and last ids.
    const RunRecord other = store->list_runs(other_id).value().at(0);
    start(other);
    require_ok(store->finish_run(succeeded_with(other, {{"read_iops", 555}})));
    // Fast round 0 is interrupted: its new attempt has the sweep's highest id.
    start(runs[1]);
    const Store::InterruptedRuns recovered = recover(*store);
    REQUIRE(recovered.new_attempts.size() == 1);
    const RunRecord rerun = recovered.new_attempts[0];
    REQUIRE(rerun.id > runs[2].id);
    for (const auto& [run, value] : std::vector<std::pair<RunRecord, double>>{
             {runs[0], 10}, {runs[3], 12}, {runs[2], 30}, {rerun, 20}}) {
        start(run);
        require_ok(
            store->finish_run(succeeded_with(run, {{"read_iops", value}, {"write_iops", 1}})));
    }

    auto series = store->metric_series(sweep_id, {"read_iops"});
    REQUIRE(series.ok());
    REQUIRE(series->size() == 2);
    std::map<std::string, std::vector<std::pair<int, double>>> by_config;
    for (const MetricSeries& one : series.value()) {
        CHECK(one.metric == "read_iops");
        CHECK(one.workload_name == "randrw");
        CHECK(one.partition_key == "[\"tcg\",\"\",\"7.2.0\",\"\",\"6.1.0-21-amd64\",\"\"]");
        for (const RoundValue& value : one.values)
            by_config[one.config_id].push_back({value.round, value.value});
    }
    CHECK(by_config[runs[0].config_id] == std::vector<std::pair<int, double>>{{0, 10}, {1, 12}});
    CHECK(by_config[runs[1].config_id] == std::vector<std::pair<int, double>>{{0, 20}, {1, 30}});

    // Every metric: a series per metric of each group, none of the other sweep's.
    auto every = store->metric_series(sweep_id, {});
    REQUIRE(every.ok());
    CHECK(every->size() == 4);
    for (const MetricSeries& one : every.value()) CHECK(one.values.size() == 2);
    CHECK(store->metric_series(other_id, {"read_iops"})->at(0).values.size() == 1);
    CHECK(store->metric_series(sweep_id, {"no_such_metric"})->empty());
}

TEST_CASE("store: the last allowed attempt is not run again, and says so", "[store][attempts]") {
    TempDir dir;
    auto store = open_store(dir.file("results.db"));
    const std::int64_t sweep_id = running_sweep(*store);
    std::int64_t current = store->list_runs(sweep_id)->at(0).id;
    for (int attempt = 1; attempt <= 2; ++attempt) {
        require_ok(store->mark_run_running(current, "vm", "vol", "log", "tcg", "t"));
        const Store::InterruptedRuns recovered = recover(*store, 2);
        if (attempt == 1) {
            REQUIRE(recovered.new_attempts.size() == 1);
            CHECK(recovered.new_attempts[0].attempt == 2);
            current = recovered.new_attempts[0].id;
            continue;
        }
        CHECK(recovered.new_attempts.empty());
        REQUIRE(recovered.given_up.size() == 1);
        CHECK(recovered.given_up[0].id == current);
        CHECK_THAT(recovered.given_up[0].failure_reason,
                   Catch::StartsWith(std::string(kInterruptedReason)) &&
                       Catch::Contains("attempt 2 of at most 2, not run again"));
    }
    // Said once, however often the daemon starts before the sweep ends.
    const std::string reason = store->get_run(current)->failure_reason;
    const Store::InterruptedRuns later = recover(*store, 2);
    CHECK(later.given_up.empty());
    CHECK(later.new_attempts.empty());
    CHECK(store->get_run(current)->failure_reason == reason);
    CHECK(store->run_counts(sweep_id)->at("failed") == 1);
    CHECK(store->list_runs(sweep_id)->size() == 5);
}

TEST_CASE("store: no new attempt for other failures, finished or cancelled sweeps",
          "[store][attempts]") {
    TempDir dir;
    auto store = open_store(dir.file("results.db"));

    SECTION("a run that failed for its own reasons") {
        const std::int64_t sweep_id = running_sweep(*store);
        const RunRecord run = store->list_runs(sweep_id)->at(0);
        require_ok(store->mark_run_running(run.id, "vm", "vol", "log", "tcg", "t"));
        require_ok(store->finish_run(failed_with(run, "guest: mkfs.btrfs failed")));
        CHECK(recover(*store).new_attempts.empty());
    }
    SECTION("a sweep that is already finished") {
        const std::int64_t sweep_id = running_sweep(*store);
        const RunRecord run = store->list_runs(sweep_id)->at(0);
        require_ok(store->mark_run_running(run.id, "vm", "vol", "log", "tcg", "t"));
        require_ok(store->set_sweep_status(sweep_id, SweepStatus::kFailed, "t"));
        const Store::InterruptedRuns recovered = recover(*store);
        CHECK(recovered.marked_failed.size() == 1);  // still recorded as interrupted
        CHECK(recovered.new_attempts.empty());
    }
    SECTION("a sweep the user cancelled") {
        const std::int64_t sweep_id = running_sweep(*store);
        const RunRecord run = store->list_runs(sweep_id)->at(0);
        require_ok(store->mark_run_running(run.id, "vm", "vol", "log", "tcg", "t"));
        require_ok(store->cancel_pending_runs(sweep_id));
        const Store::InterruptedRuns recovered = recover(*store);
        CHECK(recovered.marked_failed.size() == 1);
        CHECK(recovered.new_attempts.empty());
    }
    CHECK_FALSE(store->recover_interrupted_runs(0, "t").ok());
}

TEST_CASE("store: one current attempt per planned run, enforced by the schema",
          "[store][attempts]") {
    TempDir dir;
    const std::string path = dir.file("results.db");
    auto store = open_store(path);
    const std::int64_t sweep_id = running_sweep(*store);
    const RunRecord run = store->list_runs(sweep_id)->at(0);
    SQLite::Database db(path, SQLite::OPEN_READWRITE);
    const std::string duplicate =
        "INSERT INTO runs (sweep_id, sequence, repetition, config_id, workload_name, "
        "workload_json, status, attempt) VALUES (" +
        std::to_string(sweep_id) + ", 99, " + std::to_string(run.repetition) + ", '" +
        run.config_id + "', '" + run.workload_name + "', '{}', 'pending', ";
    CHECK_THROWS(db.exec(duplicate + "2)"));  // a second current attempt
    db.exec("UPDATE runs SET superseded_by = " + std::to_string(run.id) +
            " WHERE id = " + std::to_string(run.id));
    CHECK_THROWS(db.exec(duplicate + "1)"));  // attempt 1 twice
}

TEST_CASE("store: a running run's guest handle is kept until cleared, through its finish",
          "[store]") {
    TempDir dir;
    auto store = open_store(dir.file("results.db"));
    const std::int64_t sweep_id = create(*store, make_sweep("s"), four_runs());
    const RunRecord planned = store->list_runs(sweep_id)->front();
    // Only a running run gets a guest.
    CHECK(store->record_vm_handle(planned.id, "pve", Json{{"vmid", 5000}}).error().code ==
          errc::kConflict);
    require_ok(store->mark_run_running(planned.id, "ds-vm-1", "ds-vol-1", "", "kvm", "t"));
    require_ok(
        store->record_vm_handle(planned.id, "pve/pve1", Json{{"vmid", 5000}, {"node", "pve1"}}));
    // Finishing does not forget it (a teardown may have failed); the accel
    // the run reports replaces the one it started with.
    RunRecord outcome = finished(*store->get_run(planned.id));
    outcome.accel = "tcg";
    require_ok(store->finish_run(outcome));
    CHECK(store->get_run(planned.id)->accel == "tcg");
    auto recorded = store->recorded_vms();
    REQUIRE(recorded.ok());
    REQUIRE(recorded->size() == 1);
    CHECK(recorded->front().run_id == planned.id);
    CHECK(recorded->front().vm_name == "ds-vm-1");
    CHECK(recorded->front().host == "pve/pve1");
    CHECK(recorded->front().handle == Json{{"vmid", 5000}, {"node", "pve1"}});
    require_ok(store->clear_vm_handle(planned.id));
    CHECK(store->recorded_vms()->empty());
}

}  // namespace ds
