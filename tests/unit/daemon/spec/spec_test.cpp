#include "daemon/spec/spec.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/fio_options.h"
#include "daemon/plan/expand.h"
#include "support/test_data.h"
#include "unit/doc_tables.h"

using namespace ds;

namespace {

const std::filesystem::path kRepoRoot = test::repository_root();

std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path);
    REQUIRE(in.good());
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

SweepSpec parse_ok(const std::string& text, std::string_view source = "test.toml") {
    Result<SweepSpec> spec = parse_sweep_spec(text, source);
    if (!spec.ok()) FAIL(spec.error().message);
    return std::move(spec).value();
}

SweepPlan expand_ok(const SweepSpec& spec) {
    Result<SweepPlan> plan = expand_sweep(spec);
    if (!plan.ok()) FAIL(plan.error().message);
    return std::move(plan).value();
}

std::string parse_error(const std::string& text) {
    Result<SweepSpec> spec = parse_sweep_spec(text, "t.toml");
    REQUIRE_FALSE(spec.ok());
    CHECK(spec.error().code == errc::kInvalidSpec);
    return spec.error().message;
}

std::string expand_error(const SweepSpec& spec) {
    Result<SweepPlan> plan = expand_sweep(spec);
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.error().code == errc::kInvalidSpec);
    return plan.error().message;
}

// A valid spec around a [matrix] body, for error tests: the matrix starts on
// line 3.
std::string with_matrix(const std::string& matrix_lines) {
    return "name = \"t\"\n[matrix]\n" + matrix_lines + "\n[[workload]]\nkind = \"fio\"\n";
}

// A valid spec around one workload's options: they start on line 4.
std::string with_workload(const std::string& option_lines) {
    return "name = \"t\"\n[[workload]]\nkind = \"fio\"\n" + option_lines + "\n";
}

SweepSpec two_workload_spec(std::uint64_t seed, std::string name = "order") {
    SweepSpec spec;
    spec.name = std::move(name);
    spec.seed = seed;
    spec.repetitions = 2;
    spec.matrix["cache"] = {"none", "writeback", "unsafe"};
    spec.workloads = {{"a", "fio", Json::object(), {}, 0}, {"b", "fio", Json::object(), {}, 0}};
    return spec;
}

std::vector<std::pair<int, int>> order_of(const SweepPlan& plan) {
    std::vector<std::pair<int, int>> order;
    for (const auto& run : plan.runs) order.emplace_back(run.config_index, run.workload_index);
    return order;
}

}  // namespace

// ---------------------------------------------------------------------------
// Valid specs

TEST_CASE("the quickstart sweep parses and expands to 4 configs and 12 runs", "[spec]") {
    const SweepSpec spec =
        parse_ok(read_text(kRepoRoot / "config/sweeps/quickstart.toml"), "quickstart.toml");
    CHECK(spec.name == "quickstart");
    // Adaptive: 3 rounds (enough for a verdict), a 4th while a CI is wide.
    CHECK(spec.repetitions == 3);
    CHECK(spec.max_repetitions == 4);
    CHECK(spec.ci_target == Approx(0.20));
    CHECK(spec.baseline ==
          std::map<std::string, std::string>{{"cache", "directsync"}, {"filesystem", "ext4"}});
    CHECK(spec.boot_timeout_s == 300);
    CHECK(spec.run_timeout_s == 900);
    CHECK(spec.matrix.at("cache") == std::vector<std::string>{"directsync", "unsafe"});
    CHECK(spec.matrix.at("filesystem") == std::vector<std::string>{"ext4", "btrfs"});
    REQUIRE(spec.workloads.size() == 1);
    // Synchronous 4k writes, one at a time: what cache=unsafe speeds up.
    CHECK(spec.workloads[0].params == Json{{"rw", "randwrite"},
                                           {"bs", "4k"},
                                           {"ioengine", "psync"},
                                           {"direct", true},
                                           {"options", {{"sync", 1}}},
                                           {"size", "16m"},
                                           {"runtime", "3s"},
                                           {"time_based", true}});

    const SweepPlan plan = expand_ok(spec);
    CHECK(plan.configs.size() == 4);
    CHECK(plan.dropped.empty());
    CHECK(plan.runs.size() == 12);
    CHECK(plan.varying_axes == std::vector<std::string>{"cache", "filesystem"});
    for (const auto& config : plan.configs) {
        CHECK(config.bus == Bus::kScsiSingle);
        CHECK(config.iothread);
        CHECK(config.storage == "file");
    }
    // First axis outermost: cache varies slower than filesystem.
    CHECK(plan.configs[0].cache == CacheMode::kDirectsync);
    CHECK(plan.configs[0].filesystem.type == "ext4");
    CHECK(plan.configs[1].filesystem.type == "btrfs");
    CHECK(plan.configs[2].cache == CacheMode::kUnsafe);
    CHECK(plan.baseline_config == 0);
}

TEST_CASE("the seed-fio sweep expresses the fio reference study", "[spec]") {
    const SweepSpec spec =
        parse_ok(read_text(kRepoRoot / "config/sweeps/seed-fio.toml"), "seed-fio.toml");
    const SweepPlan plan = expand_ok(spec);
    CHECK(plan.configs.size() == 12);  // 2 cache modes x 6 filesystems
    CHECK(plan.runs.size() == 36);     // x 3 repetitions
    CHECK(plan.workloads[0].params.at("iodepth") == 64);
    CHECK(plan.workloads[0].params.at("numjobs") == 4);
    CHECK(plan.configs[0].disk_size_bytes == 4ull << 30);
    const FilesystemSpec& last = plan.configs[5].filesystem;
    CHECK(last.label == "btrfs+single:nodatacow");
    CHECK(last.type == "btrfs");
    CHECK(last.post_format == std::vector<std::string>{"single"});
    CHECK(last.mount_options == "nodatacow");
    CHECK(durability_risks(plan.configs[1]) ==
          std::vector<std::string>{"barrier=0", "data=writeback"});
}

TEST_CASE("a spec using every feature parses to what it says", "[spec]") {
    const SweepSpec spec = parse_ok(read_text(kRepoRoot / "tests/data/specs/every-feature.toml"),
                                    "every-feature.toml");
    CHECK(spec.name == "every-feature");
    CHECK(spec.repetitions == 2);
    CHECK(spec.seed == 42);
    CHECK(spec.boot_timeout_s == 60);
    CHECK(spec.run_timeout_s == 600);
    CHECK(spec.hypervisor == "libvirt");
    CHECK(spec.matrix.at("disk_size") == std::vector<std::string>{"512m", "2147483648"});
    CHECK(spec.matrix.at("iothread") == std::vector<std::string>{"true", "false"});
    REQUIRE(spec.filesystems.count("xfs-nocrc") == 1);
    CHECK(spec.filesystems.at("xfs-nocrc") ==
          FilesystemSpec{"xfs-nocrc", "xfs", {"-m", "crc=0"}, "noatime", {}});

    REQUIRE(spec.workloads.size() == 2);
    CHECK(spec.workloads[0].name == "randrw");
    CHECK(spec.workloads[1].name == "fio-2");  // default: kind + position
    CHECK(spec.workloads[1].params.at("direct") == 1);
    CHECK(spec.workloads[1].params.at("size") == "50%");
    CHECK(spec.workloads[1].params.at("runtime") == 30);

    // 2 storage x 2 sizes x 2 buses x 2 caches x 2 iothread x 4 filesystems.
    // ssd on virtio-blk drops half; aio=native drops cache=unsafe.
    const SweepPlan plan = expand_ok(spec);
    CHECK(plan.configs.size() + plan.dropped.size() == 128);
    CHECK(plan.configs.size() == 32);
    CHECK(plan.runs.size() == 32 * 2 * 2);
    CHECK(plan.varying_axes == std::vector<std::string>{"storage", "disk_size", "bus", "cache",
                                                        "iothread", "filesystem"});
    CHECK(plan.configs[0].storage_pool == "");
    CHECK(plan.configs.back().storage_pool == "fast");
    CHECK(plan.configs.back().disk_size_bytes == 2ull << 30);
    CHECK(plan.configs.back().filesystem.mkfs_options == std::vector<std::string>{"-m", "crc=0"});
}

TEST_CASE("a spec without a matrix takes every axis default", "[spec]") {
    const SweepPlan plan =
        expand_ok(parse_ok(read_text(kRepoRoot / "tests/data/specs/minimal.toml")));
    REQUIRE(plan.configs.size() == 1);
    StorageConfig expected;
    expected.filesystem = FilesystemSpec{"ext4", "ext4", {}, "", {}};
    CHECK(plan.configs[0] == expected);
    CHECK(plan.varying_axes.empty());
    CHECK(plan.runs.size() == 1);
}

TEST_CASE("the example of the brief (named filesystems, scalar axes) parses", "[spec]") {
    const SweepSpec spec = parse_ok(R"(
name = "quickstart"
repetitions = 2
seed = 42
boot_timeout = "60s"
run_timeout = "10m"
[hypervisor]
backend = "libvirt"
[matrix]
bus = ["scsi-single"]
cache = ["none", "unsafe"]
discard = [true]
ssd = true
filesystem = ["ext4", "ext4:barrier=0,data=writeback", "btrfs", "btrfs:nodatacow", "xfs-nocrc"]
[filesystems.xfs-nocrc]
type = "xfs"
mkfs = ["-m", "crc=0"]
mount = "noatime"
post_format = []
[[workload]]
name = "randrw"
kind = "fio"
rw = "randrw"
bs = "4k"
direct = true
ioengine = "libaio"
iodepth = 64
numjobs = 4
size = "256m"
runtime = "10s"
)");
    const SweepPlan plan = expand_ok(spec);
    CHECK(plan.configs.size() == 10);
    CHECK(plan.runs.size() == 20);
}

TEST_CASE("resolve_filesystem reads the shorthand and named filesystems", "[spec]") {
    SweepSpec spec;
    spec.filesystems["fast-xfs"] = FilesystemSpec{"fast-xfs", "xfs", {"-K"}, "", {}};

    Result<FilesystemSpec> full = resolve_filesystem(spec, "btrfs+single+nocow:noatime,nodatacow");
    REQUIRE(full.ok());
    CHECK(full.value() == FilesystemSpec{"btrfs+single+nocow:noatime,nodatacow",
                                         "btrfs",
                                         {},
                                         "noatime,nodatacow",
                                         {"single", "nocow"}});
    Result<FilesystemSpec> named = resolve_filesystem(spec, "fast-xfs");
    REQUIRE(named.ok());
    CHECK(named->mkfs_options == std::vector<std::string>{"-K"});

    auto error_of = [&](std::string_view value) {
        Result<FilesystemSpec> result = resolve_filesystem(spec, value);
        REQUIRE_FALSE(result.ok());
        return result.error().message;
    };
    CHECK(error_of("zfs") ==
          "unknown filesystem 'zfs'; valid filesystems: ext4, xfs, btrfs, fast-xfs. Did you mean "
          "'xfs'? Shorthand: TYPE[+STEP...][:MOUNTOPTS].");
    CHECK(error_of("ext4+single") ==
          "filesystem 'ext4+single': post-format step 'single' is for "
          "btrfs, not ext4");
    CHECK(error_of("btrfs+singel") ==
          "unknown post-format step 'singel' in filesystem 'btrfs+singel'; valid steps: single, "
          "nocow. Did you mean 'single'?");
    CHECK(error_of("ext4:") == "filesystem 'ext4:' has no mount options after ':'");
    CHECK(error_of("xfs:nobarrier") ==
          "filesystem 'xfs:nobarrier': mount option 'nobarrier' is for ext4 and btrfs, not xfs "
          "(xfs removed it in Linux 4.19)");
}

// ---------------------------------------------------------------------------
// Errors name the source, line and column

TEST_CASE("malformed TOML reports toml++'s description at its position", "[spec][errors]") {
    CHECK(parse_error("name = \"t\"\nrepetitions = \n") ==
          "t.toml:2:15: Error while parsing key-value pair: expected value, saw '\\n'");
    CHECK(parse_error("name = \"t\"\n[matrix\n") ==
          "t.toml:2:8: Error while parsing table header: expected ']', saw '\\n'");
    // The sketch in DESIGN.md separates keys with ';', which TOML does not allow.
    CHECK(parse_error("name = \"t\"\n[[workload]]\nkind = \"fio\"; rw = \"read\"\n") ==
          "t.toml:3:13: Error while parsing key-value pair: expected a comment or whitespace, "
          "saw ';' (TOML has no ';' separator: put each key = value on its own line)");
}

TEST_CASE("unknown keys, axes and values name their position and the valid choices",
          "[spec][errors]") {
    CHECK(parse_error("name = \"t\"\nrepetition = 2\n") ==
          "t.toml:2:1: unknown key 'repetition' at the top level; valid keys: name, repetitions, "
          "seed, boot_timeout, run_timeout, hypervisor, guest, matrix, filesystems, tunings, "
          "workload, host_baseline, baseline, practical_difference, min_runs_for_verdict, "
          "durability, "
          "unchecked_levels. Did you mean 'repetitions'?");
    CHECK(parse_error(with_matrix("cach = \"none\"")) ==
          "t.toml:3:1: unknown axis 'cach' in [matrix]; valid axes: storage, image_format, "
          "disk_size, bus, cache, aio, discard, detect_zeroes, ssd, iothread, iops_limit, "
          "bandwidth_limit, queues, scheduler, read_ahead_kb, nr_requests, filesystem, tuning. "
          "Did you mean 'cache'?");
    CHECK(parse_error(with_matrix("cache = [\"none\", \"unsafe\", \"nocache\"]")) ==
          "t.toml:3:28: unknown value 'nocache' for axis 'cache'; valid values: none, writeback, "
          "writethrough, directsync, unsafe.");
    CHECK(parse_error(with_matrix("bus = \"virtio\"")) ==
          "t.toml:3:7: unknown value 'virtio' for axis 'bus'; valid values: virtio-blk, scsi, "
          "scsi-single, sata.");
    CHECK(parse_error(with_matrix("storage = \"ceph\"")) ==
          "t.toml:3:11: unknown storage backend 'ceph'; valid backends: file, block, lvm-thin, "
          "rbd, pve.");
    CHECK(parse_error(with_matrix("filesystem = [\"ext4\", \"ext4+single\"]")) ==
          "t.toml:3:23: filesystem 'ext4+single': post-format step 'single' is for btrfs, not "
          "ext4");
    CHECK(parse_error("name = \"t\"\n[hypervisor]\nbackend = \"kvm\"\n[[workload]]\nkind = "
                      "\"fio\"\n") ==
          "t.toml:3:11: unknown hypervisor backend 'kvm'; valid backends: libvirt, proxmox.");
    CHECK(parse_error("name = \"t\"\n[hypervisor]\nuri = \"x\"\n") ==
          "t.toml:3:1: unknown key 'uri' in [hypervisor]; valid keys: backend, hosts, "
          "identical_hosts.");
}

TEST_CASE("spec: PVE's per-direction and burst limits are refused with the reason", "[spec]") {
    for (const char* key : {"iops_rd", "mbps_wr", "iops_max", "mbps_rd_max", "bps_wr"}) {
        const std::string text = std::string("name = \"t\"\n[matrix]\n") + key +
                                 " = 500\n[[workload]]\nkind = \"fio\"\n";
        auto parsed = parse_sweep_spec(text, "t.toml");
        REQUIRE_FALSE(parsed.ok());
        CHECK_THAT(parsed.error().message, Catch::Contains(std::string("'") + key +
                                                           "' in [matrix]: per-direction and "
                                                           "burst limits are not swept"));
    }
}

TEST_CASE("wrong types name the key and the expected type", "[spec][errors]") {
    CHECK(parse_error("name = \"t\"\nrepetitions = \"2\"\n") ==
          "t.toml:2:15: 'repetitions' must be an integer or a table like { min = 3, max = 10, ci = "
          "\"3%\" }, not a string");
    CHECK(parse_error("name = 3\n") == "t.toml:1:8: 'name' must be a string, not an integer");
    CHECK(parse_error("name = \"t\"\nseed = 1.5\n") ==
          "t.toml:2:8: 'seed' must be an integer, not a float");
    CHECK(parse_error(with_matrix("ssd = \"true\"")) ==
          "t.toml:3:7: values of axis 'ssd' must be true or false, not a string");
    CHECK(parse_error(with_matrix("cache = [\"none\", 1]")) ==
          "t.toml:3:18: values of axis 'cache' must be a string, not an integer");
    CHECK(parse_error("name = \"t\"\nrun_timeout = \"10 minutes\"\n") ==
          "t.toml:2:15: 'run_timeout' '10 minutes' is not a duration; write e.g. \"90s\", "
          "\"10m\", \"1h\" or whole seconds");
    CHECK(parse_error("name = \"t\"\nrepetitions = 0\n") ==
          "t.toml:2:15: 'repetitions' must be between 1 and 10000");
    CHECK(parse_error("name = \"my sweep\"\n") ==
          "t.toml:1:8: 'name' 'my sweep' must be 1 to 64 of A-Z a-z 0-9 . _ -");
}

TEST_CASE("empty axes, missing name and missing workloads are errors", "[spec][errors]") {
    CHECK(parse_error(with_matrix("cache = []")) ==
          "t.toml:3:9: axis 'cache' in [matrix] lists no values; list at least one, or leave the "
          "axis out for its default 'none'");
    CHECK(parse_error(with_matrix("cache = [\"none\", \"none\"]")) ==
          "t.toml:3:18: value 'none' of axis 'cache' is listed twice");
    CHECK(parse_error("repetitions = 2\n") ==
          "t.toml: missing required key 'name' (the sweep's name)");
    CHECK(parse_error("name = \"t\"\n[matrix]\ncache = \"none\"\n") ==
          "t.toml: no [[workload]]: a sweep needs at least one workload to run");
    CHECK(parse_error("name = \"t\"\n[workload]\nkind = \"fio\"\n") ==
          "t.toml:2:1: 'workload' must be an array of tables: write each as [[workload]]");
}

TEST_CASE("workload options are checked against the kind's option table", "[spec][errors]") {
    CHECK(parse_error(with_workload("blocksize = \"4k\"")) ==
          "t.toml:4:1: unknown fio option 'blocksize' in workload 'fio-1'; valid options: rw, bs, "
          "size, runtime, iodepth, numjobs, direct, ioengine, rwmixread, time_based, ramp_time, "
          "fsync, end_fsync, iodepth_batch_submit, iodepth_batch_complete, options, job_file. "
          "Every workload also takes: kind, name, filesystems, timeout, dataset.");
    CHECK(parse_error(with_workload("rw = \"random\"")) ==
          "t.toml:4:6: unknown value 'random' for 'rw'; valid values: read, write, randread, "
          "randwrite, rw, readwrite, randrw. Did you mean 'randrw'?");
    CHECK(parse_error(with_workload("ioengine = \"aio\"")) ==
          "t.toml:4:12: unknown value 'aio' for 'ioengine'; valid values: sync, psync, vsync, "
          "pvsync, pvsync2, libaio, io_uring, posixaio, mmap, splice, falloc, ftruncate, "
          "filecreate, filestat, filedelete, null.");
    CHECK(parse_error(with_workload("iodepth = \"64\"")) ==
          "t.toml:4:11: 'iodepth' must be an integer, not a string");
    CHECK(parse_error(with_workload("numjobs = 0")) ==
          "t.toml:4:11: 'numjobs' in workload 'fio-1': must be >= 1");
    CHECK(parse_error(with_workload("bs = \"4q\"")) ==
          "t.toml:4:6: 'bs' in workload 'fio-1': '4q' is not a size; write e.g. \"4k\", \"256m\" "
          "or bytes");
    CHECK(parse_error(with_workload("direct = \"yes\"")) ==
          "t.toml:4:10: 'direct' must be a boolean (or 0/1), not a string");
    CHECK(parse_error(with_workload("rwmixread = 101")) ==
          "t.toml:4:13: 'rwmixread' in workload 'fio-1': must be between 0 and 100");
    CHECK(parse_error(with_workload("time_based = true")) ==
          "t.toml:2:1: workload 'fio-1' sets time_based without runtime; fio would run forever");
    CHECK(parse_error("name = \"t\"\n[[workload]]\nkind = \"sql-bench\"\n") ==
          "t.toml:3:8: unknown workload kind 'sql-bench'; valid kinds: fio, io, mariadb-atis, "
          "sysbench-oltp, ledger, pgbench.");
    CHECK(parse_error("name = \"t\"\n[[workload]]\nrw = \"read\"\n") ==
          "t.toml:2:1: [[workload]] #1 has no 'kind'; valid kinds: fio, io, mariadb-atis, "
          "sysbench-oltp, ledger, pgbench");
    // An option of another variant, named with the workload's position.
    CHECK(parse_error("name = \"t\"\n[[workload]]\nkind = \"ledger\"\nname = \"l\"\n"
                      "server = { innodb_flush_log_at_trx_commit = 2 }\n") ==
          "t.toml:2:1: workload 'l': ledger param 'server' is for the database or postgresql "
          "variant only");
    CHECK(parse_error("name = \"t\"\n[[workload]]\nkind = \"fio\"\nname = \"x\"\n[[workload]]\n"
                      "kind = \"fio\"\nname = \"x\"\n") ==
          "t.toml:5:1: workload name 'x' is used twice; names must be unique");
}

TEST_CASE("named filesystems are checked", "[spec][errors]") {
    CHECK(parse_error("name = \"t\"\n[filesystems.ext4]\ntype = \"ext4\"\n") ==
          "t.toml:2:14: filesystem name 'ext4' is a filesystem type; pick another name");
    CHECK(parse_error("name = \"t\"\n[filesystems.fast]\ntype = \"xfs\"\nmkfs = \"-K\"\n") ==
          "t.toml:4:8: 'mkfs' must be an array of strings (mkfs arguments, in order), not a "
          "string");
    CHECK(parse_error("name = \"t\"\n[filesystems.fast]\ntype = \"xfs\"\nmount_opts = \"\"\n") ==
          "t.toml:4:1: unknown key 'mount_opts' in [filesystems.fast]; valid keys: type, mkfs, "
          "mount, post_format.");
    CHECK(parse_error("name = \"t\"\n[filesystems.fast]\ntype = \"xfs\"\npost_format = "
                      "[\"nocow\"]\n") ==
          "t.toml:2:1: [filesystems.fast]: post-format step 'nocow' is for btrfs, not xfs");
    CHECK(parse_error("name = \"t\"\n[filesystems.fast]\nmount = \"noatime\"\n") ==
          "t.toml:2:1: missing required key 'type' in [filesystems.fast]");
}

// ---------------------------------------------------------------------------
// Expansion

TEST_CASE("expansion drops ssd on virtio-blk with its reason", "[spec][expand]") {
    SweepSpec spec = parse_ok(with_matrix("bus = [\"virtio-blk\", \"scsi\"]\nssd = [true, false]"));
    const SweepPlan plan = expand_ok(spec);
    REQUIRE(plan.configs.size() == 3);
    REQUIRE(plan.dropped.size() == 1);
    CHECK(plan.dropped[0].reason ==
          "virtio-blk has no rotation rate; ssd needs scsi, scsi-single or sata");
    CHECK(plan.dropped[0].settings.at("bus") == "virtio-blk");
    CHECK(plan.dropped[0].settings.at("ssd") == true);
    for (const auto& config : plan.configs) CHECK(impossible_reason(config) == "");
    CHECK(plan.varying_axes == std::vector<std::string>{"bus", "ssd"});
}

TEST_CASE("expansion fails when every combination is dropped", "[spec][expand]") {
    SweepSpec spec =
        parse_ok(with_matrix("bus = \"virtio-blk\"\nssd = true\ncache = [\"none\", "
                             "\"unsafe\"]"));
    CHECK(expand_error(spec) ==
          "all 2 combinations were dropped: virtio-blk has no rotation rate; ssd needs scsi, "
          "scsi-single or sata");
}

TEST_CASE("expansion refuses more than 10000 runs", "[spec][expand]") {
    SweepSpec spec = two_workload_spec(1);
    spec.repetitions = 2000;  // 3 configs x 2 workloads x 2000 = 12000
    CHECK(expand_error(spec) ==
          "the sweep would schedule up to 12000 runs ((3 configurations x 2 workloads) x 2000 "
          "repetitions); the limit is 10000");

    SweepSpec huge;
    huge.name = "huge";
    huge.workloads = {{"a", "fio", Json::object(), {}, 0}};
    for (int megabytes = 1; megabytes <= 200; ++megabytes)
        huge.matrix["disk_size"].push_back(std::to_string(megabytes) + "m");
    huge.matrix["cache"] = {"none", "writeback", "writethrough", "directsync", "unsafe"};
    huge.matrix["aio"] = {"default", "threads", "native", "io_uring"};
    huge.matrix["detect_zeroes"] = {"off", "on", "unmap"};
    CHECK(expand_error(huge) ==
          "the matrix has more than 10000 combinations; the limit is 10000 runs");
}

TEST_CASE("expansion checks programmatic specs too", "[spec][expand]") {
    SweepSpec spec = two_workload_spec(1);
    spec.matrix["disk_size"] = {"1g", "1024m"};
    CHECK(expand_error(spec) == "axis 'disk_size': '1024m' and '1g' are the same setting");

    spec = two_workload_spec(1);
    spec.matrix["cach"] = {"none"};
    CHECK_THAT(expand_error(spec), Catch::StartsWith("unknown axis 'cach' in [matrix]"));

    spec = two_workload_spec(1);
    spec.workloads.clear();
    CHECK(expand_error(spec) == "a sweep needs at least one workload");
}

// ---------------------------------------------------------------------------
// Run order

TEST_CASE("each repetition round contains every (config, workload) pair once", "[spec][order]") {
    const SweepPlan plan = expand_ok(two_workload_spec(7));
    REQUIRE(plan.runs.size() == 12);
    for (int round = 0; round < 2; ++round) {
        std::set<std::pair<int, int>> pairs;
        for (int i = 0; i < 6; ++i) {
            const PlannedRun& run = plan.runs[static_cast<std::size_t>(round * 6 + i)];
            CHECK(run.repetition == round);
            CHECK(run.sequence == round * 6 + i);
            pairs.emplace(run.config_index, run.workload_index);
        }
        CHECK(pairs.size() == 6);
    }
}

TEST_CASE("run order is deterministic for a seed and differs across seeds", "[spec][order]") {
    CHECK(order_of(expand_ok(two_workload_spec(42))) == order_of(expand_ok(two_workload_spec(42))));
    CHECK(order_of(expand_ok(two_workload_spec(42))) != order_of(expand_ok(two_workload_spec(43))));
    // Seed 0: derived from the name, so stable per name.
    CHECK(order_of(expand_ok(two_workload_spec(0, "x"))) ==
          order_of(expand_ok(two_workload_spec(0, "x"))));
    CHECK(order_of(expand_ok(two_workload_spec(0, "x"))) !=
          order_of(expand_ok(two_workload_spec(0, "y"))));
}

TEST_CASE("run order matches the documented splitmix64 shuffle", "[spec][order]") {
    // Computed by an independent Python transcription of docs/spec.md's
    // algorithm; pins the order across platforms and compilers.
    const std::vector<std::pair<int, int>> expected = {
        {2, 0}, {1, 1}, {0, 0}, {1, 0}, {2, 1}, {0, 1},
        {1, 0}, {1, 1}, {0, 1}, {2, 0}, {2, 1}, {0, 0},
    };
    CHECK(order_of(expand_ok(two_workload_spec(42))) == expected);
}

// ---------------------------------------------------------------------------
// Documentation

TEST_CASE("every complete example in docs/spec.md parses and expands", "[spec][docs]") {
    // Fenced ```toml blocks whose first line is "# complete example" must be
    // valid; other blocks are fragments or future syntax.
    const std::string doc = read_text(kRepoRoot / "docs/spec.md");
    std::size_t examples = 0;
    std::size_t position = 0;
    while ((position = doc.find("```toml\n", position)) != std::string::npos) {
        position += 8;
        const std::size_t end = doc.find("```", position);
        REQUIRE(end != std::string::npos);
        const std::string block = doc.substr(position, end - position);
        position = end + 3;
        if (block.rfind("# complete example", 0) != 0) continue;
        ++examples;
        INFO(block);
        expand_ok(parse_ok(block, "docs/spec.md"));
    }
    CHECK(examples >= 2);
}

// ---------------------------------------------------------------------------
// Block-layer axes, workload kinds beyond fio, `filesystems` and `timeout`.

namespace {

std::string parse_message(const std::string& text) {
    Result<SweepSpec> spec = parse_sweep_spec(text, "t.toml");
    REQUIRE_FALSE(spec.ok());
    CHECK(spec.error().code == errc::kInvalidSpec);
    return spec.error().message;
}

// A valid spec around one workload of `kind`: its options start on line 4.
std::string with_kind(const std::string& kind, const std::string& option_lines) {
    return "name = \"t\"\n[[workload]]\nkind = \"" + kind + "\"\n" + option_lines + "\n";
}

}  // namespace

TEST_CASE("block-layer axes take their values and name bad ones with a position",
          "[spec][errors]") {
    SweepSpec spec = parse_ok(
        "name = \"t\"\n[matrix]\nscheduler = [\"default\", \"bfq\"]\nread_ahead_kb = [0, "
        "\"default\"]\nnr_requests = 64\n[[workload]]\nkind = \"fio\"\n");
    Result<SweepPlan> plan = expand_sweep(spec);
    REQUIRE(plan.ok());
    REQUIRE(plan->configs.size() == 4);
    CHECK(plan->varying_axes == std::vector<std::string>{"scheduler", "read_ahead_kb"});
    CHECK(plan->configs[0].scheduler == IoScheduler::kDefault);
    CHECK(plan->configs[0].read_ahead_kb == std::optional<std::uint64_t>(0));
    CHECK(plan->configs[1].read_ahead_kb == std::nullopt);
    CHECK(plan->configs[2].scheduler == IoScheduler::kBfq);
    for (const auto& config : plan->configs) CHECK(config.nr_requests == 64u);

    CHECK(parse_message("name = \"t\"\n[matrix]\nscheduler = \"cfq\"\n[[workload]]\nkind = "
                        "\"fio\"\n") ==
          "t.toml:3:13: unknown value 'cfq' for axis 'scheduler'; valid values: default, none, "
          "mq-deadline, bfq, kyber. Did you mean 'bfq'?");
    CHECK(parse_message("name = \"t\"\n[matrix]\nnr_requests = [0]\n[[workload]]\nkind = "
                        "\"fio\"\n") ==
          "t.toml:3:16: axis 'nr_requests' takes \"default\" or an integer >= 1, not '0'");
    CHECK(parse_message("name = \"t\"\n[matrix]\nread_ahead_kb = -1\n[[workload]]\nkind = "
                        "\"fio\"\n") ==
          "t.toml:3:17: values of axis 'read_ahead_kb' must not be negative");
    CHECK(parse_message("name = \"t\"\n[matrix]\nread_ahead_kb = \"lots\"\n[[workload]]\nkind = "
                        "\"fio\"\n") ==
          "t.toml:3:17: axis 'read_ahead_kb' takes \"default\" or an integer >= 0, not 'lots'");
}

TEST_CASE("workload kinds io, mariadb-atis and sysbench-oltp check their options",
          "[spec][errors]") {
    SweepSpec spec = parse_ok(
        "name = \"t\"\n"
        "[[workload]]\nkind = \"io\"\nrw = \"randrw\"\nbs = \"4k\"\nioengine = \"libaio\"\n"
        "iodepth = 64\nruntime = \"10s\"\ntime_based = true\n"
        "[[workload]]\nname = \"atis\"\nkind = \"mariadb-atis\"\nloop_count = 50\nsmall_test = "
        "true\ntime_limit = 20\n"
        "server = { innodb_doublewrite = 0, innodb_flush_method = \"O_DSYNC\", "
        "innodb_file_per_table = true }\n"
        "[[workload]]\nkind = \"sysbench-oltp\"\ntest = \"oltp_read_only\"\ntables = 2\n"
        "table_size = 1000\nthreads = 4\ntime = \"30s\"\n");
    REQUIRE(spec.workloads.size() == 3);
    CHECK(spec.workloads[0].params.at("ioengine") == "libaio");
    CHECK(spec.workloads[1].params == Json{{"loop_count", 50},
                                           {"small_test", true},
                                           {"time_limit", 20},
                                           {"server",
                                            {{"innodb_doublewrite", 0},
                                             {"innodb_flush_method", "O_DSYNC"},
                                             {"innodb_file_per_table", true}}}});
    CHECK(spec.workloads[2].name == "sysbench-oltp-3");
    CHECK(spec.workloads[2].params.at("time") == "30s");

    CHECK(parse_message(with_kind("io", "verify = \"crc32c\"")) ==
          "t.toml:4:1: unknown io option 'verify' in workload 'io-1'; valid options: ioengine, "
          "rw, readwrite, rwmixread, bs, blocksize, iodepth, numjobs, size, direct, runtime, "
          "time_based, ramp_time, iodepth_batch_submit, iodepth_batch, "
          "iodepth_batch_complete_min, iodepth_batch_complete, iodepth_batch_complete_max, "
          "iodepth_low, group_reporting, thread, userspace_reap, ring_first, fixedbufs, "
          "registerfiles, sqthread_poll, nonvectored. Every workload also takes: kind, name, "
          "filesystems, timeout, dataset.");
    CHECK(
        parse_message(with_kind("io", "filename = \"/dev/sdb\"")) ==
        "t.toml:4:1: workload 'io-1': io job option 'filename' is set by the agent: the workload's "
        "files are <workload name>.<job>.0 in the mount point of the filesystem under test");
    CHECK(parse_message(with_kind("io", "ioengine = \"posixaio\"")) ==
          "t.toml:4:12: 'ioengine' in workload 'io-1': \"posixaio\" is not supported; "
          "supported: libaio, io_uring, psync, null");
    CHECK(parse_message(with_kind("mariadb-atis", "server = { \"Innodb-Doublewrite\" = 0 }")) ==
          "t.toml:4:12: 'server' in workload 'mariadb-atis-1': server variable name "
          "'Innodb-Doublewrite' must be lower-case letters, digits and _ (as SHOW VARIABLES "
          "prints it)");
    CHECK(parse_message(with_kind("mariadb-atis", "server = { innodb_buffer_pool_size = [1] }")) ==
          "t.toml:4:38: 'server' in workload 'mariadb-atis-1': 'innodb_buffer_pool_size' must "
          "be a string, an integer or a boolean, not an array");
    CHECK(parse_message(with_kind("mariadb-atis", "server = \"innodb_doublewrite=0\"")) ==
          "t.toml:4:10: 'server' must be a table of server variables, e.g. { innodb_doublewrite "
          "= 0 }, not a string");
    CHECK(parse_message(with_kind("mariadb-atis", "loop_count = 0")) ==
          "t.toml:4:14: 'loop_count' in workload 'mariadb-atis-1': must be >= 1");
    CHECK(parse_message(with_kind("mariadb-atis", "small_test = 1")) ==
          "t.toml:4:14: 'small_test' must be a boolean, not an integer");
    CHECK(parse_message(with_kind("sysbench-oltp", "test = \"oltp_readwrite\"")) ==
          "t.toml:4:8: unknown value 'oltp_readwrite' for 'test'; valid values: oltp_read_write, "
          "oltp_read_only, oltp_write_only, oltp_point_select, oltp_insert, oltp_update_index, "
          "oltp_update_non_index, oltp_delete. Did you mean 'oltp_read_write'?");
    CHECK(parse_message(with_kind("sysbench-oltp", "time = \"10 s\"")) ==
          "t.toml:4:8: 'time' '10 s' is not a duration; write e.g. \"90s\", \"10m\", \"1h\" or "
          "whole seconds");
}

TEST_CASE("fio passes options and job files through, refusing the agent's own", "[spec][errors]") {
    SweepSpec spec = parse_ok(
        with_kind("fio",
                  "rw = \"randwrite\"\noptions = { fdatasync = 1, \"lat_percentiles\" = true, "
                  "ioengine = \"pvsync2\" }"));
    CHECK(spec.workloads[0].params.at("options") ==
          Json{{"fdatasync", 1}, {"lat_percentiles", true}, {"ioengine", "pvsync2"}});
    spec =
        parse_ok(with_kind("fio", "job_file = \"[global]\\nrw=randread\\n[job1]\\nsize=16m\\n\""));
    CHECK(spec.workloads[0].params.at("job_file") == "[global]\nrw=randread\n[job1]\nsize=16m\n");

    CHECK(parse_message(with_kind("fio", "options = { directory = \"/tmp\" }")) ==
          "t.toml:4:13: 'options' in workload 'fio-1': fio option 'directory' is set by the "
          "agent and cannot be overridden: the agent runs the job in the mount point of the "
          "filesystem under test");
    CHECK(parse_message(with_kind("fio", "options = { \"--bs\" = \"4k\" }")) ==
          "t.toml:4:13: 'options' in workload 'fio-1': fio option name '--bs' must not be empty, "
          "start with '-' or contain '=' or whitespace");
    CHECK(parse_message(with_kind("fio", "options = { bs = { read = 1 } }")) ==
          "t.toml:4:18: 'options' in workload 'fio-1': 'bs' must be a string, an integer or a "
          "boolean, not a table");
    CHECK(parse_message(with_kind("fio", "bs = \"4k\"\noptions = { bs = \"8k\" }")) ==
          "t.toml:5:11: workload 'fio-1' sets 'bs' both as an option and in 'options'; set it "
          "once");
    CHECK(parse_message(with_kind("fio", "job_file = \"[j]\"\nrw = \"read\"")) ==
          "t.toml:2:1: workload 'fio-1' has job_file and other fio options; a job file is the "
          "whole job: put them in the file");
    CHECK(parse_message(with_kind("fio", "job_file = \"\"")) ==
          "t.toml:4:12: 'job_file' in workload 'fio-1': must not be empty");
}

TEST_CASE("a workload's filesystems are matrix values as written, others are errors",
          "[spec][errors]") {
    const std::string matrix =
        "name = \"t\"\n[matrix]\nfilesystem = [\"ext4\", \"btrfs+nocow\", \"xfs-big\"]\n"
        "[filesystems.xfs-big]\ntype = \"xfs\"\n";
    SweepSpec spec = parse_ok(matrix +
                              "[[workload]]\nkind = \"fio\"\nfilesystems = [\"btrfs+nocow\", "
                              "\"xfs-big\"]\ntimeout = \"5m\"\n");
    CHECK(spec.workloads[0].filesystems == std::vector<std::string>{"btrfs+nocow", "xfs-big"});
    CHECK(spec.workloads[0].timeout_s == 300);
    CHECK(spec.workloads[0].params == Json::object());  // common keys are not options

    CHECK(parse_message(matrix + "[[workload]]\nkind = \"fio\"\nfilesystems = [\"ext4\", "
                                 "\"btrfs\"]\n") ==
          "t.toml:8:24: 'filesystems' in workload 'fio-1': 'btrfs' is not a value of "
          "matrix.filesystem (as written there); its values: ext4, btrfs+nocow, xfs-big.");
    CHECK(parse_message(matrix + "[[workload]]\nkind = \"fio\"\nfilesystems = \"ext4\"\n") ==
          "t.toml:8:15: 'filesystems' must be an array of matrix.filesystem values, not a string");
    CHECK(parse_message(matrix + "[[workload]]\nkind = \"fio\"\nfilesystems = []\n") ==
          "t.toml:8:15: 'filesystems' in workload 'fio-1' is empty; leave it out to run on every "
          "filesystem");
    CHECK(parse_message(matrix + "[[workload]]\nkind = \"fio\"\ntimeout = 0\n") ==
          "t.toml:8:11: 'timeout' must be a positive duration");
    // Without matrix.filesystem the axis default is the only value.
    CHECK(parse_message(with_kind("fio", "filesystems = [\"xfs\"]")) ==
          "t.toml:4:16: 'filesystems' in workload 'fio-1': 'xfs' is not a value of "
          "matrix.filesystem (as written there); its values: ext4.");
}

TEST_CASE("expansion pairs a workload only with the filesystems it lists", "[spec][expand]") {
    SweepSpec spec = parse_ok(
        "name = \"t\"\nrepetitions = 2\n[matrix]\ncache = [\"none\", \"unsafe\"]\n"
        "filesystem = [\"ext4\", \"btrfs\", \"btrfs+nocow\"]\n"
        "[[workload]]\nname = \"all\"\nkind = \"fio\"\n"
        "[[workload]]\nname = \"some\"\nkind = \"fio\"\nfilesystems = [\"btrfs+nocow\"]\n");
    Result<SweepPlan> plan = expand_sweep(spec);
    REQUIRE(plan.ok());
    REQUIRE(plan->configs.size() == 6);
    // 6 configurations x 2 workloads = 12 pairs, of which "some" skips the 4
    // configurations that are not btrfs+nocow: 8 pairs x 2 repetitions.
    CHECK(plan->skipped_pairs == 4);
    CHECK(plan->runs.size() == 16);
    std::map<std::string, int> runs_per_workload_and_fs;
    for (const auto& run : plan->runs) {
        const auto& config = plan->configs[run.config_index];
        runs_per_workload_and_fs[plan->workloads[run.workload_index].name + "/" +
                                 config.filesystem.label]++;
    }
    CHECK(runs_per_workload_and_fs ==
          std::map<std::string, int>{
              {"all/btrfs", 4}, {"all/btrfs+nocow", 4}, {"all/ext4", 4}, {"some/btrfs+nocow", 4}});
    // Sequences stay 0..N-1 and each round holds every pair once.
    for (std::size_t i = 0; i < plan->runs.size(); ++i) CHECK(plan->runs[i].sequence == int(i));
    CHECK(std::count_if(plan->runs.begin(), plan->runs.end(),
                        [](const PlannedRun& run) { return run.repetition == 0; }) == 8);
}

TEST_CASE("a workload whose filesystems were all dropped is an error", "[spec][expand]") {
    SweepSpec spec = parse_ok(
        "name = \"t\"\n[matrix]\ndisk_size = \"100m\"\nfilesystem = [\"ext4\", \"xfs\"]\n"
        "[[workload]]\nkind = \"fio\"\n"
        "[[workload]]\nname = \"x\"\nkind = \"fio\"\nfilesystems = [\"xfs\"]\n");
    Result<SweepPlan> plan = expand_sweep(spec);
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.error().message ==
          "workload 'x' runs on no configuration: every configuration with filesystem xfs was "
          "dropped");
}

TEST_CASE("the seed-atis sweep expresses the MariaDB reference study", "[spec]") {
    SweepSpec spec =
        parse_ok(read_text(kRepoRoot / "config/sweeps/seed-atis.toml"), "seed-atis.toml");
    CHECK(spec.tuning_axis == std::vector<std::string>{"defaults", "dw0-odsync", "dw0-nosync"});
    Result<SweepPlan> plan = expand_sweep(spec);
    REQUIRE(plan.ok());
    CHECK(plan->configs.size() == 5);
    // The one workload under each tuning: as written, then the two variants.
    REQUIRE(plan->workloads.size() == 3);
    CHECK(plan->workloads[0].name == "atis");
    CHECK(plan->workloads[0].tuning.empty());
    CHECK(plan->workloads[0].params == Json::object());
    CHECK(plan->workloads[1].name == "atis.dw0-odsync");
    CHECK(plan->workloads[1].tuning == "dw0-odsync");
    CHECK(plan->workloads[1].variant_of == "atis");
    CHECK(plan->workloads[1].params.at("server") ==
          Json{{"innodb_doublewrite", 0}, {"innodb_flush_method", "O_DSYNC"}});
    CHECK(plan->workloads[2].name == "atis.dw0-nosync");
    CHECK(plan->workloads[2].params.at("server") ==
          Json{{"innodb_doublewrite", 0}, {"innodb_flush_method", "nosync"}});
    CHECK(plan->workloads[2].filesystems == std::vector<std::string>{"ext4", "btrfs"});
    // One baseline: ext4 with InnoDB's defaults.
    REQUIRE(plan->baseline_config >= 0);
    CHECK(plan->configs[static_cast<std::size_t>(plan->baseline_config)].filesystem.label ==
          "ext4");
    CHECK(plan->baseline_tuning == "defaults");
    // defaults on 5 filesystems, the two tunings on ext4 and btrfs: 9 pairs.
    CHECK(plan->skipped_pairs == 6);
    CHECK(plan->runs.size() == 9u * static_cast<std::size_t>(spec.repetitions));
    // The tuning is the workload's: the configurations' identities do not
    // change with it (five configurations, as without the axis).
    std::set<std::string> ids;
    for (const auto& config : plan->configs) ids.insert(config_id(config));
    CHECK(ids.size() == 5);
}

namespace {

// A matrix of two filesystems with a tuning axis, one MariaDB workload
// (`workload_lines` below [[workload]]) and one fio workload.
std::string tuned_spec(const std::string& tuning_axis, const std::string& tunings,
                       const std::string& workload_lines = "") {
    return "name = \"t\"\n[matrix]\nfilesystem = [\"ext4\", \"btrfs\"]\ntuning = " + tuning_axis +
           "\n" + tunings +
           "\n[[workload]]\nname = \"atis\"\nkind = "
           "\"mariadb-atis\"\n" +
           workload_lines + "\n[[workload]]\nname = \"io\"\nkind = \"fio\"\n";
}

}  // namespace

TEST_CASE("the tuning axis runs each tuning as a variant of the workload", "[spec][tuning]") {
    const SweepSpec spec =
        parse_ok(tuned_spec("[\"defaults\", \"nosync\"]",
                            "[tunings.nosync]\nserver = { innodb_flush_method = \"nosync\" }\n"
                            "filesystems = [\"ext4\"]",
                            "server = { innodb_buffer_pool_size = \"64M\" }"));
    CHECK(spec.tunings.at("nosync").server == Json{{"innodb_flush_method", "nosync"}});
    const SweepPlan plan = expand_ok(spec);
    // atis as written, atis under nosync, fio once (a tuning sets nothing of fio).
    REQUIRE(plan.workloads.size() == 3);
    CHECK(plan.workloads[0].name == "atis");
    CHECK(plan.workloads[1].name == "atis.nosync");
    CHECK(plan.workloads[1].params.at("server") ==
          Json{{"innodb_buffer_pool_size", "64M"}, {"innodb_flush_method", "nosync"}});
    CHECK(plan.workloads[2].name == "io");
    CHECK(plan.workloads[2].tuning.empty());
    // 2 configurations x (atis + io) + nosync on ext4 only.
    CHECK(plan.runs.size() == 5);
    CHECK(plan.skipped_pairs == 1);
    CHECK(plan.baseline_tuning == "defaults");
    // The variant records what it is, and reads back as it was written.
    const Json json = to_json(plan.workloads[1]);
    CHECK(json.at("tuning") == "nosync");
    CHECK(json.at("variant_of") == "atis");
    CHECK(workload_from_json(json).value() == plan.workloads[1]);
    // The workload as written serialises as it did before the axis existed.
    CHECK_FALSE(to_json(plan.workloads[0]).contains("tuning"));

    // Without "defaults" only the tunings run; the first is the baseline's.
    const SweepPlan only_tuned = expand_ok(parse_ok(tuned_spec(
        "\"nosync\"", "[tunings.nosync]\nserver = { innodb_flush_method = \"nosync\" }")));
    REQUIRE(only_tuned.workloads.size() == 2);
    CHECK(only_tuned.workloads[0].name == "atis.nosync");
    CHECK(only_tuned.baseline_tuning == "nosync");
}

TEST_CASE("tunings and the tuning axis: errors name the key and its position",
          "[spec][tuning][errors]") {
    const std::string nosync = "[tunings.nosync]\nserver = { innodb_flush_method = \"nosync\" }";
    CHECK(parse_message(tuned_spec("[\"defaults\", \"nosnyc\"]", nosync)) ==
          "t.toml:4:23: unknown tuning 'nosnyc' in [matrix]; valid tunings: defaults, nosync. "
          "Did you mean 'nosync'? A tuning is a [tunings.NAME] table.");
    CHECK(parse_message(tuned_spec("[\"nosync\", \"nosync\"]", nosync)) ==
          "t.toml:4:21: value 'nosync' of axis 'tuning' is listed twice");
    CHECK(parse_message(tuned_spec("[]", nosync)) ==
          "t.toml:4:10: axis 'tuning' in [matrix] lists no values; list at least one, or leave "
          "the axis out to run the workloads as written");
    CHECK(parse_message(tuned_spec("\"x\"", "[tunings.x]\nfilesystems = [\"ext4\"]")) ==
          "t.toml:5:1: missing required key 'server' in [tunings.x] (the MariaDB server "
          "variables the tuning sets)");
    CHECK(parse_message(tuned_spec("\"x\"", "[tunings.x]\nserver = { Bad = 1 }")) ==
          "t.toml:6:12: 'server' in tuning 'x': server variable name 'Bad' must be lower-case "
          "letters, digits and _ (as SHOW VARIABLES prints it)");
    CHECK(parse_message(tuned_spec("\"x\"", "[tunings.x]\nserver = { a = 1 }\nfio = 2")) ==
          "t.toml:7:1: unknown key 'fio' in [tunings.x]; valid keys: server, filesystems.");
    CHECK(parse_message(
              tuned_spec("\"x\"", "[tunings.x]\nserver = { a = 1 }\nfilesystems = [\"xfs\"]")) ==
          "t.toml:7:16: 'filesystems' in tuning 'x': 'xfs' is not a value of matrix.filesystem "
          "(as written there); its values: ext4, btrfs.");
    CHECK(parse_message(tuned_spec("\"defaults\"", "[tunings.defaults]\nserver = { a = 1 }"))
              .starts_with("t.toml:5:10: tuning name 'defaults' must be"));
    // The baseline's tuning is a value of the axis.
    CHECK(parse_message("name = \"t\"\nbaseline = { tuning = \"x\" }\n[[workload]]\nkind = "
                        "\"fio\"\n") ==
          "t.toml:2:23: baseline.tuning = 'x' is not a value of the matrix; [matrix] tuning has: "
          "defaults");
    // A variable both the workload and the tuning set; no filesystem in common.
    CHECK(expand_error(parse_ok(tuned_spec("\"nosync\"", nosync,
                                           "server = { innodb_flush_method = \"O_DSYNC\" }"))) ==
          "tuning 'nosync' sets server variable 'innodb_flush_method', which workload 'atis' "
          "sets itself; set it in one place");
    CHECK(expand_error(parse_ok(tuned_spec("\"nosync\"", nosync + "\nfilesystems = [\"btrfs\"]",
                                           "filesystems = [\"ext4\"]"))) ==
          "workload 'atis' and tuning 'nosync' share no filesystem: their 'filesystems' lists "
          "have none in common");
}

TEST_CASE("docs/spec.md's top-level keys are the keys the parser takes", "[spec][docs]") {
    const auto sections =
        test::doc_sections(test::repository_text("docs/spec.md"), 2, "Top-level keys");
    REQUIRE(sections.size() == 1);
    // The section's own table, not those of its subsections ([hypervisor]).
    const std::string table = sections[0].body.substr(0, sections[0].body.find("\n### "));
    std::set<std::string> documented;
    for (const auto& row : test::table_rows(table, {"key", "type", "default", "meaning"})) {
        // `name`, `[matrix]`, `[filesystems.NAME]`, `[[workload]]`: the key itself.
        std::string key = row.at(0);
        key.erase(std::remove_if(key.begin(), key.end(),
                                 [](char c) { return c == '`' || c == '[' || c == ']'; }),
                  key.end());
        documented.insert(key.substr(0, key.find('.')));
    }
    const auto keys = spec_top_level_keys();
    CHECK(documented == std::set<std::string>(keys.begin(), keys.end()));
}

// ---------------------------------------------------------------------------
// One meaning for sizes; no way off the filesystem under test (issue 9).

TEST_CASE("disk_size keeps its documented meaning: every prefix a power of 1024", "[spec]") {
    SweepSpec spec = parse_ok(with_matrix("disk_size = [\"4KiB\", \"1GiB\"]"));
    const SweepPlan plan = expand_ok(spec);
    REQUIRE(plan.configs.size() == 2);
    CHECK(plan.configs[0].disk_size_bytes == 4096u);
    CHECK(plan.configs[1].disk_size_bytes == 1ull << 30);
    CHECK(expand_error(parse_ok(with_matrix("disk_size = [\"1g\", \"1GiB\"]"))) ==
          "axis 'disk_size': '1GiB' and '1g' are the same setting");
}

TEST_CASE("io workloads: fio's size meaning and the one option table", "[spec][errors]") {
    // "4KiB" is 4000 bytes to fio (kb_base=1024), so not O_DIRECT-aligned;
    // "4k" is 4096. The agent reads them the same (unit/agent io_options).
    CHECK(parse_message(with_kind("io", "direct = true\nbs = \"4KiB\"")) ==
          "t.toml:2:1: workload 'io-1': io job option 'bs': 4000 is not a multiple of 512, which "
          "direct=1 needs");
    SweepSpec spec = parse_ok(with_kind("io", "direct = true\nbs = \"4k\"\nthread = \"1\""));
    CHECK(spec.workloads[0].params.at("bs") == "4k");  // stored as written
    CHECK(parse_message(with_kind("io", "ring_first = false")) ==
          "t.toml:4:1: workload 'io-1': io job option 'ring_first' is for ioengine=libaio, not "
          "psync");
    parse_ok(with_kind("io", "ioengine = \"libaio\"\nring_first = false"));
    CHECK(parse_message(with_kind("io", "size = \"1k\"")) ==
          "t.toml:2:1: workload 'io-1': io job option 'size': 1024 is smaller than bs=4096");
    CHECK(parse_message(with_kind("io", "rw = \"read\"\nreadwrite = \"write\"")) ==
          "t.toml:2:1: workload 'io-1': io job option 'rw' is given twice, as 'readwrite' and as "
          "'rw'; give it once");
    CHECK(parse_message(with_kind("io", "runtime = \"1.5\"")) ==
          "t.toml:4:11: 'runtime' in workload 'io-1': \"1.5\" is not a duration (fio syntax: "
          "whole numbers with an optional unit, e.g. 10, 10s, 1500ms, 2m)");
    CHECK(parse_message(with_kind("io", "time_based = 1")) ==
          "t.toml:2:1: workload 'io-1': io job option 'time_based': needs runtime > 0");
}

TEST_CASE("fio workloads cannot leave the filesystem under test by any way in", "[spec][errors]") {
    // A named option: ioengine takes only the engines that do file I/O.
    CHECK_THAT(parse_message(with_kind("fio", "ioengine = \"sg\"")),
               Catch::StartsWith("t.toml:4:12: unknown value 'sg' for 'ioengine'; valid values: "
                                 "sync, psync,"));
    // The options table, at the option's key.
    CHECK(parse_message(with_kind("fio", "options = { filename = \"/dev/sdb\" }")) ==
          "t.toml:4:13: 'options' in workload 'fio-1': fio option 'filename' is refused: fio "
          "would do its I/O on that file or device instead of the filesystem under test");
    CHECK(parse_message(with_kind("fio", "options = { exec_prerun = \"touch /x\" }")) ==
          "t.toml:4:13: 'options' in workload 'fio-1': fio option 'exec_prerun' is refused: runs "
          "a command in the guest");
    CHECK_THAT(parse_message(with_kind("fio", "options = { exec_pre = \"touch /x\" }")),
               Catch::EndsWith("fio option 'exec_pre' is refused: fio takes it as an "
                               "abbreviation of 'exec_prerun', which is guarded: runs a command "
                               "in the guest"));
    CHECK_THAT(parse_message(with_kind("fio", "options = { ioengine = \"exec\" }")),
               Catch::Contains("fio option 'ioengine' is refused with value 'exec'"));
    CHECK_THAT(parse_message(with_kind("fio", "options = { ioscheduler = \"none\" }")),
               Catch::Contains("the configuration's `scheduler` axis sets and records"));
    // The job file, naming the line in it.
    CHECK(parse_message(
              with_kind("fio", "job_file = \"[a]\\nrw=read\\n[b]\\nfilename=/dev/sdb\\n\"")) ==
          "t.toml:4:12: 'job_file' in workload 'fio-1': line 4 sets 'filename', which is refused: "
          "fio would "
          "do its I/O on that file or device instead of the filesystem under test");
    CHECK_THAT(parse_message(with_kind("fio", "job_file = \"include /etc/x.fio\\n\"")),
               Catch::EndsWith("line 1: 'include' is refused: the included job file would not be "
                               "checked"));

    // Every guarded option, in both places.
    for (const auto& guard : fio_option_guards()) {
        INFO(guard.name);
        const std::string name(guard.name);
        parse_message(with_kind("fio", "options = { \"" + name + "\" = \"/dev/sdb\" }"));
        parse_message(with_kind("fio", "job_file = \"[j]\\n" + name + "=/dev/sdb\\n\""));
    }
}

TEST_CASE("throttling and queue axes: values, units, defaults and what sata cannot have",
          "[spec][expand]") {
    SweepSpec spec = parse_ok(
        "name = \"t\"\n[matrix]\nbus = [\"scsi-single\", \"sata\"]\niops_limit = [500, "
        "\"none\"]\nbandwidth_limit = \"8m\"\nqueues = 2\n[[workload]]\nkind = \"fio\"\n");
    Result<SweepPlan> plan = expand_sweep(spec);
    REQUIRE(plan.ok());
    REQUIRE(plan->configs.size() == 2);
    for (const auto& config : plan->configs) {
        CHECK(config.bus == Bus::kScsiSingle);
        CHECK(config.bandwidth_limit == std::optional<std::uint64_t>(8u << 20));
        CHECK(config.queues == std::optional<std::uint64_t>(2));
    }
    CHECK(plan->configs[0].iops_limit == std::optional<std::uint64_t>(500));
    CHECK(plan->configs[1].iops_limit == std::nullopt);
    REQUIRE(plan->dropped.size() == 2);
    CHECK(plan->dropped[0].reason ==
          "a sata (AHCI) disk has no virtio queues; queues needs virtio-blk, scsi or scsi-single");

    CHECK(parse_message("name = \"t\"\n[matrix]\niops_limit = 0\n[[workload]]\nkind = "
                        "\"fio\"\n") ==
          "t.toml:3:14: axis 'iops_limit' takes \"none\" or an integer >= 1, not '0'");
    CHECK(parse_message("name = \"t\"\n[matrix]\nbandwidth_limit = \"fast\"\n[[workload]]\nkind = "
                        "\"fio\"\n") ==
          "t.toml:3:19: axis 'bandwidth_limit' takes \"none\" or a size above 0 (bytes, or a "
          "number with k, m, g or t), not 'fast'");
    CHECK(parse_message("name = \"t\"\n[matrix]\nqueues = true\n[[workload]]\nkind = "
                        "\"fio\"\n") ==
          "t.toml:3:10: values of axis 'queues' must be \"default\" or an integer, not a boolean");
}

TEST_CASE("spec: host_baseline adds one baseline per storage, run by fio workloads", "[spec]") {
    const SweepPlan plan =
        expand_ok(parse_ok("name = \"t\"\nhost_baseline = true\nrepetitions = 2\n[matrix]\n"
                           "storage = [\"file\", \"rbd:pool1\"]\ncache = [\"none\", \"unsafe\"]\n"
                           "[[workload]]\nname = \"rand\"\nkind = \"fio\"\nrw = \"randread\"\n"
                           "[[workload]]\nname = \"atis\"\nkind = \"mariadb-atis\"\n"));
    // 4 guest configurations, then a baseline per storage (cache is not a
    // setting of bare storage).
    REQUIRE(plan.configs.size() == 6);
    const StorageConfig& file_baseline = plan.configs[4];
    CHECK(is_host_baseline(file_baseline));
    CHECK(file_baseline.storage == "file");
    CHECK(plan.configs[5].storage == "rbd");
    CHECK(plan.configs[5].storage_pool == "pool1");
    CHECK(to_json(file_baseline) == Json{{"hypervisor", "host"},
                                         {"storage", "file"},
                                         {"storage_pool", ""},
                                         {"image_format", "raw"},
                                         {"disk_size_bytes", 1ull << 30}});
    // 4 configurations x 2 workloads + 2 baselines x the fio workload, per round.
    CHECK(plan.runs.size() == (4 * 2 + 2) * 2);
    for (const auto& run : plan.runs) {
        if (is_host_baseline(plan.configs[run.config_index]))
            CHECK(plan.workloads[run.workload_index].kind == "fio");
    }
}

TEST_CASE("spec: host_baseline needs a workload that can run on the host", "[spec]") {
    CHECK(expand_error(parse_ok("name = \"t\"\nhost_baseline = true\n"
                                "[[workload]]\nkind = \"mariadb-atis\"\n"))
              .find("no workload can run on the host") != std::string::npos);
    // The kinds that can are named from the workload kinds' table.
    CHECK(expand_error(parse_ok("name = \"t\"\nhost_baseline = true\n"
                                "[[workload]]\nkind = \"sysbench-oltp\"\n"))
              .find("a baseline runs a workload of kind \"fio\" (without job_file) on the raw "
                    "volume") != std::string::npos);
    CHECK(expand_error(parse_ok("name = \"t\"\nhost_baseline = true\n[[workload]]\nkind = "
                                "\"fio\"\njob_file = \"[j]\\nrw=read\\n\"\n"))
              .find("without job_file") != std::string::npos);
    CHECK(parse_error("name = \"t\"\nhost_baseline = \"yes\"\n[[workload]]\nkind = \"fio\"\n")
              .find("'host_baseline'") != std::string::npos);
}

TEST_CASE("[hypervisor] hosts pins runs to named hosts", "[spec][hosts]") {
    auto spec = parse_sweep_spec(
        "name = \"t\"\n[hypervisor]\nbackend = \"libvirt\"\nhosts = [\"local\", \"node2\"]\n"
        "identical_hosts = true\n[[workload]]\nkind = \"fio\"\n",
        "t.toml");
    REQUIRE(spec.ok());
    CHECK(spec->hosts == std::vector<std::string>{"local", "node2"});
    CHECK(spec->identical_hosts);
    CHECK(parse_error("name = \"t\"\n[hypervisor]\nhosts = [\"a\", \"a\"]\n[[workload]]\nkind = "
                      "\"fio\"\n") == "t.toml:3:15: host 'a' is listed twice");
    CHECK(parse_error("name = \"t\"\n[hypervisor]\nhosts = []\n[[workload]]\nkind = \"fio\"\n") ==
          "t.toml:3:9: 'hosts' is empty; leave it out to let the daemon place runs");
}

TEST_CASE("spec: unchecked_levels takes one of its values, the default first", "[spec]") {
    const std::string workload = "\n[[workload]]\nkind = \"fio\"\n";
    CHECK(parse_ok("name = \"t\"" + workload).unchecked_levels ==
          UncheckedLevelPolicy::kFailUnlessForbidden);
    CHECK(parse_ok("name = \"t\"\nunchecked_levels = \"report\"" + workload).unchecked_levels ==
          UncheckedLevelPolicy::kReport);
    CHECK(parse_ok("name = \"t\"\nunchecked_levels = \"fail\"" + workload).unchecked_levels ==
          UncheckedLevelPolicy::kFail);
    CHECK(parse_error("name = \"t\"\nunchecked_levels = \"allowed\"" + workload) ==
          "t.toml:2:20: 'unchecked_levels' 'allowed' is not one of 'fail-unless-forbidden', "
          "'fail', 'report'");
    CHECK_THAT(parse_error("name = \"t\"\nunchecked_levels = true" + workload),
               Catch::Matchers::StartsWith("t.toml:2:20: 'unchecked_levels'"));
}
