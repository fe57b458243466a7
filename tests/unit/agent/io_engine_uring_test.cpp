// ioengine=io_uring on real files: the engine itself (data written through
// it is on disk where it was asked to go, data read through it is what is on
// disk, short counts pass through), whole jobs through the runner (byte
// counts, direct I/O, jobs as threads), per-I/O errors, its options, and a
// kernel that refuses io_uring (seccomp makes io_uring_setup fail in a child
// process, as a kernel without CONFIG_IO_URING or with io_uring disabled).
#include <fcntl.h>
#include <liburing.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "guestagent/io_engine.h"
#include "guestagent/io_job.h"
#include "guestagent/io_options.h"
#include "support/cpu_time.h"
#include "support/skip.h"
#include "support/temp_dir.h"

using ds::Json;
using namespace ds::io;
namespace fs = std::filesystem;

namespace {

constexpr std::uint32_t kBlock = 4096;
constexpr unsigned kBlocks = 64;
constexpr unsigned kDepth = 8;

// Skips the test when this kernel or process has no io_uring (no
// CONFIG_IO_URING, kernel.io_uring_disabled, a container's seccomp policy).
void require_io_uring() {
    io_uring ring{};
    const int result = io_uring_queue_init(1, &ring, 0);
    if (result == -ENOSYS || result == -EPERM) {
        ds::test::skip_test("io_uring is not available here: " + std::string(strerror(-result)));
    }
    REQUIRE(result == 0);
    io_uring_queue_exit(&ring);
}

// The byte at `position` of block `block` in pattern `seed`: differs per
// block, position and seed, so a block written or read at the wrong offset,
// from the wrong buffer or not at all is seen.
char pattern_byte(unsigned block, std::size_t position, unsigned seed) {
    return static_cast<char>((block * 131 + position * 7 + seed * 29 + position / 256) & 0xff);
}

void fill_block(char* buffer, unsigned block, unsigned seed) {
    for (std::size_t i = 0; i < kBlock; ++i) buffer[i] = pattern_byte(block, i, seed);
}

bool block_matches(const char* buffer, unsigned block, unsigned seed) {
    for (std::size_t i = 0; i < kBlock; ++i)
        if (buffer[i] != pattern_byte(block, i, seed)) return false;
    return true;
}

struct AlignedFree {
    void operator()(void* memory) const { std::free(memory); }
};

// One engine on one file with kDepth units, driven as the job runner
// drives it: queue, commit, reap.
class EngineRig {
  public:
    EngineRig(const std::string& path, bool direct, const Json& engine_options) {
        fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | (direct ? O_DIRECT : 0), 0644);
        REQUIRE(fd_ >= 0);
        void* memory = nullptr;
        REQUIRE(posix_memalign(&memory, 4096, std::size_t{kDepth} * kBlock) == 0);
        buffers_.reset(memory);
        Json params = engine_options;
        params["ioengine"] = "io_uring";
        auto options = parse_job_options(params);
        REQUIRE(options.ok());
        options_ = options->engine_options;
        engine_ = kUringEngine.create();
        const EngineSetup setup{.iodepth = kDepth,
                                .options = &options_,
                                .fd = fd_,
                                .buffers = buffers_.get(),
                                .buffer_bytes = kBlock};
        auto status = engine_->init(setup);
        INFO((status.ok() ? "" : status.error().message));
        REQUIRE(status.ok());
        for (unsigned i = 0; i < kDepth; ++i) {
            units_[i].fd = fd_;
            units_[i].index = i;
        }
    }
    ~EngineRig() {
        engine_->cleanup();
        close(fd_);
    }

    int fd() const { return fd_; }
    IoEngine& engine() { return *engine_; }
    IoUnit& unit(unsigned i) { return units_[i]; }
    char* buffer(unsigned i) {
        return static_cast<char*>(buffers_.get()) + std::size_t{i} * kBlock;
    }

    // Does one I/O of `direction` per block, in a scrambled order, kDepth
    // at a time; `before` fills a unit before it is queued, `after` checks
    // it when it comes back. Every I/O must transfer the whole block.
    template <typename Before, typename After>
    void run_blocks(IoDirection direction, Before before, After after) {
        std::vector<unsigned> free_units;
        for (unsigned i = 0; i < kDepth; ++i) free_units.push_back(i);
        unsigned next = 0;
        unsigned done = 0;
        while (done < kBlocks) {
            while (next < kBlocks && !free_units.empty()) {
                IoUnit& unit = units_[free_units.back()];
                free_units.pop_back();
                const unsigned block = (next++ * 37) % kBlocks;  // 37 is prime to 64
                prepare(unit, direction, block);
                before(unit, block);
                auto queued = engine_->queue(unit);
                REQUIRE(queued.ok());
                REQUIRE(*queued == QueueOutcome::kQueued);
            }
            auto left = engine_->commit();
            REQUIRE(left.ok());
            REQUIRE(*left == 0);
            auto reaped = engine_->getevents(1, kDepth);
            REQUIRE(reaped.ok());
            REQUIRE(*reaped >= 1);
            for (unsigned i = 0; i < *reaped; ++i) {
                IoUnit& unit = engine_->event(i);
                REQUIRE(unit.result == kBlock);
                after(unit, static_cast<unsigned>(unit.offset / kBlock));
                free_units.push_back(unit.index);
                ++done;
            }
        }
    }

    void prepare(IoUnit& unit, IoDirection direction, unsigned block) {
        unit.direction = direction;
        unit.buffer = buffer(unit.index);
        unit.offset = std::uint64_t{block} * kBlock;
        unit.length = kBlock;
        unit.result = 0;
    }

  private:
    int fd_ = -1;
    std::unique_ptr<void, AlignedFree> buffers_;
    EngineOptionValues options_;
    std::unique_ptr<IoEngine> engine_;
    IoUnit units_[kDepth];
};

// Writes every block through the engine, checks the file with pread,
// overwrites it with pwrite and reads every block back through the engine.
void check_round_trip(const std::string& path, bool direct, const Json& engine_options) {
    EngineRig rig(path, direct, engine_options);
    rig.run_blocks(
        IoDirection::kWrite,
        [&](IoUnit& unit, unsigned block) { fill_block(rig.buffer(unit.index), block, 1); },
        [](IoUnit&, unsigned) {});
    std::vector<char> on_disk(kBlock);
    for (unsigned block = 0; block < kBlocks; ++block) {
        // Buffered pread of an O_DIRECT-written file: the page cache was
        // invalidated by the direct writes.
        const int plain = open(path.c_str(), O_RDONLY | O_CLOEXEC);
        REQUIRE(plain >= 0);
        REQUIRE(pread(plain, on_disk.data(), kBlock, off_t{block} * kBlock) == kBlock);
        close(plain);
        INFO("block " << block);
        REQUIRE(block_matches(on_disk.data(), block, 1));
    }
    {
        const int plain = open(path.c_str(), O_WRONLY | O_CLOEXEC);
        REQUIRE(plain >= 0);
        for (unsigned block = 0; block < kBlocks; ++block) {
            fill_block(on_disk.data(), block, 2);
            REQUIRE(pwrite(plain, on_disk.data(), kBlock, off_t{block} * kBlock) == kBlock);
        }
        REQUIRE(fsync(plain) == 0);
        close(plain);
    }
    unsigned checked = 0;
    rig.run_blocks(
        IoDirection::kRead,
        [&](IoUnit& unit, unsigned) { std::memset(rig.buffer(unit.index), 0, kBlock); },
        [&](IoUnit& unit, unsigned block) {
            INFO("block " << block);
            CHECK(block_matches(rig.buffer(unit.index), block, 2));
            ++checked;
        });
    CHECK(checked == kBlocks);
}

// A directory on disk for O_DIRECT (tmpfs takes O_DIRECT only since Linux
// 6.6), and whether O_DIRECT works there.
bool direct_works(const fs::path& dir) {
    const auto probe = dir / "probe";
    const int fd = open(probe.c_str(), O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0644);
    if (fd >= 0) close(fd);
    fs::remove(probe);
    return fd >= 0;
}

}  // namespace

TEST_CASE("io_uring engine: data written through it is on disk, data read is the file's",
          "[io_uring]") {
    require_io_uring();
    ds::test::TempDir buffered_dir;
    ds::test::TempDir direct_dir("/var/tmp", "disksweep-uring");
    const bool direct = direct_works(direct_dir.path());
    if (!direct) WARN("no O_DIRECT in /var/tmp: the direct round trips run buffered");
    const std::vector<Json> variants = {
        Json::object(),          // defaults: READ/WRITE, fd as is
        {{"nonvectored", 0}},    // READV/WRITEV
        {{"fixedbufs", 1}},      // READ_FIXED/WRITE_FIXED
        {{"registerfiles", 1}},  // IOSQE_FIXED_FILE
        {{"sqthread_poll", 1}},  // SQPOLL, which implies registerfiles
        {{"fixedbufs", 1}, {"nonvectored", 0}, {"registerfiles", 1}},
    };
    for (const auto& options : variants) {
        INFO("options " << options.dump());
        check_round_trip(buffered_dir.file("data"), false, options);
        check_round_trip(direct_dir.file("data"), direct, options);
    }
}

TEST_CASE("io_uring engine: a short read's count reaches the unit, and a full queue is busy",
          "[io_uring]") {
    require_io_uring();
    ds::test::TempDir dir;
    const std::string path = dir.file("short");
    EngineRig rig(path, false, Json::object());
    // One block and 100 bytes on disk: a read of two blocks gets 4196.
    REQUIRE(ftruncate(rig.fd(), kBlock + 100) == 0);
    IoUnit& unit = rig.unit(0);
    rig.prepare(unit, IoDirection::kRead, 0);
    unit.length = 2 * kBlock;  // the rig's buffers are contiguous
    REQUIRE(*rig.engine().queue(unit) == QueueOutcome::kQueued);
    REQUIRE(*rig.engine().commit() == 0);
    auto reaped = rig.engine().getevents(1, kDepth);
    REQUIRE(reaped.ok());
    REQUIRE(*reaped == 1);
    CHECK(rig.engine().event(0).result == kBlock + 100);
    // iodepth units queued and none reaped: the next one is refused, not lost.
    for (unsigned i = 0; i < kDepth; ++i) {
        rig.prepare(rig.unit(i), IoDirection::kRead, 0);
        REQUIRE(*rig.engine().queue(rig.unit(i)) == QueueOutcome::kQueued);
    }
    IoUnit extra;
    extra.fd = rig.fd();
    rig.prepare(extra, IoDirection::kRead, 0);
    CHECK(*rig.engine().queue(extra) == QueueOutcome::kBusy);
    REQUIRE(*rig.engine().commit() == 0);
    unsigned back = 0;
    while (back < kDepth) {
        auto more = rig.engine().getevents(1, kDepth);
        REQUIRE(more.ok());
        back += *more;
    }
    CHECK(back == kDepth);
}

namespace {

double direction_ios(const Json& report, const char* direction) {
    double total = 0;
    for (const auto& job : report["jobs"]) total += job[direction]["total_ios"].get<double>();
    return total;
}

Json run_uring_job(Json params) {
    params["ioengine"] = "io_uring";
    auto report = run_io_job(params, nullptr);
    if (!report) FAIL(report.error().message);
    return *report;
}

}  // namespace

TEST_CASE("io_uring engine: jobs do exactly size/bs I/Os in every pattern", "[io_uring]") {
    require_io_uring();
    ds::test::TempDir buffered_dir;
    ds::test::TempDir direct_dir("/var/tmp", "disksweep-uring");
    const bool direct = direct_works(direct_dir.path());
    struct Case {
        const char* rw;
        Json extra;
    };
    const std::vector<Case> cases = {
        {"read", {{"bs", "64k"}}},
        {"write", {{"iodepth", 8}}},
        {"randrw", {{"iodepth", 16}, {"rwmixread", 70}}},
        // Rings set up in the caller's thread, registered there, enabled by
        // the job threads.
        {"randread",
         {{"iodepth", 4}, {"thread", 1}, {"numjobs", 2}, {"fixedbufs", 1}, {"registerfiles", 1}}},
        {"randwrite", {{"iodepth", 32}, {"nonvectored", 0}}},
        {"readwrite", {{"iodepth", 8}, {"sqthread_poll", 1}}},
    };
    for (const auto& c : cases) {
        for (bool on_disk : {false, true}) {
            Json params = c.extra;
            params["rw"] = c.rw;
            params["size"] = "1m";
            params["directory"] = (on_disk ? direct_dir : buffered_dir).path().string();
            params["direct"] = on_disk && direct;
            INFO(params.dump());
            const Json report = run_uring_job(params);
            const double bs = params.contains("bs") ? 65536 : 4096;
            const double jobs = params.value("numjobs", 1);
            const double reads = direction_ios(report, "read");
            const double writes = direction_ios(report, "write");
            CHECK(reads + writes == jobs * (1 << 20) / bs);
            CHECK((reads > 0) ==
                  (std::string(c.rw) != "write" && std::string(c.rw) != "randwrite"));
            CHECK((writes > 0) == (std::string(c.rw) != "read" && std::string(c.rw) != "randread"));
            const Json& all = report["all jobs"];
            CHECK(all["read"]["io_bytes"].get<double>() + all["write"]["io_bytes"].get<double>() ==
                  jobs * (1 << 20));
            CHECK(report["engine"]["name"] == "io_uring");
        }
    }
}

TEST_CASE("io_uring engine: a failing write fails the job with the errno's text", "[io_uring]") {
    require_io_uring();
    // /dev/full: every write completes with -ENOSPC in its CQE.
    auto report = run_io_job({{"ioengine", "io_uring"},
                              {"rw", "write"},
                              {"size", "1m"},
                              {"iodepth", 4},
                              {"filename", "/dev/full"}},
                             nullptr);
    REQUIRE_FALSE(report.ok());
    CHECK(report.error().code == ds::errc::kIo);
    INFO(report.error().message);
    CHECK(report.error().message.find("write of 4096 bytes at offset") != std::string::npos);
    CHECK(report.error().message.find("ENOSPC") != std::string::npos);
}

TEST_CASE("io_uring engine: its options are its own, and unknown ones are refused", "[io_uring]") {
    auto refused = [](const Json& params) {
        auto options = parse_job_options(params);
        REQUIRE_FALSE(options.ok());
        CHECK(options.error().code == ds::errc::kInvalidArgument);
        return options.error().message;
    };
    const auto hipri = refused({{"ioengine", "io_uring"}, {"hipri", 1}});
    CHECK(hipri.find("unsupported io job option 'hipri'") != std::string::npos);
    CHECK(hipri.find("ioengine=io_uring also takes: fixedbufs, registerfiles, sqthread_poll, "
                     "nonvectored") != std::string::npos);
    CHECK(refused({{"ioengine", "io_uring"}, {"ring_first", 0}})
              .find("'ring_first' is for ioengine=libaio, not io_uring") != std::string::npos);
    CHECK(refused({{"ioengine", "libaio"}, {"fixedbufs", 1}})
              .find("'fixedbufs' is for ioengine=io_uring, not libaio") != std::string::npos);
    CHECK(refused({{"ioengine", "io_uring"}, {"sqthread_poll", "often"}}).find("'sqthread_poll'") !=
          std::string::npos);
    auto defaults = parse_job_options({{"ioengine", "io_uring"}});
    REQUIRE(defaults.ok());
    CHECK(defaults->engine == &kUringEngine);
    CHECK(defaults->engine_options ==
          EngineOptionValues{
              {"fixedbufs", 0}, {"registerfiles", 0}, {"sqthread_poll", 0}, {"nonvectored", 1}});
}

namespace {

// In a forked child whose io_uring_setup fails with `error_number` (a
// seccomp filter, as a container policy would), runs an io_uring job and
// returns what it did: "ok", or the job's error message.
std::string job_without_io_uring(int error_number, const std::string& directory) {
    int channel[2];
    REQUIRE(pipe2(channel, O_CLOEXEC) == 0);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        close(channel[0]);
        sock_filter filter[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
            BPF_STMT(BPF_RET | BPF_K,
                     SECCOMP_RET_ERRNO | (static_cast<unsigned>(error_number) & SECCOMP_RET_DATA)),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        sock_fprog program{static_cast<unsigned short>(std::size(filter)), filter};
        std::string outcome;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
            prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
            outcome = "cannot install the seccomp filter";
        } else {
            auto report = run_io_job({{"ioengine", "io_uring"},
                                      {"rw", "randread"},
                                      {"size", "64k"},
                                      {"directory", directory}},
                                     nullptr);
            outcome = report.ok() ? "ok" : report.error().code + ": " + report.error().message;
        }
        (void)!write(channel[1], outcome.data(), outcome.size());
        _exit(0);
    }
    close(channel[1]);
    std::string outcome;
    char chunk[512];
    ssize_t got = 0;
    while ((got = read(channel[0], chunk, sizeof chunk)) > 0) outcome.append(chunk, got);
    close(channel[0]);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));  // the child reported, it did not crash
    return outcome;
}

}  // namespace

TEST_CASE("io_uring engine: a kernel without io_uring fails the job naming the engine",
          "[io_uring]") {
    ds::test::TempDir dir;
    const std::string missing = job_without_io_uring(ENOSYS, dir.path().string());
    INFO(missing);
    CHECK(missing.find(std::string(ds::errc::kIo) + ": job 0: io_uring: io_uring_setup failed "
                                                    "with ENOSYS") != std::string::npos);
    CHECK(missing.find("this kernel has no io_uring; use ioengine=libaio or psync") !=
          std::string::npos);
    const std::string denied = job_without_io_uring(EPERM, dir.path().string());
    INFO(denied);
    CHECK(denied.find("io_uring: io_uring_setup failed with EPERM") != std::string::npos);
    CHECK(denied.find("io_uring is not allowed here") != std::string::npos);
}

namespace {}  // namespace

TEST_CASE("io_uring engine: a job process's CPU includes the kernel threads working for it",
          "[io_uring]") {
    // On tmpfs io_uring hands every I/O to its io-wq worker threads (on
    // this kernel; docs/io-engine.md), which belong to the job process: a
    // job that counted only its own thread's CPU would report about two
    // thirds of what the process used.
    require_io_uring();
    if (geteuid() != 0) ds::test::skip_test("needs root to mount a tmpfs");
    ds::test::TempDir dir;
    REQUIRE(mount("ds-uring-test", dir.path().c_str(), "tmpfs", 0, "size=16m") == 0);
    struct Unmount {
        const fs::path& path;
        ~Unmount() { umount2(path.c_str(), MNT_DETACH); }
    } unmount{dir.path()};
    const double before = ds::test::children_cpu_seconds();
    const Json report = run_uring_job({{"rw", "randrw"},
                                       {"size", "4m"},
                                       {"iodepth", 16},
                                       {"runtime", "1s"},
                                       {"time_based", 1},
                                       {"directory", dir.path().string()}});
    const double used = ds::test::children_cpu_seconds() - before;
    const Json& job = report["jobs"][0];
    const double reported = (job["usr_cpu"].get<double>() + job["sys_cpu"].get<double>()) / 100 *
                            job["job_runtime"].get<double>() / 1000;
    INFO("reported " << reported << " s, the job process used " << used << " s");
    REQUIRE(used > 0.05);
    // The rest is the process's start, its file's layout and its exit.
    CHECK(reported > 0.8 * used);
    CHECK(reported <= used * 1.02);
}
