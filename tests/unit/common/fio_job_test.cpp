// fio command lines from workload params, and fio's stdout back to JSON.
#include "common/fio_job.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include "common/fio_logs.h"
#include "common/fio_options.h"
#include "support/test_data.h"

using namespace ds;
using ds::Json;

TEST_CASE("fio job: params become --key=value in key order", "[fio_job]") {
    const Json params = {{"rw", "randrw"},     {"bs", "4k"},          {"direct", true},
                         {"end_fsync", false}, {"iodepth", 64},       {"rwmixread", 70.5},
                         {"size", "256m"},     {"group_reporting", 1}};
    auto argv = build_fio_command("seed", params, FioDirectory{"/mnt/disksweep"});
    REQUIRE(argv.ok());
    CHECK(*argv == std::vector<std::string>{"fio", "--output-format=json+", "--name=seed",
                                            "--directory=/mnt/disksweep", "--bs=4k", "--direct=1",
                                            "--end_fsync=0", "--group_reporting=1", "--iodepth=64",
                                            "--rw=randrw", "--rwmixread=70.5", "--size=256m"});
    auto empty = build_fio_command("x", Json::object(), FioDirectory{"/d"});
    REQUIRE(empty.ok());
    CHECK(empty->size() == 4);
}

TEST_CASE("fio job: a raw volume or an RBD image instead of a directory", "[fio_job]") {
    const Json params = {{"rw", "randrw"}, {"ioengine", "libaio"}, {"options", {{"iodepth", 64}}}};
    auto raw = build_fio_command("seed", params, FioRawVolume{"/dev/vg/thin1"});
    REQUIRE(raw.ok());
    CHECK(*raw == std::vector<std::string>{"fio", "--output-format=json+", "--name=seed",
                                           "--filename=/dev/vg/thin1", "--ioengine=libaio",
                                           "--rw=randrw", "--iodepth=64"});
    // librbd is the engine: the workload's own (named or in options) is left out.
    for (const Json& given :
         {params, Json{{"rw", "randrw"}, {"options", {{"ioengine", "psync"}}}}}) {
        auto rbd = build_fio_command("seed", given, FioRbdImage{"rbd", "img1", "disksweep"});
        REQUIRE(rbd.ok());
        CHECK(std::count(rbd->begin(), rbd->end(), "--ioengine=rbd") == 1);
        CHECK(std::none_of(rbd->begin(), rbd->end(), [](const std::string& arg) {
            return arg == "--ioengine=libaio" || arg == "--ioengine=psync";
        }));
        CHECK(std::find(rbd->begin(), rbd->end(), "--rbdname=img1") != rbd->end());
        CHECK(std::find(rbd->begin(), rbd->end(), "--pool=rbd") != rbd->end());
        CHECK(std::find(rbd->begin(), rbd->end(), "--clientname=disksweep") != rbd->end());
    }
    // A job file names its files below a directory: not on a raw volume.
    auto job_file = build_fio_command("x", {{"job_file", "[j]\nrw=read\n"}},
                                      FioRawVolume{"/dev/sdb"}, "/run/j.fio");
    REQUIRE_FALSE(job_file.ok());
    CHECK(job_file.error().message.find("cannot run on a raw volume") != std::string::npos);
}

TEST_CASE("fio job: unsafe or unsupported params are refused", "[fio_job]") {
    auto refuse = [](const Json& params, const std::string& fragment) {
        auto argv = build_fio_command("x", params, FioDirectory{"/d"});
        REQUIRE_FALSE(argv.ok());
        CHECK(argv.error().code == ds::errc::kInvalidArgument);
        INFO(argv.error().message);
        CHECK(argv.error().message.find(fragment) != std::string::npos);
    };
    refuse(Json::array(), "expected an object");
    refuse({{"-rw", "read"}}, "must not start with '-'");
    refuse({{"rw=read", 1}}, "must not contain '='");
    refuse({{"rw read", 1}}, "whitespace");
    refuse({{"", 1}}, "empty name");
    refuse({{"output", "/tmp/x"}}, "set by the agent");
    refuse({{"output-format", "normal"}}, "set by the agent");
    refuse({{"name", "other"}}, "set by the agent");
    refuse({{"size", nullptr}}, "is a null");
    refuse({{"size", {{"a", 1}}}}, "is a object");
}

TEST_CASE("fio job: planned duration in fio's time syntax", "[fio_job]") {
    CHECK(planned_fio_seconds({{"runtime", "10s"}}) == 10.0);
    CHECK(planned_fio_seconds({{"runtime", "10"}}) == 10.0);
    CHECK(planned_fio_seconds({{"runtime", 30}}) == 30.0);
    CHECK(planned_fio_seconds({{"runtime", "2m"}}) == 120.0);
    CHECK(planned_fio_seconds({{"runtime", "1h"}}) == 3600.0);
    CHECK(planned_fio_seconds({{"runtime", "500ms"}}) == Approx(0.5));
    CHECK(planned_fio_seconds({{"runtime", "10s"}, {"ramp_time", "5s"}}) == 15.0);
    CHECK_FALSE(planned_fio_seconds({{"size", "1g"}}).has_value());
    CHECK_FALSE(planned_fio_seconds({{"runtime", "soon"}}).has_value());
    CHECK_FALSE(planned_fio_seconds({{"runtime", "10 parsecs"}}).has_value());
    CHECK_FALSE(planned_fio_seconds({{"runtime", 0}}).has_value());
}

TEST_CASE("fio job: JSON is found after fio's notes", "[fio_job]") {
    const std::string recorded = test::test_data_text("fio/randrw_4k_numjobs1.json");
    auto plain = parse_fio_stdout(recorded);
    REQUIRE(plain.ok());
    CHECK((*plain)["fio version"] == "fio-3.33");

    auto after_note = parse_fio_stdout(
        "note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be "
        "capped at 1\n" +
        recorded);
    REQUIRE(after_note.ok());
    CHECK(*after_note == *plain);

    CHECK_FALSE(parse_fio_stdout("").ok());
    CHECK_FALSE(parse_fio_stdout("fio: failed\n").ok());
    auto truncated = parse_fio_stdout(recorded.substr(0, recorded.size() / 2));
    REQUIRE_FALSE(truncated.ok());
    CHECK(truncated.error().message.find("does not parse") != std::string::npos);
}

TEST_CASE("fio job: passthrough options table after the named params", "[fio_job]") {
    const Json params = {
        {"rw", "randread"},
        {"bs", "4k"},
        {"options", {{"zonemode", "none"}, {"norandommap", true}, {"thinktime", 10}}}};
    auto argv = build_fio_command("seed", params, FioDirectory{"/mnt/disksweep"});
    REQUIRE(argv.ok());
    CHECK(*argv == std::vector<std::string>{"fio", "--output-format=json+", "--name=seed",
                                            "--directory=/mnt/disksweep", "--bs=4k",
                                            "--rw=randread", "--norandommap=1", "--thinktime=10",
                                            "--zonemode=none"});
    CHECK(effective_fio_options(params) == Json{{"rw", "randread"},
                                                {"bs", "4k"},
                                                {"zonemode", "none"},
                                                {"norandommap", true},
                                                {"thinktime", 10}});
    // runtime given in the options table still plans the progress fraction.
    CHECK(planned_fio_seconds({{"options", {{"runtime", "20s"}, {"ramp_time", 5}}}}) == 25.0);

    auto refuse = [](const Json& p, const std::string& fragment) {
        auto refused = build_fio_command("x", p, FioDirectory{"/d"});
        REQUIRE_FALSE(refused.ok());
        INFO(refused.error().message);
        CHECK(refused.error().message.find(fragment) != std::string::npos);
    };
    refuse({{"options", "--rw=read"}}, "'options' is a string, expected a table of fio options");
    refuse({{"options", {{"output", "/tmp/x"}}}},
           "'options.output' is set by the agent and cannot be overridden: the agent reads fio's "
           "report from its output");
    refuse({{"options", {{"-x", 1}}}}, "'options.-x' must not start with '-'");
    refuse({{"options", {{"bs", Json::array()}}}}, "'options.bs' is a array");
    refuse({{"bs", "4k"}, {"options", {{"bs", "8k"}}}}, "'options.bs' is also given as a named");
}

TEST_CASE("fio job: a whole job file", "[fio_job]") {
    const std::string text =
        "; seed job\n[global]\nioengine=libaio\ndirect=1\n\n[randrw]\nname=x\nrw=randrw\n";
    auto argv = build_fio_command("seed", {{"job_file", text}}, FioDirectory{"/mnt/disksweep"},
                                  "/run/j.fio");
    REQUIRE(argv.ok());
    CHECK(*argv == std::vector<std::string>{"fio", "--output-format=json+",
                                            "--directory=/mnt/disksweep", "/run/j.fio"});
    CHECK_FALSE(planned_fio_seconds({{"job_file", text}}).has_value());

    auto refuse = [](const Json& p, const std::string& fragment) {
        auto refused = build_fio_command("x", p, FioDirectory{"/d"}, "/run/j.fio");
        REQUIRE_FALSE(refused.ok());
        INFO(refused.error().message);
        CHECK(refused.error().message.find(fragment) != std::string::npos);
    };
    refuse({{"job_file", ""}}, "is string (empty), expected the text of a fio job file");
    refuse({{"job_file", 3}}, "is number, expected the text");
    refuse({{"job_file", text}, {"rw", "read"}, {"options", Json::object()}},
           "cannot be combined with other params (options, rw)");
    refuse({{"job_file", "[a]\n  output-format = normal\n"}},
           "'job_file' line 2 sets 'output-format', which the agent sets");
    refuse({{"job_file", "[a]\ndirectory=/\n"}}, "line 2 sets 'directory', which the agent sets");
}

TEST_CASE("fio job: with a log prefix fio writes per-second iops and bandwidth logs", "[fio_job]") {
    auto argv = build_fio_command("seed", {{"rw", "randrw"}, {"options", {{"numjobs", 2}}}},
                                  FioDirectory{"/mnt/disksweep"}, "", "/run/disksweep/fio-logs/ds");
    REQUIRE(argv.ok());
    CHECK(*argv == std::vector<std::string>{"fio", "--output-format=json+", "--name=seed",
                                            "--directory=/mnt/disksweep",
                                            "--write_bw_log=/run/disksweep/fio-logs/ds",
                                            "--write_iops_log=/run/disksweep/fio-logs/ds",
                                            "--log_avg_msec=1000", "--rw=randrw", "--numjobs=2"});
    // In a job file's command they come before the file, so every job gets them.
    auto job_file = build_fio_command("seed", {{"job_file", "[a]\nrw=read\n"}},
                                      FioDirectory{"/mnt/disksweep"}, "/run/j.fio", "/run/l/ds");
    REQUIRE(job_file.ok());
    CHECK(*job_file ==
          std::vector<std::string>{"fio", "--output-format=json+", "--directory=/mnt/disksweep",
                                   "--write_bw_log=/run/l/ds", "--write_iops_log=/run/l/ds",
                                   "--log_avg_msec=1000", "/run/j.fio"});
    CHECK(fio_log_options("/p") == std::vector<std::string>{"--write_bw_log=/p",
                                                            "--write_iops_log=/p",
                                                            "--log_avg_msec=1000"});
}

TEST_CASE("fio job: a spec may not set the logs the agent reads", "[fio_job]") {
    auto refuse = [](const Json& p, const std::string& fragment) {
        auto refused = build_fio_command("x", p, FioDirectory{"/d"}, "/run/j.fio", "/run/l/ds");
        REQUIRE_FALSE(refused.ok());
        INFO(refused.error().message);
        CHECK(refused.error().message.find(fragment) != std::string::npos);
    };
    refuse({{"write_bw_log", "/tmp/bw"}},
           "'write_bw_log' is set by the agent and cannot be overridden: the agent has fio write "
           "per-job per-second bandwidth and IOPS logs");
    refuse({{"options", {{"write_iops_log", "x"}}}},
           "'options.write_iops_log' is set by the agent");
    refuse({{"options", {{"log_avg_msec", 500}}}}, "'options.log_avg_msec' is set by the agent");
    refuse({{"options", {{"log_avg", 500}}}}, "abbreviation of 'log_avg_msec'");
    refuse({{"job_file", "[a]\nwrite_bw_log=x\n"}},
           "'job_file' line 2 sets 'write_bw_log', which the agent sets");
    for (const char* changes_logs :
         {"per_job_logs", "log_max_value", "log_store_compressed", "log_unix_epoch",
          "log_alternate_epoch", "bwavgtime", "iopsavgtime"}) {
        INFO(changes_logs);
        refuse({{"options", {{changes_logs, 1}}}},
               "is refused: it changes the per-second logs the agent reads");
    }
    // Log options that leave the files as the agent reads them pass.
    CHECK(build_fio_command("x", {{"options", {{"log_offset", 1}, {"log_prio", 1}}}},
                            FioDirectory{"/d"})
              .ok());
}

TEST_CASE("fio job: failures keep the no-space line and job errors are found", "[fio_job]") {
    const std::vector<std::string> argv = {"fio", "--name=x"};
    CHECK(describe_fio_failure(argv, "fio: bad option\n", 1, 0) ==
          "fio --name=x failed (exit code 1): fio: bad option");
    CHECK(describe_fio_failure(argv, "", -1, 9) == "fio --name=x failed (killed by signal 9)");
    // A long stderr whose ENOSPC line is early: it is kept before the tail.
    const std::string no_space =
        "fio: io_u error on file /mnt/disksweep/x.0.0: No space left on device: write "
        "offset=1048576, buflen=4096";
    const std::string message =
        describe_fio_failure(argv, no_space + "\n" + std::string(3000, 'z') + "\n", 1, 0);
    CHECK(message.find(no_space) != std::string::npos);
    CHECK(message.size() < 2300);

    Json fio = Json::parse(test::test_data_text("fio/randrw_4k_numjobs1.json"));
    CHECK_FALSE(fio_job_error(fio).has_value());
    fio["jobs"][0]["error"] = 28;
    CHECK(fio_job_error(fio) == "fio job randrw4k ended with error 28 (No space left on device)");
    CHECK_FALSE(fio_job_error(Json::object()).has_value());
}

// ---------------------------------------------------------------------------
// A fio workload cannot leave the filesystem under test (issue 9): the agent
// refuses what common/fio_options.h guards before it runs fio, whichever way
// it comes in (tests/unit/daemon/spec/spec_fio_guards_test.cpp holds the
// spec parser to the same refusals).

namespace {

std::string refusal_of(const Json& params) {
    auto argv = build_fio_command("x", params, FioDirectory{"/mnt/disksweep"}, "/run/j.fio");
    REQUIRE_FALSE(argv.ok());
    CHECK(argv.error().code == ds::errc::kInvalidArgument);
    return argv.error().message;
}

bool agent_accepts(const Json& params) {
    return build_fio_command("x", params, FioDirectory{"/mnt/disksweep"}, "/run/j.fio").ok();
}

}  // namespace

TEST_CASE("fio job: every way in to another file, device or command is refused", "[fio_job]") {
    // Named params.
    CHECK(refusal_of({{"filename", "/dev/sdb"}}) ==
          "workload param 'filename' is refused: fio would do its I/O on that file or device "
          "instead of the filesystem under test");
    CHECK_THAT(refusal_of({{"exec_prerun", "reboot"}}),
               Catch::Contains("'exec_prerun' is refused: runs a command in the guest"));
    CHECK_THAT(refusal_of({{"ioengine", "sg"}}),
               Catch::Contains("'ioengine' is refused with value 'sg'"));
    // The options table, also abbreviated (fio's getopt_long takes those).
    CHECK_THAT(refusal_of({{"options", {{"exec_postrun", "reboot"}}}}),
               Catch::Contains("'options.exec_postrun' is refused"));
    CHECK_THAT(refusal_of({{"options", {{"directo", "/"}}}}),
               Catch::Contains("'options.directo' is refused: fio takes it as an abbreviation "
                               "of 'directory'"));
    CHECK_THAT(refusal_of({{"options", {{"ioengine", "external:/tmp/e.so"}}}}),
               Catch::Contains("'options.ioengine' is refused with value 'external:/tmp/e.so'"));
    CHECK_THAT(refusal_of({{"options", {{"trigger", "reboot"}}}}),
               Catch::Contains("'options.trigger' is refused"));
    // Every section of a job file.
    CHECK_THAT(refusal_of({{"job_file", "[a]\nrw=read\n[b]\nfilename=/dev/sdb\n"}}),
               Catch::Contains("'job_file' line 4 sets 'filename', which is refused"));
    CHECK_THAT(refusal_of({{"job_file", "[a/../../b]\nrw=read\n"}}),
               Catch::Contains("'job_file' line 1: job name 'a/../../b'"));
    CHECK_THAT(refusal_of({{"job_file", "include /etc/other.fio\n"}}),
               Catch::Contains("'job_file' line 1: 'include' is refused"));
    // What stays on the filesystem passes.
    CHECK(agent_accepts(
        {{"ioengine", "io_uring"}, {"direct", true}, {"options", {{"mem", "mmap"}}}}));
    CHECK(agent_accepts({{"job_file", "[global]\nioengine=pvsync2\n[a]\nname=a\nrw=read\n"}}));
}
