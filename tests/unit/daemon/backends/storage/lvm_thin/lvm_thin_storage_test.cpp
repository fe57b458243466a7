// The lvm-thin backend against a scripted ProcessRunner: the exact LVM
// command lines, the reading of `lvs --reportformat json` (also malformed),
// and errors that carry LVM's own message. The same code runs against a real
// dm-thin pool in lvm_thin_guest_test.
#include "daemon/backends/storage/lvm_thin/lvm_thin_storage.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/process.h"
#include "support/fakes/process_runner_fakes.h"

using namespace ds;

namespace {

using testing::Argv;
// LVM's tools, answered per program (argv[0]): each queued reply answers one
// command; a program without replies left exits 0 with no output.
using testing::ScriptedProcessRunner;

const Argv kReportCommand = {
    "lvs", "--reportformat", "json", "--options", "lv_name,pool_lv,data_percent,metadata_percent",
    "vg0"};

// What LVM 2.03.16 printed for `lvs --reportformat json -o <the fields of
// kReportCommand> dsguest` in the disksweep guest image, with a 768 MiB pool, a
// 256 MiB thin LV written to a quarter, a 64 MiB one written to an eighth
// and an 8 MiB plain LV: percentages are strings, "" where an LV has none.
constexpr const char* kReport = R"(  {
      "report": [
          {
              "lv": [
                  {"lv_name":"ds-plain", "pool_lv":"", "data_percent":"", "metadata_percent":""},
                  {"lv_name":"ds-run-1", "pool_lv":"pool", "data_percent":"25.00", "metadata_percent":""},
                  {"lv_name":"golden", "pool_lv":"pool", "data_percent":"12.50", "metadata_percent":""},
                  {"lv_name":"pool", "pool_lv":"", "data_percent":"9.38", "metadata_percent":"11.91"}
              ]
          }
      ]
  }
)";
// A thin LV of another pool in the same VG.
constexpr const char* kReportWithOtherPool = R"({"report":[{"lv":[
    {"lv_name":"ds-run-1", "pool_lv":"pool", "data_percent":"25.00", "metadata_percent":""},
    {"lv_name":"ds-other-pool", "pool_lv":"pool2", "data_percent":"0.00", "metadata_percent":""},
    {"lv_name":"pool", "pool_lv":"", "data_percent":"9.38", "metadata_percent":"11.91"},
    {"lv_name":"pool2", "pool_lv":"", "data_percent":"0.00", "metadata_percent":"10.00"}]}]})";

LvmThinStorage make_storage(ScriptedProcessRunner& lvm) {
    return LvmThinStorage(ThinPoolRef{"vg0", "pool"}, lvm);
}

StorageConfig raw_config(std::uint64_t size_bytes) {
    StorageConfig config;
    config.storage = "lvm-thin";
    config.storage_pool = "vg0/pool";
    config.disk_size_bytes = size_bytes;
    return config;
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("lvm-thin pool names follow LVM's naming rules", "[lvm]") {
    auto parsed = parse_thin_pool("vg0/pool");
    REQUIRE(parsed.ok());
    CHECK(parsed->volume_group == "vg0");
    CHECK(parsed->pool == "pool");
    CHECK(parsed->path() == "vg0/pool");
    CHECK(parse_thin_pool("my.vg+1/thin_pool-A").ok());
    CHECK(parse_thin_pool("vg/" + std::string(127, 'p')).ok());

    const std::vector<std::string> rejected_names = {"vg0",
                                                     "/pool",
                                                     "vg0/",
                                                     "-vg/pool",
                                                     "vg/-pool",
                                                     "vg/po ol",
                                                     "vg/po$ol",
                                                     "v:g/pool",
                                                     "./pool",
                                                     "../pool",
                                                     "vg/..",
                                                     "vg/snapshot1",
                                                     "vg/pvmove0",
                                                     "vg/my_tmeta",
                                                     "vg/a_rimage_0",
                                                     "vg/pool/extra",
                                                     "vg/" + std::string(128, 'p')};
    for (const std::string& bad : rejected_names) {
        INFO(bad);
        auto rejected = parse_thin_pool(bad);
        REQUIRE_FALSE(rejected.ok());
        CHECK(rejected.error().code == errc::kInvalidArgument);
        CHECK(contains(rejected.error().message, "'" + bad + "'"));
    }
    CHECK(contains(parse_thin_pool("vg/a_tdata").error().message, "_tdata"));
    CHECK(contains(parse_thin_pool("v%g/pool").error().message, "character '%'"));
}

TEST_CASE("lvm-thin names itself by its pool and produces block disks", "[lvm]") {
    ScriptedProcessRunner lvm;
    auto storage = make_lvm_thin_storage("vg0/pool", lvm);
    REQUIRE(storage.ok());
    CHECK((*storage)->name() == "lvm-thin:vg0/pool");
    CHECK((*storage)->produces() == DiskSourceKind::kBlock);
    CHECK_FALSE(make_lvm_thin_storage("vg0", lvm).ok());
    CHECK(lvm.commands.empty());
}

TEST_CASE("lvm-thin creates a thin LV of the configured size in its pool", "[lvm]") {
    ScriptedProcessRunner lvm;
    auto storage = make_storage(lvm);

    auto volume = storage.create_volume("ds-run-1", raw_config(1ull << 30));
    REQUIRE(volume.ok());
    CHECK(volume->name == "ds-run-1");
    REQUIRE(std::holds_alternative<BlockDisk>(volume->source));
    CHECK(std::get<BlockDisk>(volume->source).path == "/dev/vg0/ds-run-1");
    REQUIRE(lvm.commands.size() == 1);
    CHECK(lvm.commands[0] == Argv{"lvcreate", "--type", "thin", "--virtualsize", "1073741824b",
                                  "--thinpool", "pool", "--name", "ds-run-1", "vg0"});
    CHECK(lvm.timeouts[0] == LvmThinStorage::kCommandTimeout);

    auto golden = storage.create_golden("golden", 64ull << 20);
    REQUIRE(golden.ok());
    CHECK(lvm.commands.back() == Argv{"lvcreate", "--type", "thin", "--virtualsize", "67108864b",
                                      "--thinpool", "pool", "--name", "golden", "vg0"});
}

TEST_CASE("lvm-thin refuses qcow2 and bad names without running LVM", "[lvm]") {
    ScriptedProcessRunner lvm;
    auto storage = make_storage(lvm);

    StorageConfig qcow2 = raw_config(1ull << 30);
    qcow2.image_format = ImageFormat::kQcow2;
    auto refused = storage.create_volume("ds-run-1", qcow2);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == errc::kInvalidArgument);
    CHECK(contains(refused.error().message, "qcow2"));

    CHECK(storage.create_volume("ds run", raw_config(1ull << 30)).error().code ==
          errc::kInvalidArgument);
    CHECK(storage.create_snapshot_volume("snap", "-golden").error().code == errc::kInvalidArgument);
    CHECK(storage.remove_volume("../pool").error().code == errc::kInvalidArgument);
    CHECK(storage.remove_volume("pool").error().code == errc::kInvalidArgument);
    CHECK(lvm.commands.empty());
}

TEST_CASE("an LVM failure is an error naming the command and carrying LVM's message", "[lvm]") {
    ScriptedProcessRunner lvm;
    auto storage = make_storage(lvm);
    lvm.reply_failure("lvcreate", 5,
                      "  Logical Volume \"ds-run-1\" already exists in volume group \"vg0\"\n");

    auto failed = storage.create_volume("ds-run-1", raw_config(1ull << 30));
    REQUIRE_FALSE(failed.ok());
    CHECK(failed.error().code == errc::kStorage);
    CHECK(failed.error().message ==
          "lvm-thin:vg0/pool: lvcreate --type thin --virtualsize 1073741824b --thinpool pool "
          "--name ds-run-1 vg0 failed (exit code 5): Logical Volume \"ds-run-1\" already exists "
          "in volume group \"vg0\"");

    SECTION("several stderr lines become one") {
        lvm.reply_failure("lvcreate", 5,
                          "  WARNING: Sum of all thin volume sizes exceeds the pool.\n"
                          "  Insufficient free space: 256 extents needed, but only 0 available\n");
        auto message = storage.create_golden("g", 1ull << 30).error().message;
        CHECK(contains(message,
                       "failed (exit code 5): WARNING: Sum of all thin volume sizes "
                       "exceeds the pool.; Insufficient free space: 256 extents needed"));
    }
    SECTION("a command that cannot start") {
        lvm.reply("lvcreate", make_error(errc::kIo, "cannot run lvcreate: No such file"));
        auto error = storage.create_volume("ds-run-2", raw_config(1ull << 30)).error();
        CHECK(error.code == errc::kStorage);
        CHECK(contains(error.message, "No such file"));
    }
    SECTION("a command that hangs") {
        ProcessOutput hung;
        hung.timed_out = true;
        lvm.reply("lvcreate", hung);
        auto error = storage.create_volume("ds-run-2", raw_config(1ull << 30)).error();
        CHECK(error.code == errc::kTimeout);
        CHECK(contains(error.message, "lvcreate --type thin"));
    }
    SECTION("a command killed by a signal") {
        ProcessOutput killed;
        killed.signal = 9;
        lvm.reply("lvcreate", killed);
        CHECK(contains(storage.create_volume("ds-run-2", raw_config(1ull << 30)).error().message,
                       "failed (killed by signal 9): (no message on stderr)"));
    }
}

TEST_CASE("lvm-thin snapshots a golden volume of its own pool, active", "[lvm]") {
    ScriptedProcessRunner lvm;
    auto storage = make_storage(lvm);

    lvm.reply_ok("lvs", kReport);
    auto snapshot = storage.create_snapshot_volume("ds-run-2", "golden");
    REQUIRE(snapshot.ok());
    CHECK(std::get<BlockDisk>(snapshot->source).path == "/dev/vg0/ds-run-2");
    REQUIRE(lvm.commands.size() == 2);
    CHECK(lvm.commands[0] == kReportCommand);
    CHECK(lvm.commands[1] == Argv{"lvcreate", "--snapshot", "--setactivationskip", "n", "--name",
                                  "ds-run-2", "vg0/golden"});

    SECTION("a missing golden volume") {
        lvm.reply_ok("lvs", kReport);
        auto error = storage.create_snapshot_volume("ds-run-3", "nothing").error();
        CHECK(error.code == errc::kNotFound);
        CHECK(contains(error.message, "vg0/nothing"));
    }
    SECTION("a golden volume in another pool") {
        lvm.reply_ok("lvs", kReportWithOtherPool);
        auto error = storage.create_snapshot_volume("ds-run-3", "ds-other-pool").error();
        CHECK(error.code == errc::kInvalidArgument);
        CHECK(contains(error.message, "is in thin pool pool2"));
    }
    SECTION("a golden volume that is not thin") {
        lvm.reply_ok("lvs", kReport);
        auto error = storage.create_snapshot_volume("ds-run-3", "ds-plain").error();
        CHECK(error.code == errc::kInvalidArgument);
        CHECK(contains(error.message, "not a thin LV"));
    }
    SECTION("the pool cannot be listed") {
        lvm.reply_failure("lvs", 5, "  Volume group \"vg0\" not found\n");
        auto error = storage.create_snapshot_volume("ds-run-3", "golden").error();
        CHECK(error.code == errc::kStorage);
        CHECK(contains(error.message, "Volume group \"vg0\" not found"));
    }
    CHECK(lvm.commands.size() == 3);  // the report only: no lvcreate ran
}

TEST_CASE("lvm-thin removes a volume, and a missing one is already removed", "[lvm]") {
    ScriptedProcessRunner lvm;
    auto storage = make_storage(lvm);

    CHECK(storage.remove_volume("ds-run-1").ok());
    CHECK(lvm.commands == std::vector<Argv>{{"lvremove", "--force", "vg0/ds-run-1"}});

    SECTION("gone: lvremove fails, the report does not list it") {
        lvm.reply_failure("lvremove", 5, "  Failed to find logical volume \"vg0/ds-gone\"\n");
        lvm.reply_ok("lvs", kReport);
        CHECK(storage.remove_volume("ds-gone").ok());
        CHECK(lvm.commands.back() == kReportCommand);
    }
    SECTION("still there: LVM's reason is the error") {
        lvm.reply_failure("lvremove", 5, "  Logical volume vg0/ds-run-1 in use.\n");
        lvm.reply_ok("lvs", kReport);
        auto removed = storage.remove_volume("ds-run-1");
        REQUIRE_FALSE(removed.ok());
        CHECK(removed.error().code == errc::kStorage);
        CHECK(contains(removed.error().message, "lvremove --force vg0/ds-run-1 failed"));
        CHECK(contains(removed.error().message, "Logical volume vg0/ds-run-1 in use."));
    }
    SECTION("unknown: the report fails too") {
        lvm.reply_failure("lvremove", 5, "  Volume group \"vg0\" not found\n");
        lvm.reply_failure("lvs", 5, "  Volume group \"vg0\" not found\n");
        CHECK_FALSE(storage.remove_volume("ds-run-1").ok());
    }
}

TEST_CASE("lvm-thin lists the thin LVs of its pool by prefix", "[lvm]") {
    ScriptedProcessRunner lvm;
    auto storage = make_storage(lvm);
    lvm.reply_ok("lvs", kReport);

    auto listed = storage.list_volumes("ds-");
    REQUIRE(listed.ok());
    // Not the pool, not the plain LV ds-plain.
    CHECK(*listed == std::vector<std::string>{"ds-run-1"});
    CHECK(lvm.commands == std::vector<Argv>{kReportCommand});

    lvm.reply_ok("lvs", kReport);
    CHECK(*storage.list_volumes("") == std::vector<std::string>{"ds-run-1", "golden"});

    // Not a thin LV of another pool.
    lvm.reply_ok("lvs", kReportWithOtherPool);
    CHECK(*storage.list_volumes("ds-") == std::vector<std::string>{"ds-run-1"});
}

TEST_CASE("lvm-thin state is the pool's fill and the volume's", "[lvm]") {
    ScriptedProcessRunner lvm;
    auto storage = make_storage(lvm);

    lvm.reply_ok("lvs", kReport);
    const Json with_volume = storage.state("ds-run-1");
    CHECK(with_volume == Json{{"pool_data_percent", 9.38},
                              {"pool_metadata_percent", 11.91},
                              {"volume_data_percent", 25.0}});
    CHECK(with_volume.at("pool_data_percent").is_number());

    lvm.reply_ok("lvs", kReport);
    CHECK(storage.state("ds-removed") ==
          Json{{"pool_data_percent", 9.38}, {"pool_metadata_percent", 11.91}});

    // A thin LV of another pool is not "the volume" of this one.
    lvm.reply_ok("lvs", kReportWithOtherPool);
    CHECK_FALSE(storage.state("ds-other-pool").contains("volume_data_percent"));

    lvm.reply_failure("lvs", 5,
                      "  Volume group \"vg0\" not found\n  Cannot process volume group vg0\n");
    const Json failed = storage.state("ds-run-1");
    REQUIRE(failed.contains("error"));
    CHECK(contains(failed.at("error").get<std::string>(),
                   "Volume group \"vg0\" not found; Cannot process volume group vg0"));

    lvm.reply_ok("lvs", "lvs: garbage");
    CHECK(contains(storage.state("ds-run-1").at("error").get<std::string>(), "not JSON"));

    // The pool's row without percentages: not an active thin pool.
    lvm.reply_ok("lvs", R"({"report":[{"lv":[{"lv_name":"pool","pool_lv":"",
                           "data_percent":"","metadata_percent":""}]}]})");
    auto inactive = storage.fill("ds-run-1");
    REQUIRE_FALSE(inactive.ok());
    CHECK(contains(inactive.error().message, "no data and metadata fill"));

    lvm.reply_ok("lvs", R"({"report":[{"lv":[]}]})");
    CHECK(storage.fill("ds-run-1").error().code == errc::kNotFound);
}

TEST_CASE("lv reports are read without trusting their shape", "[lvm]") {
    SECTION("well-formed, with numbers, empty fields, a decimal comma and a log report") {
        auto rows = parse_lv_report(R"({"report":[
            {"lv":[{"lv_name":"a","pool_lv":"pool","data_percent":"1,50","metadata_percent":""},
                   {"lv_name":"b","data_percent":2.25,"metadata_percent":"  3.00 "}]}],
            "log":[{"log_seq_num":"1","log_type":"status","log_message":""}]})");
        REQUIRE(rows.ok());
        REQUIRE(rows->size() == 2);
        CHECK((*rows)[0].name == "a");
        CHECK((*rows)[0].pool == "pool");
        CHECK((*rows)[0].data_percent == 1.5);
        CHECK_FALSE((*rows)[0].metadata_percent.has_value());
        CHECK((*rows)[1].pool.empty());
        CHECK((*rows)[1].data_percent == 2.25);
        CHECK((*rows)[1].metadata_percent == 3.0);
    }
    SECTION("the captured report") {
        auto rows = parse_lv_report(kReport);
        REQUIRE(rows.ok());
        REQUIRE(rows->size() == 4);
        CHECK((*rows)[0].name == "ds-plain");
        CHECK_FALSE((*rows)[0].data_percent.has_value());
        CHECK((*rows)[3].name == "pool");
        CHECK((*rows)[3].data_percent == 9.38);
        CHECK((*rows)[3].metadata_percent == 11.91);
    }
    SECTION("no LVs") {
        auto rows = parse_lv_report(R"({"report":[{"lv":[]}]})");
        REQUIRE(rows.ok());
        CHECK(rows->empty());
    }
    SECTION("malformed") {
        for (const char* text :
             {"", "not json", "{", "[]", "null", R"({"report":{}})", R"({"report":[1]})",
              R"({"report":[{"lv":{}}]})", R"({"report":[{"lv":[1]}]})",
              R"({"report":[{"lv":[{"pool_lv":"p"}]}]})", R"({"report":[{"lv":[{"lv_name":7}]}]})",
              R"({"report":[{"lv":[{"lv_name":"a","pool_lv":[]}]}]})",
              R"({"report":[{"lv":[{"lv_name":"a","data_percent":"abc"}]}]})",
              R"({"report":[{"lv":[{"lv_name":"a","data_percent":"12.5%"}]}]})",
              R"({"report":[{"lv":[{"lv_name":"a","data_percent":"nan"}]}]})",
              R"({"report":[{"lv":[{"lv_name":"a","metadata_percent":{}}]}]})",
              "{\"report\":[{\"lv\":[{\"lv_name\":\"\xff\xfe\"}]}]}"}) {
            INFO(text);
            Result<std::vector<LvReportRow>> rows = std::vector<LvReportRow>();
            REQUIRE_NOTHROW(rows = parse_lv_report(text));
            REQUIRE_FALSE(rows.ok());
            CHECK(rows.error().code == errc::kStorage);
            CHECK(contains(rows.error().message, "unreadable lvs JSON report"));
        }
    }
}

TEST_CASE("lvm-thin allocated bytes: the thin LV's data_percent of its size", "[lvm]") {
    ScriptedProcessRunner lvm;
    lvm.reply_ok("lvs", kReport);
    lvm.reply_ok("lvs", "  268435456\n");
    LvmThinStorage storage = make_storage(lvm);
    auto allocated = storage.allocated_bytes("ds-run-1");
    INFO((allocated.ok() ? "" : allocated.error().message));
    REQUIRE(allocated.ok());
    CHECK(*allocated == 67108864);  // 25.00 % of 256 MiB
    REQUIRE(lvm.commands.size() == 2);
    CHECK(lvm.commands[0] == kReportCommand);
    CHECK(lvm.commands[1] == Argv{"lvs", "--noheadings", "--units", "b", "--nosuffix", "--options",
                                  "lv_size", "vg0/ds-run-1"});

    // A plain LV (no data fill) and a size LVM did not print as bytes.
    lvm.reply_ok("lvs", kReport);
    CHECK(storage.allocated_bytes("ds-plain").error().code == errc::kNotFound);
    lvm.reply_ok("lvs", kReport);
    lvm.reply_ok("lvs", "  256.00m\n");
    auto garbled = storage.allocated_bytes("ds-run-1");
    REQUIRE_FALSE(garbled.ok());
    CHECK(
        contains(garbled.error().message, "lvs printed no size in bytes for ds-run-1: '256.00m'"));
}

TEST_CASE("lvm-thin clones a run's volume of a golden one as a thin snapshot", "[lvm][golden]") {
    ScriptedProcessRunner lvm;
    auto storage = make_storage(lvm);
    StorageBackend& seam = storage;  // what a run calls
    lvm.reply_ok("lvs", kReport);
    REQUIRE(seam.seal_golden("golden").ok());  // a thin snapshot needs no seal
    auto cloned = seam.clone_volume("golden", "ds-run-2", raw_config(1ull << 30));
    REQUIRE(cloned.ok());
    CHECK(cloned->method == "thin-snapshot");
    CHECK(std::get<BlockDisk>(cloned->volume.source).path == "/dev/vg0/ds-run-2");
    CHECK(lvm.commands.back() == Argv{"lvcreate", "--snapshot", "--setactivationskip", "n",
                                      "--name", "ds-run-2", "vg0/golden"});
    // The golden is an ordinary thin LV: its snapshots do not depend on it.
    REQUIRE(seam.remove_golden("golden").ok());
    CHECK(lvm.commands.back().front() == "lvremove");

    SECTION("qcow2 is refused before LVM is asked") {
        StorageConfig qcow2 = raw_config(1ull << 30);
        qcow2.image_format = ImageFormat::kQcow2;
        const std::size_t asked = lvm.commands.size();
        CHECK(seam.clone_volume("golden", "ds-run-3", qcow2).error().code ==
              errc::kInvalidArgument);
        CHECK(lvm.commands.size() == asked);
    }
}
