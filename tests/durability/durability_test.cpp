// The write log for real (docs/durability.md): a TCG guest's data disk on
// QEMU's blklogwrites filter, through the libvirt backend's own path
// (LibvirtHypervisor with VmRequest::write_log_path). The guest writes a
// file with an fsync after every block; the log must hold FLUSH entries,
// replaying all of it must give the volume as QEMU left it, and the crash
// image at the last flush must pass fsck and hold the fsynced file. The
// other half of the rule: with cache.no-flush on the logger's own node the
// log has no FLUSH entry at all. And the checker guest: one boot checks
// several crash images attached as extra disks (job.check_disks), one report
// each, in order.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <thread>
#include <vector>

#include "common/process.h"
#include "common/protocol.h"
#include "daemon/backends/hypervisor/libvirt/libvirt_hypervisor.h"
#include "daemon/durability/crash_states.h"
#include "daemon/durability/crash_verdict.h"
#include "daemon/durability/log_writes.h"
#include "daemon/durability/replay.h"
#include "daemon/run/agent_session.h"
#include "guestagent/ledger_workload.h"
#include "support/daemon_fixture.h"
#include "support/skip.h"
#include "support/temp_dir.h"

namespace ds {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr std::uint64_t kVolumeBytes = 128u << 20;

// fio writing 2 MiB in 64 KiB blocks, fsync after each: 32 acknowledged
// flushes, the file variant of the ledger in miniature.
Json fsync_job(const std::string& run_id) {
    return {
        {"run_id", run_id},
        {"filesystem", {{"type", "ext4"}}},
        {"workload",
         {{"name", "fsynced"},
          {"kind", "fio"},
          {"params",
           {{"rw", "write"}, {"bs", "64k"}, {"size", "2m"}, {"fsync", 1}, {"ioengine", "psync"}}}}},
        {"timeout_s", 60}};
}

struct LoggedGuest {
    std::string volume;      // the data volume as QEMU left it
    std::string before_run;  // a copy taken before the guest started
    std::string log;
};

// Sets cache.no-flush on the logger's own node in the domain XML: the
// misconfiguration the rule forbids.
std::string no_flush_on_logger(const VmRequest&, std::string xml) {
    const std::size_t logger = xml.find("&quot;driver&quot;:&quot;blklogwrites&quot;");
    REQUIRE(logger != std::string::npos);
    const std::size_t arg_start = xml.rfind("<qemu:arg", logger);
    const std::string off = "&quot;no-flush&quot;:false";
    const std::size_t flag = xml.find(off, arg_start);
    REQUIRE((flag != std::string::npos && flag < xml.find("/>", logger)));
    return xml.replace(flag, off.size(), "&quot;no-flush&quot;:true");
}

void wait_until_stopped(LibvirtHypervisor& hypervisor, const std::string& name) {
    for (int i = 0; i < 300; ++i) {
        auto running = hypervisor.is_running(name);
        if (!running.ok() || !*running) return;
        std::this_thread::sleep_for(100ms);
    }
}

// Boots `request` (its image from the test image dir), runs `job` to its
// result, lets the guest power off and destroys it.
guest::ResultMessage run_job_in_guest(const test::TempDir& dir, VmRequest request, const Json& job,
                                      DomainXmlFilter filter = nullptr) {
    const fs::path image = test::test_image_dir();  // skips without a guest image
    auto connected = LibvirtHypervisor::connect("", dir.file("libvirt"), dir.file("guests"));
    INFO((connected.ok() ? "" : connected.error().message));
    REQUIRE(connected.ok());
    LibvirtHypervisor& hypervisor = **connected;
    if (filter) hypervisor.set_domain_xml_filter(std::move(filter));

    request.name = "disksweep-durability-" + std::to_string(::getpid());
    request.image = {(image / "vmlinuz").string(), (image / "initrd.img").string(),
                     (image / "root.img").string()};
    const Status started = hypervisor.start_vm(request);
    INFO((started.ok() ? "" : started.error().message));
    REQUIRE(started.ok());

    const auto deadline = std::chrono::steady_clock::now() + 120s;
    auto channel = hypervisor.open_agent_channel(request.name, deadline, nullptr);
    INFO((channel.ok() ? "" : channel.error().message)
         << hypervisor.console_tail(request.name, 4000));
    REQUIRE(channel.ok());
    AgentSession session(std::move(*channel));
    REQUIRE(session.receive_hello(deadline).ok());
    REQUIRE(session.send_job(job).ok());
    auto result = session.await_result(deadline, [](const guest::Progress&) {});
    INFO((result.ok() ? "" : result.error().message)
         << hypervisor.console_tail(request.name, 4000));
    REQUIRE(result.ok());
    session.send_shutdown();
    wait_until_stopped(hypervisor, request.name);
    REQUIRE(hypervisor.destroy_vm(request.name).ok());
    return std::move(*result);
}

// An empty sparse file of `bytes`.
void make_sparse_file(const std::string& path, std::uint64_t bytes) {
    std::ofstream(path).close();
    fs::resize_file(path, bytes);
}

// Boots the guest with its data disk logged, runs the fsync job, lets the
// guest power off (QEMU then has written the whole log) and returns where
// everything is.
LoggedGuest run_logged_guest(const test::TempDir& dir, DomainXmlFilter filter = nullptr) {
    LoggedGuest guest{dir.file("data.img"), dir.file("before-run.img"), dir.file("data.log")};
    make_sparse_file(guest.volume, kVolumeBytes);
    std::ofstream(guest.log).close();
    REQUIRE(durability::clone_image(guest.volume, guest.before_run).ok());

    VmRequest request;
    request.config.bus = Bus::kVirtioBlk;
    request.config.cache = CacheMode::kNone;
    request.config.discard = true;  // mkfs's discard is logged and replayed too
    request.data_disk = FileDisk{guest.volume, ImageFormat::kRaw};
    request.write_log_path = guest.log;
    run_job_in_guest(dir, std::move(request), fsync_job("durability-1"), std::move(filter));
    return guest;
}

std::size_t flush_entries(const durability::LogIndex& log) {
    return static_cast<std::size_t>(std::count_if(log.entries.begin(), log.entries.end(),
                                                  [](const auto& e) { return e.is_flush(); }));
}

// Byte for byte, in 1 MiB reads (istreambuf_iterator costs seconds here).
bool same_contents(const std::string& a, const std::string& b) {
    std::ifstream left(a, std::ios::binary);
    std::ifstream right(b, std::ios::binary);
    std::vector<char> left_chunk(1 << 20);
    std::vector<char> right_chunk(1 << 20);
    while (left && right) {
        left.read(left_chunk.data(), static_cast<std::streamsize>(left_chunk.size()));
        right.read(right_chunk.data(), static_cast<std::streamsize>(right_chunk.size()));
        if (left.gcount() != right.gcount() ||
            !std::equal(left_chunk.begin(), left_chunk.begin() + left.gcount(),
                        right_chunk.begin())) {
            return false;
        }
    }
    return left.eof() && right.eof();
}

ProcessOutput run_tool(const std::vector<std::string>& argv) {
    RealProcessRunner runner;
    auto output = runner.run(argv, 60s);
    REQUIRE(output.ok());
    return *output;
}

// The regular files of the ext4 image, dumped with debugfs (no mount).
fs::path dump_files(const std::string& image_file, const fs::path& into) {
    fs::create_directories(into);
    const ProcessOutput dumped =
        run_tool({"debugfs", "-R", "rdump / " + into.string(), image_file});
    INFO(dumped.stderr_text);
    REQUIRE(dumped.exit_code == 0);
    return into;
}

// Every regular file under `root` with its size, by relative path.
std::map<std::string, std::uintmax_t> files_under(const fs::path& root) {
    std::map<std::string, std::uintmax_t> files;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
        if (entry.is_regular_file())
            files[fs::relative(entry.path(), root).string()] = entry.file_size();
    }
    return files;
}

// The checker's images: ext4 made by the host's mkfs on sparse files, with
// a file-variant ledger written into them by debugfs (no mount).
constexpr std::uint64_t kCrashImageBytes = 32u << 20;
constexpr std::uint64_t kLedgerRecordBytes = 512;

// An ext4 image whose ledger.dat holds `slots` (record ids; 0 = a zeroed
// slot, as a lost write leaves it).
std::string make_ledger_image(const test::TempDir& dir, const std::string& name,
                              const std::vector<long long>& slots) {
    const std::string image = dir.file(name + ".img");
    make_sparse_file(image, kCrashImageBytes);
    const ProcessOutput made = run_tool({"mkfs.ext4", "-q", "-F", image});
    INFO(made.stderr_text);
    REQUIRE(made.exit_code == 0);
    const std::string ledger = dir.file(name + "-ledger.dat");
    {
        std::ofstream out(ledger, std::ios::binary);
        for (long long id : slots) {
            out << (id > 0 ? agent::ledger_record(id, kLedgerRecordBytes)
                           : std::string(kLedgerRecordBytes, '\0'));
        }
    }
    const ProcessOutput written =
        run_tool({"debugfs", "-w", "-R", "write " + ledger + " ledger.dat", image});
    INFO(written.stdout_text << written.stderr_text);
    REQUIRE(written.exit_code == 0);
    return image;
}

// Records first..last in their slots.
std::vector<long long> ids(long long first, long long last) {
    std::vector<long long> slots;
    for (long long id = first; id <= last; ++id) slots.push_back(id);
    return slots;
}

// Zeroes the primary superblock (bytes 1024..2047): the kernel will not
// mount it.
void wipe_superblock(const std::string& image) {
    std::fstream file(image, std::ios::binary | std::ios::in | std::ios::out);
    file.seekp(1024);
    const std::string zeros(1024, '\0');
    file.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
    REQUIRE(file.good());
}

// A check job (docs/agent-protocol.md) for the file-variant ledger of
// make_ledger_image on the disks with `serials`.
Json check_disks_job(const std::vector<std::string>& serials) {
    return {{"run_id", "checker-1"},
            {"filesystem", {{"type", "ext4"}}},
            {"workload",
             {{"name", "ledger"},
              {"kind", "ledger"},
              {"params",
               {{"variant", "file"}, {"records", 100}, {"record_size", kLedgerRecordBytes}}}}},
            {"timeout_s", 60},
            {"check", true},
            {"check_disks", serials}};
}

}  // namespace

TEST_CASE("a logged data disk logs the guest's flushes and replays to a sound crash image",
          "[durability][boot]") {
    if (::geteuid() != 0) test::skip_test("needs root (libvirt's embedded QEMU driver)");
    test::TempDir dir("disksweep-durability");
    const auto started = std::chrono::steady_clock::now();
    const LoggedGuest guest = run_logged_guest(dir);
    const auto booted_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started);

    auto log = durability::read_log(guest.log);
    INFO((log.ok() ? "" : log.error().message));
    REQUIRE(log.ok());
    const std::size_t flushes = flush_entries(*log);
    INFO("entries " << log->entries.size() << ", flushes " << flushes << ", log bytes "
                    << log->file_size << ", guest " << booted_s.count() << " s");
    CHECK(log->uncounted_bytes == 0);
    CHECK(flushes >= 32);  // one per fsync at least

    // All of the log on the pre-run copy gives the volume as QEMU left it.
    const std::string replayed = dir.file("replayed-all.img");
    REQUIRE(durability::clone_image(guest.before_run, replayed).ok());
    REQUIRE(durability::apply_entries(*log, guest.log, replayed,
                                      durability::first_entries(log->entries.size()), kVolumeBytes)
                .ok());
    CHECK(same_contents(replayed, guest.volume));

    // The crash right after the last flush (cache=none honours flushes).
    const auto states = durability::crash_states(*log, CacheMode::kNone, {});
    REQUIRE_FALSE(states.empty());
    const auto last_flush = std::find_if(states.rbegin(), states.rend(),
                                         [](const auto& s) { return s.flush_entry >= 0; });
    REQUIRE(last_flush != states.rend());
    const std::string crash = dir.file("crash-last-flush.img");
    REQUIRE(durability::build_crash_image(guest.before_run, *log, guest.log, last_flush->applied,
                                          crash, kVolumeBytes)
                .ok());
    const ProcessOutput fsck = run_tool({"fsck.ext4", "-n", "-f", crash});
    INFO(fsck.stdout_text << fsck.stderr_text);
    CHECK(fsck.exit_code == 0);

    // The fsynced file is in the crash image, whole and as the guest wrote it.
    const auto crashed_files = files_under(dump_files(crash, dir.path() / "crash-files"));
    const auto final_files = files_under(dump_files(guest.volume, dir.path() / "final-files"));
    const auto fio_file = std::find_if(crashed_files.begin(), crashed_files.end(),
                                       [](const auto& file) { return file.second == (2u << 20); });
    REQUIRE(fio_file != crashed_files.end());
    CHECK(final_files.count(fio_file->first) == 1);
    CHECK(same_contents((dir.path() / "crash-files" / fio_file->first).string(),
                        (dir.path() / "final-files" / fio_file->first).string()));
    const auto total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started);
    WARN("durability test: guest " << booted_s.count() << " s, total " << total_s.count() << " s; "
                                   << log->entries.size() << " entries, " << flushes << " flushes");
}

TEST_CASE("with cache.no-flush on the logger's own node the log has no flush entry",
          "[durability][boot]") {
    if (::geteuid() != 0) test::skip_test("needs root (libvirt's embedded QEMU driver)");
    test::TempDir dir("disksweep-durability");
    const LoggedGuest guest = run_logged_guest(dir, no_flush_on_logger);
    auto log = durability::read_log(guest.log);
    INFO((log.ok() ? "" : log.error().message));
    REQUIRE(log.ok());
    CHECK(log->entries.size() > 32);  // the writes are logged,
    CHECK(flush_entries(*log) == 0);  // the flushes are not
}

TEST_CASE("one checker guest checks three crash images, each its own, in order",
          "[durability][boot]") {
    if (::geteuid() != 0) test::skip_test("needs root (libvirt's embedded QEMU driver)");
    test::TempDir dir("disksweep-checker");
    const auto started = std::chrono::steady_clock::now();
    // Each image differs from the others, so a report in the wrong place or
    // one disk checked three times fails.
    std::vector<long long> with_gap = ids(1, 10);
    with_gap.insert(with_gap.end(), 5, 0);  // 11..15 lost
    const std::vector<long long> after_gap = ids(16, 30);
    with_gap.insert(with_gap.end(), after_gap.begin(), after_gap.end());
    const std::string clean = make_ledger_image(dir, "clean", ids(1, 40));
    const std::string wiped = make_ledger_image(dir, "wiped", ids(1, 20));
    wipe_superblock(wiped);
    const std::string gap = make_ledger_image(dir, "gap", with_gap);

    VmRequest request;
    request.config.bus = Bus::kVirtioBlk;
    request.data_disk = FileDisk{dir.file("data.img"), ImageFormat::kRaw};
    make_sparse_file(dir.file("data.img"), kCrashImageBytes);
    std::vector<std::string> serials;
    for (const std::string& image : {clean, wiped, gap}) {
        serials.push_back(protocol::crash_disk_serial(serials.size()));
        request.extra_disks.push_back({FileDisk{image, ImageFormat::kRaw}, serials.back()});
    }
    const auto images_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started);
    const guest::ResultMessage result =
        run_job_in_guest(dir, std::move(request), check_disks_job(serials));
    INFO(result.output.dump(2));

    auto checks = parse_crash_checks(result.output, 3);
    INFO((checks.ok() ? "" : checks.error().message));
    REQUIRE(checks.ok());
    const CrashCheck& clean_check = (*checks)[0];
    CHECK(clean_check.mounted);
    CHECK(clean_check.fsck_clean);
    CHECK(clean_check.recovered);
    CHECK(clean_check.present == IdRanges{{1, 40}});
    CHECK(clean_check.torn == 0);
    const CrashCheck& wiped_check = (*checks)[1];
    CHECK_FALSE(wiped_check.mounted);
    CHECK_FALSE(wiped_check.problem.empty());
    CHECK(wiped_check.present.empty());
    // Repaired as a user would: e2fsck -f -y finds a backup superblock,
    // and every record is there again.
    CHECK(wiped_check.repair.tried);
    CHECK_THAT(wiped_check.repair.commands, Catch::Contains("e2fsck -f -y"));
    CHECK(wiped_check.repair.mounted);
    CHECK(wiped_check.repair.present == IdRanges{{1, 20}});
    CHECK(lost_after_repair(20, lost_records(20, wiped_check.present), wiped_check) == 0);
    const CrashCheck& gap_check = (*checks)[2];
    CHECK(gap_check.mounted);
    CHECK(gap_check.fsck_clean);
    CHECK(gap_check.present == IdRanges{{1, 10}, {16, 30}});
    CHECK(lost_records(30, gap_check.present) == 5);

    const auto total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started);
    WARN("checker test: images " << images_s.count() << " s, total " << total_s.count()
                                 << " s; guest check " << result.timings.at("bench_s") << " s");
}

}  // namespace ds
