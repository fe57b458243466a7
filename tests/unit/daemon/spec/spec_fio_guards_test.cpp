// The spec parser and the agent refuse the same fio options (issue 9): a
// workload the daemon accepts never fails in the guest for an option the
// agent guards (common/fio_options.h), and the spec refuses nothing the
// agent would run.
#include <catch2/catch.hpp>

#include "common/fio_job.h"
#include "common/fio_options.h"
#include "daemon/spec/spec.h"

using namespace ds;
using ds::Json;

namespace {

bool agent_accepts(const Json& params) {
    return build_fio_command("x", params, FioDirectory{"/mnt/disksweep"}, "/run/j.fio").ok();
}

bool spec_accepts(const std::string& workload_lines) {
    return ds::parse_sweep_spec("name = \"t\"\n[[workload]]\nkind = \"fio\"\n" + workload_lines,
                                "t.toml")
        .ok();
}

}  // namespace

TEST_CASE("fio job: the spec refuses the logs the agent reads, with the position", "[fio_job]") {
    auto spec = ds::parse_sweep_spec(
        "name = \"t\"\n[[workload]]\nkind = \"fio\"\noptions = { write_bw_log = \"/tmp/x\" }\n",
        "t.toml");
    REQUIRE_FALSE(spec.ok());
    CHECK_THAT(spec.error().message, Catch::Contains("t.toml:4:"));
    CHECK_THAT(spec.error().message, Catch::Contains("'write_bw_log' is set by the agent"));
}

TEST_CASE("fio job: the spec and the agent refuse exactly the guarded options", "[fio_job]") {
    struct Case {
        std::string name;
        std::string value;
    };
    std::vector<Case> cases = {
        {"fsync", "1"}, {"norandommap", "1"}, {"thinktime", "10"}, {"direct", "1"},
        {"ba", "4k"},   {"exec_pre", "x"},    {"filen", "x"},      {"mem", "mmap:/x"},
        {"mem", "shm"}, {"ioengine", "mmap"}, {"ioengine", "rbd"}, {"lat_percentiles", "1"}};
    for (const auto& guard : ds::fio_option_guards()) {
        cases.push_back({std::string(guard.name), "/dev/sdb"});
        for (const auto value : guard.allowed_values)
            cases.push_back({std::string(guard.name), std::string(value)});
    }
    int accepted = 0;
    int refused = 0;
    for (const auto& [name, value] : cases) {
        INFO(name << "=" << value);
        const bool by_agent = agent_accepts({{"options", {{name, value}}}});
        CHECK(spec_accepts("options = { \"" + name + "\" = \"" + value + "\" }") == by_agent);
        const std::string job_file = "[j]\n" + name + "=" + value + "\n";
        const bool by_agent_in_file = agent_accepts({{"job_file", job_file}});
        CHECK(spec_accepts("job_file = \"\"\"\n" + job_file + "\"\"\"") == by_agent_in_file);
        (by_agent ? accepted : refused)++;
    }
    CHECK(accepted >= 20);
    CHECK(refused >= 60);
}
