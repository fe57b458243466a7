// Native I/O engine job options: fio's names, syntax and defaults; every
// error names the option.
#include "guestagent/io_options.h"

#include <catch2/catch.hpp>
#include <string>

using ds::Json;
using namespace ds::io;

namespace {

std::string refusal(const Json& params) {
    auto options = parse_job_options(params);
    REQUIRE_FALSE(options.ok());
    CHECK(options.error().code == ds::errc::kInvalidArgument);
    return options.error().message;
}

}  // namespace

TEST_CASE("io options: the reference fio job parses with fio's meanings", "[io_options]") {
    const Json params = {{"rw", "randrw"},       {"bs", "4K"},       {"direct", true},
                         {"ioengine", "libaio"}, {"iodepth", 64},    {"numjobs", 4},
                         {"size", "256m"},       {"runtime", "10s"}, {"rwmixread", "70"},
                         {"ramp_time", "500ms"}, {"time_based", 1},  {"filename", "/dev/sdb"}};
    auto options = parse_job_options(params);
    REQUIRE(options.ok());
    CHECK(options->rw == RwMode::kRandRw);
    CHECK(options->bs == 4096);
    CHECK(options->direct);
    CHECK(options->engine == &kLibaioEngine);
    CHECK(options->iodepth == 64);
    CHECK(options->numjobs == 4);
    CHECK(options->size == std::optional<std::uint64_t>(256ull << 20));
    CHECK(options->runtime_s == Approx(10));
    CHECK(options->ramp_time_s == Approx(0.5));
    CHECK(options->time_based);
    CHECK(options->rwmixread == 70);
    CHECK(options->filename == "/dev/sdb");
    CHECK(options->iodepth_batch_submit == 1);
    CHECK(options->iodepth_batch_complete == 1);
    CHECK(options->given == params);
    const Json resolved = resolved_options_json(*options);
    CHECK(resolved["bs"] == 4096);
    CHECK(resolved["rw"] == "randrw");
    CHECK(resolved["userspace_reap"] == false);
    CHECK(resolved["ring_first"] == true);  // an engine option's default, filled in
    CHECK(options->engine_options.at("ring_first") == 1);
}

TEST_CASE("io options: fio's defaults", "[io_options]") {
    auto options = parse_job_options(Json::object());
    REQUIRE(options.ok());
    CHECK(options->ioengine == "psync");
    CHECK(options->rw == RwMode::kRead);
    CHECK(options->bs == 4096);
    CHECK(options->iodepth == 1);
    CHECK(options->numjobs == 1);
    CHECK(options->rwmixread == 50);
    CHECK_FALSE(options->size.has_value());
    CHECK_FALSE(options->direct);
    CHECK_FALSE(options->group_reporting);
    CHECK_FALSE(options->thread);  // jobs are processes, as fio's default
    auto threads = parse_job_options({{"thread", "1"}});
    REQUIRE(threads.ok());
    CHECK(threads->thread);
}

TEST_CASE("io options: an unsupported option is named and the supported ones listed",
          "[io_options]") {
    const auto message = refusal({{"rw", "read"}, {"verify", "crc32c"}});
    CHECK(message.find("'verify'") != std::string::npos);
    for (const auto& spec : job_option_specs()) {
        INFO(spec.name);
        CHECK(message.find(std::string(spec.name)) != std::string::npos);
    }
    // An engine's own option is valid only with that engine, and listed
    // with it.
    const auto psync = refusal({{"ioengine", "psync"}, {"userspace_reap", 1}});
    CHECK(psync.find("'userspace_reap'") != std::string::npos);
    const auto libaio = refusal({{"ioengine", "libaio"}, {"hipri", 1}});
    CHECK(libaio.find("ioengine=libaio also takes: userspace_reap") != std::string::npos);
    auto with_reap = parse_job_options({{"ioengine", "libaio"}, {"userspace_reap", "1"}});
    REQUIRE(with_reap.ok());
    CHECK(with_reap->engine_options.at("userspace_reap") == 1);
}

TEST_CASE("io options: bad values are refused naming the option", "[io_options]") {
    struct Case {
        Json params;
        std::string fragment;
    };
    const std::vector<Case> cases = {
        {{{"bs", "4x"}}, "'bs': \"4x\" is not a size"},
        {{{"bs", "4k-16k"}}, "block size ranges"},
        {{{"bs", "4k,8k"}}, "per-direction block sizes"},
        {{{"bs", 0}}, "'bs': 0 is out of range"},
        {{{"bs", -4096}}, "'bs'"},
        {{{"rw", "trim"}}, "'rw': \"trim\" is not supported; supported: read, write"},
        {{{"rw", "randread:8"}}, "'rw'"},
        {{{"rwmixread", 101}}, "'rwmixread': 101 is out of range 0..100"},
        {{{"rwmixread", 70.5}}, "'rwmixread': 70.5 is not a non-negative integer"},
        {{{"iodepth", 0}}, "'iodepth': 0 is out of range 1..4096"},
        {{{"numjobs", "many"}}, "'numjobs'"},
        {{{"size", "50%"}}, "'size': percentages"},
        {{{"size", "1k"}, {"bs", "4k"}}, "'size': 1024 is smaller than bs=4096"},
        {{{"filename", "a:b"}}, "'filename': several files"},
        {{{"direct", "maybe"}}, "'direct': maybe is not a boolean"},
        {{{"direct", 1}, {"bs", 1000}}, "not a multiple of 512"},
        {{{"runtime", "10 parsecs"}}, "'runtime'"},
        {{{"runtime", -1}}, "'runtime'"},
        {{{"time_based", 1}}, "'time_based': needs runtime > 0"},
        {{{"ioengine", "io_uring"}},
         "unsupported ioengine 'io_uring'; supported: libaio, psync, null"},
        {{{"ioengine", 3}}, "'ioengine'"},
        {{{"ioengine", "null"}}, "'size': is required with ioengine=null"},
        {{{"name", "a/b"}}, "'name'"},
        {{{"bs", Json::array()}}, "'bs'"},
    };
    for (const auto& c : cases) {
        INFO(c.params.dump());
        const auto message = refusal(c.params);
        INFO(message);
        CHECK(message.find(c.fragment) != std::string::npos);
    }
    CHECK(refusal(Json::array()).find("expected an object") != std::string::npos);
}

TEST_CASE("io options: batch sizes follow fio (0 = iodepth, capped at iodepth)", "[io_options]") {
    auto defaults = parse_job_options({{"iodepth", 16}});
    REQUIRE(defaults.ok());
    // One completion per reap and a queue kept full: fio's defaults.
    CHECK(defaults->iodepth_batch_submit == 1);
    CHECK(defaults->iodepth_batch_complete == 1);
    CHECK(defaults->iodepth_batch_complete_max == 1);
    CHECK(defaults->iodepth_low == 16);
    auto zero = parse_job_options({{"iodepth", 16}, {"iodepth_batch_submit", 0}});
    REQUIRE(zero.ok());
    CHECK(zero->iodepth_batch_submit == 16);
    auto ranged = parse_job_options({{"iodepth", 16},
                                     {"iodepth_batch_complete_min", 4},
                                     {"iodepth_batch_complete_max", 2},
                                     {"iodepth_low", 99}});
    REQUIRE(ranged.ok());
    CHECK(ranged->iodepth_batch_complete_max == 4);  // raised to the min
    CHECK(ranged->iodepth_low == 16);
    auto large =
        parse_job_options({{"iodepth", 8}, {"iodepth_batch", 32}, {"iodepth_batch_complete", 99}});
    REQUIRE(large.ok());
    CHECK(large->iodepth_batch_submit == 8);
    CHECK(large->iodepth_batch_complete == 8);
    auto poll = parse_job_options({{"iodepth", 8}, {"iodepth_batch_complete_min", 0}});
    REQUIRE(poll.ok());
    CHECK(poll->iodepth_batch_complete == 0);
    CHECK(poll->iodepth_batch_complete_max == 1);
}

TEST_CASE("io options: fio's size and time syntax", "[io_options]") {
    CHECK(parse_fio_size("512") == 512u);
    CHECK(parse_fio_size("4k") == 4096u);
    CHECK(parse_fio_size("4K") == 4096u);
    CHECK(parse_fio_size("4kb") == 4096u);
    CHECK(parse_fio_size("256m") == 256ull << 20);
    CHECK(parse_fio_size("1g") == 1ull << 30);
    CHECK(parse_fio_size("2t") == 2ull << 40);
    // fio's default kb_base=1024 makes the IEC spellings decimal.
    CHECK(parse_fio_size("1KiB") == 1000u);
    CHECK(parse_fio_size("1mi") == 1000000u);
    CHECK_FALSE(parse_fio_size("").has_value());
    CHECK_FALSE(parse_fio_size("k").has_value());
    CHECK_FALSE(parse_fio_size("4q").has_value());
    CHECK_FALSE(parse_fio_size("-4k").has_value());
    CHECK_FALSE(parse_fio_size("99999999999p").has_value());

    CHECK(parse_fio_seconds("10") == Approx(10));
    CHECK(parse_fio_seconds("10s") == Approx(10));
    CHECK(parse_fio_seconds("500ms") == Approx(0.5));
    CHECK(parse_fio_seconds("250us") == Approx(250e-6));
    CHECK(parse_fio_seconds("2m") == Approx(120));
    CHECK(parse_fio_seconds("1h") == Approx(3600));
    CHECK_FALSE(parse_fio_seconds("1x").has_value());
    CHECK_FALSE(parse_fio_seconds("").has_value());
}
