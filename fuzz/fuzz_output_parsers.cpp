// Workload output as text: what fio (its JSON and per-second logs), sysbench, sql-bench (test-ATIS)
// and `mariadb -e 'SHOW VARIABLES'` print, read by the agent and re-read by the daemon. The same
// bytes go to every reader (common/fio_metrics.h, common/workload_output.h,
// guestagent/mariadb_workload.h); fio's JSON and the agent's JSON inputs only when the bytes are
// JSON. Errors are fine; crashes, sanitizer reports, exceptions and hangs are not.
#include <string>
#include <string_view>

#include "common/fio_logs.h"
#include "common/fio_metrics.h"
#include "common/workload_output.h"
#include "daemon/report/json_skim.h"
#include "fuzz/fuzz_input.h"
#include "guestagent/mariadb_workload.h"

namespace {

namespace mariadb = ds::agent::mariadb;

// Values a spec may request for a server variable, in each JSON type a spec
// allows (server_variable_matches compares them with what the server shows).
const ds::Json kRequestedValues[] = {true, 2, "128M", "O_DIRECT"};

void read_text_outputs(std::string_view text) {
    (void)ds::parse_sqlbench_output(text);
    const ds::Json captured = {{"stdout", text}};
    (void)ds::metrics_from_workload_output("mariadb-atis", captured);
    (void)ds::metrics_from_workload_output("sysbench-oltp", captured);
    (void)mariadb::error_lines(text);
    (void)mariadb::says_no_space(text);
    (void)ds::per_second_series("sysbench-oltp", captured);
    (void)ds::parse_fio_average_log(text, 1024);
}

void read_server_variables(std::string_view text) {
    for (const auto& [name, shown] : mariadb::parse_show_variables(text)) {
        for (const ds::Json& requested : kRequestedValues) {
            (void)ds::server_variable_matches(name, requested, shown);
        }
    }
}

void read_json_inputs(std::string_view text) {
    const ds::Json json = ds::Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) return;
    (void)ds::metrics_from_fio_json(json);
    (void)ds::per_second_series("fio", json);
    (void)mariadb::check_server_variables(json);
    (void)mariadb::whole_seconds(json);
    (void)ds::server_variable_risks(json);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = ds::fuzz::as_text(data, size);
    read_text_outputs(text);
    read_server_variables(text);
    read_json_inputs(text);
    // The report skims stored outputs without parsing them whole.
    (void)ds::report::skim_json(text, {{"jobs", "*", "read", "iops_per_second"},
                                       {"jobs", "*", "write", "bw_bytes_per_second"},
                                       {"stdout"}});
    return 0;
}
