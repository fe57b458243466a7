// disksweep-replay (daemon/durability/replay_tool.h): the crash states of a
// hand-built log rebuilt by hand; a `state` image must be byte for byte the
// one the daemon's own path (crash_states + build_crash_image) makes.
#include "daemon/durability/replay_tool.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "daemon/durability/crash_states.h"
#include "daemon/durability/replay.h"
#include "support/temp_dir.h"
#include "unit/daemon/durability/log_builder.h"

namespace ds::durability {
namespace {

std::string contents(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

struct Ran {
    int status;
    std::string out;
    std::string err;
};

Ran replay(const std::vector<std::string>& args) {
    std::ostringstream out;
    std::ostringstream err;
    const int status = replay_tool_main(args, out, err);
    return {status, out.str(), err.str()};
}

// A 64 KiB base of 'o' and a log: write, flush, write, write, flush, write.
struct Fixture {
    test::TempDir dir;
    std::string log = dir.file("write.log");
    std::string base = dir.file("pre-run.img");
    std::string out = dir.file("crash.img");
    Fixture() {
        std::ofstream(base, std::ios::binary) << std::string(65536, 'o');
        test::LogBuilder builder;
        builder.write(0, 1, 'a').flush().write(1, 1, 'b').write(2, 1, 'c').flush().write(3, 1, 'd');
        builder.save(log);
    }
};

}  // namespace

TEST_CASE("disksweep-replay list shows the flushes and where they end", "[durability][replay]") {
    Fixture f;
    const Ran ran = replay({"list", f.log});
    INFO(ran.err);
    REQUIRE(ran.status == 0);
    CHECK_THAT(ran.out, Catch::Contains("6 entries, 2 flushes, sector size 512"));
    CHECK_THAT(ran.out, Catch::Contains("flush entry 1 ends at byte"));
    CHECK_THAT(ran.out, Catch::Contains("flush entry 4 ends at byte"));
}

TEST_CASE("disksweep-replay flush cuts the log right after that flush", "[durability][replay]") {
    Fixture f;
    const Ran ran = replay({"flush", f.log, f.base, f.out, "4"});
    INFO(ran.err);
    REQUIRE(ran.status == 0);
    std::string expected(65536, 'o');
    expected.replace(0, 512, std::string(512, 'a'));
    expected.replace(512, 512, std::string(512, 'b'));
    expected.replace(1024, 512, std::string(512, 'c'));
    CHECK(contents(f.out) == expected);  // 'd', after the flush, is not there
    CHECK(contents(f.base) == std::string(65536, 'o'));

    const Ran not_a_flush = replay({"flush", f.log, f.base, f.out, "3"});
    CHECK(not_a_flush.status == 2);
    CHECK_THAT(not_a_flush.err, Catch::Contains("entry 3 is not a FLUSH entry"));
}

TEST_CASE("disksweep-replay state rebuilds the daemon's crash state byte for byte",
          "[durability][replay]") {
    Fixture f;
    const auto log = read_log(f.log);
    REQUIRE(log.ok());
    CrashModelOptions options;
    options.max_crash_points = 50;
    options.volatile_cache = true;
    options.seed = 12345;
    const auto states = crash_states(*log, CacheMode::kUnsafe, options);
    REQUIRE(states.size() == 3);
    for (std::size_t k = 0; k < states.size(); ++k) {
        REQUIRE(build_crash_image(f.base, *log, f.log, states[k].applied, f.dir.file("daemon.img"),
                                  65536)
                    .ok());
        const Ran ran = replay({"state", f.log, f.base, f.out, std::to_string(k), "--cache",
                                "unsafe", "--seed", "12345", "--crash-points", "50"});
        INFO(k << ": " << ran.err);
        REQUIRE(ran.status == 0);
        CHECK(contents(f.out) == contents(f.dir.file("daemon.img")));
    }
    const Ran past = replay({"state", f.log, f.base, f.out, "3", "--cache", "unsafe", "--seed", "1",
                             "--crash-points", "50"});
    CHECK(past.status == 2);
    CHECK_THAT(past.err, Catch::Contains("the log has 3 crash states under these options, no 3"));
}

TEST_CASE("disksweep-replay state rebuilds a host-writeback state after the mark byte for byte",
          "[durability][replay]") {
    Fixture f;
    const auto log = read_log(f.log);
    REQUIRE(log.ok());
    // The mark after entry 0, then one entry a second; a window of 1.5 s.
    std::vector<LogSample> samples;
    for (std::size_t i = 0; i < log->entries.size(); ++i)
        samples.push_back({static_cast<double>(i), log->entries[i].end_offset});
    const LogClock clock(samples);
    Json record = {{"window_s", 1.5}, {"clock", clock.to_json()}};
    std::ofstream(f.dir.file("writeback.json")) << record.dump();
    CrashModelOptions options;
    options.max_crash_points = 50;
    options.seed = 7;
    options.volatile_cache = true;
    options.mark_log_offset = log->entries[0].end_offset;
    options.clock = &clock;
    options.writeback_window_s = 1.5;
    const auto states = crash_states(*log, CacheMode::kUnsafe, options);
    REQUIRE(states.size() == 3);
    std::size_t written_back = 0;
    for (std::size_t k = 0; k < states.size(); ++k) {
        written_back += states[k].written_back;
        REQUIRE(build_crash_image(f.base, *log, f.log, states[k].applied, f.dir.file("daemon.img"),
                                  65536)
                    .ok());
        const Ran ran = replay({"state", f.log, f.base, f.out, std::to_string(k), "--cache",
                                "unsafe", "--seed", "7", "--crash-points", "50", "--mark",
                                std::to_string(log->entries[0].end_offset), "--host-writeback",
                                f.dir.file("writeback.json")});
        INFO(k << ": " << ran.err);
        REQUIRE(ran.status == 0);
        CHECK(contents(f.out) == contents(f.dir.file("daemon.img")));
        CHECK(states[k].applied.front() == 0);  // the mark's write is never dropped
    }
    CHECK(written_back > 0);
    std::ofstream(f.dir.file("bad.json")) << R"({"window_s": 35, "clock": {"series": [[1]]}})";
    const Ran bad = replay({"state", f.log, f.base, f.out, "0", "--cache", "unsafe", "--seed", "7",
                            "--crash-points", "50", "--host-writeback", f.dir.file("bad.json")});
    CHECK(bad.status == 2);
    CHECK_THAT(bad.err, Catch::Contains("clock series[0]: expected [seconds, log bytes], got [1]"));
}

TEST_CASE("disksweep-replay refuses bad usage with the usage and status 2",
          "[durability][replay]") {
    Fixture f;
    for (const std::vector<std::string>& args : {std::vector<std::string>{},
                                                 {"list"},
                                                 {"flush", f.log, f.base, f.out},
                                                 {"state", f.log, f.base, f.out, "0", "--colour"},
                                                 {"list", f.log, "--seed"}}) {
        const Ran ran = replay(args);
        CHECK(ran.status == 2);
        CHECK_THAT(ran.err, Catch::Contains("usage: disksweep-replay"));
    }
    const Ran no_cache =
        replay({"state", f.log, f.base, f.out, "0", "--seed", "1", "--crash-points", "5"});
    CHECK(no_cache.status == 2);
    CHECK_THAT(no_cache.err, Catch::Contains("--cache must name a cache mode"));
    const Ran missing = replay({"list", f.dir.file("nothing.log")});
    CHECK(missing.status == 1);
}

}  // namespace ds::durability
