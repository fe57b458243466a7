// Native I/O engine job options: fio's names, syntax and defaults; every
// error names the option. The options are common/io_options.h's, which the
// spec parser uses too: the tests at the end check both sides agree.
#include "guestagent/io_options.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "daemon/spec/spec.h"
#include "guestagent/workload_kinds.h"

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
        {{{"bs", "4k-16k"}}, "'bs': ranges (\"4k-16k\") are not supported"},
        {{{"bs", "4k,8k"}}, "'bs': per-direction values (\"4k,8k\") are not supported"},
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
        {{{"filename", "a:b"}}, "'filename': several paths separated by ':'"},
        {{{"direct", "maybe"}}, "'direct': \"maybe\" is not a boolean"},
        {{{"direct", 1}, {"bs", 1000}}, "not a multiple of 512"},
        {{{"runtime", "10 parsecs"}}, "'runtime'"},
        {{{"runtime", -1}}, "'runtime'"},
        {{{"time_based", 1}}, "'time_based': needs runtime > 0"},
        {{{"ioengine", "posixaio"}},
         "'ioengine': \"posixaio\" is not supported; supported: libaio, io_uring, psync, null"},
        {{{"runtime", "1.5"}}, "'runtime': \"1.5\" is not a duration"},
        {{{"rw", "read"}, {"readwrite", "write"}}, "'rw' is given twice"},
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

// ---------------------------------------------------------------------------
// One table on both sides (issue 9): the spec parser and the agent take the
// io options from common/io_options.h.

namespace {

// A valid value of `option`, as TOML text and as JSON.
struct Sample {
    std::string toml;
    Json json;
};

Sample sample_of(const ds::IoOptionDef& option) {
    switch (option.type) {
        case ds::IoValueType::kEnum: {
            const std::string value(option.values.front());
            return {"\"" + value + "\"", value};
        }
        case ds::IoValueType::kSize:
            return {"\"64k\"", "64k"};
        case ds::IoValueType::kCount: {
            const auto number = std::max<std::uint64_t>(option.min, 1);
            return {std::to_string(number), number};
        }
        case ds::IoValueType::kBool:
            return {"false", false};
        case ds::IoValueType::kTime:
            return {"\"1s\"", "1s"};
        case ds::IoValueType::kName:
        case ds::IoValueType::kPath:
            return {"\"x\"", "x"};
    }
    return {"\"1\"", "1"};
}

bool spec_accepts(const std::string& workload_lines) {
    return ds::parse_sweep_spec("name = \"t\"\n[[workload]]\nkind = \"io\"\n" + workload_lines,
                                "t.toml")
        .ok();
}

bool agent_accepts(const Json& params) {
    ds::Workload workload;
    workload.name = "w";
    workload.kind = "io";
    workload.params = params;
    return ds::agent::check_io_params(workload).ok();
}

}  // namespace

TEST_CASE("io options: the spec and the agent accept and refuse exactly the same names",
          "[io_options]") {
    std::vector<std::string> names = {
        "verify",      "hipri", "filename_format", "kb_base",
        "exec_prerun", "BS",    "fsync",           "iodepth_batch_complete_maxi"};
    for (const auto& option : ds::io_options()) names.emplace_back(option.name);
    for (const auto& alias : ds::io_option_aliases()) names.emplace_back(alias.alias);
    int accepted = 0;
    int refused = 0;
    for (const std::string engine : {"psync", "libaio", "io_uring", "null"}) {
        for (const auto& name : names) {
            // `name` is also every workload's own key in a spec (its name,
            // never a param), so it cannot be given there as an option.
            if (name == "name") continue;
            const ds::IoOptionDef* option = ds::find_io_option(name);
            const Sample sample = option != nullptr ? sample_of(*option) : Sample{"\"1\"", "1"};
            Json params = {{"ioengine", engine}, {"size", "1m"}};
            std::string toml = "ioengine = \"" + engine + "\"\nsize = \"1m\"\n";
            if (name == "ioengine" || name == "size") {
                params.erase(name);
                toml = name == "size" ? "ioengine = \"" + engine + "\"\n" : "size = \"1m\"\n";
            }
            params[name] = name == "ioengine" ? Json(engine) : sample.json;
            toml += name + " = " + (name == "ioengine" ? "\"" + engine + "\"" : sample.toml) + "\n";
            INFO(engine << ": " << toml);
            const bool by_spec = spec_accepts(toml);
            CHECK(by_spec == agent_accepts(params));
            (by_spec ? accepted : refused)++;
        }
    }
    // Neither side accepts or refuses everything: the comparison means something.
    CHECK(accepted > 40);
    CHECK(refused > 20);
    CHECK_FALSE(agent_accepts({{"filename", "/dev/sdb"}, {"size", "1m"}}));
    CHECK_FALSE(spec_accepts("filename = \"/dev/sdb\"\nsize = \"1m\"\n"));
    CHECK(agent_accepts({{"ioengine", "libaio"}, {"ring_first", 0}}));
    CHECK(spec_accepts("ioengine = \"libaio\"\nring_first = 0\n"));
}

TEST_CASE("io options: \"4KiB\" is 4000 bytes and \"4k\" 4096 on both sides", "[io_options]") {
    auto kib = parse_job_options({{"bs", "4KiB"}});
    REQUIRE(kib.ok());
    CHECK(kib->bs == 4000);
    auto k = parse_job_options({{"bs", "4k"}});
    REQUIRE(k.ok());
    CHECK(k->bs == 4096);
    // Observable in a spec too: O_DIRECT needs a multiple of 512.
    CHECK_FALSE(agent_accepts({{"direct", 1}, {"bs", "4KiB"}}));
    CHECK_FALSE(spec_accepts("direct = 1\nbs = \"4KiB\"\n"));
    CHECK(agent_accepts({{"direct", 1}, {"bs", "4k"}}));
    CHECK(spec_accepts("direct = 1\nbs = \"4k\"\n"));
    // And to ds-io's callers: one parser.
    CHECK(parse_fio_size("4KiB") == 4000u);
    CHECK(parse_fio_size("4k") == 4096u);
}

TEST_CASE("io options: the table's engines and engine options are the engines'", "[io_options]") {
    // ioengine's values are the registered engines.
    std::vector<std::string_view> registered;
    for (const auto* engine : all_engines()) registered.push_back(engine->name);
    CHECK(ds::find_io_option("ioengine")->values == registered);
    // Each engine's own option list (its descriptor) is the table's rows for
    // that engine: same names, types and defaults. parse_job_options fills
    // engine options from the table, and the engine reads them by name.
    for (const auto* engine : all_engines()) {
        INFO(engine->name);
        std::set<std::string_view> from_table;
        for (const auto& option : ds::io_options())
            if (option.engine == engine->name) from_table.insert(option.name);
        std::set<std::string_view> from_engine;
        for (const auto& spec : engine->options) {
            INFO(spec.name);
            from_engine.insert(spec.name);
            const ds::IoOptionDef* option = ds::find_io_option(spec.name);
            REQUIRE(option != nullptr);
            CHECK(option->engine == engine->name);
            CHECK(spec.type == OptionType::kBool);  // the only kind engines have so far
            CHECK(option->type == ds::IoValueType::kBool);
            auto defaults =
                parse_job_options({{"ioengine", std::string(engine->name)}, {"size", "1m"}});
            REQUIRE(defaults.ok());
            CHECK(defaults->engine_options.at(std::string(spec.name)) == spec.default_value);
        }
        CHECK(from_table == from_engine);
    }
}

TEST_CASE("io options: every option of the table lands in the job", "[io_options]") {
    // parse_job_options returns errc::kInternal for an option it has no
    // binding for; giving each one (as the agent may) proves there is one.
    for (const auto& option : ds::io_options()) {
        INFO(option.name);
        Json params = {{"size", "1m"}};
        if (!option.engine.empty()) params["ioengine"] = std::string(option.engine);
        params[std::string(option.name)] =
            option.name == "ioengine" ? Json("libaio") : sample_of(option).json;
        auto parsed = parse_job_options(params);
        INFO((parsed.ok() ? "" : parsed.error().message));
        CHECK(parsed.ok());
    }
    auto given = parse_job_options({{"size", "64k"},
                                    {"rw", "randwrite"},
                                    {"numjobs", 3},
                                    {"iodepth_low", 1},
                                    {"iodepth", 4},
                                    {"runtime", "1500ms"},
                                    {"thread", true},
                                    {"name", "job"},
                                    {"directory", "/mnt"}});
    REQUIRE(given.ok());
    CHECK(given->size == std::optional<std::uint64_t>(65536));
    CHECK(given->rw == RwMode::kRandWrite);
    CHECK(given->numjobs == 3);
    CHECK(given->iodepth_low == 1);
    CHECK(given->runtime_s == Approx(1.5));
    CHECK(given->thread);
    CHECK(given->name == "job");
    CHECK(given->directory == "/mnt");
}
