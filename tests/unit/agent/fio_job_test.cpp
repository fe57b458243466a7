// fio command lines from workload params, and fio's stdout back to JSON.
#include "guestagent/fio_job.h"

#include "unit/agent/fakes.h"

using namespace ds::agent;
using ds::Json;

TEST_CASE("fio job: params become --key=value in key order", "[fio_job]") {
    const Json params = {{"rw", "randrw"},     {"bs", "4k"},          {"direct", true},
                         {"end_fsync", false}, {"iodepth", 64},       {"rwmixread", 70.5},
                         {"size", "256m"},     {"group_reporting", 1}};
    auto argv = build_fio_command("seed", params, "/mnt/disksweep");
    REQUIRE(argv.ok());
    CHECK(*argv == std::vector<std::string>{"fio", "--output-format=json", "--name=seed",
                                            "--directory=/mnt/disksweep", "--bs=4k", "--direct=1",
                                            "--end_fsync=0", "--group_reporting=1", "--iodepth=64",
                                            "--rw=randrw", "--rwmixread=70.5", "--size=256m"});
    auto empty = build_fio_command("x", Json::object(), "/d");
    REQUIRE(empty.ok());
    CHECK(empty->size() == 4);
}

TEST_CASE("fio job: unsafe or unsupported params are refused", "[fio_job]") {
    auto refuse = [](const Json& params, const std::string& fragment) {
        auto argv = build_fio_command("x", params, "/d");
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
    const std::string recorded = ds::agent::testing::recorded_fio_output();
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
