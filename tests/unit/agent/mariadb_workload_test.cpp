// The MariaDB runners against a scripted ProcessRunner that plays
// mariadb-install-db, mariadbd (blocks until mariadb-admin shutdown), the
// mariadb client, test-ATIS and sysbench with outputs recorded from the real
// programs (tests/data/mariadb).
#include "guestagent/mariadb_workload.h"

#include <atomic>
#include <condition_variable>

#include "common/workload_output.h"
#include "guestagent/workload.h"
#include "support/fake_clock.h"
#include "support/fakes/agent_fakes.h"
#include "support/test_data.h"

namespace ds::agent::testing {
namespace {

std::string recorded_mariadb(const std::string& name) {
    return read_text(test::test_data_dir() / "mariadb" / name);
}

// The argv of `sh -c SCRIPT sh DIR OUT PROGRAM...` (the runner's
// stdout-to-file wrapper): {DIR, OUT, PROGRAM...}; empty for other commands.
std::vector<std::string> wrapped(const std::vector<std::string>& argv) {
    if (argv.size() < 6 || argv[0] != "sh" || argv[1] != "-c") return {};
    return {argv.begin() + 4, argv.end()};
}

bool has(const std::vector<std::string>& argv, const std::string& item) {
    return std::find(argv.begin(), argv.end(), item) != argv.end();
}

// A MariaDB server, its tools and the benchmarks, scripted. The benchmarks
// take their time on `clock`, the runners' clock: no real time passes.
class FakeMariaDb {
  public:
    FakeMariaDb(FakeProcessRunner& runner, test::FakeClock& clock) : clock_(clock) {
        runner.script =
            [this](const std::vector<std::string>& argv,
                   std::chrono::milliseconds timeout) -> std::optional<Result<ProcessOutput>> {
            return play(argv, timeout);
        };
    }

    // Paths the runner uses (server_paths of the context below).
    fs::path scratch;
    // SHOW GLOBAL VARIABLES rows the server shows.
    std::map<std::string, std::string> variables = {{"innodb_flush_method", "O_DIRECT"},
                                                    {"innodb_doublewrite", "ON"},
                                                    {"innodb_flush_log_at_trx_commit", "1"},
                                                    {"innodb_buffer_pool_size", "134217728"}};
    // SELECT VERSION().
    std::string version = "10.11.19-MariaDB-0+deb12u1";
    // The server exits at start with this error log instead.
    std::string start_error_log;
    std::string atis_stdout = recorded_mariadb("atis_host_hires_loop20.txt");
    int atis_exit = 0;
    std::string atis_stderr;
    // How long test-ATIS runs, and the timeout its runner was given.
    std::chrono::milliseconds atis_delay{0};
    std::chrono::milliseconds atis_timeout{0};
    std::string sysbench_run_stdout = recorded_mariadb("sysbench_oltp_read_write_histogram.txt");
    std::string sysbench_run_stdout_on_failure;
    int sysbench_run_exit = 0;
    std::atomic<int> shutdowns{0};
    std::atomic<bool> server_killed_at_timeout{false};

  private:
    std::optional<Result<ProcessOutput>> play(const std::vector<std::string>& argv,
                                              std::chrono::milliseconds timeout) {
        ProcessOutput out;
        out.exit_code = 0;
        const fs::path dir = scratch / "mariadb";
        if (argv[0] == "mariadb-install-db") return out;
        if (argv[0] == "mariadbd") {
            if (!start_error_log.empty()) {
                write_text(dir / "mysqld.err", start_error_log);
                out.exit_code = 1;
                return out;
            }
            write_text(dir / "mysqld.sock", "");
            write_text(dir / "mysqld.err", "2026-11-29 0 [Note] ready for connections.\n");
            std::unique_lock<std::mutex> lock(mutex_);
            if (!stopped_.wait_for(lock, timeout, [this] { return stop_; })) {
                server_killed_at_timeout = true;
                out.exit_code = -1;
                out.signal = 9;
                out.timed_out = true;
            }
            return out;
        }
        if (argv[0] == "mariadb-admin") {
            ++shutdowns;
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
            stopped_.notify_all();
            return out;
        }
        if (argv[0] == "mariadb") {
            out.stdout_text = version + "\n";
            for (const auto& [name, value] : variables) {
                out.stdout_text += name + "\t" + value + "\n";
            }
            return out;
        }
        const auto inner = wrapped(argv);
        if (inner.size() >= 3 && inner[2] == "perl") {
            atis_timeout = timeout;
            write_text(inner[1], "ATIS table test\n\nInserting data\n");
            // Runs for atis_delay, unless the runner kills it at its timeout first.
            if (atis_delay >= timeout) {
                clock_.advance(timeout);
                out.exit_code = -1;
                out.signal = 9;
                out.timed_out = true;
                return out;
            }
            clock_.advance(atis_delay);
            write_text(inner[1], atis_stdout);
            out.exit_code = atis_exit;
            out.stderr_text = atis_stderr;
            return out;
        }
        if (inner.size() >= 3 && inner[2] == "sysbench") {
            if (inner.back() == "prepare") {
                write_text(inner[1], "Creating table 'sbtest1'...\n");
            } else {
                write_text(inner[1], sysbench_run_exit == 0 ? sysbench_run_stdout
                                                            : sysbench_run_stdout_on_failure);
                out.exit_code = sysbench_run_exit;
            }
            return out;
        }
        return std::nullopt;
    }

    test::FakeClock& clock_;
    std::mutex mutex_;
    std::condition_variable stopped_;
    bool stop_ = false;
};

struct Fixture {
    TempDir dir;
    test::FakeClock clock;
    FakeProcessRunner runner;
    FakeMariaDb db{runner, clock};
    std::vector<std::string> progress;
    WorkloadContext ctx{runner, "", "", std::chrono::seconds(60), {}, &clock};

    Fixture() {
        ctx.work_dir = (dir.path() / "mnt").string();
        ctx.scratch_dir = (dir.path() / "scratch").string();
        db.scratch = ctx.scratch_dir;
        ctx.progress = [this](const std::string& message, double, std::optional<double>) {
            progress.push_back(message);
        };
    }
    std::string config() const { return read_text(fs::path(ctx.scratch_dir) / "mariadb/my.cnf"); }
};

Workload atis(Json params) {
    return Workload{"atis", "mariadb-atis", std::move(params), {}, 0};
}
Workload oltp(Json params) {
    return Workload{"oltp", "sysbench-oltp", std::move(params), {}, 0};
}

}  // namespace

TEST_CASE("mariadb-atis: server from a config file, verified, test-ATIS, clean shutdown") {
    Fixture f;
    f.db.variables["innodb_doublewrite"] = "OFF";
    f.db.variables["innodb_flush_method"] = "O_DSYNC";
    const Json params = {
        {"server", {{"innodb_doublewrite", 0}, {"innodb-flush-method", "O_DSYNC"}}},
        {"loop_count", 20},
        {"small_test", true},
        {"time_limit", 30}};
    auto result = run_mariadb_atis(atis(params), f.ctx);
    INFO((result.ok() ? "" : result.error().message));
    REQUIRE(result.ok());

    const std::string config = f.config();
    CHECK_THAT(config, Catch::Contains("[mysqld]\ndatadir=" + f.ctx.work_dir + "/mysql\n"));
    CHECK_THAT(config, Catch::Contains("socket=" + f.ctx.scratch_dir + "/mariadb/mysqld.sock\n"));
    CHECK_THAT(config, Catch::Contains("user=root\nskip-networking\n"));
    CHECK_THAT(config, Catch::Contains("innodb_doublewrite=0\n"));
    CHECK_THAT(config, Catch::Contains("innodb-flush-method=O_DSYNC\n"));

    const auto install = f.runner.command("mariadb-install-db");
    REQUIRE(install);
    CHECK(has(*install, "--defaults-file=" + f.ctx.scratch_dir + "/mariadb/my.cnf"));
    const auto server = f.runner.command("mariadbd");
    REQUIRE(server);
    CHECK(*server == std::vector<std::string>{
                         "mariadbd", "--defaults-file=" + f.ctx.scratch_dir + "/mariadb/my.cnf"});
    std::vector<std::string> bench;
    for (const auto& argv : f.runner.commands()) {
        if (wrapped(argv).size() > 2 && wrapped(argv)[2] == "perl") bench = wrapped(argv);
    }
    REQUIRE_FALSE(bench.empty());
    CHECK(bench[0] == "/opt/sql-bench");
    CHECK(has(bench, "./test-ATIS"));
    CHECK(has(bench, "-MBenchmark=:hireswallclock"));
    CHECK(has(bench, "--hires"));
    CHECK(has(bench, "--server=mysql"));
    CHECK(has(bench, "--user=root"));
    CHECK(has(bench, "--socket=" + f.ctx.scratch_dir + "/mariadb/mysqld.sock"));
    CHECK(has(bench, "--loop-count=20"));
    CHECK(has(bench, "--small-test"));
    CHECK(has(bench, "--time-limit=30"));
    CHECK(f.db.shutdowns == 1);

    CHECK(result->output["stdout"] == f.db.atis_stdout);
    CHECK(result->output["server_version"] == "10.11.19-MariaDB-0+deb12u1");
    CHECK(result->output["wall_s"].get<double>() >= 0);
    CHECK(result->readback["server_version"] == "10.11.19-MariaDB-0+deb12u1");
    CHECK(result->readback["server_variables"]["innodb_doublewrite"] == "OFF");
    CHECK(result->readback["server_variables"]["innodb_flush_method"] == "O_DSYNC");
    CHECK(result->readback["server_variables"]["innodb_buffer_pool_size"] == "134217728");

    auto metrics = metrics_from_workload_output("mariadb-atis", result->output);
    REQUIRE(metrics.ok());
    CHECK(metrics->at("total_s") == Approx(28.6004));
}

TEST_CASE("mariadb-atis: a variable the server does not show as requested fails, naming both") {
    Fixture f;
    f.db.variables["innodb_flush_method"] = "fsync";
    auto result = run_mariadb_atis(atis({{"server", {{"innodb_flush_method", "O_DSYNC"}}}}), f.ctx);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().code == errc::kSettingsMismatch);
    CHECK_THAT(result.error().message,
               Catch::Contains("server variable innodb_flush_method: requested O_DSYNC, server "
                               "has fsync"));
    CHECK(f.db.shutdowns == 1);           // the server was stopped
    CHECK_FALSE(f.runner.command("sh"));  // no benchmark

    Fixture g;
    auto missing = run_mariadb_atis(atis({{"server", {{"innodb_bogus", 1}}}}), g.ctx);
    REQUIRE_FALSE(missing.ok());
    CHECK_THAT(missing.error().message,
               Catch::Contains("server variable innodb_bogus: requested 1, SHOW VARIABLES did "
                               "not list it"));
}

// What MariaDB 11.8.9 showed for the seed study's tunings
// (tests/data/mariadb/innodb_flush_settings_11.8.txt).
std::map<std::string, std::string> mariadb_11_8_variables(const std::string& flush_method,
                                                          bool data_buffered, bool write_through) {
    return {{"innodb_flush_method", flush_method},
            {"innodb_doublewrite", "OFF"},
            {"innodb_flush_log_at_trx_commit", "1"},
            {"innodb_data_file_buffering", data_buffered ? "ON" : "OFF"},
            {"innodb_data_file_write_through", write_through ? "ON" : "OFF"},
            {"innodb_log_file_buffering", "OFF"},
            {"innodb_log_file_write_through", write_through ? "ON" : "OFF"}};
}

TEST_CASE("mariadb-atis on MariaDB 11.8: O_DSYNC's Booleans read back, nosync refused") {
    Fixture f;
    f.db.version = "11.8.9-MariaDB-0+deb13u1";
    f.db.variables = mariadb_11_8_variables("O_DSYNC", false, true);
    auto result = run_mariadb_atis(
        atis({{"server", {{"innodb_doublewrite", 0}, {"innodb_flush_method", "O_DSYNC"}}}}), f.ctx);
    INFO((result.ok() ? "" : result.error().message));
    REQUIRE(result.ok());
    const Json& shown = result->readback["server_variables"];
    CHECK(shown["innodb_log_file_write_through"] == "ON");
    CHECK(shown["innodb_data_file_write_through"] == "ON");
    CHECK(shown["innodb_data_file_buffering"] == "OFF");
    CHECK(result->readback["server_version"] == "11.8.9-MariaDB-0+deb13u1");

    Fixture g;
    g.db.version = "11.8.9-MariaDB-0+deb13u1";
    g.db.variables = mariadb_11_8_variables("nosync", true, false);
    auto nosync = run_mariadb_atis(
        atis({{"server", {{"innodb_doublewrite", 0}, {"innodb_flush_method", "nosync"}}}}), g.ctx);
    REQUIRE_FALSE(nosync.ok());
    CHECK(nosync.error().code == errc::kSettingsMismatch);
    CHECK_THAT(nosync.error().message,
               Catch::Contains("server variable innodb_flush_method: requested nosync, refused on "
                               "MariaDB 11.8: "));
    CHECK(g.db.shutdowns == 1);
    CHECK_FALSE(g.runner.command("sh"));  // no benchmark
}

TEST_CASE("kReadBackVariables holds every variable a versioned value implies") {
    for (const VersionedServerVariable& row : versioned_server_variables()) {
        for (const ShownServerVariable& implied : row.implies) {
            if (implied.name.empty()) continue;
            INFO(row.variable << "=" << row.value << " implies " << implied.name);
            CHECK(std::find(std::begin(mariadb::kReadBackVariables),
                            std::end(mariadb::kReadBackVariables),
                            implied.name) != std::end(mariadb::kReadBackVariables));
        }
    }
}

TEST_CASE("mariadb-atis: a server that does not start fails with its own [ERROR] line") {
    Fixture f;
    f.db.start_error_log =
        "2026-11-29 22:00:00 0 [Note] Starting MariaDB 10.11.19\n"
        "2026-11-29 22:00:00 0 [ERROR] /usr/sbin/mariadbd: unknown variable 'innodb_foo=1'\n"
        "2026-11-29 22:00:00 0 [ERROR] Aborting\n";
    auto result = run_mariadb_atis(atis(Json::object()), f.ctx);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().code == errc::kAgent);
    CHECK_THAT(result.error().message,
               Catch::Contains("[ERROR] /usr/sbin/mariadbd: unknown variable 'innodb_foo=1'"));
    CHECK_THAT(result.error().message, Catch::Contains("starting the MariaDB server"));
}

TEST_CASE("mariadb-atis: a full filesystem is errc::kIo saying No space left on device") {
    Fixture f;
    f.db.atis_exit = 255;
    f.db.atis_stderr = "Got error: 'The table 'flight' is full' when executing 'insert ...'\n";
    write_text(fs::path(f.ctx.scratch_dir) / "mariadb/.keep", "");
    auto result = run_mariadb_atis(atis(Json::object()), f.ctx);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().code == errc::kIo);
    CHECK_THAT(result.error().message, Catch::Contains("No space left on device"));
    CHECK_THAT(result.error().message, Catch::Contains("The table 'flight' is full"));
    CHECK(f.db.shutdowns == 1);
}

TEST_CASE("mariadb-atis: the time limit stops the benchmark and the server") {
    Fixture f;
    f.ctx.time_limit = std::chrono::seconds(2);
    f.db.atis_delay = std::chrono::seconds(30);
    auto result = run_mariadb_atis(atis(Json::object()), f.ctx);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().code == errc::kTimeout);
    CHECK_THAT(result.error().message, Catch::Contains("time limit of 2 s"));
    CHECK_THAT(result.error().message, Catch::Contains("test-ATIS"));
    // The limit, not the benchmark's 30 s, ended it: test-ATIS was given
    // all that was left of the 2 s and killed at it, and the server stopped.
    CHECK(f.db.atis_timeout == std::chrono::seconds(2));
    CHECK_THAT(result.error().message, Catch::Contains("was stopped after 2.0 s during test-ATIS"));
    CHECK(f.clock.elapsed() == std::chrono::seconds(2));
    CHECK(f.db.shutdowns == 1);
    // progress came with sql-bench's latest line
    CHECK(f.progress.size() >= 2);
    bool saw_phase = false;
    for (const auto& message : f.progress) {
        saw_phase = saw_phase || message == "test-ATIS: Inserting data";
    }
    CHECK(saw_phase);
}

TEST_CASE("sysbench-oltp: prepare, run with a histogram, metrics") {
    Fixture f;
    const Json params = {{"test", "oltp_read_only"},
                         {"tables", 2},
                         {"table_size", 500},
                         {"threads", 3},
                         {"time", "2s"},
                         {"server", Json::object()}};
    auto result = run_sysbench_oltp(oltp(params), f.ctx);
    INFO((result.ok() ? "" : result.error().message));
    REQUIRE(result.ok());
    std::vector<std::vector<std::string>> runs;
    for (const auto& argv : f.runner.commands()) {
        if (wrapped(argv).size() > 2 && wrapped(argv)[2] == "sysbench")
            runs.push_back(wrapped(argv));
    }
    REQUIRE(runs.size() == 2);
    for (const auto& argv : runs) {
        CHECK(argv[3] == "oltp_read_only");
        CHECK(has(argv, "--db-driver=mysql"));
        CHECK(has(argv, "--mysql-socket=" + f.ctx.scratch_dir + "/mariadb/mysqld.sock"));
        CHECK(has(argv, "--mysql-user=root"));
        CHECK(has(argv, "--mysql-db=test"));
        CHECK(has(argv, "--tables=2"));
        CHECK(has(argv, "--table-size=500"));
    }
    CHECK(runs[0].back() == "prepare");
    CHECK(runs[1].back() == "run");
    CHECK(has(runs[1], "--time=2"));
    CHECK(has(runs[1], "--threads=3"));
    CHECK(has(runs[1], "--histogram=on"));
    CHECK(has(runs[1], "--report-interval=1"));
    CHECK(f.db.shutdowns == 1);
    auto metrics = metrics_from_workload_output("sysbench-oltp", result->output);
    REQUIRE(metrics.ok());
    CHECK(metrics->at("tps") == Approx(339.46));
    CHECK(metrics->at("latency_p99_ms") == Approx(33.718));
}

TEST_CASE("sysbench-oltp: a full table is no space left on device") {
    Fixture f;
    f.db.sysbench_run_exit = 1;
    f.db.sysbench_run_stdout_on_failure =
        "FATAL: mysql_stmt_execute() returned error 1114 (The table 'sbtest1' is full) for "
        "query 'INSERT INTO sbtest1 ...'\n";
    auto result = run_sysbench_oltp(oltp(Json::object()), f.ctx);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().code == errc::kIo);
    CHECK_THAT(result.error().message, Catch::Contains("No space left on device"));
    CHECK_THAT(result.error().message, Catch::Contains("error 1114"));
}

TEST_CASE("MariaDB params are checked before anything runs") {
    CHECK(check_mariadb_atis_params(Json::object()).ok());
    CHECK(check_mariadb_atis_params({{"loop_count", 1}, {"small_test", false}, {"time_limit", 0}})
              .ok());
    auto check_error = [](const Status& status, const std::string& text) {
        REQUIRE_FALSE(status.ok());
        CHECK(status.error().code == errc::kInvalidArgument);
        CHECK_THAT(status.error().message, Catch::Contains(text));
    };
    check_error(check_mariadb_atis_params({{"loop_count", 0}}), "loop_count");
    check_error(check_mariadb_atis_params({{"loop_count", "5"}}), "loop_count");
    check_error(check_mariadb_atis_params({{"small_test", 1}}), "small_test");
    check_error(check_mariadb_atis_params({{"loops", 1}}), "'loops' is not an option");
    check_error(check_mariadb_atis_params({{"server", {{"datadir", "/x"}}}}), "set by the agent");
    check_error(check_mariadb_atis_params({{"server", {{"pid-file", "/x"}}}}), "set by the agent");
    check_error(check_mariadb_atis_params({{"server", {{"a b", 1}}}}), "not a variable name");
    check_error(check_mariadb_atis_params({{"server", {{"x", "1\n[client]"}}}}), "one line");
    check_error(check_mariadb_atis_params({{"server", {{"x", 1.5}}}}), "expected a string");
    check_error(check_mariadb_atis_params({{"server", "x"}}), "table of server variables");
    check_error(check_mariadb_atis_params(Json::array()), "expected an object");

    CHECK(check_sysbench_oltp_params({{"test", "oltp_delete"}, {"time", 5}}).ok());
    CHECK(check_sysbench_oltp_params({{"time", "2m"}}).ok());
    check_error(check_sysbench_oltp_params({{"test", "tpcc"}}), "oltp_read_write");
    check_error(check_sysbench_oltp_params({{"threads", 0}}), "threads");
    check_error(check_sysbench_oltp_params({{"time", "soon"}}), "time");
    check_error(check_sysbench_oltp_params({{"time", "500ms"}}), "at least 1 s");
    CHECK(mariadb::whole_seconds(Json("2m")) == 120);
    CHECK(mariadb::whole_seconds(Json(1.5)) == 2);
    // Found by fuzz_output_parsers: a number past long long's range.
    CHECK_FALSE(mariadb::whole_seconds(Json(7.7e76)).has_value());
    CHECK(mariadb::whole_seconds(Json(2147483647)) == 2147483647);
}

TEST_CASE("MariaDB helpers: SHOW VARIABLES, error lines, ENOSPC spellings") {
    const auto variables =
        mariadb::parse_show_variables("10.11.19-MariaDB\nsql_mode\tSTRICT,NO_ZERO\nempty\t\n");
    CHECK(variables.size() == 2);
    CHECK(variables.at("sql_mode") == "STRICT,NO_ZERO");
    CHECK(variables.at("empty") == "");

    CHECK(mariadb::error_lines("a\nx [ERROR] one\nb\ny [ERROR] two\n") ==
          std::vector<std::string>{"x [ERROR] one", "y [ERROR] two"});

    CHECK(mariadb::says_no_space("[ERROR] InnoDB: Operating system error number 28 in a file"));
    CHECK(mariadb::says_no_space("Error writing file './x' (Errcode: 28 \"No space left\")"));
    CHECK(mariadb::says_no_space("[ERROR] mariadbd: Disk full (/mnt/x); waiting"));
    CHECK(mariadb::says_no_space("The table 'sbtest1' is full"));
    CHECK_FALSE(mariadb::says_no_space("[ERROR] unknown variable 'x=1'"));
    // MariaDB 11.8's mariadb-install-db on a full disk (Debian 13), the line's end.
    CHECK(
        mariadb::says_no_space("[ERROR] InnoDB: preallocating 12582912 bytes for file "
                               "./ibtmp1 failed with error 28\n[ERROR] InnoDB: Could not"));
    CHECK_FALSE(mariadb::says_no_space("[ERROR] InnoDB: failed with error 280\n"));

    CHECK(mariadb::variable_name("Innodb-Flush-Method") == "innodb_flush_method");
    const auto paths = mariadb::server_paths("/mnt/disksweep", "/run/disksweep/w");
    CHECK(mariadb::server_config(paths, {{"on", true}, {"off", false}, {"n", 2}}) ==
          "# written by disksweep-agent for one workload run\n[mysqld]\n"
          "datadir=/mnt/disksweep/mysql\nsocket=/run/disksweep/w/mariadb/mysqld.sock\n"
          "pid-file=/run/disksweep/w/mariadb/mysqld.pid\n"
          "log-error=/run/disksweep/w/mariadb/mysqld.err\nuser=root\nskip-networking\n"
          "# the workload's server variables\nn=2\noff=OFF\non=ON\n"
          "[client]\nsocket=/run/disksweep/w/mariadb/mysqld.sock\nuser=root\n"
          "[mariadb-admin]\nsocket=/run/disksweep/w/mariadb/mysqld.sock\nuser=root\n");
}

}  // namespace ds::agent::testing
