// The shared value syntax (common/units.h), the io kind's option table
// (common/io_options.h) and the fio kind's guards (common/fio_options.h).
#include "common/io_options.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "common/fio_options.h"
#include "common/units.h"
#include "support/test_data.h"

using namespace ds;

namespace {

std::string resolve_error(const Json& params, IoOptionSetter setter = IoOptionSetter::kWorkload) {
    auto resolved = resolve_io_options(params, setter);
    REQUIRE_FALSE(resolved.ok());
    CHECK(resolved.error().code == errc::kInvalidArgument);
    return resolved.error().message;
}

std::string refusal(std::string_view name, std::string_view value, FioOptionPlace place) {
    const auto refused = fio_option_refusal(name, value, place);
    REQUIRE(refused.has_value());
    return *refused;
}

bool allowed(std::string_view name, std::string_view value, FioOptionPlace place) {
    return !fio_option_refusal(name, value, place).has_value();
}

// The part of docs/spec.md from the heading `from` to the heading `to`.
std::string spec_doc_section(std::string_view from, std::string_view to) {
    const auto root = test::repository_root();
    std::ifstream in(root / "docs/spec.md");
    REQUIRE(in.good());
    std::ostringstream text;
    text << in.rdbuf();
    const std::string doc = text.str();
    const std::size_t begin = doc.find(from);
    REQUIRE(begin != std::string::npos);
    const std::size_t end = doc.find(to, begin + from.size());
    REQUIRE(end != std::string::npos);
    return doc.substr(begin, end - begin);
}

// The table row of docs that starts with `name` in back quotes.
std::string doc_row(const std::string& section, std::string_view name) {
    const std::size_t begin = section.find("\n| `" + std::string(name) + "`");
    if (begin == std::string::npos) return "";
    return section.substr(begin + 1, section.find('\n', begin + 1) - begin - 1);
}

}  // namespace

// ---------------------------------------------------------------------------
// Sizes and times

TEST_CASE("fio sizes follow kb_base=1024: SI spellings binary, IEC spellings decimal", "[units]") {
    CHECK(parse_fio_size("512") == 512u);
    for (const char* four_kib : {"4096", "4096b", "4096B", "4k", "4kb", "4kB", "4K", "4KB"}) {
        INFO(four_kib);
        CHECK(parse_fio_size(four_kib) == 4096u);
    }
    CHECK(parse_fio_size("4KiB") == 4000u);
    CHECK(parse_fio_size("4ki") == 4000u);
    CHECK(parse_fio_size("1m") == 1048576u);
    CHECK(parse_fio_size("1mi") == 1000000u);
    CHECK(parse_fio_size("1000ki") == 1000000u);
    CHECK(parse_fio_size("1t") == 1ull << 40);
    CHECK(parse_fio_size("1ti") == 1000000000000u);
    CHECK(parse_fio_size("2p") == 2ull << 50);
    CHECK(parse_fio_size("18446744073709551615") == 18446744073709551615u);
    for (const char* bad : {"", "k", "4q", "-4k", "+4k", "4 k", " 4k", "1.5k", "0x10", "4kk",
                            "4kib2", "18446744073709551616", "99999999999p"}) {
        INFO(bad);
        CHECK_FALSE(parse_fio_size(bad).has_value());
    }
}

TEST_CASE("the spec's own sizes read every prefix as a power of 1024", "[units]") {
    CHECK(parse_size("4KiB", SizePrefixes::kBinary) == 4096u);
    CHECK(parse_size("4k", SizePrefixes::kBinary) == 4096u);
    CHECK(parse_size("1GiB", SizePrefixes::kBinary) == 1ull << 30);
    CHECK(parse_size("1gb", SizePrefixes::kBinary) == 1ull << 30);
    CHECK(parse_size("3", SizePrefixes::kBinary) == 3u);
    CHECK_FALSE(parse_size("1x", SizePrefixes::kBinary).has_value());
}

TEST_CASE("fio times: whole numbers with fio's units, seconds by default", "[units]") {
    CHECK(parse_fio_time_us("10") == 10000000u);
    CHECK(parse_fio_time_us("10s") == 10000000u);
    CHECK(parse_fio_time_us("10S") == 10000000u);
    CHECK(parse_fio_time_us("500ms") == 500000u);
    CHECK(parse_fio_time_us("500msec") == 500000u);
    CHECK(parse_fio_time_us("250us") == 250u);
    CHECK(parse_fio_time_us("250usec") == 250u);
    CHECK(parse_fio_time_us("2m") == 120000000u);
    CHECK(parse_fio_time_us("1h") == 3600000000u);
    CHECK(parse_fio_time_us("1d") == 86400000000u);
    CHECK(parse_fio_seconds("1500ms") == Approx(1.5));
    // fio drops fractions and reads these units as microseconds: refused.
    for (const char* bad : {"1.5", "0.5s", "10sec", "2min", "1hour", "1day", "", "s", "-1", "10 s",
                            "99999999999999999d"}) {
        INFO(bad);
        CHECK_FALSE(parse_fio_time_us(bad).has_value());
    }
}

// ---------------------------------------------------------------------------
// The io option table

TEST_CASE("io table: names are unique, aliases point at options, defaults read", "[io_options]") {
    std::set<std::string_view> names;
    for (const auto& option : io_options()) {
        INFO(option.name);
        CHECK(names.insert(option.name).second);
        CHECK_FALSE(option.help.empty());
        if (option.type == IoValueType::kEnum) CHECK_FALSE(option.values.empty());
        if (option.agent_owned) CHECK(option.default_value.empty());
        if (!option.engine.empty()) {
            const auto& engines = find_io_option("ioengine")->values;
            CHECK(std::find(engines.begin(), engines.end(), option.engine) != engines.end());
        }
        if (!option.default_value.empty())
            CHECK(read_io_option(option, Json(std::string(option.default_value))).ok());
    }
    for (const auto& alias : io_option_aliases()) {
        INFO(alias.alias);
        CHECK(names.insert(alias.alias).second);
        REQUIRE(find_io_option(alias.alias) != nullptr);
        CHECK(find_io_option(alias.alias)->name == alias.option);
    }
    CHECK(find_io_option("verify") == nullptr);
}

TEST_CASE("io values: fio's meaning, the table's ranges", "[io_options]") {
    const IoOptionDef& bs = *find_io_option("bs");
    CHECK(read_io_option(bs, "4KiB")->number == 4000u);
    CHECK(read_io_option(bs, "4k")->number == 4096u);
    CHECK(read_io_option(bs, 8192)->number == 8192u);
    CHECK(read_io_option(bs, "4x").error().message ==
          "\"4x\" is not a size (fio syntax: 4k, 1m, 512)");
    CHECK(read_io_option(bs, 0).error().message == "0 is out of range 1..268435456");
    CHECK(read_io_option(bs, "4k-16k").error().message == "ranges (\"4k-16k\") are not supported");
    CHECK(read_io_option(bs, "4k,8k").error().message ==
          "per-direction values (\"4k,8k\") are not supported");
    CHECK(read_io_option(*find_io_option("size"), "50%").error().message ==
          "percentages (\"50%\") are not supported");

    const IoOptionDef& direct = *find_io_option("direct");
    for (const Json& yes : {Json(true), Json(1), Json("1"), Json("true"), Json("TRUE")})
        CHECK(read_io_option(direct, yes)->flag);
    for (const Json& no : {Json(false), Json(0), Json("0"), Json("false")})
        CHECK_FALSE(read_io_option(direct, no)->flag);
    CHECK_FALSE(read_io_option(direct, 2).ok());
    CHECK_FALSE(read_io_option(direct, "yes").ok());

    const IoOptionDef& rwmixread = *find_io_option("rwmixread");
    CHECK(read_io_option(rwmixread, "70")->number == 70u);
    CHECK(read_io_option(rwmixread, 101).error().message == "101 is out of range 0..100");
    CHECK(read_io_option(rwmixread, 70.5).error().message == "70.5 is not a non-negative integer");

    const IoOptionDef& runtime = *find_io_option("runtime");
    CHECK(read_io_option(runtime, "1500ms")->number == 1500000u);
    CHECK(read_io_option(runtime, 3)->number == 3000000u);
    CHECK_FALSE(read_io_option(runtime, 1.5).ok());
    CHECK_FALSE(read_io_option(runtime, "10sec").ok());

    CHECK(read_io_option(*find_io_option("ioengine"), "posixaio").error().message ==
          "\"posixaio\" is not supported; supported: libaio, io_uring, psync, null");
    CHECK(read_io_option(*find_io_option("name"), "a/b").error().message ==
          "\"a/b\" contains '/'; a name must not");
    CHECK(read_io_option(*find_io_option("filename"), "a:b").error().message ==
          "several paths separated by ':' (\"a:b\") are not supported");
}

TEST_CASE("io params resolve with fio's defaults and the rules between options", "[io_options]") {
    auto defaults = resolve_io_options(Json::object(), IoOptionSetter::kWorkload);
    REQUIRE(defaults.ok());
    CHECK(defaults->at("ioengine").text == "psync");
    CHECK(defaults->at("rw").text == "read");
    CHECK(defaults->at("bs").number == 4096u);
    CHECK(defaults->at("rwmixread").number == 50u);
    CHECK_FALSE(defaults->contains("size"));
    CHECK_FALSE(defaults->contains("ring_first"));  // libaio's, and the engine is psync

    auto libaio = resolve_io_options({{"ioengine", "libaio"}, {"blocksize", "8k"}},
                                     IoOptionSetter::kWorkload);
    REQUIRE(libaio.ok());
    CHECK(libaio->at("bs").number == 8192u);  // under its own name
    CHECK_FALSE(libaio->contains("blocksize"));
    CHECK(libaio->at("ring_first").flag);
    CHECK_FALSE(libaio->at("userspace_reap").flag);

    // "4KiB" is 4000 bytes, as fio reads it: not a multiple of 512.
    CHECK(resolve_error({{"direct", 1}, {"bs", "4KiB"}}) ==
          "io job option 'bs': 4000 is not a multiple of 512, which direct=1 needs");
    CHECK(resolve_io_options({{"direct", 1}, {"bs", "4k"}}, IoOptionSetter::kWorkload).ok());
    CHECK(resolve_error({{"size", "1k"}}) == "io job option 'size': 1024 is smaller than bs=4096");
    CHECK(resolve_error({{"time_based", true}}) == "io job option 'time_based': needs runtime > 0");
    CHECK(resolve_error({{"rw", "read"}, {"readwrite", "write"}}) ==
          "io job option 'rw' is given twice, as 'readwrite' and as 'rw'; give it once");
    CHECK(resolve_error({{"ioengine", "psync"}, {"ring_first", 0}}) ==
          "io job option 'ring_first' is for ioengine=libaio, not psync");
    CHECK(resolve_error({{"bs", "4x"}}) ==
          "io job option 'bs': \"4x\" is not a size (fio syntax: 4k, 1m, 512)");
    CHECK(resolve_error(Json::array()) == "io job params is a array, expected an object");
    const std::string unknown = resolve_error({{"ioengine", "libaio"}, {"verify", "crc32c"}});
    CHECK_THAT(unknown, Catch::StartsWith("unsupported io job option 'verify'; supported: "));
    CHECK_THAT(unknown,
               Catch::EndsWith("; ioengine=libaio also takes: userspace_reap, ring_first"));
    CHECK(unknown.find("filename") == std::string::npos);  // not the workload's to give
}

TEST_CASE("io options the agent owns are refused to a workload, not to the agent", "[io_options]") {
    for (const auto& option : io_options()) {
        if (!option.agent_owned) continue;
        INFO(option.name);
        const Json params = {{std::string(option.name), "x"}};
        CHECK_THAT(resolve_error(params),
                   Catch::StartsWith("io job option '" + std::string(option.name) +
                                     "' is set by the agent: "));
        CHECK(resolve_io_options(params, IoOptionSetter::kAgent).ok());
    }
    const auto names = workload_io_option_names();
    CHECK(std::find(names.begin(), names.end(), "filename") == names.end());
    CHECK(std::find(names.begin(), names.end(), "blocksize") != names.end());
}

// ---------------------------------------------------------------------------
// The fio kind's guards

TEST_CASE("fio guards: every guarded option is refused on the command line and in job files",
          "[fio_options]") {
    for (const auto& guard : fio_option_guards()) {
        INFO(guard.name);
        CHECK_FALSE(guard.reason.empty());
        // A value no allow-list holds.
        const std::string_view value = "/dev/sdb";
        CHECK_FALSE(allowed(guard.name, value, FioOptionPlace::kCommandLine));
        CHECK_FALSE(allowed(guard.name, value, FioOptionPlace::kJobFile));
        for (const auto good : guard.allowed_values) {
            CHECK(allowed(guard.name, good, FioOptionPlace::kCommandLine));
            CHECK(allowed(guard.name, good, FioOptionPlace::kJobFile));
        }
    }
    CHECK(refusal("filename", "/dev/sdb", FioOptionPlace::kCommandLine) ==
          "is refused: fio would do its I/O on that file or device instead of the filesystem "
          "under test");
    CHECK(refusal("directory", "/", FioOptionPlace::kCommandLine) ==
          "is set by the agent and cannot be overridden: the agent runs the job in the mount "
          "point of the filesystem "
          "under test");
    CHECK_THAT(refusal("ioengine", "sg", FioOptionPlace::kCommandLine),
               Catch::StartsWith("is refused with value 'sg': only engines that do their I/O on "
                                 "the job's files below the mount point; allowed: sync, psync,"));
    CHECK_FALSE(allowed("mem", "mmap:/dev/sdb", FioOptionPlace::kCommandLine));
    CHECK(allowed("mem", "mmap", FioOptionPlace::kCommandLine));
}

TEST_CASE("fio guards: names compare as fio's, abbreviations only on the command line",
          "[fio_options]") {
    // Case and '-' for '_' do not get around a guard.
    CHECK_FALSE(allowed("EXEC_PRERUN", "x", FioOptionPlace::kJobFile));
    CHECK_FALSE(allowed("exec-prerun", "x", FioOptionPlace::kCommandLine));
    CHECK_FALSE(allowed("trigger_file", "x", FioOptionPlace::kCommandLine));
    // getopt_long takes unambiguous abbreviations on the command line.
    CHECK(refusal("exec_pre", "touch x", FioOptionPlace::kCommandLine) ==
          "is refused: fio takes it as an abbreviation of 'exec_prerun', which is guarded: runs "
          "a command in the guest");
    CHECK_FALSE(allowed("directo", "/", FioOptionPlace::kCommandLine));
    CHECK_FALSE(allowed("filen", "/dev/sdb", FioOptionPlace::kCommandLine));
    CHECK(refusal("ioeng", "libaio", FioOptionPlace::kCommandLine) ==
          "is refused: fio takes it as an abbreviation of 'ioengine', which must be written in "
          "full");
    // A job file matches whole names only.
    CHECK(allowed("exec_pre", "touch x", FioOptionPlace::kJobFile));
    // Whole fio options that begin a guarded name are themselves.
    CHECK(allowed("direct", "1", FioOptionPlace::kCommandLine));
    CHECK(allowed("ba", "4k", FioOptionPlace::kCommandLine));
    // Ordinary options pass.
    for (const char* name : {"rw", "bs", "size", "fsync", "thinktime", "norandommap", "numjobs",
                             "lat_percentiles", "nrfiles", "verify", "cpus_allowed"}) {
        INFO(name);
        CHECK(allowed(name, "1", FioOptionPlace::kCommandLine));
        CHECK(allowed(name, "1", FioOptionPlace::kJobFile));
    }
}

TEST_CASE("fio job files: every section and line is checked", "[fio_options]") {
    CHECK(check_fio_job_file("; seed\n[global]\nioengine=libaio\ndirect=1\n\n[randrw]\n"
                             "name=x\nrw=randrw\n# done\n")
              .ok());
    auto error_of = [](std::string_view text) {
        const Status status = check_fio_job_file(text);
        REQUIRE_FALSE(status.ok());
        CHECK(status.error().code == errc::kInvalidArgument);
        return status.error().message;
    };
    CHECK(error_of("[a]\nrw=read\n[b]\n  filename = /dev/sdb\n") ==
          "line 4 sets 'filename', which is refused: fio would do its I/O on that file or device "
          "instead of "
          "the filesystem under test");
    CHECK_THAT(error_of("[a]\nexec_postrun=reboot\r\n"),
               Catch::StartsWith("line 2 sets 'exec_postrun', which is refused"));
    CHECK_THAT(error_of("[a]\nioengine=sg\n"),
               Catch::StartsWith("line 2 sets 'ioengine', which is refused "
                                 "with value 'sg'"));
    CHECK_THAT(error_of("[a]\ndirectory=/\n"), Catch::StartsWith("line 2 sets 'directory', which "
                                                                 "the agent"));
    CHECK_THAT(error_of("[../../etc]\nrw=write\n"),
               Catch::StartsWith("line 1: job name '../../etc' contains '/' or '$'"));
    CHECK_THAT(error_of("[a]\nname=${HOME}\n"), Catch::StartsWith("line 2: job name '${HOME}'"));
    CHECK(error_of("include other.fio\n[a]\n") ==
          "line 1: 'include' is refused: the included job file would not be checked");
    CHECK_THAT(error_of("[a]\nopendir\n"),
               Catch::StartsWith("line 2 sets 'opendir', which is refused"));
}

TEST_CASE("fio values reach fio as text: booleans 1/0, numbers as JSON", "[fio_options]") {
    CHECK(fio_value_text("4k") == "4k");
    CHECK(fio_value_text(true) == "1");
    CHECK(fio_value_text(false) == "0");
    CHECK(fio_value_text(64) == "64");
    CHECK_FALSE(fio_value_text(nullptr).has_value());
    CHECK_FALSE(fio_value_text(Json::array()).has_value());
}

// ---------------------------------------------------------------------------
// docs/spec.md matches the tables

TEST_CASE("docs/spec.md lists every io option with its values and default", "[io_options][docs]") {
    const std::string section =
        spec_doc_section("### `kind = \"io\"`", "### `kind = \"mariadb-atis\"`");
    for (const auto& option : io_options()) {
        INFO(option.name);
        if (option.agent_owned) {
            CHECK(section.find("`" + std::string(option.name) + "`") != std::string::npos);
            continue;
        }
        const std::string row = doc_row(section, option.name);
        INFO(row);
        REQUIRE_FALSE(row.empty());
        for (const auto value : option.values)
            CHECK(row.find("`" + std::string(value) + "`") != std::string::npos);
        if (!option.default_value.empty()) {
            const std::string plain = "| " + std::string(option.default_value) + " |";
            const std::string quoted = "| `" + std::string(option.default_value) + "` |";
            CHECK((row.find(plain) != std::string::npos || row.find(quoted) != std::string::npos));
        }
        if (!option.engine.empty())
            CHECK(row.find("`ioengine = \"" + std::string(option.engine) + "\"` only") !=
                  std::string::npos);
    }
    for (const auto& alias : io_option_aliases()) {
        INFO(alias.alias);
        CHECK(doc_row(section, alias.option).find("(alias `" + std::string(alias.alias) + "`)") !=
              std::string::npos);
    }
}

TEST_CASE("docs/spec.md lists every fio guard and allowed value", "[fio_options][docs]") {
    const std::string section =
        spec_doc_section("#### What a fio workload may not pass", "### `kind = \"io\"`");
    for (const auto& guard : fio_option_guards()) {
        INFO(guard.name);
        CHECK(section.find("`" + std::string(guard.name) + "`") != std::string::npos);
        for (const auto value : guard.allowed_values)
            CHECK(section.find("`" + std::string(value) + "`") != std::string::npos);
    }
}
