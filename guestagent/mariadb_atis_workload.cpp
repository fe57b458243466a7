// Kind `mariadb-atis` (docs/spec.md): sql-bench's test-ATIS against a
// MariaDB server of the runner's own on the disk under test.
#include <string>
#include <vector>

#include "common/clock.h"
#include "guestagent/mariadb_session.h"
#include "guestagent/workload.h"

namespace ds::agent {

using namespace mariadb;

Status check_mariadb_atis_params(const Json& params) {
    const std::string kind = "mariadb-atis";
    DS_TRY(check_param_names(kind, params, {"server", "loop_count", "small_test", "time_limit"}));
    auto loop_count = integer_param(kind, params, "loop_count", 1, 5000);
    if (!loop_count) return loop_count.error();
    auto time_limit = integer_param(kind, params, "time_limit", 0, 0);
    if (!time_limit) return time_limit.error();
    if (params.contains("small_test") && !params["small_test"].is_boolean()) {
        return invalid_param(kind, "small_test",
                             "is " + params["small_test"].dump() + ", expected true or false");
    }
    return ok_status();
}

Result<WorkloadOutput> run_mariadb_atis(const Workload& workload, WorkloadContext& ctx) {
    DS_TRY(check_mariadb_atis_params(workload.params));
    const Json& params = workload.params;
    const Json server = params.value("server", Json::object());
    Session session(ctx, "mariadb-atis workload " + workload.name);

    WorkloadOutput result;
    std::string version;
    DS_TRY(session.start_server(server, result.readback, version));

    const std::string bench_dir = sql_bench_dir();
    const std::string out = session.paths().dir + "/test-ATIS.out";
    // Benchmark's :hireswallclock makes sql-bench print fractional wallclock
    // seconds (its own --hires only loads Time::HiRes, which modern Perl's
    // Benchmark does not use unless asked this way).
    std::vector<std::string> atis = {
        "perl",
        "-MBenchmark=:hireswallclock",
        "./test-ATIS",
        "--server=mysql",
        "--socket=" + session.paths().socket,
        "--user=root",
        "--hires",
        "--loop-count=" + std::to_string(params.value("loop_count", 5000LL))};
    if (params.value("small_test", false)) atis.push_back("--small-test");
    if (params.contains("time_limit")) {
        atis.push_back("--time-limit=" + std::to_string(params["time_limit"].get<long long>()));
    }
    const auto bench_start = session.now();
    auto ran = session.run(to_file(bench_dir, out, atis), "test-ATIS", out);
    const double wall_s = seconds_between(bench_start, session.now());
    if (!ran) return ran.error();
    const std::string stdout_text = read_file(out);
    if (ran->exit_code != 0) {
        return session.tool_failure("test-ATIS", *ran, stdout_text);
    }
    DS_TRY(session.stop_server());
    result.output = Json{{"stdout", stdout_text}, {"server_version", version}, {"wall_s", wall_s}};
    session.report("test-ATIS finished in " + format_seconds(wall_s) + " s", 1.0);
    return result;
}

}  // namespace ds::agent
